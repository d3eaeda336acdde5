"""Serving metrics from per-request times: percentiles, joint SLO attainment and goodput.

Definitions (per request; see ``docs/serving.md``):

- TTFT = t_first − t_arrival (includes queueing); TPOT = (t_last − t_first)/(N − 1), N output tokens;
  E2E = t_last − t_arrival = TTFT + (N − 1)·TPOT; TTFAT (time to first *answer* token, after R reasoning
  tokens) = TTFT + R·TPOT, as AIPerf reports it.
- ITL here is per token: the gap between consecutive tokens of a sequence (a step's duration, plus any
  prefill-only steps in between), weighted by the tokens it applies to.
- Joint SLO: a request *meets* the SLO if it completed and every set limit holds for it. Attainment =
  met / decided requests (completed, cancelled, rejected, and in-flight requests that have already
  exceeded a limit at the horizon); goodput = met requests per second of the measurement window.
  Per-metric attainments and percentiles are reported next to it so the difference is visible.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import checks
from .state import CANCELLED, COMPLETED, IN_FLIGHT, REJECTED

if TYPE_CHECKING:
    from .result import SimulationResult
    from .workload import SLO

PERCENTILES = (50, 90, 95, 99)


def percentiles(x: np.ndarray, prefix: str, unit: str = "_s") -> dict[str, float]:
    """``{prefix_mean_s, prefix_p50_s, ...}`` of the finite values of ``x`` (NaN when empty)."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    out = {f"{prefix}_mean{unit}": float(x.mean()) if x.size else float("nan")}
    vals = np.percentile(x, PERCENTILES) if x.size else [float("nan")] * len(PERCENTILES)
    for q, v in zip(PERCENTILES, vals, strict=True):
        out[f"{prefix}_p{q}{unit}"] = float(v)
    return out


def weighted_percentiles(values: np.ndarray, weights: np.ndarray, qs=PERCENTILES) -> list[float]:
    """Percentiles of ``values`` where each value counts ``weights`` times (inverted CDF)."""
    if values.size == 0 or weights.sum() <= 0:
        return [float("nan")] * len(qs)
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cdf = np.cumsum(w) / w.sum()
    return [float(v[min(np.searchsorted(cdf, q / 100.0, side="left"), v.size - 1)]) for q in qs]


def metric_arrays(res: SimulationResult) -> dict[str, np.ndarray]:
    """Per-request metric arrays keyed by SLO name (``ttft``, ``tpot``, ``e2e``, ``ttfat``)."""
    return {"ttft": res.request_ttft_s, "tpot": res.request_tpot_s, "e2e": res.request_e2e_s,
            "ttfat": res.ttfat_s}


