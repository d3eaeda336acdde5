"""Highest load that still meets an SLO: :func:`max_load`.

Attainment of a joint SLO falls as load rises (more queueing, more interference). The search brackets
the largest load whose attainment is at least the target — doubling or halving from a first guess —
then bisects; every simulation is cached by load and reused, all with the same seed (common random
numbers: the same request lengths at every load), and the step tables are shared between them. The
simulated points form the load–latency curve that is returned with the answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import checks
from ..engine.engine import Engine
from ..errors import ConfigError
from ..progress import Bar
from ..spec_base import validate
from .protocol import resolve_step_model
from .simulator import DEFAULT_REQUESTS, Disaggregated, simulate
from .steady_state import steady_state
from .workload import SLO, Workload, load_workload

_CURVE_KEYS = ("slo_attainment", "goodput_requests_per_s", "requests_per_s", "output_tokens_per_s",
               "ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "tpot_p50_s", "tpot_p95_s", "tpot_p99_s",
               "e2e_p95_s", "completed", "cancelled", "rejected", "in_flight")


@dataclass
class LoadSearch:
    """Outcome of :func:`max_load`.

    Attributes
    ----------
    mode : {"rate", "concurrency"}
        Open-loop arrival rate [requests/s] or closed-loop concurrency was searched.
    max_load : float
        Highest load found with attainment >= target (0 if even the smallest tried fails).
    target : float
        Attainment target.
    attainment : float
        Attainment at ``max_load``.
    curve : list[dict]
        One row per simulated load (sorted): load and the summary metrics; a closed loop's rows add
        ``ramp_up_s``, the ramp its clients started over (``"auto"`` resolved at that load).
    simulations : int
        Simulations run.
    bracketed : bool
        False when no load that misses the target was found, so ``max_load`` is a lower bound only
        (``note`` says why the search stopped).
    note : str
        Why the search stopped without an upper bracket or before ``rel_tol`` ("" otherwise).
    config : dict
        What was searched, for titles and reports: ``model``, ``hardware``, ``parallel``,
        ``precision`` (of the decode pool when disaggregated), mean ``isl`` / ``osl`` [tok],
        ``engine``, ``replicas`` and ``devices`` (all replicas'; decode pool only when disaggregated).
    """

    mode: str
    max_load: float
    target: float
    attainment: float
    curve: list[dict[str, Any]] = field(default_factory=list)
    simulations: int = 0
    bracketed: bool = True
    note: str = ""
    config: dict[str, Any] = field(default_factory=dict)

    def to_dataframe(self):
        """The load–latency curve as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.curve)

    def as_dict(self) -> dict[str, Any]:
        key = "max_arrival_requests_per_s" if self.mode == "rate" else "max_concurrency"
        return {key: self.max_load, "target": self.target, "attainment_at_max": self.attainment,
                "simulations": self.simulations, "bracketed": self.bracketed, "note": self.note,
                "curve": self.curve}


def _search_config(model: Any, w: Workload, eng: Any, replicas: int) -> dict[str, Any]:
    """The searched configuration (decode pool when disaggregated) as plain values."""
    sm = model.decode if isinstance(model, Disaggregated) else model
    cfg: dict[str, Any] = {"isl": float(w.isl.mean), "osl": float(w.osl.mean), "engine": eng.name,
                           "replicas": replicas}
    if all(hasattr(sm, a) for a in ("model", "hardware", "parallel", "precision")):
        cfg.update(model=sm.model.id, hardware=sm.hardware.id, parallel=sm.parallel.label(),
                   precision=sm.precision.label(), devices=replicas * sm.parallel.devices)
    if isinstance(model, Disaggregated):
        cfg["parallel"] = f"disaggregated, decode {cfg.get('parallel', '')}".strip()
        cfg.pop("devices", None)  # the prefill pool's devices are not counted here
    return cfg


def _first_guess(model: Any, w: Workload, eng: Any, replicas: int, mode: str) -> float:
    """Load where the steady state of each replica is half-way to its concurrency limit."""
    try:
        isl, osl = w.isl.mean, w.osl.mean + w.reasoning_tokens.mean  # type: ignore[union-attr]
        if isinstance(model, Disaggregated):
            model = model.decode
        c = max(1.0, min(64.0, eng.profile.max_num_seqs / 4))
        ss = steady_state(model, c, isl, osl, engine=eng)
        if mode == "concurrency":
            return float(c * replicas)
        return max(float(ss.requests_per_s) * replicas, 1e-3)
    except Exception:  # any model error: fall back to a plain start
        return 8.0 if mode == "concurrency" else 1.0


