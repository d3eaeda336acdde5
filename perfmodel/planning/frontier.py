"""The plan's search: screen every candidate analytically, simulate only those that could win.

Each task (one candidate under one engine) is screened (:func:`perfmodel.planning.screen.screen`).
Feasible tasks are sorted by the ranking tuple of their lower bound on devices, then by enumeration
order, and evaluated in that order, ``wave`` at a time (1 without an executor, the executor's workers
with one). Accepted plans are ranked by the objective's tuple, ties going to the task earlier in that
order. With ``prune`` on, a task is evaluated only while its lower bound ranks above the best plan
found so far (:math:`\\mathrm{key}_{lb} < \\mathrm{key}_{best}`, tuples compared in order): it comes
later in the order, so it loses a tie, and its plan is never better than its bound. The other tasks
are pruned (``frontier``), and the best plan is the one an exhaustive search (``prune=False``) returns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .screen import PRUNE_REASONS, objective_key, screen


def _key(row: dict[str, Any], keys: tuple[str, ...]) -> tuple[float, ...]:
    return tuple(math.inf if not np.isfinite(row[k]) else float(row[k]) for k in keys)


def workers(executor: Any) -> int:
    """Tasks to evaluate side by side: 1 in this process, else the executor's worker count (≥ 1)."""
    if executor is None:
        return 1
    n = getattr(executor, "_max_workers", None)
    if n is None and hasattr(executor, "nthreads"):   # dask.distributed.Client
        try:
            n = sum(executor.nthreads().values())
        except Exception:  # a client without workers yet: one at a time
            n = 1
    return max(1, int(n or 1))


def search(tasks: Sequence[dict[str, Any]], keys: tuple[str, ...], evaluate: Callable[[Any], dict[str, Any]],
           run: Callable[[Callable, list], list], wave: int = 1, prune: bool = True) -> dict[str, Any]:
    """Screen, order and evaluate ``tasks`` (module docstring).

    Parameters
    ----------
    tasks : sequence of dict
        One per (candidate, engine), with the plan's settings (``candidate``, ``engine``, ``workload``,
        ``slo``, ``rate``, ``max_replicas``, ``tco``...).
    keys : tuple of str
        The ranking (e.g. ``("devices", "power_w", "cost_per_hour")``).
    evaluate : callable
        Sizes and simulates one screened task (``evaluate_candidate``).
    run : callable
        ``run(fn, batch)`` evaluates a batch of tasks (``map_tasks`` with the plan's executor).
    wave : int
        Tasks evaluated side by side.
    prune : bool
        Skip tasks whose lower bound cannot beat the best found (False: evaluate every feasible task).

    Returns
    -------
    dict
        ``ranked``, ``rejected``, ``pruned`` (lists of rows) and ``counts``.
    """
    rejected, pruned, feasible = [], [], []
    by = dict.fromkeys(PRUNE_REASONS, 0)
    invalid = 0
    for index, task in enumerate(tasks):
        c, w = task["candidate"], task["workload"]
        isl, osl = w.isl.mean, w.osl.mean + w.reasoning_tokens.mean
        s = screen(c, task["engine"], isl, osl, task["slo"], task["rate"], task["max_replicas"])
        spec = task["engine"].spec.label() if task["engine"].spec is not None else "off"
        head = {"deployment": c.name, "hardware": c.hardware, **c.layout, "spec_decode": spec}
        if s["outcome"] == "invalid":
            invalid += 1
            rejected.append({**head, "rejected_for": s["rejected_for"], "reason": s["reason"], "stage": "analytic"})
        elif s["outcome"] == "pruned":
            by[s["pruned_by"]] += 1
            rejected.append({**head, "rejected_for": s["rejected_for"], "reason": s["reason"], "stage": "analytic"})
        else:
            full = {**task, **{k: v for k, v in s.items() if k != "outcome"}, "keys": keys, "index": index}
            feasible.append((objective_key(c, s["min_devices"], task["tco"], keys), index, full))
    feasible.sort(key=lambda f: (f[0], f[1]))
    feasible_order = {f[1]: k for k, f in enumerate(feasible)}   # the tie-break: the search order
    accepted: list[dict[str, Any]] = []
    best: tuple[float, ...] | None = None
    counts = {"simulated": 0, "accepted": 0, "failed": 0, "abandoned": 0}
    i = 0
    while i < len(feasible):
        batch = []
        while i < len(feasible) and len(batch) < wave and not (prune and best is not None and feasible[i][0] >= best):
            batch.append({**feasible[i][2], "bound": best if prune else None})
            i += 1
        if not batch:
            break
        for task, out in zip(batch, run(evaluate, batch), strict=True):
            out.pop("accepted", None)
            outcome, simulated = out.pop("outcome"), out.pop("simulated")
            counts["simulated"] += bool(simulated)
            if outcome == "accepted":
                counts["accepted"] += 1
                accepted.append((_key(out, keys), feasible_order[task["index"]], out))
                best = min(best, _key(out, keys)) if best is not None else _key(out, keys)
            elif outcome == "failed":
                counts["failed"] += 1
                rejected.append(out)
            else:   # pruned at the frontier, before or after a simulation
                counts["abandoned"] += bool(simulated)
                by["frontier"] += not simulated
                out.pop("rejected_for", None)
                pruned.append(out)
    for _, _, task in feasible[i:]:
        by["frontier"] += 1
        c = task["candidate"]
        pruned.append({"deployment": c.name, "hardware": c.hardware, **c.layout, "pruned_by": "frontier",
                       "min_devices": task["min_devices"],
                       "reason": f"at least {task['min_devices']} devices (capacity bound); ranks below the best "
                                 f"plan found"})
    ranked = [row for _, _, row in sorted(accepted, key=lambda a: (a[0], a[1]))]
    for k, r in enumerate(ranked, 1):
        r["rank"] = k
    analytic = sum(by.values())
    return {"ranked": ranked, "rejected": rejected, "pruned": pruned,
            "counts": {"enumerated": len(tasks), "invalid_layout": invalid, "pruned_analytically": analytic,
                       "pruned_by": by, **counts}}