def slo_masks(res: SimulationResult, slo: SLO) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Which requests meet the joint SLO, which are decided, and which meet each limit alone.

    Returns
    -------
    met : ndarray[bool]
        Completed and within every limit.
    decided : ndarray[bool]
        Counted in the attainment denominator.
    each : dict[str, ndarray[bool]]
        Per limit: completed and within that limit.
    """
    done = res.status == COMPLETED
    arrays = metric_arrays(res)
    each = {}
    met = done.copy()
    late = np.zeros_like(done)
    elapsed = res.horizon_s - res.arrival_s if np.isfinite(res.horizon_s) else np.zeros_like(res.arrival_s)
    flying = res.status == IN_FLIGHT
    for name, limit in slo.limits().items():
        ok = done & (np.nan_to_num(arrays[name], nan=np.inf) <= limit)
        each[name] = ok
        met &= ok
        if name in ("ttft", "ttfat", "e2e"):
            has = np.isfinite(arrays[name]) if name != "e2e" else np.zeros_like(done)
            late |= flying & np.where(has, arrays[name] > limit, elapsed > limit)
    decided = (res.status != IN_FLIGHT) | late
    return met, decided, each


def summarize(res: SimulationResult, slo: SLO | None = None, warmup: float = 0.0) -> dict[str, Any]:
    """The summary dictionary of a simulation (see :meth:`SimulationResult.summary`)."""
    warmup = checks.real(warmup, "warmup (fraction of earliest requests left out)", 0.0, 1.0, hi_open=True)
    keep = np.arange(res.n) >= int(warmup * res.n)
    st = res.status[keep]
    done = keep & (res.status == COMPLETED)
    t_start = float(res.arrival_s[keep].min()) if keep.any() else 0.0
    if np.isfinite(res.horizon_s):
        t_end = res.horizon_s
    else:
        fin = res.finish_s[keep]
        t_end = float(np.nanmax(fin)) if np.isfinite(fin).any() else t_start
    window = max(t_end - t_start, 1e-12)
    out_tok = res.output_tokens[done].sum()
    s: dict[str, Any] = {
        "arrived": int(keep.sum()),
        "completed": int((st == COMPLETED).sum()),
        "cancelled": int((st == CANCELLED).sum()),
        "rejected": int((st == REJECTED).sum()),
        "in_flight": int((st == IN_FLIGHT).sum()),
        "duration_s": window,
        "requests_per_s": float(done.sum() / window),
        "output_tokens_per_s": float(out_tok / window),
        "input_tokens_per_s": float(res.isl[done].sum() / window),
        "preemptions": int(res.preemptions[keep].sum()),
    }
    for name, arr in (("ttft", res.request_ttft_s), ("tpot", res.request_tpot_s), ("e2e", res.request_e2e_s),
                      ("queue", res.queue_s), ("ttfat", res.ttfat_s)):
        s.update(percentiles(np.where(done, arr, np.nan), name))
    tpot = res.request_tpot_s[done]
    tpot = tpot[np.isfinite(tpot) & (tpot > 0)]
    s["per_user_mean_tokens_per_s"] = float(np.mean(1.0 / tpot)) if tpot.size else float("nan")
    s["per_user_at_mean_tpot_tokens_per_s"] = float(1.0 / tpot.mean()) if tpot.size else float("nan")
    s["per_user_mean_words_per_s"] = s["per_user_mean_tokens_per_s"] / res.tokens_per_word
    itl_v, itl_w = res.itl_values, res.itl_weights
    for q, v in zip(PERCENTILES, weighted_percentiles(itl_v, itl_w), strict=True):
        s[f"itl_p{q}_s"] = v
    if res.task_words:
        task = res.ttfat_s + (res.task_words * res.tokens_per_word - 1.0) * res.request_tpot_s
        s.update(percentiles(np.where(done, task, np.nan), "task_time"))
        s["task_words"] = res.task_words
    if slo is not None and slo.limits():
        met, decided, each = slo_masks(res, slo)
        met, decided = met & keep, decided & keep
        n_dec = max(int(decided.sum()), 1)
        s["slo"] = {k: v for k, v in slo.model_dump().items() if v is not None}
        s["slo_attainment"] = float(met.sum() / n_dec)
        s["goodput_requests_per_s"] = float(met.sum() / window)
        s["slo_undecided"] = int((keep & ~decided).sum())
        s["slo_met"] = bool(s["slo_attainment"] >= slo.target)
        q = 100.0 * slo.target
        arrays = metric_arrays(res)
        separate = True
        for name, limit in slo.limits().items():
            s[f"slo_attainment_{name}"] = float((each[name] & keep).sum() / n_dec)
            vals = arrays[name][done]
            vals = vals[np.isfinite(vals)]
            pq = float(np.percentile(vals, q)) if vals.size else float("inf")
            s[f"{name}_at_target_percentile_s"] = pq
            separate &= pq <= limit
        s["slo_separate_percentiles_pass"] = bool(separate)
    else:  # no objective: nothing to attain (None, not NaN: the run itself may be fine)
        s["slo_attainment"] = None
        s["goodput_requests_per_s"] = None
    if res.cached_tokens is not None:
        s.update(prefix_hit_rate(res, keep))
    return _undefined_as_none(s, res, done)


#: Why a statistic has no value, by metric prefix (when requests completed but none had the quantity).
_NO_SECOND_TOKEN = ("no completed request produced 2 or more output tokens (TPOT and ITL are the times "
                    "between output tokens)")
_UNDEFINED_WHY = {"tpot": _NO_SECOND_TOKEN, "itl": _NO_SECOND_TOKEN, "per": _NO_SECOND_TOKEN,
                  "task": _NO_SECOND_TOKEN}


def prefix_hit_rate(res: SimulationResult, keep: np.ndarray) -> dict[str, Any]:
    """Achieved prefix-cache hit rate, token-weighted: Σ cached / Σ isl over the scheduled requests.

    ``cached`` is what the request found when first scheduled (a recompute after preemption is not
    counted again). None when no request (past the warm-up) was scheduled.
    """
    sched = keep & np.isfinite(res.sched_s)
    tokens = int(res.isl[sched].sum())
    hit = float(res.cached_tokens[sched].sum() / tokens) if tokens else None
    return {"prefix_hit_rate": hit, "prefix_cached_tokens": int(res.cached_tokens[sched].sum())}


def _undefined_as_none(s: dict[str, Any], res: SimulationResult, done: np.ndarray) -> dict[str, Any]:
    """Statistics that do not exist become None, with the reason per key in ``s["undefined"]`` (never NaN).

    A percentile over no values is undefined: the run completed no request (every time statistic), or
    none of its completed requests produced a second token (TPOT, ITL, per-user speeds).
    """
    why: dict[str, str] = {}
    for key, v in s.items():
        if isinstance(v, float) and math.isnan(v):
            s[key] = None
            why[key] = ("no request completed in the counted window" if not done.any()
                        else _UNDEFINED_WHY.get(key.split("_")[0], "no completed request has this time"))
    if why:
        s["undefined"] = why
    return s
