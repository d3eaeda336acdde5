"""A step model's compiled op plan: the totals of a few stacked steps in a fixed number of numpy passes.

:meth:`StepModel.breakdown <perfmodel.core.step.StepModel.breakdown>` builds every op of a step as a
record, costs it and keeps the parts for breakdowns; a scalar :func:`~perfmodel.predict` pays about
five hundred Python calls for that, nearly all of it fixed cost per op on 4-element arrays. Most ops
are affine in one token count of the step: a GEMM over M rows (``_gemm``/``_gemms`` of
:mod:`perfmodel.core.ops`) has

.. math:: F = 2NK\\,M, \\qquad D = [M > 0]\\,W + M\\,(N + K)\\,b_a, \\qquad \\text{kernels} = [M > 0]

and a memory-only op (norms, embedding, sampling) :math:`D = c\\,M`, kernels :math:`= \\kappa [M > 0]`,
where M is one of the *sources* of :func:`token_sources` (tokens, tokens per attention rank, logits
per rank, decodes per rank, prefill up-projection tokens per rank). :class:`StepPlan` holds, once per
step model, each such op's source and coefficients as columns, so a step's GEMMs are formed and
costed in one pass over a (GEMMs, rows) matrix and its memory ops in another; the other ops
(attention cores, routed experts, MLA's absorbed products, DSA indexers, recurrent scans) are built
by their own builders and costed as the step model costs them. The sums over ops are those of
:class:`~perfmodel.core.breakdown.StepBreakdown` over the same (ops, part, rows) matrix, in the same
op order, so the totals, bounds and context times are the breakdown's bit for bit.

A plan is formed by *probing*: the step model's builders run on probe rows (:func:`probe_shape`), and
an op is taken as affine in a source only where its FLOPs, bytes, M and kernels equal the affine form
at every probe row exactly; the whole plan is then checked against :meth:`StepModel.breakdown` on the
probe rows and a plan that differs anywhere is not used (None: the breakdown is the path). Forming
one costs about ten scalar predicts, so :func:`~perfmodel.predict`, ``StepModel.step_time`` and the
engines' device times use it from a step model's second few-point call on
(:meth:`StepModel.reused_plan <perfmodel.core.step.StepModel.reused_plan>`). Plans live on their step
model (:attr:`StepModel.plan <perfmodel.core.step.StepModel.plan>`), which is built from immutable
specs and profiles, so an edited copy of a spec or profile gets a new step model and a new plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .attention_costs import form_parts
from .breakdown import _Stack, dominant_term, stack_layout
from .costs import OpTime, gemm_cost, op_time
from .frozen import frozen
from .ops import (
    CONTEXT_OPS,
    Op,
    StepShape,
    _per_rank,
    decode_attention_op,
    indexer_decode_op,
    kv_b_absorbed_op,
    moe_work,
    prefill_attention_op,
)

if TYPE_CHECKING:
    from .step import StepModel

#: Names of the token counts an affine op may scale with (rows of :func:`token_sources`).
SOURCES = ("tokens", "tokens_per_rank", "logits_per_rank", "decodes_per_rank", "prefill_up_per_rank")


def token_sources(s: StepShape, dp_attention: int) -> list[np.ndarray]:
    """The token counts of :data:`SOURCES` for a (micro-batched) step shape, each formed by the
    expression the op builders of :mod:`perfmodel.core.ops` use."""
    return [s.tokens, _per_rank(s.tokens, dp_attention), _per_rank(s.n_decode + s.n_prefill, dp_attention),
            _per_rank(s.n_decode, dp_attention), _per_rank(s.n_prefill, dp_attention) * (s.chunk + s.past)]


#: Ops with a builder of their own (arguments: step model, layer group, shape).
_SINGLE = {
    "attention_decode": lambda sm, g, s: decode_attention_op(sm.model, g, sm.parallel, sm.precision, s),
    "attention_prefill": lambda sm, g, s: prefill_attention_op(sm.model, g, sm.parallel, sm.precision, s),
    "indexer_decode": lambda sm, g, s: indexer_decode_op(sm.model, sm.parallel, sm.precision, s),
    "kv_b_absorbed": lambda sm, g, s: kv_b_absorbed_op(sm.model, sm.parallel, sm.precision, s),
}


@frozen
class PlanTotals:
    """What a step's sums are over stacked rows [s]: total time, the summed compute and memory parts,
    the exposed communication, the decode-context ops' time and the summed per-launch overheads
    (arrays over the rows)."""

    total: np.ndarray
    compute: np.ndarray
    memory: np.ndarray
    comm: np.ndarray
    context: np.ndarray
    overhead: np.ndarray  # the per-launch overhead parts, summed as sum(StepBreakdown.overhead.values())

    def bound(self) -> np.ndarray:
        """Dominant term per row: 'compute', 'memory' or 'communication'."""
        return dominant_term(self.compute, self.memory, self.comm)


def probe_shape(dp: int) -> StepShape:
    """Probe rows (taken as a micro-batch): each source equal to 1 somewhere, the sources distinct from
    each other on mixed rows, absent ops (a zero row), decode contexts inside and beyond typical
    windows, and prompt chunks after a cached prefix."""
    rows = [(1, 37, 0, 0, 0), (dp, 1000, 0, 0, 0), (0, 0, 1, 1, 0), (0, 0, dp, 1, 0), (0, 0, 3, 517, 0),
            (5, 2049, 2, 301, 0), (7 * dp, 20000, 0, 0, 0), (0, 0, 0, 0, 0), (3, 131073, 0, 0, 0),
            (0, 0, 1, 9000, 0), (0, 0, 2, 300, 1000), (4, 700, 1, 64, 7000)]
    return StepShape.make(*np.array(rows, dtype=float).T)


def _as_gemm(op: Op, sources: list[np.ndarray], act_bytes: float) -> tuple | None:
    """(source, 2NK, N, K, W, (N + K) b_a) when ``op`` is a GEMM affine in one source, else None."""
    if op.kind != "gemm" or op.moe is not None or op.attention is not None or op.k is None or op.n is None:
        return None
    n, k = op.n, op.k
    flop, act = 2.0 * n * k, (n + k) * act_bytes
    for j, m in enumerate(sources):
        on = m > 0
        if not on.any() or not np.array_equal(op.m, np.maximum(m, 1.0)):
            continue
        w = float(np.ravel(np.broadcast_to(op.weight_bytes, m.shape))[np.argmax(on)])
        present = on.astype(float)
        if (np.array_equal(op.flops, flop * m) and np.array_equal(op.bytes, present * w + m * act)
                and np.array_equal(op.kernels, present) and np.array_equal(op.weight_bytes, present * w)):
            return j, flop, float(n), float(k), w, act
    return None


def _as_memory(op: Op, sources: list[np.ndarray]) -> tuple | None:
    """(source, bytes per token, kernels) when ``op`` is a memory-only op affine in one source, else None."""
    if op.kind != "memory" or np.any(op.flops):
        return None
    for j, m in enumerate(sources):
        unit = m == 1.0
        if not unit.any():
            continue
        r = int(np.argmax(unit))
        coef = float(np.ravel(op.bytes)[r])
        kernels = float(np.ravel(np.broadcast_to(op.kernels, m.shape))[r])
        if np.array_equal(op.bytes, m * coef) and np.array_equal(op.kernels, kernels * (m > 0)):
            return j, coef, kernels
    return None


class StepPlan:
    """The compiled op plan of one step model (see the module docstring); formed by :meth:`build`.

    :attr:`gemm` and :attr:`memory` hold the affine ops' rows in the (ops, part, rows) matrix, their
    sources and coefficient columns (None where there are none); :attr:`built` the other ops, built
    per call: ``(op row, builder index in StepModel.builders, op index, its own evaluator or None)``;
    :attr:`group_built` the builders called whole for ops without an evaluator of their own;
    :attr:`layout` the fixed class/weight/overlap layout of the sums; :attr:`context_rows` the rows
    of the decode-context ops.
    """

    def __init__(self, sm: StepModel) -> None:
        self.sm = sm
        probe = probe_shape(sm.parallel.dp_attention)  # taken as a micro-batch already
        sources = token_sources(probe, sm.parallel.dp_attention)
        gemms, memory, built, classes = [], [], [], []
        row = 0
        for b, (side, group, count) in enumerate(sm.builders):
            for j, op in enumerate(sm.build_ops(side, group, probe)):
                g = _as_gemm(op, sources, sm.precision.act_bytes)
                m = None if g is not None else _as_memory(op, sources)
                if g is not None:
                    gemms.append((row, *g))
                elif m is not None:
                    memory.append((row, *m))
                else:
                    built.append((row, b, j, self._single(op, group), op.name))
                classes.append((op.op_class, count))
                row += 1
        self.rows = row
        self.context_rows = [r for r, *_, name in built if name in CONTEXT_OPS]
        self.built = [(r, b, j, single) for r, b, j, single, _ in built]
        by_builder: dict[int, list[tuple[int, int]]] = {}
        for r, b, j, single in self.built:
            if single is None:
                by_builder.setdefault(b, []).append((r, j))
        self.group_built = by_builder  # builders called whole (an op without a builder of its own)
        self.gemm = _columns(gemms, 6)
        #: N of the GEMMs broadcast to (GEMMs, rows), by shape: the wave term then needs no broadcasting
        self._n_full: dict[tuple[int, ...], np.ndarray] = {}
        self.memory = _columns(memory, 3)
        # overlaps are fixed per step model (the profile's terms): read once on the probe
        parts = self._parts(probe, sources)[1]
        self.layout = stack_layout(tuple((c, w, o) for (c, w), o in zip(classes, parts, strict=True)), 1)

    def _single(self, op: Op, group) -> Callable[[StepShape, list[np.ndarray]], OpTime] | None:
        """How one op that is not affine is costed on its own: a decode attention core with a calibrated
        form straight from the form (the form is fixed per layer group), routed experts from the block's
        shape (:func:`~perfmodel.core.ops.moe_work`), an op with a builder of its own (:data:`_SINGLE`)
        built and costed as the step model costs it; None: its group's builder."""
        sm = self.sm
        form = sm._decode_form(op.attention) if op.name == "attention_decode" else None
        if form is not None:  # decode_attention_op's batch (decodes per rank), KV length and launches
            return lambda s, src: form_parts(form, src[3], s.context, 1.0 * (src[3] > 0))
        if op.name == "experts" and op.moe is not None:  # the block's cost needs its shape alone
            return lambda s, src: sm.moe_parts(moe_work(sm.model, sm.parallel, s, sm.expert_imbalance)[0])
        single = _SINGLE.get(op.name)
        if single is None:
            return None
        return lambda s, src: sm._op_parts(single(sm, group, s))

    @classmethod
    def build(cls, sm: StepModel) -> StepPlan | None:
        """The plan of ``sm``, or None where it does not apply (a host-offloaded KV cache) or does not
        reproduce :meth:`StepModel.breakdown` on the probe shapes bit for bit."""
        if sm.kv_host_fraction > 0:
            return None
        plan = cls(sm)
        shape = probe_shape(sm.parallel.dp_attention)
        ref, got = sm.breakdown(shape), plan.totals(shape)
        total = ref.total
        if not (np.array_equal(got.total, total) and np.array_equal(got.bound(), ref.bound())
                and np.array_equal(got.context, ref.context_total()) and np.array_equal(got.comm, ref.comm_total)
                and np.array_equal(got.overhead, sum(ref.overhead.values()))):
            return None
        return plan

    def _parts(self, s: StepShape, sources: list[np.ndarray]) -> tuple[np.ndarray, list[float], list]:
        """The (ops, part, rows) matrix of compute, memory and overhead parts [s], each op's overlap
        exponent and the (op row, serial part) pairs of the ops with a serial part."""
        sm = self.sm
        eff = sm.efficiency
        n_rows = np.shape(sources[0])
        parts = np.empty((self.rows, 3) + n_rows)
        overlap = [math.inf] * self.rows
        src = np.array(sources)
        if self.gemm is not None:
            rows, which, flop, n, k, w, act = self.gemm
            m = src[which]
            n_full = self._n_full.get(m.shape)
            n = n_full if n_full is not None else self._n_full.setdefault(m.shape, _full(n, m.shape))
            present = (m > 0).astype(float)
            t = gemm_cost(flop * m, present * w + m * act, np.maximum(m, 1.0), n, k, sm.peak, sm.bandwidth, eff,
                          sm.precision.matmul_format, present, fused_quantization=True)
            parts[rows, 0], parts[rows, 1], parts[rows, 2] = t.compute, t.memory, t.overhead
            for r in rows:
                overlap[r] = t.overlap
        if self.memory is not None:
            rows, which, coef, kernels = self.memory
            m = src[which]
            data = m * coef
            t = op_time(np.zeros(data.shape), data, sm.peak, sm.bandwidth, 1.0, eff.memory, eff.kernel_overhead,
                        kernels * (m > 0))
            parts[rows, 0], parts[rows, 1], parts[rows, 2] = t.compute, t.memory, t.overhead
        serial = []
        whole = {b: sm.build_ops(*sm.builders[b][:2], s) for b in self.group_built}
        for r, b, j, single in self.built:
            t: OpTime = single(s, sources) if single is not None else sm._op_parts(whole[b][j])
            parts[r, 0], parts[r, 1], parts[r, 2] = t.compute, t.memory, t.overhead
            overlap[r] = t.overlap
            if not (type(t.serial) is float and t.serial == 0.0):
                serial.append((r, t.serial))
        return parts, overlap, serial

    def totals(self, shape: StepShape) -> PlanTotals:
        """The step's sums for ``shape`` (arrays of one shape, at most 64 points),
        as :meth:`StepModel.breakdown` forms them: ``total``, ``bound()``, ``comm_total`` and
        ``context_total()`` of its result."""
        sm = self.sm
        points = np.shape(shape.n_decode)
        if len(points) != 1:  # evaluated over the flattened points (every op is element-wise)
            flat = StepShape(*(x.ravel() for x in (shape.n_decode, shape.context, shape.n_prefill, shape.chunk,
                                                   shape.past)))
            t = self.totals(flat)
            return PlanTotals(*(x.reshape(points) if x.shape == flat.n_decode.shape else np.broadcast_to(x, points)
                                for x in (t.total, t.compute, t.memory, t.comm, t.context, t.overhead)))
        s = sm.micro_batch(shape)
        parts, _, serial = self._parts(s, token_sources(s, sm.parallel.dp_attention))
        stack = _Stack(parts, serial, *self.layout)
        compute_total = stack.total_sum()
        compute, memory, overhead = stack.part_sums(3)
        comm = sm.step_comm(s)
        comm_total = sum(comm.values()) if comm else np.zeros(())
        context = 0.0
        for r in self.context_rows:
            context = context + stack.weighted_totals[r]
        return PlanTotals(compute_total + comm_total + sm.efficiency.step_overhead, compute, memory,
                          np.asarray(comm_total), np.asarray(context), overhead)


def _columns(entries: list[tuple], width: int) -> tuple | None:
    """Op rows and coefficient columns (shape (ops, 1)) of ``entries`` = (row, source, coefficients...);
    None for no entries."""
    if not entries:
        return None
    rows = np.array([e[0] for e in entries], dtype=np.intp)
    which = np.array([e[1] for e in entries], dtype=np.intp)
    cols = [np.array([e[j] for e in entries], dtype=float)[:, None] for j in range(2, width + 1)]
    for a in (rows, which, *cols):
        a.flags.writeable = False
    return (rows, which, *cols)


def _full(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``x`` broadcast to ``shape`` as a read-only array of its own."""
    out = np.array(np.broadcast_to(x, shape))
    out.flags.writeable = False
    return out