def max_load(step_model: Any, workload: Workload | str | dict, slo: SLO | dict | None = None, *,
             target: float | None = None, mode: str | None = None,
             engine: Any = "vllm", replicas: int = 1,
             router: str = "least_loaded", seed: int = 0, requests: int | None = None,
             horizon: float | None = None, start: float | None = None, rel_tol: float = 0.02,
             max_simulations: int = 30, warmup: float = 0.0, step_table: str = "table",
             progress: bool | None = False, stop_below: float | None = None,
             timer_cache: dict | None = None,
             decided: Callable[[float, float | None], bool] | None = None) -> LoadSearch:
    """Largest arrival rate (open loop) or concurrency (closed loop) meeting the SLO target.

    Parameters
    ----------
    step_model, workload, engine, replicas, router, seed, requests, horizon, step_table
        As for :func:`perfmodel.serving.simulate`; the workload's load is replaced by each trial load.
    slo : SLO | dict | None
        Objective (default: the workload's); must set at least one limit.
    target : float | None
        Attainment target (default: the SLO's ``target``, e.g. 0.95).
    mode : {"rate", "concurrency"} | None
        What to search; default: the workload's kind (closed loop -> concurrency).
    start : float | None
        First load to try (default: from :func:`steady_state`).
    rel_tol : float
        Stop bisecting a rate when the bracket is narrower than this fraction (concurrency: 1 client).
    max_simulations : int
        Upper bound on simulations.
    warmup : float
        Fraction of earliest requests left out of each attainment.
    progress : bool | None
        A bar of the simulations run (up to ``max_simulations``) with the load tried and its attainment
        (:mod:`perfmodel.progress`: True always, None only when stderr is a terminal, False never).
    stop_below : float | None
        Stop as soon as a load at or below this one misses the target: the answer is then known to be
        below it (a caller that only needs to know whether it reaches ``stop_below`` saves the rest of
        the search). The result is the search so far; default None searches to the end.
    decided : callable, optional
        ``decided(lo, hi)`` with the bracket so far (lo: the highest load that met the target, hi: the
        lowest that missed it, or None): True stops the search, for a caller whose use of the answer is
        the same wherever in [lo, hi) it lies (a plan needs the replica count ⌈λ / answer⌉, not the
        answer to ``rel_tol``). The result is then lo, within that bracket. Default None: to ``rel_tol``.
    timer_cache : dict | None
        Step tables to reuse, as for :func:`perfmodel.serving.simulate` (the search's simulations share
        one either way; pass a dict to share them with the caller's other simulations).

    Returns
    -------
    LoadSearch
        ``max_load``, the attainment there and the load–latency curve.
    """
    w = load_workload(workload)
    if slo is not None:
        w = w.replace(slo=validate(SLO, slo, "slo") if isinstance(slo, dict) else slo)
    if w.slo is None or not w.slo.limits():
        raise ConfigError("max_load: an SLO with at least one limit (ttft, tpot, e2e, ttfat) is required")
    goal = checks.real(target if target is not None else w.slo.target, "target (attainment fraction)", 0, 1,
                       lo_open=True)
    rel_tol = checks.real(rel_tol, "rel_tol", 0, 1, lo_open=True, hi_open=True)
    max_simulations = checks.count(max_simulations, "max_simulations")
    if start is not None:
        start = checks.real(start, "start", 0, lo_open=True)
    mode = mode or ("concurrency" if w.is_closed_loop else "rate")
    if mode not in ("rate", "concurrency"):
        raise ConfigError(f"mode: expected 'rate' or 'concurrency', got {mode!r}")
    eng = Engine.load(engine)
    model = step_model if isinstance(step_model, Disaggregated) else resolve_step_model(step_model)
    cache: dict[float, dict[str, Any]] = {}
    timers: dict = timer_cache if timer_cache is not None else {}

    def norm(x: float) -> float:
        return float(max(1, round(x))) if mode == "concurrency" else float(x)

    bar = Bar(max_simulations, "max-load", progress, unit="simulation")

    def attain(x: float) -> float:
        x = norm(x)
        if x not in cache:
            wl = w.with_load(rate=x) if mode == "rate" else w.with_load(concurrency=int(x))
            res = simulate(model, wl, engine=eng, replicas=replicas, router=router, seed=seed,
                           requests=requests, horizon=horizon, step_table=step_table, timer_cache=timers)
            cache[x] = res.summary(warmup=warmup)
            if "ramp_up" in res.meta:  # a closed loop's clients start over this (resolved per load)
                cache[x]["ramp_up_s"] = res.meta["ramp_up"]["ramp_up_s"]
            bar.update()
            bar.note(f"{mode} {x:g}: attainment {cache[x]['slo_attainment']:.3f}")
        return cache[x]["slo_attainment"]

    def below(hi: float | None) -> bool:
        return stop_below is not None and hi is not None and hi <= stop_below

    # a fixed number of requests at an ever higher rate becomes one burst: once all of them arrive
    # within the median TTFT, a higher rate cannot change the outcome and doubling would run away
    n_fixed = requests if requests is not None else w.requests
    if n_fixed is None and horizon is None and w.horizon is None:
        n_fixed = DEFAULT_REQUESTS

    def one_burst(x: float) -> bool:
        """All requests of the run start together: at a rate, within the median TTFT; closed loop, with at
        least as many clients as requests."""
        if n_fixed is None:
            return False
        if mode == "concurrency":
            return x >= n_fixed
        ttft = cache[norm(x)].get("ttft_p50_s")
        return ttft is not None and n_fixed / x < ttft

    note = ""

    def done(lo: float | None, hi: float | None) -> bool:
        return decided is not None and lo is not None and bool(decided(lo, hi))

    try:
        x = norm(start if start is not None else _first_guess(model, w, eng, replicas, mode))
        lo, hi = None, None
        if attain(x) >= goal:
            lo = x
            while len(cache) < max_simulations and not done(lo, hi):
                if one_burst(x):
                    at = (f"arrive within the median TTFT at {x:g} req/s" if mode == "rate"
                          else f"start at once with {x:g} clients")
                    note = (f"all {n_fixed} requests {at} and still meet the target: a higher {mode} cannot "
                            f"change this run, so the sustainable {mode} is not bounded by it; raise the request "
                            "count (requests/horizon) to find it")
                    break
                x = norm(x * 2)
                if attain(x) >= goal:
                    lo = x
                else:
                    hi = x
                    break
        else:
            hi = x
            while len(cache) < max_simulations and (mode == "rate" and x > 1e-6 or x > 1) and not below(hi):
                x = norm(x / 2)
                if attain(x) >= goal:
                    lo = x
                    break
                hi = x
        while (lo is not None and hi is not None and len(cache) < max_simulations and not below(hi)
               and not done(lo, hi)):
            if (mode == "concurrency" and hi - lo <= 1) or (mode == "rate" and (hi - lo) <= rel_tol * hi):
                break
            mid = norm(math.sqrt(lo * hi) if hi > 2 * lo else 0.5 * (lo + hi))
            if mid in (lo, hi):
                break
            if attain(mid) >= goal:
                lo = mid
            else:
                hi = mid
    finally:
        bar.close()
    curve = [{"load": k, **{c: v.get(c) for c in _CURVE_KEYS},
              **({"ramp_up_s": v["ramp_up_s"]} if "ramp_up_s" in v else {})} for k, v in sorted(cache.items())]
    best = lo if lo is not None else 0.0
    if not note and done(lo, hi):
        note = (f"stopped where the caller's decided() held, {lo:g} met the target"
                + (f" and {hi:g} missed it" if hi is not None else "") + " (not searched to rel_tol)")
    if lo is not None and hi is None and not note:
        note = f"every load tried met the target ({len(cache)} simulations, the limit): a lower bound only"
    return LoadSearch(mode=mode, max_load=int(best) if mode == "concurrency" else best, target=goal,
                      attainment=cache[best]["slo_attainment"] if best in cache else float("nan"),
                      curve=curve, simulations=len(cache), bracketed=hi is not None or lo is None, note=note,
                      config=_search_config(model, w, eng, replicas))
