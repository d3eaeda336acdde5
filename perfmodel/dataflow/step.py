"""Decode and prefill on a statically scheduled machine: layers pipelined over chips, TP within a stage.

A replica is ``pp`` stages of ``tp`` chips (:mod:`.memory` places the weights). With l layers on the
most loaded stage, one micro-batch of m sequences crosses a stage in

.. math::
    t_{stage}(m) = \\sum_{layers}\\Big[\\sum_{ops}\\max\\Big(\\frac{F_{op}}{P\\,\\eta_c/s},
                   \\frac{D_{op}}{B_{tier}\\,\\eta/s}\\Big) + t_{sync}(m)\\Big] + t_{head}(m)

where F and D are the op's FLOPs and bytes on one chip (the ops of :mod:`perfmodel.core.ops`),
P the datasheet peak of the compute format, :math:`B_{tier}` the bandwidth of the tier the bytes
come from (weights and activations: the weight tier, or the spill blend; attention's KV reads: the
KV tier), η the architecture's fitted ``stream_efficiency``, :math:`\\eta_c` its sourced compute
efficiency, and s the share: 1 when a chip runs its layers one after the other (``temporal``),
l when every layer owns 1/l of the chip (``spatial``, a wafer). :math:`t_{sync}` is the layer's
tensor-parallel collectives (two all-reduces of m·h activations for a dense layer) on the chip
network's topology, :math:`t_{head}` the LM head on the last stage; :math:`t_{layer}` below is
the stage's layer work per layer, :math:`(t_{stage} - t_{head})/l`. An architecture that keeps
streaming weights while the collectives run (``sync_hidden_by_stream``, SN40L) takes the larger of
the ops and compute + sync instead of their sum. There is **no** per-kernel launch, minimum kernel
time or per-step framework overhead: the schedule is compiled.

A token of one sequence crosses every stage and every hand-off (pp − 1 forward and one back to the
first stage for the next token, each :math:`h\\,\\alpha_h + m h b_a / B_{link}` with h the hops
between the chips of two adjacent stages):

.. math:: TPOT(b) = \\Lambda(b)\\,t_{layer}(m) + t_{head}(m) + [pp > 1]\\,pp\\,t_{hop}(m), \\qquad
          m = \\lceil b / D \\rceil

with D the micro-batches in flight (one per stage, or one per layer for ``spatial``) and
:math:`\\Lambda` the layer-times a token waits for: L while b < D (stages idle; a batch below D does
not make a token faster), pp·l once the pipeline is full (every stage then advances at the pace of
the most loaded one, working on m sequences at once). Per-user speed is 1/TPOT; replica throughput
b/TPOT.

TTFT is one prompt of ``isl`` tokens through every stage, no chunk pipelining (an upper bound).
With ``spec_decode`` (a separate draft model, :mod:`.speculative`) TPOT is the speculative step over
the tokens it emits, and the TPOT terms are those of the verification pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..core import topology
from ..core.ops import StepShape, attention_ops, elementwise_op, ffn_ops, layer_messages
from ..core.parallel import Parallel
from ..core.roofline import message_time
from ..errors import ConfigError
from ..formats import resolve_formats
from ..modelspec import ModelSpec, load_model
from ..precision import Precision
from .arch import DataflowArch, load_arch
from .memory import ChipMemory, _pipeline_depth, chip_memory, layers_per_stage
from .speculative import as_spec_decode, draft_model, speculative_decode


def dataflow_parallel(model: ModelSpec, tp: int, pp: int) -> Parallel:
    """Layout of a dataflow replica: tp chips per stage (experts tensor-split over them), pp stages.

    A compiled schedule may split a layer over more chips than it has attention heads by cutting
    each head's width as well, so tp may also be a multiple of the head count (dividing
    heads × head_dim); KV heads are then replicated, at least one per chip.
    """
    heads = model.num_attention_heads
    if tp > heads and tp % heads == 0 and (heads * model.head_dim) % tp == 0:
        Parallel.build(model, tp=heads, pp=pp)  # validates pp and the rest at the head count
        return Parallel(tp=tp, pp=pp, moe_tp=tp)
    return Parallel.build(model, tp=tp, pp=pp)


@dataclass
class StageParts:
    """Time of one stage for one micro-batch, by term [s] (arrays over points).

    ``overlap``: the architecture keeps streaming weights while a layer's collectives run
    (``sync_hidden_by_stream``), so the layer work is max(ops, compute + sync) instead of ops + sync.
    """

    compute: np.ndarray
    stream: np.ndarray
    total_ops: np.ndarray
    sync: np.ndarray
    head: np.ndarray
    overlap: bool = False

    @property
    def work(self) -> np.ndarray:
        """Layer work of the stage: ops + sync, or max(ops, compute + sync) with ``overlap`` [s]."""
        if self.overlap:
            return np.maximum(self.total_ops, self.compute + self.sync)
        return self.total_ops + self.sync

    @property
    def exposed_sync(self) -> np.ndarray:
        """The part of the collectives' time that the layer work does not hide [s]."""
        return self.work - self.total_ops

    @property
    def total(self) -> np.ndarray:
        return self.work + self.head


