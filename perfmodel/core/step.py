"""Time of one forward step of a model replica on a device type: ops costed and summed.

Per layer group, every op's roofline time (compute and memory parts kept apart) plus the layer's
collectives; a step's latency is the sum over all layers, the embedding / LM head once, and the
pipeline hand-offs. Decoding sequences are split into ``pp`` micro-batches when ``pp > 1`` (each
token still traverses every stage, so the latency covers all layers at the micro-batch size).
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np

from ..checks import real
from ..errors import ConfigError
from ..formats import resolve_formats
from ..hardware import Accelerator, Link, System, load_accelerator, load_hardware, load_link
from ..modelspec import ModelSpec, load_model
from ..modelspec.schema import LayerGroup
from ..precision import Precision, dtype, serving_activations
from . import comm, topology
from .attention_costs import DecodeAttentionForm, decode_attention_form, form_parts, prefill_attention_parts
from .breakdown import PartSums, StackedRow, StepBreakdown
from .costs import OpTime, gemm_compute_eta, gemm_cost, moe_time, op_time
from .efficiency import Efficiency, profile_for
from .memory import (
    DEFAULT_RESERVE,
    kv_bytes_per_token_device,
    max_sequences,
    state_bytes_per_sequence_device,
    weights_per_device,
)
from .ops import (
    CONTEXT_OPS,
    Message,
    Op,
    StepShape,
    attention_ops,
    decode_attention_op,
    elementwise_op,
    embedding_head_ops,
    ffn_ops,
    indexer_decode_op,
    layer_messages,
)
from .parallel import Parallel
from .work import DecodeAttentionWork, MoEWork, PrefillAttentionWork

#: Most operating points per op for which :meth:`StepModel.breakdown` costs the step's GEMMs in one pass.
STACK_POINTS = 64

def check_system_size(hardware: object, tp: object = 1, pp: object = 1, dp_attention: object = 1) -> None:
    """A replica given a *system* id (``hgx-h100``) must fit in that system's device count.

    Raises
    ------
    ConfigError
        tp * dp_attention * pp exceeds the system's count (name the accelerator id to span systems).
    """
    if not isinstance(hardware, (str, System)) or not all(type(v) is int for v in (tp, pp, dp_attention)):
        return  # an accelerator (no count), or degrees that Parallel.build refuses with their own message
    spec = hardware if isinstance(hardware, System) else load_hardware(hardware)
    devices = tp * pp * dp_attention  # type: ignore[operator]
    if isinstance(spec, System) and devices > spec.count:
        raise ConfigError(f"hardware: {spec.id} has {spec.count} x {spec.accelerator}, but tp*dp_attention*pp = "
                          f"{devices} devices (tp={tp}, dp_attention={dp_attention}, pp={pp}); allowed: at most "
                          f"{spec.count}, or name the accelerator '{spec.accelerator}' for a replica spanning "
                          f"several systems")


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


class StepModel:
    """A model replica on one accelerator type: step times, memory and KV capacity.

    Parameters
    ----------
    model : str | ModelSpec
        Model id, HF repo id, config.json path or spec.
    hardware : str | Accelerator
        Accelerator id or a system id (its accelerator and links are used).
    tp, pp, ep, dp_attention, moe_tp : int
        Parallel layout (see :mod:`perfmodel.core.parallel`).
    weights, activations, kv_cache : str, optional
        Formats (``bf16``, ``fp8``, ``nvfp4``, ``int4``...). Default (``None``): weights in the
        checkpoint's own format, the KV cache in fp8 for FP8/FP4 weights else bf16
        (:mod:`perfmodel.formats`). Activations default as in
        :meth:`perfmodel.precision.Precision.of`, except for ``mxfp4`` weights: ``fp8`` on accelerators
        with an FP4 peak (MXFP4 x MXFP8 MoE kernels, Blackwell), ``bf16`` elsewhere (W4A16); and
        NVFP4 weights on accelerators without an FP4 peak (Hopper) run weight-only, ``bf16``
        (:func:`perfmodel.precision.serving_activations`, as ``estimate`` and the validation do).
    efficiency : "calibrated" | "datasheet" | Efficiency
        Achievable-efficiency profile (``datasheet`` = pure roofline).
    reserve : float
        Fraction of device memory left unused (default 0.10).
    expert_imbalance : float
        Load of the busiest EP rank relative to uniform routing (1 = uniform, ≥ 1).
    scale_up : str | Link, optional
        Override of the scale-up link used for collectives.
    kv_host_fraction : float
        Fraction of the KV cache kept in host memory (0 = none). It frees device memory; each decode
        step then reads that fraction of the attended KV over the accelerator's host link
        (PCIe or chip-to-chip), on the critical path except for the ``kv_host_overlap`` fraction.
    kv_host_overlap : float
        Fraction of the host transfer hidden behind other work, in [0, 1] (default 0).
    """

    def __init__(self, model: str | ModelSpec, hardware: str | Accelerator, tp: int = 1, pp: int = 1,
                 ep: int = 1, dp_attention: int = 1, moe_tp: int | None = None,
                 weights: str | None = None, activations: str | None = None, kv_cache: str | None = None,
                 efficiency: str | Efficiency = "calibrated", reserve: float = DEFAULT_RESERVE,
                 expert_imbalance: float = 1.0, scale_up: str | Link | None = None,
                 kv_host_fraction: float = 0.0, kv_host_overlap: float = 0.0) -> None:
        spec = model if isinstance(model, ModelSpec) else load_model(model)
        weights, kv_cache = resolve_formats(model, spec, weights, kv_cache)
        self._arguments = dict(tp=tp, pp=pp, ep=ep, dp_attention=dp_attention, moe_tp=moe_tp, weights=weights,
                               activations=activations, kv_cache=kv_cache, reserve=reserve,
                               expert_imbalance=expert_imbalance, scale_up=scale_up,
                               kv_host_fraction=kv_host_fraction, kv_host_overlap=kv_host_overlap)
        self.model = spec
        self.hardware = load_accelerator(hardware)
        self.parallel = Parallel.build(self.model, tp=tp, pp=pp, ep=ep, dp_attention=dp_attention,
                                       moe_tp=moe_tp)
        check_system_size(hardware, tp, pp, dp_attention)
        w_name, has_fp4 = dtype(weights, "weights").name, "fp4" in self.hardware.compute
        if activations is None and (w_name == "mxfp4" or (w_name in ("nvfp4", "fp4") and not has_fp4)):
            # MXFP4: the checkpoint's own kernels; FP4 without FP4 tensor cores: weight-only (W4A16)
            activations = serving_activations("nvfp4" if w_name == "fp4" else w_name, has_fp4)
        self.precision = Precision.of(weights, activations, kv_cache)
        self.efficiency = profile_for(self.hardware.id, efficiency)
        # fused-MoE terms: the MoE kernel's own where the profile has them, else the GEMM format's
        moe_format = self.precision.moe_format
        self.moe_format = moe_format if self.efficiency.op(f"moe.{moe_format}") else self.precision.matmul_format
        reserve = real(reserve, "reserve", 0, 1, hi_open=True)
        expert_imbalance = real(expert_imbalance, "expert_imbalance (1 = uniform routing)", lo=1)
        kv_host_fraction = real(kv_host_fraction, "kv_host_fraction", 0, 1)
        kv_host_overlap = real(kv_host_overlap, "kv_host_overlap", 0, 1)
        self.kv_host_fraction = kv_host_fraction
        self.kv_host_overlap = kv_host_overlap
        self.host_bandwidth = self._host_bandwidth() if kv_host_fraction > 0 else np.inf
        self.reserve = reserve
        self.expert_imbalance = expert_imbalance
        self.peak = self.hardware.peak_flops(self.precision.compute)
        # attention runs in bf16 (fp8 FMHA is an engine option); SRAM parts may publish only fp8
        try:
            self.attention_peak = self.hardware.peak_flops("bf16")
        except KeyError:
            self.attention_peak = self.peak
        self.bandwidth = self.hardware.memory_bandwidth
        self.link_bandwidth, self.link_alpha, self.link_id = self._collective_link(scale_up)
        self._decode_forms: dict[tuple, DecodeAttentionForm | None] = {}

    def with_efficiency(self, efficiency: str | Efficiency) -> StepModel:
        """The same replica (model, hardware, layout, formats) under another efficiency profile."""
        return StepModel(self.model, self.hardware, **self._arguments, efficiency=efficiency)

    # ------------------------------------------------------------------ links
    def _collective_link(self, override) -> tuple[float, float, str | None]:
        """Scale-up link (bandwidth per direction, α, id); also sets the scale-out tier if needed.

        When a stage's group spans more devices than the scale-up domain (multi-node TP or EP),
        collectives are costed hierarchically: inside each domain on the scale-up link, across
        domains on the scale-out port (see :meth:`_message_time`).
        """
        self.domain, self.out_bandwidth, self.out_alpha = None, np.inf, 0.0
        self.network = None  # hop-count model of a link that declares a topology (core.topology)
        self.assumptions: list[str] = []
        if self.parallel.group == 1 and self.parallel.pp == 1:
            return np.inf, 0.0, None
        if override is not None:
            link = load_link(override) if not isinstance(override, Link) else override
            self.network = link.network()
            return link.bandwidth.value, link.alpha.value, link.id
        port = self.hardware.scale_up
        if port is None:
            raise ConfigError(f"{self.hardware.id} has no scale-up port in its spec; "
                              f"tp*dp_attention*pp > 1 needs one (or pass scale_up=LINK)")
        link = load_link(port.link)
        self.network = link.network()
        if port.domain is not None and self.parallel.group > port.domain and self.network is None:
            out = self.hardware.scale_out
            if out is None:  # e.g. LP30: racks joined by the same C2C fabric, no separate NIC published
                self.assumptions.append(
                    f"{self.parallel.group} devices exceed {self.hardware.id}'s scale-up domain of "
                    f"{port.domain} and no scale-out port is specified: collectives are costed flat on "
                    f"{link.id} across domains")
                bw = port.bandwidth.value if port.bandwidth else link.bandwidth.value
                return bw, link.alpha.value, link.id
            if self.parallel.group % port.domain:
                raise ConfigError(f"tp*dp_attention = {self.parallel.group} spanning several scale-up "
                                  f"domains must be a multiple of the domain size {port.domain}")
            out_link = load_link(out.link)
            self.domain = port.domain
            self.out_bandwidth = out.bandwidth.value if out.bandwidth else out_link.bandwidth.value
            self.out_alpha = out_link.alpha.value
        bw = port.bandwidth.value if port.bandwidth else link.bandwidth.value
        return bw, link.alpha.value, link.id

    def _host_bandwidth(self) -> float:
        port = self.hardware.host_link
        if port is None:
            raise ConfigError(f"kv_host_fraction > 0 needs a host link; {self.hardware.id}'s spec has none")
        return port.bandwidth.value if port.bandwidth else load_link(port.link).bandwidth.value

    @functools.cached_property
    def labels(self) -> dict[str, object]:
        """What this replica is, for result records: model and hardware ids, layout and format labels,
        the efficiency profile, the collective link and the host-KV share (formed once; do not modify)."""
        par, eff = self.parallel, self.efficiency
        return {"model": self.model.id, "hardware": self.hardware.id, "parallel": par.label(),
                "precision": self.precision.label(), "efficiency": eff.name, "efficiency_fallback": eff.fallback,
                "basis": "analytic-datasheet" if eff.name == "datasheet" else "analytic-calibrated",
                "tp": par.tp, "pp": par.pp, "ep": par.ep, "dp_attention": par.dp_attention,
                "reserve_fraction": self.reserve, "link": self.link_id, "kv_host_fraction": self.kv_host_fraction}

    # ------------------------------------------------------------------ memory
    @property
    def devices(self) -> int:
        """Devices per replica."""
        return self.parallel.devices

    @functools.cached_property
    def weights_per_device(self) -> float:
        """Weight bytes on the most loaded device [B] (formed once: the step model does not change)."""
        return weights_per_device(self.model, self.parallel, self.precision)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token of context for the whole replica (all devices) [B]."""
        per_dev = float(kv_bytes_per_token_device(self.model, self.parallel, self.precision, 1.0,
                                                  state=False))
        return per_dev * self.parallel.group * self.parallel.pp / self.parallel.dp_attention

    @property
    def state_bytes_per_sequence(self) -> float:
        """Recurrent state one sequence holds on the replica (all devices) [B]; 0 without recurrent
        layers. Fixed per sequence, independent of its length, and not part of ``kv_bytes_per_token``
        or ``kv_capacity_tokens``: a caller admitting n sequences needs n times this as well."""
        per_dev = state_bytes_per_sequence_device(self.model, self.parallel)
        return per_dev * self.parallel.group * self.parallel.pp / self.parallel.dp_attention

    @property
    def kv_capacity_tokens(self) -> int:
        """KV tokens that fit per replica after weights, workspace and reserve (full-attention count;
        recurrent state excluded, see :attr:`state_bytes_per_sequence`)."""
        n = max_sequences(self.model, self.parallel, self.precision, self.hardware.memory_capacity, 1.0,
                          self.reserve, state=False)
        return int(n)

    # ------------------------------------------------------------------ time
    #: Bytes each rank moves, as a fraction of the message size, for n ranks.
    _VOLUME = {"all_reduce": lambda n: 2.0 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
               "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
               "p2p": lambda n: 1.0}

    def _message_time(self, msg: Message) -> np.ndarray:
        """Time of one collective [s], flat within a scale-up domain, hierarchical beyond it.

        Hierarchical (n ranks in domains of d, m = n/d domains): the scale-up part moves the
        collective's volume over d ranks; the scale-out part moves it over m ranks on a share S/d
        (all-to-all: the (n − d)/n of the data leaving the domain), with ⌈log2 m⌉ latency steps
        (twice for an all-reduce) at the scale-out α. Each NIC carries its own GPU's share.
        """
        if msg.kind != "p2p" and self.domain is not None and msg.ranks > self.domain:
            d, m = self.domain, msg.ranks / self.domain
            local = self._flat_time(Message(msg.name, msg.kind, msg.size, d))
            bw_out = self.out_bandwidth * self.efficiency.collective_bandwidth
            if msg.kind == "all_to_all":
                volume = (msg.ranks - d) / msg.ranks * msg.size
            else:
                volume = self._VOLUME[msg.kind](m) * msg.size / d
            steps = np.ceil(np.log2(m)) * (2.0 if msg.kind == "all_reduce" else 1.0)
            return local + steps * self.out_alpha + volume / bw_out
        return self._flat_time(msg)

    def _flat_time(self, msg: Message) -> np.ndarray:
        eff = self.efficiency
        bw = self.link_bandwidth * eff.collective_bandwidth
        n = msg.ranks
        if eff.collective_alpha > 0:  # measured whole-collective latency + volume / bandwidth
            return np.where(n > 1, eff.collective_alpha + self._VOLUME[msg.kind](n) * msg.size / bw, 0.0)
        if self.network is not None:  # the link declares a topology: hop counts (core.topology)
            return topology.collective_time(msg.kind, msg.size, int(n), bw, self.network)
        fn = {"all_reduce": comm.all_reduce_time, "all_gather": comm.all_gather_time,
              "reduce_scatter": comm.reduce_scatter_time, "all_to_all": comm.all_to_all_time}
        if msg.kind == "p2p":
            return comm.p2p_time(msg.size, bw, self.link_alpha)
        return fn[msg.kind](msg.size, n, bw, self.link_alpha)

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

    @functools.cached_property
    def _attention_groups(self) -> list[LayerGroup]:
        """Layers merged by token mixer and attention window (their FFN kind is irrelevant to them)."""
        counts: dict[tuple, int] = {}
        for g in self.model.layer_groups:
            counts[(g.mixer, g.window)] = counts.get((g.mixer, g.window), 0) + g.count
        return [LayerGroup(count=c, ffn="dense", window=w, mixer=m) for (m, w), c in counts.items()]

    @functools.cached_property
    def _ffn_groups(self) -> list[LayerGroup]:
        """Layers merged by FFN kind and whether they have a mixer (their window and mixer kind are
        irrelevant to FFN ops, norms and messages)."""
        counts: dict[tuple, int] = {}
        for g in self.model.layer_groups:
            key = (g.ffn, "none" if g.mixer == "none" else "attention")
            counts[key] = counts.get(key, 0) + g.count
        return [LayerGroup(count=c, ffn=f, window=None, mixer=m) for (f, m), c in counts.items()]

    def _offload(self, op: Op, group, shape: StepShape) -> tuple[Op, np.ndarray]:
        """Move the host-resident share of a decode attention op's KV bytes to the host link."""
        from dataclasses import replace

        from .ops import kv_elems_per_token_layer

        attended = np.minimum(shape.context, group.window) if group.window else shape.context
        kv = (shape.n_decode / self.parallel.dp_attention * attended
              * kv_elems_per_token_layer(self.model, self.parallel.tp) * self.precision.kv_cache.bytes)
        host = self.kv_host_fraction * kv
        return replace(op, bytes=op.bytes - host), host

    @functools.cached_property
    def builders(self) -> list[tuple[str, LayerGroup | None, float]]:
        """The op builders of a step in the order :meth:`breakdown` sums their ops: (side, layer group,
        layer count), side ``"attention"`` (:func:`~perfmodel.core.ops.attention_ops` of a group of
        :attr:`_attention_groups`), ``"ffn"`` (:func:`~perfmodel.core.ops.ffn_ops` and the elementwise op
        of a group of :attr:`_ffn_groups`, then that group's messages) or ``"head"`` (embedding, LM head
        and sampling once)."""
        return ([("attention", g, g.count) for g in self._attention_groups]
                + [("ffn", g, g.count) for g in self._ffn_groups] + [("head", None, 1.0)])

    def build_ops(self, side: str, group: LayerGroup | None, shape: StepShape) -> list[Op]:
        """The ops of one builder of :attr:`builders` for ``shape`` (after the pipeline's micro-batching)."""
        par, model, prec = self.parallel, self.model, self.precision
        if side == "attention":
            return attention_ops(model, group, par, prec, shape)
        if side == "ffn":
            ops = ffn_ops(model, group, par, prec, shape, self.expert_imbalance)
            ops.append(elementwise_op(model, group, par, prec, shape))
            return ops
        return embedding_head_ops(model, par, prec, shape)

    @functools.cached_property
    def plan(self):
        """The compiled op plan of this step model (:class:`perfmodel.core.plan.StepPlan`), formed on
        first use; None where it does not apply."""
        from .plan import StepPlan

        return StepPlan.build(self)

    def __getstate__(self) -> dict:
        """Pickled without its plan (a plan holds functions; it is formed again where it is used)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("plan", "_first_call_done")}

    def reused_plan(self):
        """:attr:`plan` from this step model's second call on, None on its first: forming a plan costs
        about as much as ten scalar predicts, which a step model used once would not recover."""
        if "plan" in self.__dict__ or self.__dict__.pop("_first_call_done", False):
            return self.plan
        self.__dict__["_first_call_done"] = True
        return None

    def plan_totals(self, shape: StepShape):
        """The sums of a step of a few points (:class:`perfmodel.core.plan.PlanTotals`, the values
        :meth:`breakdown` gives) from the compiled plan; None where the plan is not used (more than
        :data:`STACK_POINTS` points, arrays of different shapes, a first call or no plan)."""
        n = shape.n_decode
        if not (n.size <= STACK_POINTS and n.shape == shape.context.shape == shape.n_prefill.shape
                == shape.chunk.shape == shape.past.shape):
            return None
        plan = self.reused_plan()
        return None if plan is None else plan.totals(shape)

    def micro_batch(self, shape: StepShape) -> StepShape:
        """``shape`` as one pipeline stage's micro-batch sees it: decodes split into ``pp`` micro-batches
        (latency = all layers at micro-batch size); ``shape`` itself for ``pp == 1``."""
        pp = self.parallel.pp
        if pp > 1:
            return StepShape(shape.n_decode / pp, shape.context, shape.n_prefill, shape.chunk, shape.past)
        return shape

    def step_comm(self, shape: StepShape) -> dict[str, np.ndarray]:
        """Exposed time of each message of a step [s] (``shape`` micro-batched already), in the order
        :meth:`breakdown` adds them; without the host-KV reads."""
        par, model, prec = self.parallel, self.model, self.precision
        out: dict[str, np.ndarray] = {}
        for group in self._ffn_groups:
            for msg in layer_messages(model, group, par, prec, shape):
                out[msg.name] = out.get(msg.name, 0.0) + group.count * self._message_time(msg)
        if par.pp > 1:
            hand_off = Message("pp_p2p", "p2p", shape.tokens * model.hidden_size * prec.act_bytes, 2)
            out["pp_p2p"] = (par.pp - 1) * self._message_time(hand_off)
        return out

    def breakdown(self, shape: StepShape) -> StepBreakdown:
        """Time parts of one step through all pipeline stages (see module docstring)."""
        shape = self.micro_batch(shape)
        out = StepBreakdown(step_overhead=self.efficiency.step_overhead)
        ops: list[tuple[Op, float]] = []  # (op, layer count), costed together below
        # Attention depends only on a layer's window, the FFN side only on its kind: cost each distinct
        # one once and weight it by its layer count (DeepSeek's 3 dense + 58 MoE layers share attention).
        for side, group, count in self.builders:
            for op in self.build_ops(side, group, shape):
                if side == "attention" and self.kv_host_fraction > 0 and op.kind == "attention_decode":
                    op, host_bytes = self._offload(op, group, shape)
                    exposed = (1.0 - self.kv_host_overlap) * host_bytes / self.host_bandwidth
                    out.comm["kv_host_read"] = out.comm.get("kv_host_read", 0.0) + count * exposed
                ops.append((op, count))
        out.comm.update(self.step_comm(shape))  # message names differ from "kv_host_read"
        out.ops = [(op.op_class, parts, count)
                   for (op, count), parts in zip(ops, self._costs([op for op, _ in ops]), strict=True)]
        out.context_ops = [j for j, (op, _) in enumerate(ops) if op.name in CONTEXT_OPS]
        return out

    def decode_attention_parts(self, n_decode, context) -> PartSums:
        """Decode attention cores (and DSA indexers) alone, summed over layers: the context-dependent
        part of a step [s]."""
        par = self.parallel
        n = np.asarray(n_decode, dtype=float) / (par.pp if par.pp > 1 else 1)
        shape = StepShape.make(n_decode=n, context=context)
        comp = mem = tot = 0.0
        for group in self._attention_groups:
            if group.mixer != "attention":  # a recurrent step does not depend on the context
                continue
            ops = [decode_attention_op(self.model, group, par, self.precision, shape)]
            if self.model.sparse_attention is not None:
                ops.append(indexer_decode_op(self.model, par, self.precision, shape))
            for op in ops:
                parts = self._op_parts(op)
                comp = comp + group.count * parts.compute
                mem = mem + group.count * parts.memory
                tot = tot + group.count * parts.total
        return PartSums(np.asarray(comp), np.asarray(mem), np.asarray(tot))

    def decode_attention_time(self, n_decode, context) -> np.ndarray:
        """Time of the decode attention cores alone, summed over layers [s]."""
        return self.decode_attention_parts(n_decode, context).total

    def breakdown_part(self, shape: StepShape, part: str) -> StepBreakdown:
        """Time parts of one side of a step, for placing attention and FFN on different pools [s].

        The three parts add up to :meth:`breakdown` (``pp == 1``):

        - ``"attention"``: per layer, the attention projections and core, the MoE router (gating runs
          next to attention, so the FFN side receives tokens already routed), the add + norm traffic
          and the attention TP all-reduce;
        - ``"ffn"``: per layer, the dense FFN or the routed and shared experts, the activation
          function and the FFN/MoE collectives of this layout (all-reduce, all-gather +
          reduce-scatter, or dispatch + combine all-to-all);
        - ``"head"``: the embedding, LM head and sampling once, plus the framework step overhead.

        Parameters
        ----------
        shape : StepShape
            Work of the step (all arrays broadcast together).
        part : {"attention", "ffn", "head"}
            Side to keep.

        Raises
        ------
        ConfigError
            ``pp > 1`` (a split places whole layers' halves on pools, not pipeline stages) or an
            unknown part.
        """
        if part not in ("attention", "ffn", "head"):
            raise ConfigError(f"part: expected 'attention', 'ffn' or 'head', got {part!r}")
        par, model, prec = self.parallel, self.model, self.precision
        if par.pp > 1:
            raise ConfigError(f"breakdown_part needs pp == 1 (got pp={par.pp})")
        out = StepBreakdown(step_overhead=self.efficiency.step_overhead if part == "head" else 0.0)
        if part == "head":
            for op in embedding_head_ops(model, par, prec, shape):
                out.add_op(op.op_class, self._op_parts(op), 1.0)
            return out
        for group in model.layer_groups:
            ffn = ffn_ops(model, group, par, prec, shape, self.expert_imbalance)
            if part == "attention":
                ops = attention_ops(model, group, par, prec, shape) + [o for o in ffn if o.name == "router"]
            else:
                ops = [o for o in ffn if o.name != "router"]
            ops.append(elementwise_op(model, group, par, prec, shape, part=part))
            for op in ops:
                if self.kv_host_fraction > 0 and op.kind == "attention_decode":
                    op, host_bytes = self._offload(op, group, shape)
                    exposed = (1.0 - self.kv_host_overlap) * host_bytes / self.host_bandwidth
                    out.comm["kv_host_read"] = out.comm.get("kv_host_read", 0.0) + group.count * exposed
                out.add_op(op.op_class, self._op_parts(op), group.count)
            for msg in layer_messages(model, group, par, prec, shape):
                if (msg.name == "attn_allreduce") == (part == "attention"):
                    out.comm[msg.name] = out.comm.get(msg.name, 0.0) + group.count * self._message_time(msg)
        return out

    def step_time(self, n_decode=0.0, mean_context=0.0, prefill_tokens=0.0, prefill_past=0.0):
        """Latency of one forward step [s] (numpy broadcasting).

        Parameters
        ----------
        n_decode : array_like
            Decoding sequences in the step.
        mean_context : array_like
            Mean tokens attended per decoding sequence (the new one included).
        prefill_tokens : array_like
            New prompt tokens in the step (one chunk).
        prefill_past : array_like
            Tokens of that prompt already cached before the chunk.
        """
        pre = np.asarray(prefill_tokens, dtype=float)
        shape = StepShape.make(n_decode, mean_context, (pre > 0).astype(float), pre, prefill_past)
        sums = self.plan_totals(shape)
        return self.breakdown(shape).total if sums is None else sums.total

    def __repr__(self) -> str:
        return (f"StepModel({self.model.id} on {self.parallel.devices}x {self.hardware.id}, "
                f"{self.parallel.label()}, {self.precision.label()}, efficiency={self.efficiency.name})")
