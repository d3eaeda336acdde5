"""Cost of single ops on a model replica: the efficiency profile's calibrated forms, or the roofline.

:class:`OpCosts` is the part of :class:`~perfmodel.core.step.StepModel` that turns an
:class:`~perfmodel.core.ops.Op` into its time parts (:class:`~perfmodel.core.costs.OpTime`): GEMMs by
:func:`~perfmodel.core.costs.gemm_cost`, routed experts by :func:`~perfmodel.core.costs.moe_time`,
decode and prefill attention by the calibrated forms of :mod:`perfmodel.core.attention_costs` where the
profile has terms for them, everything else by :func:`~perfmodel.core.costs.op_time`. For up to
:data:`STACK_POINTS` operating points it costs a step's GEMMs, and its memory-only ops, in one stacked
pass each, with the values the op-by-op evaluation gives. It reads ``model``, ``precision``,
``efficiency``, ``peak``, ``attention_peak``, ``bandwidth`` and ``moe_format`` of the step model, and
caches decode-attention forms in its ``_decode_forms``.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .attention_costs import DecodeAttentionForm, decode_attention_form, form_parts, prefill_attention_parts
from .breakdown import StackedRow
from .costs import OpTime, gemm_compute_eta, gemm_cost, moe_time, op_time
from .ops import Op
from .work import DecodeAttentionWork, MoEWork, PrefillAttentionWork

#: Most operating points per op for which :meth:`StepModel.breakdown` costs the step's GEMMs in one pass.
STACK_POINTS = 64


def _stack_fields(ops: list[Op], idx: list[int], names: tuple[str, ...]
                  ) -> tuple[list[np.ndarray], tuple[int, ...]] | None:
    """Fields ``names`` of the ops ``idx`` as (ops, points) matrices, and the axes of a per-op column;
    None for fewer than two ops or more than :data:`STACK_POINTS` points (cost them one by one)."""
    if len(idx) < 2:
        return None
    fields = list(zip(*map(operator.attrgetter(*names), [ops[j] for j in idx]), strict=True))  # per name
    shapes = {getattr(x, "shape", ()) for f in fields for x in f}
    shape = shapes.pop() if len(shapes) == 1 else np.broadcast_shapes(*shapes)
    if math.prod(shape) > STACK_POINTS:
        return None
    if shapes:  # not all of one shape: broadcast each to the common one
        fields = [[np.broadcast_to(x, shape) for x in f] for f in fields]
    return [np.array(f, dtype=float) for f in fields], (len(idx),) + (1,) * len(shape)


class OpCosts:
    """Op costing of a :class:`~perfmodel.core.step.StepModel` (a mixin)."""

    def _decode_form(self, a: DecodeAttentionWork) -> DecodeAttentionForm | None:
        """Constants of the calibrated decode-attention form for this shape (None where the profile has no
        terms for its family: the plain roofline then), formed once per shape and step model.

        The family is the kernel-level one for grouped queries (H > H_kv streams)."""
        key = (a.family, a.heads, a.kv_width, a.d_qk, a.d_v, a.kv_bytes, a.kv_streams, a.window)
        try:
            return self._decode_forms[key]
        except KeyError:
            pass
        except TypeError:  # array-valued sizes: not cached
            key = None
        eff = self.efficiency
        family = eff.decode_family(a.family, grouped=a.grouped)
        form = None
        if eff.op(family):
            form = decode_attention_form(a.heads, a.kv_width, a.d_qk, a.d_v, a.kv_bytes, self.attention_peak,
                                         self.bandwidth, eff, kv_streams=a.kv_streams, window=a.window,
                                         act_bytes=self.precision.act_bytes, family=family)
        if key is not None:
            self._decode_forms[key] = form
        return form

    def moe_parts(self, x: MoEWork) -> OpTime:
        """Cost of a routed-experts block of shape ``x`` with the profile (:func:`~perfmodel.core.costs.moe_time`)."""
        return moe_time(x.tokens, x.routed, x.hit, self.model.hidden_size, x.inter, x.matrices, self.peak,
                        self.bandwidth, self.efficiency, self.moe_format, self.precision.weights.bytes,
                        self.precision.act_bytes, graph_replayed=x.decode_only)

    def _op_parts(self, op: Op):
        """Cost of one op with the profile: calibrated shape terms where the profile has them."""
        eff = self.efficiency
        if op.moe is not None:
            return self.moe_parts(op.moe)
        if op.kind == "gemm":
            if op.k is None:  # per-head batched products (MLA absorption): plain GEMM form
                eta_c = gemm_compute_eta(op.m, eff.gemm_eta(self.precision.matmul_format), eff.gemm_m_half)
                return op_time(op.flops, op.bytes, self.peak, self.bandwidth, eta_c, eff.memory,
                               eff.kernel_overhead, op.kernels)
            return gemm_cost(op.flops, op.bytes, op.m, op.n, op.k, self.peak, self.bandwidth, eff,
                             self.precision.matmul_format, op.kernels, fused_quantization=True)
        a = op.attention
        form = self._decode_form(a) if isinstance(a, DecodeAttentionWork) else None
        if form is not None:
            return form_parts(form, a.batch, a.kv_len, op.kernels)
        if isinstance(a, PrefillAttentionWork) and eff.op(a.family):
            t, f_no_past, tiles = prefill_attention_parts(
                a.batch, a.isl, a.heads, a.kv_heads, a.d_qk, a.d_v, self.attention_peak, self.bandwidth, eff,
                window=a.window, kv_bytes=a.kv_bytes, act_bytes=self.precision.act_bytes, family=a.family)
            # the form is fitted without a cached prefix: scale its FLOP part to this op's pairs and
            # bytes; the fixed cost per (sequence, head, 128-query tile) does not grow with the prefix
            shape = f_no_past.shape
            if np.shape(op.flops) != shape:
                shape = np.broadcast_shapes(np.shape(op.flops), shape)
            cscale = np.divide(op.flops, f_no_past, where=f_no_past > 0, out=np.zeros(shape))
            return OpTime(t.compute * cscale + tiles, np.maximum(t.memory, op.bytes / (self.bandwidth * eff.memory)),
                          t.overhead * op.kernels, t.overlap)
        if op.kind in ("attention_decode", "indexer"):
            eta_c, eta_m = eff.attention_compute, eff.attention_memory
        elif op.kind in ("attention_prefill", "recurrent"):
            eta_c, eta_m = eff.attention_compute, eff.memory
        else:
            eta_c, eta_m = 1.0, eff.memory
        # memory-only ops have no FLOPs: they need no vector peak (SRAM parts may publish only fp8)
        peak = self.peak if op.kind == "memory" else self.attention_peak
        return op_time(op.flops, op.bytes, peak, self.bandwidth, eta_c, eta_m, eff.kernel_overhead,
                       op.kernels)

    def _costs(self, ops: list[Op]) -> list[OpTime]:
        """:meth:`_op_parts` of each op; for a few operating points, the GEMMs in one stacked pass and
        the memory-only ops in another.

        Each part is computed element by element as :func:`~perfmodel.core.costs.gemm_cost` (or
        :func:`~perfmodel.core.costs.op_time`) would for the op alone, so the values are those of the
        op-by-op evaluation (``tests/test_predict_pinned.py``); the stacked pass saves the fixed cost of
        numpy calls on tiny arrays, which dominates a scalar ``predict``. Large arrays (sweeps) are
        costed op by op, where the arithmetic dominates.
        """
        parts: list[OpTime | None] = [None] * len(ops)
        gemms = [j for j, op in enumerate(ops) if op.moe is None and op.kind == "gemm" and op.k is not None]
        stack = _stack_fields(ops, gemms, ("flops", "bytes", "m", "kernels"))
        if stack is not None:
            (flops, data, m, kernels), axes = stack
            n = np.array([ops[j].n for j in gemms], dtype=float).reshape(axes)
            k = np.array([ops[j].k for j in gemms], dtype=float).reshape(axes)
            t = gemm_cost(flops, data, m, n, k, self.peak, self.bandwidth, self.efficiency,
                          self.precision.matmul_format, kernels, fused_quantization=True)
            for row, j in enumerate(gemms):
                parts[j] = StackedRow(t.compute[row], t.memory[row], t.overhead[row], t.overlap)
        memory_ops = [j for j, op in enumerate(ops) if op.kind == "memory"]
        stack = _stack_fields(ops, memory_ops, ("flops", "bytes", "kernels"))
        if stack is not None:  # as _op_parts costs a memory-only op
            eff = self.efficiency
            (flops, data, kernels), _ = stack
            t = op_time(flops, data, self.peak, self.bandwidth, 1.0, eff.memory, eff.kernel_overhead, kernels)
            for row, j in enumerate(memory_ops):
                parts[j] = StackedRow(t.compute[row], t.memory[row], t.overhead[row], t.overlap)
        return [p if p is not None else self._op_parts(op) for p, op in zip(parts, ops, strict=True)]
