"""Capacity plans: the cheapest deployments that meet a joint SLO at a target load.

The search space (:mod:`perfmodel.planning.space`) is model × hardware × layout (tp, pp; for MoE models
attention DP and EP) × precision, aggregated and, on request, P/D-disaggregated (with a weight format
per pool on request), each under every engine variant (:mod:`perfmodel.planning.engine_space`:
engine × token budget × speculative decoding × sequence limit). Every candidate is first **screened analytically**
(:mod:`perfmodel.planning.screen`): the layout must be valid, the weights and one request's KV cache
must fit, an idle replica's TTFT/TPOT/E2E floors must be within the SLO (the per-user speed ceiling),
and the capacity bound (:mod:`perfmodel.planning.bounds`) gives the fewest replicas that could carry the
rate, hence a lower bound on devices, power and cost. Candidates are then **simulated best bound first**
(:mod:`perfmodel.planning.frontier`: an aggregated one's bound is first tightened to its steady-state
capacity), and (``prune=True``) only while the bound could still beat the best plan found; the others
are pruned unsimulated, and a simulated one is left as soon as it needs more replicas than could win.
The bound never exceeds what the sizing below returns, so the plan picked is the one a full search
(``prune=False``) picks.

An aggregated candidate is sized as follows:

1. **per-replica capacity**: :func:`perfmodel.serving.max_load` finds the highest arrival rate
   :math:`\\lambda_1` [req/s] one replica sustains with the SLO attainment at or above the target,
   bounded by the replica's steady-state throughput at its concurrency limit
   (:func:`perfmodel.planning.screen.steady_bound`); every simulated run holds at least three times that
   concurrency limit in requests, so that overload shows;
2. **replicas**: :math:`R = \\lceil \\lambda / \\lambda_1 \\rceil` for the target rate λ (at least the
   screen's bound), then a simulation of R replicas behind a least-loaded router at rate λ checks the
   attainment (R is raised while it falls short, up to ``extra_replicas`` times); more than
   ``max_replicas`` is a **load** rejection.

A P/D candidate's prefill and decode worker counts are sized by :mod:`perfmodel.planning.plan_disagg`.

``goodput_requests_per_s`` is the simulation's (requests meeting every limit per second of simulated time, which
includes the ramp-up and the drain of a finite run, so it reads a little below ``offered_requests_per_s``).
Accepted candidates are ranked by ``objective``: ``devices`` (R × devices per replica), ``power``
[W on the stated basis] or ``cost`` [USD/h, from a device-hour price or a total-cost model], ties
broken by the others, then by the screen's bound, then by the order of enumeration. Every
assumption (engine, seed, requests simulated, power basis, prices, search space) and the counts of
candidates enumerated, pruned (by reason) and simulated are returned with the plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .. import checks
from ..errors import ConfigError, PerfmodelError
from ..formats import DEPRECATED, checkpoint_format, format_list, renamed
from ..hardware import load_hardware
from .cost import TotalCost, power_basis, usd
from .engine_space import deployment_name, engine_columns, engine_variants, knob_values, variant_label
from .plan_row import plan_row, step_tables
from .screen import objective_key
from .space import Candidate, enumerate_candidates

if TYPE_CHECKING:   # pandas is imported where a frame is made (it takes about 1 s to import)
    import pandas as pd

__all__ = ["Candidate", "PlanResult", "enumerate_candidates", "evaluate_candidate", "plan"]

OBJECTIVES = {"devices": ("devices", "power_w", "cost_per_hour"),
              "power": ("power_w", "devices", "cost_per_hour"),
              "cost": ("cost_per_hour", "devices", "power_w")}


@dataclass
class PlanResult:
    """Outcome of :func:`plan`.

    Attributes
    ----------
    ranked : list of dict
        Simulated deployments meeting the SLO, best first.
    rejected : list of dict
        Candidates that cannot meet the SLO at the rate, each with ``rejected_for`` (layout, memory,
        SLO, load), ``reason`` and ``stage`` (``analytic`` or ``simulated``).
    inputs : dict
        Every setting and default used, the search space included.
    pruned : list of dict
        Feasible candidates left unsimulated (or abandoned) because their lower bound ranks below the
        best plan found (``pruned_by`` = ``frontier``, with ``min_devices``).
    counts : dict
        ``enumerated`` = ``invalid_layout`` + ``pruned_analytically`` + ``simulated``; ``pruned_by``
        per reason (memory, speed_ceiling, capacity, frontier, and knob when several ``max_num_seqs`` are
        searched: collapsed into a smaller one); ``simulated`` = ``accepted`` +
        ``failed`` + ``abandoned`` (left at the frontier after a simulation).
    """

    ranked: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    inputs: dict[str, Any]
    pruned: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> dict[str, Any] | None:
        return self.ranked[0] if self.ranked else None

    def to_dataframe(self) -> pd.DataFrame:
        """Ranked deployments (one row each)."""
        import pandas as pd

        return pd.DataFrame(self.ranked)

    def as_dict(self) -> dict[str, Any]:
        return {"ranked": self.ranked, "rejected": self.rejected, "pruned": self.pruned, "counts": self.counts,
                "inputs": self.inputs}

    def search_line(self) -> str:
        """One sentence: candidates enumerated, rejected, pruned analytically (by reason) and simulated."""
        n = self.counts
        if not n:
            return ""
        by = n["pruned_by"]
        return (f"search: {n['enumerated']} candidates; {n['invalid_layout']} invalid layouts; "
                f"{n['pruned_analytically']} pruned analytically (memory {by['memory']}, speed ceiling "
                f"{by['speed_ceiling']}, capacity {by['capacity']}, cannot beat the best {by['frontier']}"
                + (f", max_num_seqs that cannot bind {by['knob']}" if "knob" in by else "") + "); "
                f"{n['simulated']} simulated ({n['accepted']} meet the SLO, {n['failed']} fail, "
                f"{n['abandoned']} left at the frontier)")

    def launch(self, engine: str | None = None, rank: int = 1, **kw: Any):
        """Launch configuration (``vllm``, ``sglang``, ``trtllm`` or ``dynamo``) of the deployment ranked
        ``rank`` (1 = best): :func:`perfmodel.planning.launch.launch_config` of that row, with the
        engine knob values it simulated. ``engine`` None: the engine that row ran
        (:func:`perfmodel.planning.launch.launch_engine`)."""
        from .launch import launch_config, launch_engine

        if not 1 <= int(rank) <= len(self.ranked):
            raise ConfigError(f"launch: rank {rank} is not in 1..{len(self.ranked)} (ranked deployments)")
        row = self.ranked[int(rank) - 1]
        if engine is None:
            engine = launch_engine(row.get("engine") or self.inputs["engine"])
        return launch_config(row, engine, self.inputs, **kw)


def _reject(task: Mapping[str, Any], kind: str, reason: str) -> dict[str, Any]:
    c = task["candidate"]
    return {"deployment": deployment_name(task), "hardware": c.hardware, **c.layout,
            **engine_columns(task["engine"]), "rejected_for": kind, "reason": reason}


def evaluate_candidate(task: Mapping[str, Any]) -> dict[str, Any]:
    """Size and simulate one screened candidate. Module level: runs on executors.

    ``task`` holds the screen's result (:func:`perfmodel.planning.screen.screen`) and the plan's
    settings. Returns a dict with ``accepted`` True and the plan row, or False with ``outcome``
    ``failed`` (the rejection) or ``pruned`` (it cannot beat ``task["bound"]``); all say which
    speculative decoding the candidate ran (``spec_decode``) and whether it was ``simulated``.
    """
    from .plan_disagg import evaluate_disaggregated

    spec = task["engine"].spec
    out = evaluate_disaggregated(task) if task["candidate"].disaggregated else _evaluate(task)
    out.setdefault("spec_decode", spec.label() if spec is not None else "off")
    return out


def _evaluate(task: Mapping[str, Any]) -> dict[str, Any]:
    from ..serving import max_load, simulate

    c: Candidate = task["candidate"]
    w, slo, rate, goal, eng = task["workload"], task["slo"], task["rate"], task["target"], task["engine"]
    sm = task["model"]
    x_max, n_cap = task["x_max"], task["n_cap"]   # the steady state at the concurrency limit (the bound)

    def beyond_bound(replicas: int) -> bool:
        key = objective_key(c, int(replicas * sm.devices), task["tco"], task["keys"])
        return task["bound"] is not None and (key, task["tie"]) > task["bound"]

    # a run must hold several times the replica's concurrency limit, or overload never shows
    requests = max(task["requests"], int(3 * n_cap))
    # the largest replica count that could still beat the best plan found: a per-replica rate below
    # rate / allowed cannot win, so the search may stop once a load at or below it fails
    allowed = int(task["min_replicas"])
    while allowed < task["max_replicas"] and not beyond_bound(allowed + 1):
        allowed += 1
    floor = rate / allowed if task["bound"] is not None else None
    timers = step_tables(task)

    def replicas_at(x: float) -> int:   # the replica count the sizing below takes at a capacity x
        return max(1, math.ceil(rate / min(x, x_max) - 1e-9), int(task["min_replicas"]))

    # the search stops once that count no longer depends on where in its bracket the capacity lies
    # (the same count as a search to the end); with a bound it starts no lower than the rate that
    # could still win, so a candidate that cannot win is left after one simulation
    search = max_load(sm, w, slo, target=goal, mode="rate", engine=eng, seed=task["seed"], requests=requests,
                      start=max(0.5 * x_max, floor or 0.0) if x_max > 0 else None, stop_below=floor,
                      timer_cache=timers, decided=(lambda lo, hi: replicas_at(lo) == replicas_at(
                          x_max if hi is None else hi)) if x_max > 0 else None)
    if floor is not None and any(p["load"] <= floor and p["slo_attainment"] < goal for p in search.curve):
        return {"accepted": False, "outcome": "pruned", "simulated": True, **_reject(task, "frontier", (
            f"misses the SLO at {floor:.3g} req/s per replica, so it needs more than {allowed} replicas; ranks "
            f"below the best plan found")), "pruned_by": "frontier", "min_devices": int((allowed + 1) * sm.devices)}
    cap = min(float(search.max_load), x_max)
    failed = {"accepted": False, "outcome": "failed", "simulated": True, "stage": "simulated"}
    if cap <= 0:
        return {**failed, **_reject(task, "SLO", f"attainment below {goal:g} even at the lowest "
                                              f"load tried ({search.simulations} simulations)")}
    replicas = max(1, math.ceil(rate / cap - 1e-9), int(task["min_replicas"]))
    if replicas > task["max_replicas"]:
        return {**failed, **_reject(task, "load", f"needs {replicas} replicas "
                                               f"(> max_replicas {task['max_replicas']}) at "
                                               f"{cap:.3g} req/s per replica")}
    summary: dict[str, Any] = {}
    for _ in range(task["extra_replicas"] + 1):
        if beyond_bound(replicas):
            return {"accepted": False, "outcome": "pruned", "simulated": True, **_reject(task, "frontier", (
                f"{replicas} replicas needed or more ({cap:.3g} req/s per replica); ranks below the best plan "
                f"found")), "pruned_by": "frontier", "min_devices": int(replicas * sm.devices)}
        res = simulate(sm, w.with_load(rate=rate), engine=eng, replicas=replicas, seed=task["seed"],
                       requests=max(requests, 100 * replicas, int(3 * n_cap * replicas)), slo=slo,
                       timer_cache=timers)
        summary = res.summary()
        if summary["slo_attainment"] >= goal or replicas >= task["max_replicas"]:
            break
        replicas += 1
    if summary["slo_attainment"] < goal:
        return {**failed, **_reject(task, "SLO", f"attainment {summary['slo_attainment']:.3f} < {goal:g} "
                                              f"at {rate:g} req/s with {replicas} replicas")}
    return {"accepted": True, "outcome": "accepted", "simulated": True,
            **plan_row(task, summary, f"{c.name} x{replicas}", int(replicas * sm.devices), {
                "devices_per_replica": int(sm.devices), "replicas": replicas, "max_requests_per_s_per_replica": cap,
                "steady_state_requests_per_s_per_replica": x_max})}


def _price_for(price: Any, hw: str | None) -> float | None:
    if price is None or hw is None:
        return None
    value = price.get(hw) if isinstance(price, Mapping) else price
    return None if value is None else usd(value, "hour", f"price[{hw}]")


def _priced(c: Candidate, price: Any, tco: TotalCost | None, use_list: bool, provider: str | None,
            rows: dict[str, Any]) -> Candidate:
    """The candidate with its device-hour price and where it came from: the input, else (``use_list``,
    no total-cost model) the cheapest list-price row for its hardware, recorded in ``rows``."""
    from .prices import default_list_price

    if c.price is not None:
        return replace(c, price_source="input")
    given = _price_for(price, c.hardware)
    if given is not None:
        return replace(c, price=given, price_source="input")
    if tco is not None:
        return replace(c, price_source="total-cost model")
    if not use_list or c.hardware is None:
        return c
    row = default_list_price(c.hardware, provider)
    rows[c.hardware] = row
    if row is None:
        return c
    return replace(c, price=row.usd_per_device_hour, price_source=f"list price row {row.id}")


def plan(model: str | None, workload: Any, slo: Any = None, candidates: Sequence[Any] | None = None, *,
         rate: float | None = None, target: float | None = None, hardware: Sequence[str] = (),
         weights: Any = None, kv_cache: str | None = None, tp: Sequence[int] = (1, 2, 4, 8),
         objective: str = "devices",
         engine: Any = "vllm", power: str = "tdp", tdp: Any = None, idle: Any = None,
         utilisation: float = 1.0, price: Any = None, tco: TotalCost | None = None, requests: int = 300,
         seed: int = 0, max_replicas: int = 256, extra_replicas: int = 3, executor: Any = None,
         progress: bool | None = False, list_prices: bool | None = None,
         price_provider: str | None = None, spec_decode: Sequence[Any] = (None,),
         dp_attention: Sequence[int] = (1,), ep: Sequence[int] | None = None, disaggregated: bool = False,
         aggregated: bool = True, prune: bool = True, pp: Sequence[int] = (1,),
         decode_weights: Any = None, max_num_seqs: Any = None, max_num_batched_tokens: Any = None,
         precisions: Any = DEPRECATED) -> PlanResult:
    """Cheapest deployments meeting a joint SLO at a target load, ranked, with rejections explained.

    Parameters
    ----------
    model : str
        Model id (used to enumerate candidates from ``hardware``; may be None with ``candidates``).
    workload : Workload | str | dict
        Lengths and arrival process (a YAML path, mapping or :class:`perfmodel.serving.Workload`).
    slo : SLO | dict, optional
        Joint objective (default: the workload's); ``target`` overrides its attainment target.
    candidates : sequence of Candidate or mapping, optional
        Replica designs; mappings are ``StepModel`` keyword arguments. Default: enumerated from
        ``hardware`` × ``weights`` × layouts (``tp``; MoE models × ``dp_attention`` × ``ep``),
        aggregated and/or disaggregated (:func:`perfmodel.planning.space.enumerate_candidates`).
    rate : float, optional
        Target arrival rate λ [req/s] (default: the workload's).
    weights : str or sequence of str, optional
        Weight formats to try (``"fp8,bf16"`` or ``["fp8", "bf16"]``); default: the checkpoint's own
        format.
    kv_cache : str, optional
        KV-cache format of every candidate; default: each candidate's follows its weights (fp8 for
        FP8/FP4 weights, else bf16; :mod:`perfmodel.formats`).
    objective : {"devices", "power", "cost"}
        Ranking key.
    power, tdp, idle, utilisation
        Power basis per hardware (:func:`perfmodel.planning.cost.power_basis`); mappings by hardware
        id or one value.
    price : float, str or mapping, optional
        USD per device-hour (``{"h100-sxm": "2.5/h"}``).
    tco : TotalCost, optional
        Cost model where no price is given.
    list_prices : bool, optional
        Where neither ``price`` nor ``tco`` prices a hardware, use the cheapest public list price per
        device-hour of the shipped table (:mod:`perfmodel.planning.prices`; a list price, not what you
        pay). Default: on for ``objective="cost"``, off otherwise. Each ranked row's ``price_source``
        and ``inputs["list_prices"]`` name the row used; hardware without a row gets no cost.
    price_provider : str, optional
        Restrict list prices to one provider (``"AWS"``, ``"Lambda"``...).
    engine : str, Engine or sequence
        Serving engines to search (:mod:`perfmodel.planning.engine_space`): ``"vllm"`` (default),
        ``"vllm,sglang,trtllm"`` or a list (names, ``-preset`` forms, profile YAML paths); each candidate
        is tried under each, and rows say which (``engine``).
    max_num_seqs, max_num_batched_tokens : int or sequence of int, optional
        Sequence limits and per-step token budgets to search with every engine (engine-profile field
        names; vLLM ``--max-num-seqs`` / ``--max-num-batched-tokens``, SGLang ``--max-running-requests``
        / ``--chunked-prefill-size``, TensorRT-LLM ``max_batch_size`` / ``max_num_tokens``). None
        (default): each engine's own value. Rows carry the values run; with pruning on, a sequence
        limit that no pool lets bind (the KV cache; a P/D prefill pool: its prompts per step) collapses
        into the smallest such one (``pruned_by["knob"]``, counted when ``max_num_seqs`` lists several
        values; :mod:`perfmodel.planning.engine_space`).
    requests, seed
        Simulation settings (per search point; the check at R replicas simulates
        ``max(requests, 100 R)`` requests).
    max_replicas, extra_replicas : int
        Load limit and how many replicas the check may add beyond ⌈λ/λ1⌉.
    executor : None | Executor | dask.distributed.Client
        Evaluate candidates in parallel (:func:`perfmodel.planning.executor.map_tasks`).
    progress : bool | None
        One bar over the candidates, each counted when screened out, simulated or pruned
        (:mod:`perfmodel.progress`: True always, None only when stderr is a terminal, False never).
    spec_decode : sequence, optional
        Speculative-decoding settings to search, each candidate under each (``None`` or ``"off"``,
        ``"eagle:k=3"``, ``"mtp:k=2"``...; :mod:`perfmodel.engine.speculative`); rows say which.
    dp_attention, ep : sequence of int
        MoE models only: attention data-parallel ranks per replica (default 1) and expert-parallel
        sizes (default: the whole ``tp × dp_attention`` group); a replica spans ``tp × dp_attention``
        devices. The simulator runs such a replica as one scheduler (one ``max_num_seqs``, one token
        budget), so its capacity is not raised by the ranks' separate schedulers.
    pp : sequence of int
        Pipeline stages per replica to try (default 1 only), with every layout above: a replica spans
        ``tp × dp_attention × pp`` devices, layers split evenly over the stages.
    disaggregated, aggregated : bool
        Search P/D-disaggregated pairs of layouts (prefill and decode pools on the same hardware,
        worker counts sized by :mod:`perfmodel.planning.plan_disagg`; default off) and aggregated
        replicas (default on).
    decode_weights : str or sequence of str, optional
        Weight formats of the decode pool of P/D candidates, each paired with every format of
        ``weights`` for the prefill pool (e.g. ``weights=["fp8"], decode_weights=["nvfp4"]``);
        None (default): both pools use the same format. Needs ``disaggregated=True``.
    prune : bool
        Simulate only candidates whose analytic lower bound could beat the best plan found (default).
        False simulates every feasible candidate (the full ranking; same best plan, slower).
    precisions :
        Deprecated old name of ``weights`` (warns).

    Returns
    -------
    PlanResult
    """
    from ..serving import SLO, load_workload
    from .executor import map_tasks
    from .frontier import search, workers

    if objective not in OBJECTIVES:
        raise ConfigError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {objective!r}")
    utilisation = checks.real(utilisation, "utilisation (busy fraction)", 0, 1)
    requests, max_replicas = checks.count(requests, "requests"), checks.count(max_replicas, "max_replicas")
    extra_replicas, seed = checks.count(extra_replicas, "extra_replicas", 0), checks.count(seed, "seed", 0, 2**63 - 1)
    tp = [checks.count(t, "tp") for t in tp]
    dp_attention = [checks.count(d, "dp_attention") for d in dp_attention]
    ep = [checks.count(e, "ep") for e in ep] if ep else None
    pp = [checks.count(p, "pp") for p in pp]
    if decode_weights is not None and not disaggregated:
        raise ConfigError(f"decode_weights: {format_list(decode_weights)} sets the decode pool of P/D candidates; "
                          "allowed only with disaggregated=True (--disaggregated)")
    if target is not None:
        target = checks.real(target, "target (attainment fraction)", 0, 1, lo_open=True)
    w = load_workload(workload)
    s = slo if slo is not None else w.slo
    if isinstance(s, Mapping):
        s = SLO(**s)
    if s is None or not s.limits():
        raise ConfigError("plan: an SLO with at least one limit (ttft, tpot, e2e) is required")
    if target is not None:
        s = s.model_copy(update={"target": float(target)})
    lam = float(rate if rate is not None else (w.arrival.rate or 0.0))
    if lam <= 0:
        raise ConfigError("plan: give rate= [req/s] (or an open-loop workload with a rate)")
    engines = engine_variants(engine, spec_decode, max_num_seqs, max_num_batched_tokens)
    names = list(dict.fromkeys(e.name for e in engines))
    seqs = knob_values(max_num_seqs, "max_num_seqs")
    budgets = knob_values(max_num_batched_tokens, "max_num_batched_tokens")
    searched = {"engine": len(names) > 1, "max_num_seqs": seqs is not None and len(seqs) > 1,
                "max_num_batched_tokens": budgets is not None and len(budgets) > 1}
    use_list = objective == "cost" if list_prices is None else bool(list_prices)
    if price_provider is not None:
        from .prices import check_provider

        check_provider(price_provider)
    list_rows: dict[str, Any] = {}
    cands = []
    weights = renamed("weights", weights, "precisions", precisions, "plan")
    formats = [w or checkpoint_format(model) for w in format_list(weights)] if model is not None else []
    decode = format_list(decode_weights) if decode_weights else None
    space = {"weights": formats, "kv_cache": kv_cache, "tp": tp, "dp_attention": dp_attention,
             "ep": ep if ep else "tp x dp_attention (wide EP)", "pp": pp, "aggregated": bool(aggregated),
             "disaggregated": bool(disaggregated),
             "decode_weights": decode if decode is not None else "same as prefill", "engine": names,
             "max_num_seqs": seqs if seqs is not None else "engine default",
             "max_num_batched_tokens": budgets if budgets is not None else "engine default"}
    for c in _resolve_candidates(model, candidates, hardware, space):
        pb = c.power
        if pb is None and c.hardware is not None:
            try:
                pb = power_basis(c.spec if c.spec is not None else c.hardware, power,
                                 tdp=_by_hw(tdp, c.hardware), idle=_by_hw(idle, c.hardware),
                                 utilisation=utilisation)
            except PerfmodelError:
                pb = None
        cands.append(_priced(replace(c, power=pb), price, tco, use_list, price_provider, list_rows))
    timers = {} if executor is None else None   # step tables shared by every simulation in this process
    tasks = [{"candidate": c, "workload": w, "slo": s, "rate": lam, "target": s.target, "engine": e,
              "variant": variant_label(e, searched), "seed": seed, "requests": requests,
              "max_replicas": max_replicas, "extra_replicas": extra_replicas, "tco": tco, "timer_cache": timers}
             for c in cands for e in engines]
    found = search(tasks, OBJECTIVES[objective], evaluate_candidate,
                   lambda fn, batch: map_tasks(fn, batch, executor, False, "candidates"),
                   wave=workers(executor), prune=bool(prune), progress=progress,
                   collapse=bool(searched["max_num_seqs"]))
    inputs = {"model": model, "rate_requests_per_s": lam, "isl_mean": w.isl.mean, "osl_mean": w.osl.mean,
              "slo": s.limits(), "target": s.target, "objective": objective,
              "engine": engines[0].label if len(names) == 1 else ", ".join(names),
              "engines": list(dict.fromkeys(replace(e, spec=None).label for e in engines)),
              "spec_decode": list(dict.fromkeys(e.spec.label() if e.spec is not None else "off" for e in engines)),
              "seed": seed, "requests_per_search_point": requests, "max_replicas": max_replicas,
              "power_basis": power, "utilisation": utilisation, "prices_usd_per_device_hour":
              {c.hardware: c.price for c in cands if c.price is not None},
              "price_sources": {c.hardware: c.price_source for c in cands if c.hardware is not None},
              "list_prices": {hw: (row.as_dict() if row is not None else None) for hw, row in list_rows.items()},
              "price_provider": price_provider,
              "tco": tco.as_dict() if tco is not None else None,
              "replicas_rule": "ceil(rate / per-replica max rate), checked by simulating all replicas",
              "search_space": space if candidates is None else "candidates given", "prune": bool(prune)}
    return PlanResult(found["ranked"], found["rejected"], inputs, found["pruned"], found["counts"])


def _by_hw(value: Any, hw: str) -> Any:
    return value.get(hw) if isinstance(value, Mapping) else value


def _resolve_candidates(model: str | None, candidates: Sequence[Any] | None, hardware: Sequence[str],
                        space: Mapping[str, Any]) -> list[Candidate]:
    if candidates is None:
        if model is None or not hardware:
            raise ConfigError("plan: give candidates=, or model and hardware= to enumerate them")
        return enumerate_candidates(model, hardware, space["weights"], space["tp"], space["kv_cache"],
                                    dp_attention=space["dp_attention"],
                                    ep=space["ep"] if isinstance(space["ep"], list) else None,
                                    disaggregated=space["disaggregated"], aggregated=space["aggregated"],
                                    pp=space["pp"], decode_weights=space["decode_weights"]
                                    if isinstance(space["decode_weights"], list) else None)
    out = []
    for k, c in enumerate(candidates):
        if isinstance(c, Candidate):
            out.append(c)
        elif isinstance(c, Mapping):
            kw = {"model": model, **dict(c)}
            hw_spec = load_hardware(kw["hardware"]) if kw.get("hardware") is not None else None
            if hw_spec is not None:
                kw["hardware"] = hw_spec
            hw = hw_spec.id if hw_spec is not None else str(kw.get("hardware"))
            label = " ".join(f"{key}{v}" for key, v in kw.items() if key in ("tp", "pp", "ep"))
            out.append(Candidate(f"{hw} {label} {kw.get('weights', 'bf16')}".strip(), kw, hw,
                                 layout={key: kw[key] for key in ("tp", "pp", "ep", "weights") if key in kw},
                                 spec=hw_spec))
        else:
            out.append(Candidate(f"candidate {k}", c, getattr(c, "hardware_id", None)))
    return out
