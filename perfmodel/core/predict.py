"""Phases and metrics: prefill → TTFT, decode → TPOT, E2E and throughputs, with breakdowns.

For a static batch of ``batch`` sequences of ``isl`` prompt tokens and ``osl`` output tokens:

- TTFT = time of one prefill step of the whole batch (includes the first token's LM head and
  sampling). *No queueing*: this is the latency floor of an idle replica; see
  :mod:`perfmodel.serving` for load.
- TPOT = mean decode step time as the context grows from isl+1 to isl+osl−1, by Simpson's rule over
  three contexts (exact when step time is linear in context; only decode attention depends on it).
- E2E = TTFT + (osl − 1)·TPOT.
- output tokens/s = batch·osl / E2E (the static batch, prefill included); decode tokens/s =
  batch / TPOT; per-user tokens/s = 1 / TPOT; per-device = output tokens/s / devices.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..checks import MAX_COUNT, broadcast, counts
from ..errors import ConfigError
from ..precision import label_fields
from .breakdown import StepBreakdown, dominant_term
from .memory import static_batch_budget
from .ops import StepShape
from .roofline import e2e_latency
from .step import STACK_POINTS, StepModel
from .step_cache import cached_step_model

if TYPE_CHECKING:
    import pandas as pd


def _positive_array(name: str, value: Any) -> np.ndarray:
    """Whole numbers >= 1 (scalar or array, float64); see :func:`perfmodel.checks.counts`."""
    if type(value) is int and 1 <= value <= MAX_COUNT:  # the scalar case, valid as it stands
        return np.asarray(value, dtype=float)
    return counts(value, name)


def check_context(model: Any, isl: np.ndarray, osl: np.ndarray) -> None:
    """Refuse requests whose context (isl + osl - 1 tokens) exceeds the model's declared maximum.

    Raises
    ------
    ConfigError
        Names the largest offending isl/osl and the model's ``max_position_embeddings``.
    """
    limit = getattr(model, "max_position_embeddings", None)
    if not limit:
        return
    context = isl + osl - 1
    if (context > limit).any():
        isl, osl = (np.ravel(x) for x in np.broadcast_arrays(isl, osl))
        context = isl + osl - 1
        i = int(np.argmax(context))
        raise ConfigError(f"isl + osl: a context of {int(isl[i])} + {int(osl[i])} tokens exceeds {model.id}'s "
                          f"maximum of {limit} tokens (max_position_embeddings); allowed: isl + osl - 1 <= {limit}")


@dataclass
class Prediction:
    """Predicted metrics over operating points (arrays of the broadcast shape, SI units).

    Use :meth:`to_dataframe` for a table, :meth:`breakdown` for the per-op-class split, and
    :meth:`records` for JSON-ready dicts.
    """

    batch: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    output_tokens_per_s: np.ndarray
    decode_tokens_per_s: np.ndarray
    total_tokens_per_s: np.ndarray
    per_user_tokens_per_s: np.ndarray
    output_tokens_per_s_per_device: np.ndarray
    fits: np.ndarray
    fit_reason: np.ndarray
    weights_bytes_per_device: float
    kv_bytes_per_device: np.ndarray
    memory_used_bytes_per_device: np.ndarray
    memory_capacity_bytes: float
    max_batch_at_context: np.ndarray
    prefill_bound: np.ndarray
    decode_bound: np.ndarray
    devices: int
    config: dict[str, Any]
    #: Forms :attr:`stacked_parts` (the per-op breakdown is formed on first use only).
    parts_of: Callable[[], StepBreakdown] = field(repr=False)

    @functools.cached_property
    def stacked_parts(self) -> StepBreakdown:
        """Per op class parts of the prefill step (row 0) and the mid-output decode step (row 1)."""
        return self.parts_of()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its parts formed (the function that forms them may not pickle)."""
        return {**self.__dict__, "stacked_parts": self.stacked_parts, "parts_of": None}

    @property
    def per_device_tokens_per_s(self) -> np.ndarray:
        """Deprecated name of :attr:`output_tokens_per_s_per_device` (warns; removed next release)."""
        from ..metrics_vocabulary import deprecated_attribute

        return getattr(self, deprecated_attribute("Prediction", "per_device_tokens_per_s"))

    @property
    def prefill_parts(self) -> StepBreakdown:
        """Per op class parts of the prefill step (first operating point of the first chunk)."""
        return self.stacked_parts.select(0)

    @property
    def decode_parts(self) -> StepBreakdown:
        """Per op class parts of the mid-output decode step (as :attr:`prefill_parts`)."""
        return self.stacked_parts.select(1)

    COLUMNS = (
        "batch", "isl", "osl", "ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "decode_tokens_per_s",
        "total_tokens_per_s", "per_user_tokens_per_s", "output_tokens_per_s_per_device", "fits", "fit_reason",
        "weights_bytes_per_device", "kv_bytes_per_device", "memory_used_bytes_per_device",
        "max_batch_at_context", "prefill_bound", "decode_bound",
    )

    def to_dataframe(self) -> pd.DataFrame:
        """One row per operating point, columns in SI units (suffixes _s, _bytes, _per_s)."""
        import pandas as pd  # imported on use: `predict` itself does not need pandas

        shape = np.broadcast_shapes(*(np.shape(getattr(self, c)) for c in self.COLUMNS))
        cols = {c: np.broadcast_to(getattr(self, c), shape).ravel() for c in self.COLUMNS}
        df = pd.DataFrame(cols)
        for k in ("model", "hardware", "devices", "parallel", "precision", "efficiency"):
            df[k] = self.config[k] if k != "devices" else self.devices
        df["engine"] = self.config.get("engine")  # which serving engine's terms, for reports and titles
        return df

    def records(self) -> list[dict[str, Any]]:
        """JSON-ready dicts (one per operating point) with the config fields."""
        df = self.to_dataframe()
        for int_col in ("batch", "isl", "osl"):
            df[int_col] = df[int_col].astype(int)
        recs = df.to_dict(orient="records")
        formats = label_fields(self.config["precision"])
        for r in recs:
            del r["precision"]
            r.update(formats)
            r["efficiency_fallback"] = self.config["efficiency_fallback"]
            r["basis"] = self.config["basis"]
            r["engine"] = self.config.get("engine")
            r["spec_decode"] = self.config.get("spec_decode", "off")
            if self.config.get("engine_kv_cache_tokens") is not None:
                r["engine_kv_cache_tokens"] = self.config["engine_kv_cache_tokens"]
        return recs

    def breakdown(self, point: int | None = None) -> pd.DataFrame:
        """Time per operating point, phase and op class [s]: compute, memory, overhead parts and the total.

        Parameters
        ----------
        point : int, optional
            Index of one operating point (in :meth:`to_dataframe`'s row order); default: every point.

        Returns
        -------
        pandas.DataFrame
            Columns ``batch``, ``isl``, ``osl``, ``phase``, ``op_class``, ``compute_s``, ``memory_s``,
            ``overhead_s``, ``time_s``; rows by point, then phase (the prefill step of the whole batch,
            the decode step at the mid-output context), then op class. Communication rows
            (``comm:NAME``) give each collective's time; ``framework`` the per-step overhead. For
            each point and phase ``time_s`` sums to that step's time.

        Raises
        ------
        ConfigError
            ``point`` outside the prediction's points, or a point whose parts were not kept: a grid
            of 64 points or more takes a faster path that keeps the parts of its first point only.
        """
        import pandas as pd

        shape = np.broadcast_shapes(*(np.shape(getattr(self, c)) for c in ("batch", "isl", "osl")))
        n = int(np.prod(shape))
        kept = _points_kept(self.stacked_parts)
        points = range(n) if point is None else [point]
        if point is not None and not (isinstance(point, (int, np.integer)) and not isinstance(point, bool)
                                      and 0 <= point < n):
            raise ConfigError(f"point: expected an index 0 to {n - 1} of this prediction's {n} points, got {point!r}")
        if max(points) >= kept:
            raise ConfigError(f"point: this prediction of {n} operating points kept the per-op parts of its first "
                              f"{kept} only (grids of 64 points or more take a faster path); pass point=0, or "
                              f"predict the points you want broken down in calls of fewer points")
        where = {c: np.broadcast_to(getattr(self, c), shape).ravel() for c in ("batch", "isl", "osl")}
        rows = []
        for k in points:
            at = {c: float(v[k]) for c, v in where.items()}
            for phase, parts in (("prefill", self.prefill_parts), ("decode", self.decode_parts)):
                for cls, total in parts.op_total.items():
                    rows.append({**at, "phase": phase, "op_class": cls, "compute_s": _at(parts.compute[cls], k),
                                 "memory_s": _at(parts.memory[cls], k), "overhead_s": _at(parts.overhead[cls], k),
                                 "time_s": _at(total, k)})
                for name, t in parts.comm.items():
                    rows.append({**at, "phase": phase, "op_class": f"comm:{name}", "compute_s": 0.0,
                                 "memory_s": 0.0, "overhead_s": 0.0, "time_s": _at(t, k)})
                if parts.step_overhead:
                    rows.append({**at, "phase": phase, "op_class": "framework", "compute_s": 0.0, "memory_s": 0.0,
                                 "overhead_s": parts.step_overhead, "time_s": parts.step_overhead})
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        c = self.config
        head = (f"Prediction: {c['model']} on {self.devices}x {c['hardware']} ({c['parallel']}, "
                f"{c['precision']}, efficiency={c['efficiency']}); TTFT excludes queueing")
        from ..tables import UNFIT_WHY_PY, points_table

        metrics = ["ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "per_user_tokens_per_s"]
        return head + "\n" + points_table(self.records(), ["batch", "isl", "osl", *metrics, "fits", "decode_bound"],
                                          metrics, UNFIT_WHY_PY)

    def _repr_html_(self) -> str:
        c = self.config
        return (f"<p><b>{c['model']}</b> on {self.devices}× <b>{c['hardware']}</b> ({c['parallel']}, "
                f"{c['precision']}, efficiency: {c['efficiency']}). TTFT excludes queueing.</p>"
                + self.to_dataframe().to_html(index=False, float_format=lambda v: f"{v:.4g}"))


def _at(x, k: int) -> float:
    """Point ``k`` of a part (a scalar part is the same at every point)."""
    flat = np.ravel(x)
    return float(flat[k] if flat.size > 1 else flat[0])


def _points_kept(parts: StepBreakdown) -> int:
    """How many operating points a prediction's stacked parts hold (1 when they are scalars)."""
    sizes = [np.size(v) for v in parts.select(0).op_total.values()]
    return max(sizes, default=1)


#: Operating points evaluated per numpy pass: small enough for the temporaries to stay in cache.
CHUNK = 16384


def _phase_times(sm: StepModel, b: np.ndarray, i: np.ndarray, o: np.ndarray):
    """TTFT, TPOT, bounds and the breakdowns (a function that forms them) for 1-D arrays of operating
    points (the definition).

    One vectorised pass over two stacked shapes: the prefill step and the decode step at the
    midpoint context. Only decode attention depends on the context, so Simpson's rule over the
    contexts isl+1, midpoint, isl+osl-1 needs that op alone at the two ends:
    (t_lo + 4 t_mid + t_hi)/6 = t_mid + (a_lo + a_hi - 2 a_mid)/6. With a KV host-offload share the
    host read depends on the context too, so the three decode steps are evaluated in full. For a few
    points (a scalar ``predict``) the two end steps are stacked as two more rows and the attention read
    from the breakdown (the same op costs, summed in the same order: bit-identical); there the step
    model's compiled plan (:mod:`perfmodel.core.plan`) forms the totals, bounds and attention times
    without the per-op breakdown, which is formed only if the prediction's parts are asked for.
    """
    c_lo, c_mid, c_hi = _contexts(i, o)
    zero = np.zeros(b.shape)
    # few points: the decode steps at the two end contexts ride along as rows 2 and 3 (the numpy calls
    # cost the same for 2 or 4 rows), and the decode attention is read from them
    with_ends = sm.kv_host_fraction == 0 and b.size <= STACK_POINTS
    plan = sm.reused_plan() if with_ends and b.ndim == 1 else None
    if plan is not None:  # the totals alone, from the compiled plan; the parts when a caller asks for them
        cat = np.concatenate
        sums = plan.totals(StepShape(cat((zero, b, b, b)), cat((zero, c_mid, c_lo, c_hi)), cat((b, zero, zero, zero)),
                                     cat((i, zero, zero, zero)), np.zeros(4 * b.size)))
        rows = (4,) + b.shape
        steps, att, bounds = (x.reshape(rows) if x.size == 4 * b.size else np.broadcast_to(x, rows)
                              for x in (sums.total, sums.context, sums.bound()))
        tpot = steps[1] + (att[2] + att[3] - 2.0 * att[1]) / 6.0

        def parts_of() -> StepBreakdown:
            return sm.breakdown(StepShape.make(n_decode=np.array([zero, b, b, b]),
                                               context=np.array([zero, c_mid, c_lo, c_hi]),
                                               n_prefill=np.array([b, zero, zero, zero]),
                                               chunk=np.array([i, zero, zero, zero])))

        return steps[0], tpot, bounds[0], bounds[1], parts_of
    more = 2 if with_ends else 0
    stacked = StepShape.make(n_decode=np.array([zero, b, b, b][: 2 + more]),
                             context=np.array([zero, c_mid, c_lo, c_hi][: 2 + more]),
                             n_prefill=np.array([b, zero, zero, zero][: 2 + more]),
                             chunk=np.array([i, zero, zero, zero][: 2 + more]))
    rows = stacked.n_decode.shape
    parts = sm.breakdown(stacked)
    steps = _as_shape(parts.total, rows)
    if sm.kv_host_fraction > 0:
        ends = sm.breakdown(StepShape.make(n_decode=np.stack([b, b]), context=np.stack([c_lo, c_hi]))).total
        tpot = (ends[0] + 4.0 * steps[1] + ends[1]) / 6.0
    else:
        if with_ends:  # rows lo, mid, hi of the breakdown's own decode attention cores
            att = _as_shape(parts.context_total(), rows)[[2, 1, 3]]
        else:
            att = sm.decode_attention_time(b, np.stack([c_lo, c_mid, c_hi]))
        tpot = steps[1] + (att[0] + att[2] - 2.0 * att[1]) / 6.0
    bounds = _as_shape(parts.bound(), rows)
    return steps[0], tpot, bounds[0], bounds[1], lambda: parts


def _as_shape(x: np.ndarray, shape: tuple) -> np.ndarray:
    """``x`` broadcast to ``shape`` (read-only view), as it stands when it has that shape already."""
    return x if np.shape(x) == shape else np.broadcast_to(x, shape)


def _contexts(i: np.ndarray, o: np.ndarray):
    """Decode contexts isl+1, midpoint and isl+osl−1 (Simpson's nodes)."""
    c_lo = i + 1.0
    c_hi = np.maximum(i + o - 1.0, c_lo)
    return c_lo, 0.5 * (c_lo + c_hi), c_hi


def _phase_times_by_batch(sm: StepModel, b: np.ndarray, i: np.ndarray, o: np.ndarray):
    """:func:`_phase_times` for many points sharing few batch sizes (sweeps over ISL/OSL).

    A decode step is the decode attention cores, which depend on the context, plus everything else,
    which depends on the batch alone; the latter is evaluated once per distinct batch and gathered.
    The prefill step is evaluated once per distinct (batch, isl) pair.
    Equal to :func:`_phase_times` up to rounding (tested). The breakdown returned is that of the
    first point, evaluated exactly.
    """
    ub, inv = np.unique(b, return_inverse=True)
    c_lo, c_mid, c_hi = _contexts(i, o)
    # the prefill step depends on (batch, isl) alone: evaluate each distinct pair once
    key = b * 2.0**32 + i  # exact in float64 for whole numbers below 2**21 and 2**32
    uk, kinv = np.unique(key, return_inverse=True)
    if uk.size * 4 > key.size:  # mostly distinct pairs: gathering would cost more than it saves
        uk, kinv = key, np.arange(key.size)
    pb = np.floor(uk / 2.0**32)
    pre = sm.breakdown(StepShape.make(n_prefill=pb, chunk=uk - pb * 2.0**32))
    ttft = np.broadcast_to(pre.total, uk.shape)[kinv]
    pre_bound = np.broadcast_to(pre.bound(), uk.shape)[kinv]
    dec = sm.breakdown(StepShape.make(n_decode=ub, context=1.0))
    att_u = sm.decode_attention_parts(ub, 1.0)
    att = sm.decode_attention_parts(b, np.stack([c_lo, c_mid, c_hi]))
    rest_total = (dec.total - att_u.total)[inv]
    tpot = rest_total + (att.total[0] + 4.0 * att.total[1] + att.total[2]) / 6.0
    comm = np.broadcast_to(dec.comm_total, ub.shape)[inv]
    dec_bound = dominant_term((sum(dec.compute.values()) - att_u.compute)[inv] + att.compute[1],
                              (sum(dec.memory.values()) - att_u.memory)[inv] + att.memory[1], comm)
    first = _phase_times(sm, b[:1], i[:1], o[:1])[4]
    return ttft, tpot, pre_bound, dec_bound, first


def _phase_times_chunked(sm: StepModel, b: np.ndarray, i: np.ndarray, o: np.ndarray):
    shape = b.shape
    fb, fi, fo = b.ravel(), i.ravel(), o.ravel()

    def run(bb, ii, oo):
        few_batches = (bb.size >= 64 and sm.kv_host_fraction == 0 and np.unique(bb).size * 4 <= bb.size
                       and bb.max() < 2**21 and ii.max() < 2**32)
        return (_phase_times_by_batch if few_batches else _phase_times)(sm, bb, ii, oo)

    if fb.size <= CHUNK:
        ttft, tpot, pb, db, parts = run(fb, fi, fo)
        return ttft.reshape(shape), tpot.reshape(shape), pb.reshape(shape), db.reshape(shape), parts
    outs = [run(fb[k:k + CHUNK], fi[k:k + CHUNK], fo[k:k + CHUNK]) for k in range(0, fb.size, CHUNK)]
    cat = [np.concatenate([out[j] for out in outs]).reshape(shape) for j in range(4)]
    return (*cat, outs[0][4])


def _draft(sm: StepModel, spec, weights: str | None = None) -> tuple[StepModel | None, float, float]:
    """A speculative draft's cost model, and the weights [B] and KV bytes per token [B] it adds per
    device (None, 0, 0 without speculation)."""
    if spec is None:
        return None, 0.0, 0.0
    from ..engine.speculative_draft import draft_memory, draft_step_model

    draft = draft_step_model(sm, spec, weights=weights)
    mem = draft_memory(spec, draft)
    return draft, mem.weights, mem.kv_per_token


def predict(model, hardware, tp: int = 1, pp: int = 1, ep: int = 1, dp_attention: int = 1,
            moe_tp: int | None = None, isl=1024, osl=128, batch=1, weights: str | None = None,
            activations: str | None = None, kv_cache: str | None = None, efficiency="calibrated",
            reserve: float = 0.10, expert_imbalance: float = 1.0, kv_host_fraction: float = 0.0,
            kv_host_overlap: float = 0.0, step_model: StepModel | None = None, engine=None,
            prefix_hit_rate: float = 0.0, beyond_context: bool = False, spec_decode=None,
            draft_weights: str | None = None) -> Prediction:
    """Predict TTFT, TPOT, E2E and throughputs of a static batch on one replica.

    Parameters
    ----------
    model : str | ModelSpec
        Model id (``llama-3.1-70b``), HF repo id or config.json path.
    hardware : str | Accelerator
        Accelerator or system id.
    tp, pp, ep, dp_attention, moe_tp : int
        Parallel layout of the replica.
    isl, osl, batch : int or array_like
        Prompt tokens, output tokens and concurrent sequences (numpy-broadcast together).
    weights, activations, kv_cache : str, optional
        Formats of each, set independently. Default: the checkpoint's own weight format and a KV cache
        in fp8 for FP8/FP4 weights, else bf16 (:mod:`perfmodel.formats`).
    efficiency : "calibrated" | "datasheet" | Efficiency
        ``datasheet`` gives the pure roofline (peaks, no overheads).
    reserve : float
        Fraction of device memory left unused when checking fit.
    expert_imbalance : float
        Busiest EP rank's load relative to uniform routing (≥ 1).
    kv_host_fraction, kv_host_overlap : float
        Share of the KV cache held in host memory, and share of its per-step transfer hidden.
    step_model : StepModel, optional
        Reuse a bound model (the other model/hardware arguments are then ignored).
    engine : Engine | str, optional
        Serving engine (``"vllm"``, ``"sglang"``, ``"trtllm"`` with their fitted terms, ``"<name>-preset"``
        without; :class:`perfmodel.engine.Engine`): TTFT and TPOT then come from the engine-aware step
        and include the engine's request terms (:mod:`perfmodel.engine.static`), the numbers the
        serving paths give for one request. None (default) is the bare kernel model, labelled
        ``engine: none`` in ``config``. The breakdown is the bare kernel model's either way. ``config``
        then also holds ``engine_kv_cache_tokens`` and ``engine_memory_rule``, the replica's KV pool as
        the engine sizes it (:mod:`perfmodel.engine.kv_memory`); ``fits`` stays the static-batch
        accounting with ``reserve``.
    prefix_hit_rate : float
        Share of each prompt found in the engine's prefix cache, [0, 1) (needs ``engine``): those
        tokens are attended, not computed.
    beyond_context : bool
        Allow isl + osl beyond the model's declared context (published benchmarks sometimes run
        there); by default that is an error.
    spec_decode : str | SpecDecode | mapping, optional
        Speculative decoding (``"mtp:k=3"``, :mod:`perfmodel.engine.speculative`). With ``engine`` it
        is the engine's; without, the bare kernel model's TPOT becomes :math:`t_{step}/E`
        (:func:`~perfmodel.engine.speculative.speculative_static_tpot`). Either way the draft's
        weights and KV cache count in the memory fit.
    draft_weights : str, optional
        Weight format of the draft (default: the target's; e.g. ``"bf16"`` for MTP layers kept in
        bf16). Without ``engine`` only.

    Returns
    -------
    Prediction
        Arrays in SI units; ``fits`` flags operating points that do not fit in memory.
    """
    sm = step_model or cached_step_model(model, hardware, tp=tp, pp=pp, ep=ep, dp_attention=dp_attention,
                                         moe_tp=moe_tp, weights=weights, activations=activations,
                                         kv_cache=kv_cache, efficiency=efficiency, reserve=reserve,
                                         expert_imbalance=expert_imbalance, kv_host_fraction=kv_host_fraction,
                                         kv_host_overlap=kv_host_overlap)
    b = _positive_array("batch", batch)
    i = _positive_array("isl", isl)
    o = _positive_array("osl", osl)
    b, i, o = broadcast("batch, isl, osl", b, i, o)
    if not beyond_context:
        check_context(sm.model, i, o)

    ttft, tpot, pre_bound, dec_bound, parts_of = _phase_times_chunked(sm, b, i, o)
    served = None
    if not (isinstance(prefix_hit_rate, (int, float)) and 0.0 <= prefix_hit_rate < 1.0):
        raise ConfigError(f"prefix_hit_rate: must be a number within [0, 1), got {prefix_hit_rate!r}")
    if prefix_hit_rate and engine is None:
        raise ConfigError("prefix_hit_rate: a prefix cache belongs to a serving engine; pass engine= too")
    spec = None
    if spec_decode is not None:
        from ..engine.speculative import as_spec_decode

        spec = as_spec_decode(spec_decode)
    if engine is not None:
        from ..engine.engine import Engine
        from ..engine.static import static_batch_times

        if draft_weights is not None:
            raise ConfigError("draft_weights: the engine path builds its draft in the target's formats; "
                              "give draft_weights without engine")

        served = Engine.load(engine, spec_decode=spec)
        ttft, tpot = static_batch_times(served, sm, b, i, o, prefix_hit_rate)
        spec = served.spec
    draft_sm, draft_w, draft_kv = _draft(sm, spec, draft_weights)
    if spec is not None and served is None:
        from ..engine.speculative import speculative_static_tpot

        tpot = speculative_static_tpot(sm, spec, b, i, o, draft_sm)
    e2e = e2e_latency(ttft, tpot, o)

    par, prec, mdl = sm.parallel, sm.precision, sm.model
    mem = static_batch_budget(mdl, par, prec, sm.hardware.memory_capacity, b, i, i + o, sm.reserve,
                              1.0 - sm.kv_host_fraction, extra_weights=draft_w, extra_kv_per_token=draft_kv,
                              model_weights=sm.weights_per_device)
    config = {
        **sm.labels,
        "engine": "none (bare kernel model)" if served is None else served.label,
        "prefix_hit_rate": float(prefix_hit_rate),
        "spec_decode": "off" if spec is None else f"{spec.label()} ({spec.acceptance_source})",
        "draft_weights_bytes_per_device": draft_w,
    }
    if served is not None:
        config["basis"] += "+engine-fitted" if served.calibrated else "+engine-preset"
        pool = served.memory(sm)   # the KV pool as the engine sizes it (None: no memory rule)
        if pool is not None:   # a draft model's weights and KV take their room in it, as in Engine.step
            from ..engine.kv_memory import pool_tokens_with_draft

            config["engine_kv_cache_tokens"] = float(int(pool_tokens_with_draft(pool, spec, draft_sm,
                                                                                par.dp_attention)))
        else:
            config["engine_kv_cache_tokens"] = None
        config["engine_memory_rule"] = None if pool is None else pool.rule
    out_tps = b * o / e2e
    return Prediction(
        batch=b, isl=i, osl=o, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
        output_tokens_per_s=out_tps, decode_tokens_per_s=b / tpot,
        total_tokens_per_s=b * (i + o) / e2e, per_user_tokens_per_s=1.0 / tpot,
        output_tokens_per_s_per_device=out_tps / par.devices, fits=mem.fits, fit_reason=mem.reason(),
        weights_bytes_per_device=mem.weights, kv_bytes_per_device=mem.kv_cache,
        memory_used_bytes_per_device=mem.used, memory_capacity_bytes=sm.hardware.memory_capacity,
        max_batch_at_context=mem.max_batch,
        prefill_bound=pre_bound, decode_bound=dec_bound, devices=par.devices, config=config,
        parts_of=parts_of,
    )