class DataflowModel:
    """A model replica on a statically scheduled machine (see the module docstring).

    Parameters
    ----------
    model : str | ModelSpec
    hardware : str | DataflowArch
        Architecture id or its accelerator id (``groq-lpu``, ``groq-lp30``, ``cerebras-wse3``,
        ``sambanova-sn40l``).
    tp, pp : int
        Chips per stage and stages.
    weights, activations, kv_cache : str, optional
        Formats, as in :class:`perfmodel.StepModel` (default: :mod:`perfmodel.formats`).
    stream_efficiency : float, optional
        Override of the architecture's fitted η (for fitting and what-ifs).
    """

    def __init__(self, model: str | ModelSpec, hardware: str | DataflowArch, tp: int = 1, pp: int = 1,
                 weights: str | None = None, activations: str | None = None, kv_cache: str | None = None,
                 stream_efficiency: float | None = None) -> None:
        self.model = model if isinstance(model, ModelSpec) else load_model(model)
        weights, kv_cache = resolve_formats(model, self.model, weights, kv_cache)
        self.arch = load_arch(hardware)
        self.chip = self.arch.chip
        self.parallel = dataflow_parallel(self.model, tp, pp)
        if tp * pp > 1 and self.arch.network is None:
            raise ConfigError(f"tp*pp = {tp * pp}: {self.arch.id} declares no chip-to-chip link")
        self.precision = Precision.of(weights, activations, kv_cache)
        self.peak = self.chip.peak_flops(self.precision.compute) * self.arch.compute_efficiency
        try:
            self.vector_peak = self.chip.peak_flops("bf16") * self.arch.compute_efficiency
        except KeyError:
            self.vector_peak = self.peak
        eta = self.arch.stream_efficiency.value if stream_efficiency is None else stream_efficiency
        if not 0 < eta <= 1:
            raise ConfigError(f"stream_efficiency: must be in (0, 1], got {eta}")
        self.eta = eta
        self.layers = layers_per_stage(self.model, pp)
        self.share = float(self.layers) if self.arch.execution == "spatial" else 1.0
        self.depth = _pipeline_depth(self.model, self.parallel, self.arch)
        net = self.arch.network
        self.topology = net.network() if net is not None else None
        self.link_bandwidth = self.arch.link_bandwidth() if net is not None else np.inf
        self.link_alpha = net.alpha.value if net is not None else 0.0

    # ------------------------------------------------------------------ memory
    def memory(self, sequences, context) -> ChipMemory:
        """Per-tier memory of the most loaded chip with ``sequences`` of ``context`` tokens [B]."""
        return chip_memory(self.model, self.parallel, self.precision, self.arch, sequences, context)

    # ------------------------------------------------------------------ time
    def _collective(self, kind: str, size, n: int) -> np.ndarray:
        if n <= 1:
            return np.zeros_like(np.asarray(size, dtype=float))
        if self.topology is not None:
            return topology.collective_time(kind, size, n, self.link_bandwidth, self.topology)
        from ..core import comm

        fn = {"all_reduce": comm.all_reduce_time, "all_gather": comm.all_gather_time,
              "reduce_scatter": comm.reduce_scatter_time, "all_to_all": comm.all_to_all_time}[kind]
        return fn(size, n, self.link_bandwidth, self.link_alpha)

    def hand_off_time(self, tokens) -> np.ndarray:
        """One stage-to-stage hand-off of ``tokens`` activations [s]: hops·α_h + T h b_a / B."""
        size = np.asarray(tokens, dtype=float) * self.model.hidden_size * self.precision.act_bytes
        if self.topology is not None:
            hops = max(topology.diameter(self.topology, 2 * self.parallel.tp), 1)
            return topology.p2p_time(size, self.link_bandwidth, self.topology, hops)
        return message_time(size, self.link_bandwidth, self.link_alpha)

    def stage_parts(self, shape: StepShape, weight_bandwidth: float) -> StageParts:
        """One micro-batch through the most loaded stage (module docstring) [s]."""
        par, model, prec = self.parallel, self.model, self.precision
        kv_bw = self.chip.memory[self.arch.kv_tier].bandwidth.value
        comp = stream = ops_t = sync = 0.0
        scale = self.layers / model.num_layers  # the stage holds its share of every layer group
        for g in model.layer_groups:
            ops = attention_ops(model, g, par, prec, shape) + ffn_ops(model, g, par, prec, shape)
            ops.append(elementwise_op(model, g, par, prec, shape))
            for op in ops:
                if op.moe is not None and self.arch.moe_experts == "all":
                    op = self._all_experts(op)
                bw = kv_bw if op.kind == "attention_decode" else weight_bandwidth
                peak = self.peak if op.kind == "gemm" else self.vector_peak
                c = np.asarray(op.flops, float) / (peak / self.share)
                m = np.asarray(op.bytes, float) / (bw * self.eta / self.share)
                w = g.count * scale
                comp, stream, ops_t = comp + w * c, stream + w * m, ops_t + w * np.maximum(c, m)
            for msg in layer_messages(model, g, par, prec, shape):
                sync = sync + g.count * scale * self._collective(msg.kind, msg.size, msg.ranks)
        # LM head on the last stage: logits of every sequence, vocabulary split over tp
        logits = shape.n_decode + shape.n_prefill
        v = model.vocab_size / par.tp
        table = prec.weights.bytes if self.arch.tables_in_weight_format else 2.0
        head_c = 2.0 * logits * model.hidden_size * v / self.peak
        head_m = np.where(logits > 0, v * model.hidden_size * table, 0.0) / (weight_bandwidth * self.eta)
        head = np.maximum(head_c, head_m)
        return StageParts(np.asarray(comp), np.asarray(stream), np.asarray(ops_t), np.asarray(sync),
                          np.asarray(head), overlap=self.arch.sync_hidden_by_stream)

    def _all_experts(self, op):
        """The experts op streaming every local expert's weights (``moe_experts: all``)."""
        moe, x = self.model.moe, op.moe
        assert moe is not None
        every = moe.num_experts / self.parallel.experts_ep(moe.num_experts) * x.matrices * self.model.hidden_size * x.inter * (
            self.precision.weights.bytes)
        present = np.asarray(x.tokens, float) > 0
        return replace(op, bytes=op.bytes - op.weight_bytes + np.where(present, every, 0.0),
                       weight_bytes=np.where(present, every, 0.0))

    def micro_batch(self, batch) -> np.ndarray:
        """Sequences per micro-batch: :math:`\\lceil b / D \\rceil` (at least 1)."""
        return np.maximum(np.ceil(np.asarray(batch, dtype=float) / self.depth), 1.0)

    def layers_crossed(self, batch) -> np.ndarray:
        """Layer-times a token waits for: L while the pipeline is not full (b < D), else pp·l.

        With fewer sequences than micro-batch slots a token crosses each layer once; with a full
        pipeline every stage advances at the pace of the most loaded one (l layers).
        """
        full = np.asarray(batch, dtype=float) >= self.depth
        return np.where(full, float(self.parallel.pp * self.layers), float(self.model.num_layers))

    def decode(self, batch, context, weight_bandwidth: float | None = None,
               tokens_per_sequence: int = 1) -> dict[str, np.ndarray]:
        """TPOT and its terms for ``batch`` sequences at ``context`` tokens [s] (module docstring).

        ``tokens_per_sequence`` q > 1 is a speculative verification pass: each sequence's q tokens
        travel in its micro-batch (m·q tokens through every op and hand-off; the weights are read
        once). Attention reads the KV cache once per token here, q times per sequence: an overcount
        of (q − 1)·KV per sequence and layer, small beside the weights at short context.
        """
        bw = weight_bandwidth or self.chip.memory[self.arch.weights_tier].bandwidth.value
        if not isinstance(tokens_per_sequence, int) or tokens_per_sequence < 1:
            raise ConfigError(f"tokens_per_sequence: must be an integer >= 1, got {tokens_per_sequence!r}")
        m = self.micro_batch(batch)
        tokens = m * tokens_per_sequence
        parts = self.stage_parts(StepShape.make(n_decode=tokens, context=context), bw)
        pp = self.parallel.pp
        hops = pp * self.hand_off_time(tokens) if pp > 1 else np.zeros_like(m)
        per = self.layers_crossed(batch) / self.layers  # stage-times of layer work per token
        total = per * parts.work + parts.head + hops
        return {"tpot_s": total, "stream_s": per * parts.stream, "compute_s": per * parts.compute,
                "ops_s": per * parts.total_ops, "sync_s": per * parts.exposed_sync, "head_s": parts.head,
                "hand_off_s": hops, "micro_batch": m}

    def prefill(self, isl, weight_bandwidth: float | None = None) -> np.ndarray:
        """TTFT of one prompt of ``isl`` tokens on an idle replica [s] (module docstring)."""
        bw = weight_bandwidth or self.chip.memory[self.arch.weights_tier].bandwidth.value
        i = np.asarray(isl, dtype=float)
        parts = self.stage_parts(StepShape.make(n_prefill=1.0, chunk=i), bw)
        pp = self.parallel.pp
        hops = (pp - 1) * self.hand_off_time(i) if pp > 1 else 0.0
        per = self.model.num_layers / self.layers  # one prompt crosses every layer once
        return per * parts.work + parts.head + hops

    def __repr__(self) -> str:
        return (f"DataflowModel({self.model.id} on {self.arch.id}, tp{self.parallel.tp}-pp{self.parallel.pp}, "
                f"{self.precision.label()}, eta={self.eta:.4g})")


