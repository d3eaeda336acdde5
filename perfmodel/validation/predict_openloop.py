r"""Open-loop measured rows (requests at a fixed rate) predicted by simulation, scored as their own group.

A closed loop's clients wait for their answers, so its load adapts to the server; an open loop's
requests keep arriving at rate :math:`\lambda` whatever the queue holds. The closed-loop steady state
(:func:`perfmodel.serving.steady_state`) therefore does not answer for them: each open-loop row
(:mod:`perfmodel.validation.arrivals`) is replayed with :func:`perfmodel.serving.simulate` on its
configuration's step model, under its engine with the fitted terms under evaluation (request
overhead and first-token steps included, as in every TTFT) — a P/D-disaggregated row as its two pools
(:class:`~perfmodel.serving.simulator.Disaggregated`, the KV transfer time of
:func:`perfmodel.deployment.disagg.request_kv_transfer_time`, the one the closed-loop path uses) —
with the recorded speculative decoding and prefix-cache hit rate (:mod:`perfmodel.validation.features`,
aggregated rows) and the recorded arrival process
(Poisson; gamma with the recorded CV; constant as gamma with CV
:data:`~perfmodel.validation.arrivals.CONSTANT_CV`) at the recorded total rate over ``replicas``
replicas (least-loaded router). A run with a client-side cap on requests in flight is scored only
where the cap does not bind (the simulation never exceeds it).

Each replication sends as many requests as the run completed (:data:`DEFAULT_REQUESTS` when the file
does not say, at most :data:`MAX_REQUESTS`) and averages TTFT and TPOT over every completed request,
as the tools do (no warm-up cut: a run that starts empty is averaged from its start). A run that
completed more requests than are simulated (an MLPerf Server run sends 10^4 to 10^5) is nearly all
steady state, while a simulation of :data:`MAX_REQUESTS` that starts empty and stops sending is largely
its fill transient (the batch still growing: TPOT too low) and drain (the batch shrinking); its means
are then taken over the requests whose arrival falls in :data:`STEADY_STATE_WINDOW` (shares of the
simulated arrivals, in arrival order), and the simulation is lengthened (doubled, up to
:data:`MAX_STEADY_REQUESTS` and the run's own count) until that window opens :data:`FILL_LATENCIES`
mean latencies W after the start: with service times near W an open system started empty holds its
steady population one W after the start. A deployment the model cannot keep up with never gets there
(its queue, and TTFT, grow with the length simulated): it is simulated at the cap. Replications
with seeds 0, 1, ... are added until the 95 % confidence half-width of the mean over replications
(Student t) is within :data:`TARGET_HALF_WIDTH` of the mean for both TTFT and TPOT, or
:data:`MAX_REPLICATIONS` are done; the half-widths reached are reported per row
(``predicted_ttft_mean_ci_pct``, ``predicted_tpot_mean_ci_pct``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..engine.speculative import parse_spec_decode
from ..errors import PerfmodelError
from ..metrics_vocabulary import deprecated_property
from ..progress import Bar
from .metrics import add_errors, by_group, summarize
from .predict_disagg import NO_KV_REASON
from .stepmodels import CONFIG_COLUMNS, StepModelCache, pool_keys

#: Requests per replication when the file does not record how many the run completed.
DEFAULT_REQUESTS = 1000
#: Most requests simulated per replication (a longer run's mean is taken over the middle of them).
MAX_REQUESTS = 16000
#: Arrivals (first and last share, in arrival order) whose requests the means are taken over when the run
#: completed more requests than are simulated: the fill and drain transients left out (module docstring).
STEADY_STATE_WINDOW = (0.25, 0.75)
#: Most requests a long run's simulation is lengthened to (see :data:`FILL_LATENCIES`).
MAX_STEADY_REQUESTS = 64000
#: Mean latencies after the start at which the steady-state window must open (module docstring).
FILL_LATENCIES = 1.5
#: Confidence level of the reported half-widths.
CONFIDENCE = 0.95
#: Relative half-width of the mean (TTFT and TPOT) at which replications stop.
TARGET_HALF_WIDTH = 0.05
MIN_REPLICATIONS, MAX_REPLICATIONS = 3, 8
#: Groups the open-loop errors are reported by.
OPEN_GROUPS = ("arrival_process", "system", "model", "backend")


@dataclass(frozen=True)
class OpenLoopPrediction:
    """Simulated means of one open-loop row over its replications (times in seconds).

    ``ttft_mean_ci_pct``, ``tpot_mean_ci_pct``: half-width of the 95 % confidence interval of
    ``ttft_mean_s`` / ``tpot_mean_s`` over the replications, percent of that mean (validate's
    ``predicted_*_mean_ci_pct``; the old names ``ci_ttft_pct``/``ci_tpot_pct`` still answer for one
    release, with a DeprecationWarning);
    ``rate_requests_per_s``: arrivals per second the simulation sent (over all replicas); ``requests_per_s``:
    completions per second from the first arrival to the last completion (below the rate when the
    deployment cannot keep up, and by the final drain in a short run); ``peak_in_flight``: the most
    requests sent and not yet finished at any time, over all replications (:func:`peak_in_flight`).
    """

    ttft_mean_s: float
    tpot_mean_s: float
    ttft_mean_ci_pct: float
    tpot_mean_ci_pct: float
    replications: int
    requests: int
    rate_requests_per_s: float
    requests_per_s: float
    peak_in_flight: int

    # the old names, for one release (a DeprecationWarning each time)
    ci_ttft_pct = deprecated_property("OpenLoopPrediction", "ci_ttft_pct")
    ci_tpot_pct = deprecated_property("OpenLoopPrediction", "ci_tpot_pct")


def _half_width_pct(values: np.ndarray) -> float:
    """95 % Student-t half-width of the mean of ``values``, percent of the mean (inf for one value)."""
    k = len(values)
    if k < 2:
        return float("inf")
    mean = float(np.mean(values))
    from scipy.stats import t as student_t  # scipy.stats costs ~1.8 s to import: only when scoring

    hw = float(student_t.ppf(0.5 + CONFIDENCE / 2, k - 1) * np.std(values, ddof=1) / np.sqrt(k))
    return 100.0 * hw / mean if mean > 0 else float("inf")


def peak_in_flight(arrival_s: np.ndarray, finish_s: np.ndarray) -> int:
    """Most requests sent and not yet finished at one time: the client-side concurrency an open-loop
    run reached. A request finishing at the instant another arrives is not counted twice; one never
    finished (NaN) stays in flight to the end."""
    events = np.concatenate([np.stack([arrival_s, np.ones_like(arrival_s)], 1),
                             np.stack([np.where(np.isnan(finish_s), np.inf, finish_s), -np.ones_like(finish_s)], 1)])
    order = np.lexsort((events[:, 1], events[:, 0]))    # by time, departures (-1) before arrivals
    return int(np.max(np.cumsum(events[order, 1]), initial=0))


def simulate_row(step_model, engine, isl: int, osl: int, rate: float, cv: float, replicas: int = 1,
                 requests: int | None = None, timer_cache: dict | None = None,
                 prefix_hit_rate: float = 0.0) -> OpenLoopPrediction:
    """Mean TTFT and TPOT of an open-loop run at ``rate`` [1/s] (see the module docstring).

    Parameters
    ----------
    step_model : StepModelLike | Disaggregated
        One replica's step model, or the two pools of a P/D-disaggregated system (``replicas`` 1).
    engine : Engine
        Serving engine (its request and step terms apply).
    isl, osl : int
        Prompt and output tokens of every request.
    rate : float
        Mean arrival rate over all replicas [requests/s].
    cv : float
        Coefficient of variation of the gaps (1: Poisson; otherwise gamma).
    replicas : int
        Replicas behind the least-loaded router.
    requests : int, optional
        Requests the run completed: as many are simulated per replication (default
        :data:`DEFAULT_REQUESTS`, at most :data:`MAX_REQUESTS`; beyond that the means are taken over the
        arrivals in :data:`STEADY_STATE_WINDOW` of a simulation lengthened by :func:`steady_length`).
    timer_cache : dict, optional
        Step tables reused between calls (:func:`perfmodel.serving.simulate`).
    prefix_hit_rate : float
        Share of every prompt found in the prefix cache, [0, 1) (attended, not computed).
    """
    from ..serving import simulate
    from ..serving.workload import Workload

    n = int(min(requests or DEFAULT_REQUESTS, MAX_REQUESTS))
    workload = Workload.fixed(int(isl), int(osl), rate=float(rate), cv=float(cv), prefix_hit_rate=prefix_hit_rate)
    cache = {} if timer_cache is None else timer_cache
    steady = bool(requests) and requests > n
    if steady:
        n = steady_length(step_model, workload, engine, int(replicas), n, int(requests), cache)
    lo, hi = (int(f * n) for f in STEADY_STATE_WINDOW) if steady else (0, n)
    window = (np.arange(n) >= lo) & (np.arange(n) < hi)   # requests are indexed in arrival order
    ttft, tpot, rates, thr, peak = [], [], [], [], 0
    for seed in range(MAX_REPLICATIONS):
        res = simulate(step_model, workload, engine=engine, replicas=int(replicas), requests=n, seed=seed,
                       timer_cache=cache)
        done = res.completed & window
        ttft.append(float(np.mean(res.request_ttft_s[done])) if done.any() else np.nan)
        tpot.append(float(np.nanmean(res.request_tpot_s[done])) if done.any() and osl > 1 else np.nan)
        span = float(res.arrival_s.max() - res.arrival_s.min())
        rates.append((res.n - 1) / span if span > 0 else np.nan)
        thr.append(float(res.summary()["requests_per_s"]))
        peak = max(peak, peak_in_flight(res.arrival_s, res.finish_s))
        ci = (_half_width_pct(np.asarray(ttft)), _half_width_pct(np.asarray(tpot)) if osl > 1 else 0.0)
        if seed + 1 >= MIN_REPLICATIONS and max(ci) <= 100 * TARGET_HALF_WIDTH:
            break
    return OpenLoopPrediction(float(np.mean(ttft)), float(np.mean(tpot)), ci[0], ci[1], len(ttft), n,
                              float(np.nanmean(rates)), float(np.mean(thr)), peak)


def steady_length(step_model, workload, engine, replicas: int, n: int, requests: int, cache: dict) -> int:
    r"""Requests to simulate for a run of ``requests`` (more than ``n``) so that its steady-state window
    opens after the fill transient: ``n`` doubled until, in the seed-0 simulation, the first arrival of
    :data:`STEADY_STATE_WINDOW` comes at least :data:`FILL_LATENCIES` mean latencies after the first,

    .. math:: t_{\mathrm{lo}} - t_0 \ge k\,\overline{W},\qquad
              \overline{W} = \mathrm{mean}(t_{\mathrm{finish}} - t_{\mathrm{arrival}}),

    at most ``min(requests, MAX_STEADY_REQUESTS)``.
    """
    from ..serving import simulate

    cap = int(min(requests, MAX_STEADY_REQUESTS))
    while n < cap:
        res = simulate(step_model, workload, engine=engine, replicas=replicas, requests=n, seed=0,
                       timer_cache=cache)
        done = res.completed
        mean_latency = float(np.mean(res.finish_s[done] - res.arrival_s[done])) if done.any() else np.inf
        opens = float(res.arrival_s[int(STEADY_STATE_WINDOW[0] * n)] - res.arrival_s[0])
        if opens >= FILL_LATENCIES * mean_latency:
            break
        n = min(2 * n, cap)
    return n


def _why_not(r: pd.Series, engines: dict) -> str:
    """Why an open-loop row cannot be simulated, '' when it can."""
    if r["backend"] not in engines:
        return f"unknown backend: {r['backend']}"
    featured = r.get("spec_decode", "off") != "off" or float(r.get("prefix_hit_rate", 0) or 0) > 0
    if featured and r.get("mode") == "disagg":
        return "feature: speculative decoding or prefix caching on a disaggregated row is not modelled in validation yet"
    return ""


def _target(r: pd.Series, cache: StepModelCache) -> tuple[Any, str]:
    """What :func:`simulate_row` replays for row ``r`` (a replica's step model, or the
    :class:`~perfmodel.serving.simulator.Disaggregated` pools of a P/D row), or None and why not."""
    disagg = r.get("mode") == "disagg"
    if disagg and int(r["replicas"]) != 1:
        return None, (f"open loop: replicas={int(r['replicas'])} on a disaggregated row (its pools' worker "
                      "counts are the whole system; give the rate of one P/D system)")
    keys = pool_keys(r) if disagg else (tuple(r[c] for c in CONFIG_COLUMNS),)
    try:
        models = [cache.get(k) for k in keys]
    except PerfmodelError as exc:
        return None, f"step model error: {exc}"
    if min(float(m.kv_capacity_tokens) for m in models) <= 0:
        return None, NO_KV_REASON
    if not disagg:
        return models[0], ""
    from ..serving.simulator import Disaggregated

    return Disaggregated(prefill=models[1], decode=models[0], prefill_replicas=int(r["p_workers"]),
                         decode_replicas=int(r["d_workers"])), ""


def predict_open_loop(deployments: pd.DataFrame, engines: dict, cache: StepModelCache,
                      progress: bool | None = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulate every mapped open-loop row (``map_rows(..., arrival="open")``).

    Parameters
    ----------
    deployments : pandas.DataFrame
        Mapped open-loop rows (``model`` renamed from ``model_key`` as in the closed-loop path).
    engines : dict
        Backend -> :class:`~perfmodel.engine.Engine` with the terms under evaluation.
    cache : StepModelCache
        Step models by configuration.
    progress : bool | None
        A bar of the rows simulated.

    Returns
    -------
    predictions : pandas.DataFrame
        The rows with ``predicted_ttft_mean_s``, ``predicted_tpot_mean_s``, ``predicted_ttft_mean_ci_pct``,
        ``predicted_tpot_mean_ci_pct``, ``replications``, ``simulated_requests``,
        ``simulated_rate_requests_per_s``, ``simulated_requests_per_s``, ``simulated_peak_in_flight`` and the
        ``*_pct_error`` columns. A
        row recording a client-side cap (``max_concurrency``) is kept only when the simulation without
        the cap never had more requests in flight (the cap did not bind), else skipped with both numbers.
    skipped : pandas.DataFrame
        ``row``, ``id``, ``reason`` of the rows not simulated.
    """
    from ..serving.simulator import Disaggregated

    out, skipped = [], []
    timers: dict = {}
    with Bar(len(deployments), "validate (open loop)", progress, unit="row") as bar:
        for _, r in deployments.iterrows():
            bar.update()
            why = _why_not(r, engines)
            target, why = (None, why) if why else _target(r, cache)
            if why:
                skipped.append({"row": r["row"], "id": r["id"], "reason": why})
                continue
            n = r.get("requests")
            engine = engines[r["backend"]]
            if r.get("spec_decode_text", "off") != "off":
                engine = replace(engine, spec=parse_spec_decode(r["spec_decode_text"]))
            pools = (target.prefill, target.decode) if isinstance(target, Disaggregated) else (target,)
            if min(float(engine.step(m).kv_capacity_tokens) for m in pools) <= 0:   # the engine's own pool
                skipped.append({"row": r["row"], "id": r["id"], "reason": NO_KV_REASON})
                continue
            p = simulate_row(target, engine, int(r["isl"]), int(r["osl"]), r["rate_requests_per_s"], r["arrival_cv"],
                             int(r["replicas"]), None if pd.isna(n) else int(n), timers,
                             float(r.get("prefix_hit_rate", 0) or 0))
            cap = r.get("max_concurrency")
            if not pd.isna(cap) and p.peak_in_flight > cap:
                skipped.append({"row": r["row"], "id": r["id"], "reason": (
                    f"open loop capped at max_concurrency={int(cap)}: the cap binds (up to {p.peak_in_flight} "
                    "requests in flight simulated without it), and the simulator has no client-side cap")})
                continue
            out.append({**r.to_dict(), "predicted_ttft_mean_s": p.ttft_mean_s,
                        "predicted_tpot_mean_s": p.tpot_mean_s, "predicted_ttft_mean_ci_pct": p.ttft_mean_ci_pct,
                        "predicted_tpot_mean_ci_pct": p.tpot_mean_ci_pct, "replications": p.replications,
                        "simulated_requests": p.requests, "simulated_rate_requests_per_s": p.rate_requests_per_s,
                        "simulated_requests_per_s": p.requests_per_s,
                        "simulated_peak_in_flight": p.peak_in_flight})
    preds = pd.DataFrame(out) if out else deployments.iloc[:0].assign(
        predicted_ttft_mean_s=pd.Series(dtype=float), predicted_tpot_mean_s=pd.Series(dtype=float))
    return add_errors(preds), pd.DataFrame(skipped, columns=["row", "id", "reason"])


def open_loop_summary(predictions: pd.DataFrame, skipped: pd.DataFrame, rows: int) -> dict:
    """Error summary of the open-loop group (same statistics as the closed-loop one, its own rows)."""
    out = summarize(predictions, skipped, rows=rows, include_anomalous=True)
    for key in ("anomalous", "anomalous_included"):
        out.pop(key, None)
    out["by"] = by_group(predictions, OPEN_GROUPS) if len(predictions) else {}
    out["method"] = (f"simulated (perfmodel.serving.simulate), the recorded arrival process and rate; "
                     f"replications until the {100 * CONFIDENCE:g} % confidence half-width of mean TTFT "
                     f"and TPOT is within {100 * TARGET_HALF_WIDTH:g} % (at most {MAX_REPLICATIONS})")
    return out
