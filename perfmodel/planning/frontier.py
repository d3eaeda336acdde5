"""The plan's search: screen every candidate analytically, simulate only those that could win.

A best-first branch and bound. Each task (one candidate under one engine) is screened
(:func:`perfmodel.planning.screen.screen`), which gives a lower bound on its devices and so on its
ranking tuple (devices, power, cost in the objective's order); its **tie-break** is that screen bound,
then its enumeration order. Feasible tasks wait in a priority queue ordered by (bound, tie-break). The
first is taken: an aggregated candidate not yet refined gets the tighter steady-state bound
(:func:`perfmodel.planning.screen.steady_bound`) and goes back into the queue; otherwise it is
simulated (``wave`` at a time: 1 without an executor, the executor's workers with one). Accepted plans
are ranked by (ranking tuple, tie-break). With ``prune`` on, the search stops when the first task's
(bound, tie-break) ranks after the best plan found: its plan can be no better than its bound, and on a
tie it loses, and so do all tasks behind it (``frontier``). The best plan is therefore the one an
exhaustive search (``prune=False``) returns.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..progress import Bar
from .engine_space import SequenceLimitCollapse, deployment_name, engine_columns
from .screen import PRUNE_REASONS, objective_key, screen, screening_lengths, steady_bound


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
           run: Callable[[Callable, list], list], wave: int = 1, prune: bool = True,
           progress: bool | None = False, collapse: bool = False) -> dict[str, Any]:
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
        Stop when the remaining tasks cannot beat the best found (False: evaluate every feasible task).
    progress : bool | None
        One bar over the tasks, each counted when screened out, simulated or pruned
        (:mod:`perfmodel.progress`).
    collapse : bool
        With ``prune``: collapse sequence limits the KV cache keeps from binding
        (:class:`perfmodel.planning.engine_space.SequenceLimitCollapse`), counted in ``pruned_by["knob"]``
        (a key present only with ``collapse``).

    Returns
    -------
    dict
        ``ranked``, ``rejected``, ``pruned`` (lists of rows) and ``counts``.
    """
    rejected, pruned, feasible = [], [], []
    by = dict.fromkeys(PRUNE_REASONS + (("knob",) if collapse else ()), 0)
    knobs = SequenceLimitCollapse() if collapse and prune else None
    invalid = 0
    bar = Bar(len(tasks), "plan", progress, unit="candidate")
    memo: dict = {}   # each distinct step model built once, shared by the candidates that use it
    for index, task in enumerate(tasks):
        c, w = task["candidate"], task["workload"]
        isl, osl = screening_lengths(w)
        s = screen(c, task["engine"], isl, osl, task["slo"], task["rate"], task["max_replicas"], memo)
        spec = task["engine"].spec.label() if task["engine"].spec is not None else "off"
        head = {"deployment": deployment_name(task), "hardware": c.hardware, **c.layout, "spec_decode": spec,
                **engine_columns(task["engine"])}
        if s["outcome"] == "invalid":
            invalid += 1
            rejected.append({**head, "rejected_for": s["rejected_for"], "reason": s["reason"], "stage": "analytic"})
        elif s["outcome"] == "pruned":
            by[s["pruned_by"]] += 1
            rejected.append({**head, "rejected_for": s["rejected_for"], "reason": s["reason"], "stage": "analytic"})
        else:
            full = {**task, **{k: v for k, v in s.items() if k != "outcome"}, "keys": keys,
                    "refined": c.disaggregated}
            same = knobs.into(full, isl, osl) if knobs is not None else None
            if same is not None:
                by["knob"] += 1
                pruned.append({**head, "pruned_by": "knob", "same_as": same[0], "reason": same[1]})
                bar.update()
                continue
            bound = objective_key(c, s["min_devices"], task["tco"], keys)
            feasible.append((bound, (bound, index), full))
            continue
        bar.update()
    heapq.heapify(feasible)
    accepted: list[tuple] = []
    best: tuple | None = None   # (ranking tuple, tie-break) of the best plan found
    counts = {"simulated": 0, "accepted": 0, "failed": 0, "abandoned": 0}
    while feasible:
        batch = []
        while feasible and len(batch) < wave and not (prune and best is not None and feasible[0][:2] > best):
            bound, tie, task = heapq.heappop(feasible)
            if not task["refined"]:
                refined = steady_bound(task)
                task.update(refined, refined=True)
                heapq.heappush(feasible, (max(bound, objective_key(task["candidate"], refined["min_devices"],
                                                                   task["tco"], keys)), tie, task))
                continue
            batch.append({**task, "bound": best if prune else None, "tie": tie})
        if not batch:
            break
        bar.note(f"simulating {deployment_name(batch[0])}" + (f" +{len(batch) - 1}" if len(batch) > 1 else ""))
        for task, out in zip(batch, run(evaluate, batch), strict=True):
            bar.update()
            out.pop("accepted", None)
            outcome, simulated = out.pop("outcome"), out.pop("simulated")
            counts["simulated"] += bool(simulated)
            if outcome == "accepted":
                counts["accepted"] += 1
                accepted.append((_key(out, keys), task["tie"], out))
                best = min(best, accepted[-1][:2]) if best is not None else accepted[-1][:2]
            elif outcome == "failed":
                counts["failed"] += 1
                rejected.append(out)
            else:   # left at the frontier, before (an analytic bound) or after a simulation
                counts["abandoned"] += bool(simulated)
                by["frontier"] += not simulated
                out.pop("rejected_for", None)
                pruned.append(out)
    bar.update(len(feasible))   # the rest: pruned at the frontier
    bar.close()
    for _, _, task in feasible:
        by["frontier"] += 1
        c = task["candidate"]
        pruned.append({"deployment": deployment_name(task), "hardware": c.hardware, **c.layout,
                       **engine_columns(task["engine"]), "pruned_by": "frontier",
                       "min_devices": task["min_devices"],
                       "reason": f"at least {task['min_devices']} devices ("
                                 f"{'steady-state' if task.get('x_max') else 'capacity'} bound); ranks below the "
                                 f"best plan found"})
    ranked = [row for _, _, row in sorted(accepted, key=lambda a: (a[0], a[1]))]
    for k, r in enumerate(ranked, 1):
        r["rank"] = k
    analytic = sum(by.values())
    return {"ranked": ranked, "rejected": rejected, "pruned": pruned,
            "counts": {"enumerated": len(tasks), "invalid_layout": invalid, "pruned_analytically": analytic,
                       "pruned_by": by, **counts}}