@dataclass
class DataflowPrediction:
    """Static-batch prediction on a dataflow machine: a table over operating points and the memory.

    ``columns`` holds arrays (batch, isl, osl, ttft_s, tpot_s, e2e_s, per_user_tokens_per_s,
    output_tokens_per_s, output_tokens_per_s_per_device, fits, fit_reason, the TPOT terms and per-tier
    memory per device [B]);
    ``config`` the layout and the architecture's assumptions.
    """

    columns: dict[str, np.ndarray]
    config: dict = field(default_factory=dict)
    memory: ChipMemory | None = None

    def to_dataframe(self) -> pd.DataFrame:
        cols = {k: np.ravel(v) for k, v in self.columns.items()}
        n = max(len(v) for v in cols.values())
        df = pd.DataFrame({k: np.broadcast_to(v, (n,)) if len(v) == 1 else v for k, v in cols.items()})
        for k in ("hardware", "layout", "devices", "replicas", "precision"):
            df[k] = self.config[k]
        return df

    def __getattr__(self, name: str):
        cols = self.__dict__.get("columns", {})
        if name in cols:
            return cols[name]
        raise AttributeError(name)


def _contexts(isl, osl) -> np.ndarray:
    lo = isl + 1.0
    hi = np.maximum(isl + osl - 1.0, lo)
    return np.stack([lo, 0.5 * (lo + hi), hi])


