r"""Sizing a P/D-disaggregated plan candidate: prefill and decode worker counts, by simulation.

A candidate that passed the analytic screen (:mod:`perfmodel.planning.screen`) starts at

.. math:: P_0 = \lceil \lambda / X_{p,ub} \rceil, \qquad
          D_0 = \max\left(\lceil \lambda / X_{ub} \rceil,\ \lceil \lambda / X_{d}(\mathrm{TPOT}) \rceil\right)

(the capacity bounds of :mod:`perfmodel.planning.bounds`, and the decode rate whose decode-only step
is within the TPOT limit), then simulates the two pools
(:class:`perfmodel.serving.Disaggregated`, KV transfer over
:func:`perfmodel.deployment.disagg.kv_transfer_link`) at the target rate λ. While the joint SLO
attainment is below the target, the pool whose own limit is attained least gets one more worker
(prefill for TTFT, decode for TPOT; both when neither limit alone falls short), up to
``3 (extra_replicas + 1)`` simulations. The counts never go below the bounds, so the devices, power
and cost of the result are never below the screen's lower bound, which is what makes the plan's
frontier pruning exact. The greedy walk finds *a* small P:D pair, not provably the smallest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .bounds import decode_rate_at_tpot
from .engine_space import deployment_name, engine_columns
from .plan_row import plan_row, step_tables
from .screen import objective_key


def _requests(task: Mapping[str, Any], isl: float, osl: float, workers: int) -> int:
    """Requests per run: the input, 100 per worker, and three times the in-flight count at the SLO."""
    slo, rate = task["slo"], task["rate"]
    e2e = slo.e2e if slo.e2e is not None else (slo.ttft or 0.0) + (osl - 1.0) * (slo.tpot or 0.0)
    return int(max(task["requests"], 100 * workers, 3.0 * rate * e2e))


def evaluate_disaggregated(task: Mapping[str, Any]) -> dict[str, Any]:
    """Size and simulate one P/D candidate (module docstring); returns the plan row or why not.

    ``task`` holds the screen's result (``model``, ``decode_model``, ``min_prefill``, ``min_decode``),
    the candidate, workload, SLO, rate, target, engine, seed, requests, max_replicas, extra_replicas,
    tco, ``keys`` (the ranking) and ``bound`` (the best ranking tuple found so far, or None).
    """
    from ..serving import Disaggregated, simulate

    c, eng, slo, rate, goal = task["candidate"], task["engine"], task["slo"], task["rate"], task["target"]
    pm, dm, w = task["model"], task["decode_model"], task["workload"]
    isl, osl = w.isl.mean, w.osl.mean + w.reasoning_tokens.mean
    prefill, decode = int(task["min_prefill"]), int(task["min_decode"])
    if slo.tpot is not None:
        x_tpot = decode_rate_at_tpot(eng.step(dm), eng.profile, isl, osl, slo.tpot)
        if x_tpot > 0:
            decode = max(decode, math.ceil(rate / x_tpot - 1e-9))
    cap = task["max_replicas"]
    decode = min(decode, cap)
    base = {"deployment": deployment_name(task), "hardware": c.hardware, **c.layout, **engine_columns(eng)}

    def devices() -> int:
        return int(prefill * pm.devices + decode * dm.devices)

    def beyond_bound() -> bool:
        key = objective_key(c, devices(), task["tco"], task["keys"])
        return task["bound"] is not None and (key, task["tie"]) > task["bound"]

    if beyond_bound():
        return {"accepted": False, "outcome": "pruned", "simulated": False, **base, "pruned_by": "frontier",
                "reason": f"{prefill} prefill + {decode} decode workers at the TPOT limit already rank below "
                          f"the best plan found"}
    timers = step_tables(task)
    summary: dict[str, Any] = {}
    runs = 0
    for runs in range(1, 3 * (task["extra_replicas"] + 1) + 1):
        pair = Disaggregated(pm, dm, prefill_replicas=prefill, decode_replicas=decode, **(c.kv_link or {}))
        res = simulate(pair, w.with_load(rate=rate), engine=eng, seed=task["seed"], slo=slo,
                       requests=_requests(task, isl, osl, prefill + decode), timer_cache=timers)
        summary = res.summary()
        if summary["slo_attainment"] >= goal or (prefill >= cap and decode >= cap):
            break
        a_ttft, a_tpot = summary.get("slo_attainment_ttft", 1.0), summary.get("slo_attainment_tpot", 1.0)
        grow_p = a_ttft < goal or (a_tpot >= goal and a_ttft <= a_tpot)
        grow_d = a_tpot < goal or (a_ttft >= goal and a_tpot <= a_ttft)
        prefill, decode = min(cap, prefill + grow_p), min(cap, decode + grow_d)
        if beyond_bound():
            return {"accepted": False, "outcome": "pruned", "simulated": True, **base, "pruned_by": "frontier",
                    "reason": f"attainment {summary['slo_attainment']:.3f} < {goal:g} after {runs} simulations; "
                              f"more workers rank below the best plan found"}
    if summary["slo_attainment"] < goal:
        return {"accepted": False, "outcome": "failed", "simulated": True, "stage": "simulated", **base,
                "rejected_for": "SLO",
                "reason": f"attainment {summary['slo_attainment']:.3f} < {goal:g} at {rate:g} req/s with "
                          f"{prefill} prefill + {decode} decode workers after {runs} simulations"}
    return {"accepted": True, "outcome": "accepted", "simulated": True, "simulations": runs,
            **plan_row(task, summary, f"{c.name} {prefill}P+{decode}D", devices(), {
                "devices_per_replica": int(dm.devices), "prefill_devices_per_worker": int(pm.devices),
                "prefill_workers": prefill, "decode_workers": decode, "replicas": prefill + decode,
                "kv_transfer_s": task.get("kv_transfer_s")})}
