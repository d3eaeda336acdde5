"""Analytic screening of one plan candidate: layout, memory, per-user speed floor, capacity bound.

Runs before any simulation (:func:`perfmodel.planning.plan`), in this order:

1. **layout**: the step models must build (else the candidate is rejected: ``invalid layout``);
2. **memory**: the weights fit and leave KV-cache room for one request (a P/D prefill replica: one
   prompt);
3. **speed ceiling**: an idle replica's TTFT (one prompt; P/D: plus its KV transfer), TPOT (one
   sequence) and E2E = TTFT + (O − 1)·TPOT must be within the SLO limits: no load does better;
4. **capacity**: the fewest replicas (P/D: workers per pool) that could carry the rate λ,
   :math:`\\lceil \\lambda / X_{ub} \\rceil` with the capacity bounds of
   :mod:`perfmodel.planning.bounds`; more than ``max_replicas`` prunes the candidate (``load``).
   Before an aggregated candidate is simulated, the tighter steady-state bound (the replica's
   throughput at its concurrency limit, which the sizing never exceeds) is checked against the best
   plan found.

A candidate that passes gets a **lower bound** on its devices, and so on its power and cost (both
grow with devices), which :func:`plan` compares with the best plan found so far.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import PerfmodelError
from .bounds import prefill_capacity_bound, replica_capacity_bound
from .cost import TotalCost, usd_per_hour

#: Pruning reasons, as counted in ``PlanResult.counts["pruned_by"]``.
PRUNE_REASONS = ("memory", "speed_ceiling", "capacity", "frontier")


def _memo_key(kwargs: Mapping[str, Any]) -> tuple:
    """A hashable key of ``StepModel`` keyword arguments; unhashable values (resolved specs) by identity."""
    def part(v: Any) -> Any:
        try:
            hash(v)
        except TypeError:
            return ("id", id(v))
        return v

    return tuple(sorted((k, part(v)) for k, v in kwargs.items()))


def build(step_model: Any, memo: dict | None = None) -> Any:
    """A step model from a :class:`~perfmodel.core.step.StepModel` keyword mapping or a step model.

    ``memo`` (a dict the caller keeps) builds each distinct mapping once: the candidates of a plan
    share pools (a P/D pair's prefill layout is also an aggregated candidate), so they get the same
    step model object, whose step tables the simulations then share. A layout that fails to build
    raises the same error each time.
    """
    from ..core.step import StepModel
    from ..serving.protocol import resolve_step_model

    if not isinstance(step_model, Mapping):
        return resolve_step_model(step_model)
    if memo is None:
        return StepModel(**dict(step_model))
    key = _memo_key(step_model)
    if key not in memo:
        try:   # the mapping is kept with the result, so the identities in the key stay valid
            memo[key] = (StepModel(**dict(step_model)), None, step_model)
        except PerfmodelError as exc:
            memo[key] = (None, exc, step_model)
    built, exc, _ = memo[key]
    if exc is not None:
        raise exc
    return built


def memory_reason(sm: Any, tokens: float) -> str | None:
    """Why the weights or one request's ``tokens`` of KV cache do not fit (None: they fit)."""
    usable = getattr(sm, "hardware", None) and sm.hardware.memory_capacity * (1 - sm.reserve)
    if usable and sm.weights_per_device > usable:
        return (f"weights need {sm.weights_per_device / 1e9:.1f} GB per device, usable memory is "
                f"{usable / 1e9:.1f} GB ({sm.hardware.memory_capacity / 1e9:.0f} GB less the reserve)")
    if float(sm.kv_capacity_tokens) < tokens:
        return (f"KV-cache room for {int(sm.kv_capacity_tokens):,} tokens per replica is less than one "
                f"request ({int(tokens):,} tokens)")
    return None


def floor_reason(ttft0: float, tpot0: float, osl: float, slo: Any, what: str = "idle replica, one prompt") -> str | None:
    """Why an idle replica's TTFT [s], TPOT [s] or E2E already misses the SLO (None: within)."""
    if slo.ttft is not None and ttft0 > slo.ttft:
        return f"TTFT floor {ttft0:.3g} s ({what}) exceeds the limit {slo.ttft:g} s"
    if slo.tpot is not None and tpot0 > slo.tpot:
        return f"TPOT floor {tpot0 * 1e3:.3g} ms (one sequence) exceeds the limit {slo.tpot * 1e3:g} ms"
    e2e0 = ttft0 + (osl - 1.0) * tpot0
    if slo.e2e is not None and e2e0 > slo.e2e:
        return f"E2E floor {e2e0:.3g} s (idle replica) exceeds the limit {slo.e2e:g} s"
    return None


def idle_floors(sm: Any, isl: float, osl: float) -> tuple[float, float]:
    """(TTFT, TPOT) of an idle replica [s]: one prompt's prefill; one decode step at context I + O/2."""
    ttft0 = float(np.ravel(sm.step_time(0.0, 0.0, isl, 0.0))[0])
    tpot0 = float(np.ravel(sm.step_time(1.0, isl + osl / 2.0, 0.0, 0.0))[0])
    return ttft0, tpot0


def hourly_cost(c: Any, devices: int, tco: TotalCost | None) -> float:
    """USD per hour of ``devices`` devices of candidate ``c`` (NaN when it has no price)."""
    if c.price is not None:
        return float(usd_per_hour(devices, price=c.price))
    if tco is not None and c.power is not None:
        return float(usd_per_hour(devices, tco=tco, device_power_w=float(c.power.power_w(1))))
    return float("nan")


def objective_key(c: Any, devices: int, tco: TotalCost | None, keys: tuple[str, ...]) -> tuple[float, ...]:
    """The ranking tuple of ``devices`` devices of ``c`` (non-finite values rank last)."""
    values = {"devices": float(devices),
              "power_w": float(c.power.power_w(devices)) if c.power is not None else math.inf,
              "cost_per_hour": hourly_cost(c, devices, tco)}
    return tuple(v if np.isfinite(v) else math.inf for v in (values[k] for k in keys))


def screen(c: Any, engine: Any, isl: float, osl: float, slo: Any, rate: float, max_replicas: int,
           memo: dict | None = None) -> dict[str, Any]:
    """Screen one candidate under one engine (module docstring); ``memo`` as for :func:`build`.

    Returns
    -------
    dict
        ``outcome`` ``"invalid"`` (with ``reason``), ``"pruned"`` (with ``pruned_by``, ``rejected_for``
        and ``reason``) or ``"feasible"``; feasible results carry the built step models (``model``,
        and ``decode_model`` for P/D), ``min_replicas`` (P/D: ``min_prefill`` and ``min_decode``) and
        ``min_devices``.
    """
    try:
        sm = build(c.step_model, memo)
        dm = build(c.decode, memo) if c.decode is not None else None
    except PerfmodelError as exc:
        return {"outcome": "invalid", "rejected_for": "layout", "reason": str(exc)}
    if dm is None:
        return _screen_aggregated(sm, engine, isl, osl, slo, rate, max_replicas, memo)
    return _screen_disaggregated(sm, dm, engine, isl, osl, slo, rate, max_replicas, c.kv_link, memo)


def _once(memo: dict | None, what: str, sm: Any, engine: Any, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` computed once per (what, step model, engine, args) in ``memo`` (None: every time).

    The screen's floors and bounds of a pool depend on its step model, the engine and the lengths only,
    and a plan's P/D pairs share pools. Keys hold identities; the entry keeps the objects alive.
    """
    if memo is None:
        return fn(*args)
    key = (what, id(sm), id(engine), *args[1:])
    if key not in memo:
        memo[key] = (fn(*args), sm, engine)
    return memo[key][0]


def _floors(sm: Any, engine: Any, isl: float, osl: float, memo: dict | None) -> tuple[float, float]:
    return _once(memo, "idle floors", sm, None, idle_floors, sm, isl, osl)


def _decode_bound(sm: Any, engine: Any, isl: float, osl: float, memo: dict | None) -> float:
    return _once(memo, "decode bound", sm, engine,
                 lambda m, i, o: replica_capacity_bound(engine.step(m), engine.profile, i, o), sm, isl, osl)


def _prefill_bound(sm: Any, engine: Any, isl: float, memo: dict | None) -> float:
    return _once(memo, "prefill bound", sm, engine,
                 lambda m, i: prefill_capacity_bound(engine.step(m), engine.profile, i), sm, isl)


#: Relative change of the steady state's decode batch at which its fixed point is taken as converged.
STEADY_STATE_RTOL = 1e-9


def screening_lengths(w: Any) -> tuple[float, float]:
    """(prompt tokens the screen costs, output tokens) of a workload: mean ISL less its best-case reuse.

    With prefix reuse (an explicit ``prefix_hit_rate``, shared prefixes or sessions) a prompt computes only
    its uncached part. The screen's floors and capacity bounds must stay bounds, so they cost the prompt
    at the *optimistic* hit rate h of :func:`perfmodel.serving.reuse.expected_hit_rate` with ample KV
    cache, :math:`I_{screen} = \bar I (1 - h)`, and leave the cached prefix's attention out; the
    simulations that follow run the real cache.
    """
    from ..serving.reuse import expected_hit_rate

    isl, osl = w.isl.mean, w.osl.mean + w.reasoning_tokens.mean
    return isl * (1.0 - expected_hit_rate(w)), osl


def steady_bound(task: Mapping[str, Any]) -> dict[str, Any]:
    """The steady-state bound of a screened aggregated candidate: its capacity and fewest replicas.

    X = the replica's steady-state throughput at its concurrency limit
    (:func:`perfmodel.serving.steady_state` at ``max_num_seqs``, KV-cache limited, converged to
    ``STEADY_STATE_RTOL``), which the sizing never exceeds, so at least :math:`\\lceil \\lambda / X \\rceil`
    replicas (and no fewer than the screen's bound).

    Returns
    -------
    dict
        ``x_max`` [req/s], ``n_cap`` (mean decoding sequences there), ``min_replicas``, ``min_devices``.
    """
    from ..serving import steady_state

    sm, eng, w, rate = task["model"], task["engine"], task["workload"], task["rate"]
    isl, osl = screening_lengths(w)
    ss = steady_state(sm, float(eng.profile.max_num_seqs), isl, osl, engine=eng, rtol=STEADY_STATE_RTOL)
    x_max, n_cap = float(np.ravel(ss.requests_per_s)[0]), float(np.ravel(ss.decode_batch_mean)[0])
    least = max(int(task["min_replicas"]), math.ceil(rate / x_max - 1e-9) if x_max > 0 else 1)
    return {"x_max": x_max, "n_cap": n_cap, "min_replicas": least, "min_devices": least * int(sm.devices)}


def _pruned(by: str, kind: str, reason: str) -> dict[str, Any]:
    return {"outcome": "pruned", "pruned_by": by, "rejected_for": kind, "reason": reason}


def _screen_aggregated(sm, engine, isl, osl, slo, rate, max_replicas, memo=None) -> dict[str, Any]:
    reason = memory_reason(sm, isl + osl)
    if reason:
        return _pruned("memory", "memory", reason)
    reason = floor_reason(*_floors(sm, engine, isl, osl, memo), osl, slo)
    if reason:
        return _pruned("speed_ceiling", "SLO", reason)
    x_ub = _decode_bound(sm, engine, isl, osl, memo)
    if not x_ub > 0:
        return _pruned("memory", "memory", "no sequence fits the engine's KV-cache share")
    need = max(1, math.ceil(rate / x_ub - 1e-9))
    if need > max_replicas:
        return _pruned("capacity", "load", f"needs at least {need} replicas (> max_replicas {max_replicas}): "
                                           f"at most {x_ub:.3g} req/s per replica (capacity bound)")
    return {"outcome": "feasible", "model": sm, "min_replicas": need, "min_devices": need * int(sm.devices),
            "capacity_bound_rps": x_ub}


def kv_transfer_s(pm: Any, dm: Any, isl: float, link: Any = None) -> float:
    """One request's KV transfer between the pools [s]: α + I·(KV bytes per token)/bandwidth.

    Over ``link`` (``link_bandwidth``, ``link_alpha``) when given, else the prefill accelerator's port
    (:func:`perfmodel.deployment.disagg.request_kv_transfer_time`, the simulator's).
    """
    from ..deployment.disagg import request_kv_transfer_time
    from ..errors import ConfigError
    from ..units import to_si

    if link is not None:
        bw = to_si(link["link_bandwidth"], "bandwidth", "kv_link.link_bandwidth")
        return to_si(link["link_alpha"], "time", "kv_link.link_alpha") + isl * float(pm.kv_bytes_per_token) / bw
    if not hasattr(pm, "hardware"):
        raise ConfigError("kv_link: a P/D candidate whose step models have no hardware needs link_bandwidth "
                          "and link_alpha")
    return float(np.ravel(request_kv_transfer_time(pm, int(pm.devices + dm.devices), isl))[0])


def _screen_disaggregated(pm, dm, engine, isl, osl, slo, rate, max_replicas, link, memo=None) -> dict[str, Any]:
    for pool, sm, tokens in (("prefill", pm, isl), ("decode", dm, isl + osl)):
        reason = memory_reason(sm, tokens)
        if reason:
            return _pruned("memory", "memory", f"{pool} pool: {reason}")
    try:
        t_kv = kv_transfer_s(pm, dm, isl, link)
    except PerfmodelError as exc:
        return {"outcome": "invalid", "rejected_for": "layout", "reason": str(exc)}
    ttft0 = _floors(pm, engine, isl, osl, memo)[0] + t_kv
    reason = floor_reason(ttft0, _floors(dm, engine, isl, osl, memo)[1], osl, slo,
                          "idle prefill replica and KV transfer")
    if reason:
        return _pruned("speed_ceiling", "SLO", reason)
    xp = _prefill_bound(pm, engine, isl, memo)
    xd = _decode_bound(dm, engine, isl, osl, memo)
    if xd <= 0:
        return _pruned("memory", "memory", "decode pool: no sequence fits the engine's KV-cache share")
    p_min, d_min = (max(1, math.ceil(rate / x - 1e-9)) for x in (xp, xd))
    if max(p_min, d_min) > max_replicas:
        return _pruned("capacity", "load", f"needs at least {p_min} prefill and {d_min} decode workers "
                                           f"(> max_replicas {max_replicas}): at most {xp:.3g} / {xd:.3g} "
                                           f"req/s per worker (capacity bounds)")
    return {"outcome": "feasible", "model": pm, "decode_model": dm, "min_prefill": p_min, "min_decode": d_min,
            "min_devices": p_min * int(pm.devices) + d_min * int(dm.devices), "kv_transfer_s": t_kv,
            "capacity_bound_rps": (xp, xd)}