def predict_dataflow(model: str | ModelSpec, hardware: str | DataflowArch, tp: int = 1, pp: int = 1,
                     isl=1024, osl=128, batch=1, weights: str | None = None,
                     activations: str | None = None, kv_cache: str | None = None, replicas: int = 1,
                     stream_efficiency: float | None = None, spec_decode=None) -> DataflowPrediction:
    """TTFT, TPOT, per-user speed, throughput and per-chip memory on a dataflow machine.

    TPOT is averaged over the output by Simpson's rule (contexts isl+1, midpoint, isl+osl−1), as in
    :func:`perfmodel.predict`; E2E = TTFT + (osl − 1)·TPOT. ``batch`` is sequences per replica;
    ``replicas`` multiplies the throughput (devices = replicas·tp·pp). Weights beyond the weight
    tier go to the architecture's spill tier, which slows their reads (:mod:`.memory`).
    ``spec_decode`` (``"draft:llama-3.2-1b,k=4,accept=0.8"``, a mapping or a
    :class:`~perfmodel.engine.speculative.SpecDecode`) adds a separate draft model on the same chips,
    its weights and KV next to the target's weights (:mod:`.speculative`; the acceptance is the
    user's, a what-if).
    """
    dm = DataflowModel(model, hardware, tp=tp, pp=pp, weights=weights, activations=activations,
                       kv_cache=kv_cache, stream_efficiency=stream_efficiency)
    spec = as_spec_decode(spec_decode)
    b, i, o = (np.array(x, dtype=float) for x in np.broadcast_arrays(batch, isl, osl))
    if np.any(b < 1) or np.any(i < 1) or np.any(o < 1):
        raise ConfigError(f"batch, isl, osl: must be >= 1, got {batch!r}, {isl!r}, {osl!r}")
    mem = dm.memory(b, i + o)
    extra: dict[str, np.ndarray] = {}
    if spec is not None:
        held = draft_model(dm, spec).memory(b, i + o)
        tier = dm.arch.weights_tier
        mem = replace(mem, used={**mem.used, tier: mem.used[tier] + held.weights + held.kv})
        extra["draft_bytes_per_device"] = np.broadcast_to(held.weights + held.kv, b.shape)
    ctx = _contexts(i, o)
    q = 1 if spec is None else spec.k + 1
    dec = dm.decode(b, ctx, mem.weight_bandwidth, tokens_per_sequence=q)
    if spec is not None:
        s = speculative_decode(dm, spec, b, ctx, mem.weight_bandwidth)
        dec = {**dec, "tpot_s": s["tpot_s"], "verify_s": s["verify_s"], "draft_s": s["draft_s"]}
        extra["expected_tokens"] = np.broadcast_to(s["expected_tokens"], b.shape)
    dec = {k: np.broadcast_to(v, ctx.shape) for k, v in dec.items()}
    simpson = {k: (v[0] + 4.0 * v[1] + v[2]) / 6.0 for k, v in dec.items() if k != "micro_batch"}
    ttft = dm.prefill(i, mem.weight_bandwidth)
    tpot = simpson["tpot_s"]
    e2e = ttft + (o - 1.0) * tpot
    cols = {"batch": b, "isl": i, "osl": o, "ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e,
            "per_user_tokens_per_s": 1.0 / tpot, "output_tokens_per_s": replicas * b * o / e2e,
            "decode_tokens_per_s": replicas * b / tpot,
            "output_tokens_per_s_per_device": b * o / e2e / (tp * pp), "fits": mem.fits, "fit_reason": mem.reason(),
            **{k: v for k, v in simpson.items() if k != "tpot_s"}, "micro_batch": dec["micro_batch"][1],
            "weights_bytes_per_device": np.broadcast_to(mem.weights, b.shape),
            "kv_bytes_per_device": mem.kv, "spill_bytes_per_device": np.broadcast_to(mem.spill_bytes, b.shape),
            **{f"{t}_used_bytes_per_device": np.broadcast_to(u, b.shape) for t, u in mem.used.items()}, **extra}
    cfg = {"hardware": dm.arch.id, "layout": f"tp{tp}-pp{pp}", "tp": tp, "pp": pp, "replicas": replicas,
           "devices": replicas * tp * pp, "precision": dm.precision.label(), "execution": dm.arch.execution,
           "stream_efficiency": dm.eta, "fitted_on": dm.arch.stream_efficiency.fitted_on,
           "tiers": mem.tiers, "basis": "analytic-dataflow",
           "spec_decode": None if spec is None else f"{spec.label()} ({spec.acceptance_source})"}
    return DataflowPrediction(cols, cfg, mem)
