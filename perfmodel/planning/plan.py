"""Capacity plans: the cheapest deployments that meet a joint SLO at a target load.

For each candidate replica (model × hardware × layout × precision), in order:

1. **layout**: the layout must be valid for the model and hardware (else rejected, with the reason);
2. **memory**: the weights must fit and leave KV-cache room for at least one request (isl + osl);
3. **SLO floor**: an idle replica's prefill of one prompt and one decode step must be within the TTFT
   and TPOT limits (no load can do better than these floors);
4. **per-replica capacity**: :func:`perfmodel.serving.max_load` finds the highest arrival rate
   :math:`\\lambda_1` [req/s] one replica sustains with the SLO attainment at or above the target,
   bounded by the replica's steady-state throughput at its concurrency limit
   (:func:`perfmodel.serving.steady_state` at ``max_num_seqs``, KV-cache limited); every simulated run
   holds at least three times that concurrency limit in requests, so that overload shows;
5. **replicas**: :math:`R = \\lceil \\lambda / \\lambda_1 \\rceil` for the target rate λ, then a
   simulation of R replicas behind a least-loaded router at rate λ checks the attainment (R is raised
   while it falls short, up to ``extra_replicas`` times); more than ``max_replicas`` is a **load**
   rejection.

``goodput_rps`` is the simulation's (requests meeting every limit per second of simulated time, which
includes the ramp-up and the drain of a finite run, so it reads a little below ``offered_rps``).
Accepted candidates are ranked by ``objective``: ``devices`` (R × devices per replica), ``power``
[W on the stated basis] or ``cost`` [USD/h, from a device-hour price or a total-cost model], ties
broken by the others. Every assumption (engine, seed, requests simulated, power basis, prices) is
returned with the plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .. import checks
from ..errors import ConfigError, PerfmodelError
from ..hardware import load_hardware
from ..modelspec import load_model
from .cost import PowerBasis, TotalCost, power_basis, tokens_per_s_per_mw, usd, usd_per_hour

OBJECTIVES = {"devices": ("devices", "power_w", "cost_per_hour"),
              "power": ("power_w", "devices", "cost_per_hour"),
              "cost": ("cost_per_hour", "devices", "power_w")}


@dataclass
class Candidate:
    """One replica design to consider.

    Attributes
    ----------
    name : str
        Label shown in the plan (e.g. ``"4x h100-sxm tp4 bf16"``).
    step_model : StepModelLike | Mapping
        A step model (a :class:`~perfmodel.core.step.StepModel` or a stand-in) or ``StepModel``
        keyword arguments, built when evaluated.
    hardware : str, optional
        Hardware id (for power and prices).
    spec : Accelerator | System, optional
        The resolved hardware spec (user files included), used for the power basis.
    price_source : str
        Where the cost comes from: ``input``, ``list price row <id>`` (:mod:`perfmodel.planning.prices`),
        ``total-cost model`` or ``not given``.
    power : PowerBasis, optional
        Power basis; None = no power figure.
    price : float, optional
        USD per device-hour.
    layout : dict
        Fields shown in the plan (tp, pp, ep, precision...).
    """

    name: str
    step_model: Any
    hardware: str | None = None
    power: PowerBasis | None = None
    price: float | None = None
    layout: dict[str, Any] = field(default_factory=dict)
    spec: Any = None
    price_source: str = "not given"


def enumerate_candidates(model: str, hardware: Sequence[str], precisions: Sequence[str] = ("bf16",),
                         tp: Sequence[int] = (1, 2, 4, 8), kv_cache: str | None = None) -> list[Candidate]:
    """Candidate replicas for a model on each hardware: every tp in ``tp`` within the scale-up domain.

    MoE models use expert parallelism over the tensor-parallel group (ep = tp). Layouts that the
    model rejects are still returned: :func:`plan` reports them with the reason.
    """
    spec = load_model(model)
    out = []
    for hw in hardware:
        hw_spec = load_hardware(hw)  # an id, alias or YAML path; the spec itself travels with the candidate
        acc_id = hw_spec.id
        for prec in precisions:
            for t in tp:
                kw = {"model": spec.id, "hardware": hw_spec, "tp": int(t), "weights": prec,
                      "kv_cache": kv_cache or "bf16"}
                if spec.moe is not None:
                    kw["ep"] = int(t)
                out.append(Candidate(f"{t}x {acc_id} tp{t} {prec}", kw, acc_id,
                                     layout={"tp": int(t), "pp": 1, "ep": kw.get("ep", 1), "precision": prec},
                                     spec=hw_spec))
    return out


@dataclass
class PlanResult:
    """Outcome of :func:`plan`: ranked feasible deployments, rejected candidates and the inputs."""

    ranked: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    inputs: dict[str, Any]

    @property
    def best(self) -> dict[str, Any] | None:
        return self.ranked[0] if self.ranked else None

    def to_dataframe(self) -> pd.DataFrame:
        """Ranked deployments (one row each)."""
        return pd.DataFrame(self.ranked)

    def as_dict(self) -> dict[str, Any]:
        return {"ranked": self.ranked, "rejected": self.rejected, "inputs": self.inputs}

    def launch(self, engine: str, rank: int = 1, **kw: Any):
        """Launch configuration (``vllm``, ``sglang``, ``trtllm`` or ``dynamo``) of the deployment ranked
        ``rank`` (1 = best): :func:`perfmodel.planning.launch.launch_config` of that row."""
        from .launch import launch_config

        if not 1 <= int(rank) <= len(self.ranked):
            raise ConfigError(f"launch: rank {rank} is not in 1..{len(self.ranked)} (ranked deployments)")
        return launch_config(self.ranked[int(rank) - 1], engine, self.inputs, **kw)


def _reject(c: Candidate, kind: str, reason: str) -> dict[str, Any]:
    return {"deployment": c.name, "hardware": c.hardware, **c.layout, "rejected_for": kind, "reason": reason}


def _build(c: Candidate):
    from ..core.step import StepModel
    from ..serving.protocol import resolve_step_model

    if isinstance(c.step_model, Mapping):
        return StepModel(**dict(c.step_model))
    return resolve_step_model(c.step_model)


def _memory_reason(sm: Any, tokens: float) -> str | None:
    usable = getattr(sm, "hardware", None) and sm.hardware.memory_capacity * (1 - sm.reserve)
    if usable and sm.weights_per_device > usable:
        return (f"weights need {sm.weights_per_device / 1e9:.1f} GB per device, usable memory is "
                f"{usable / 1e9:.1f} GB ({sm.hardware.memory_capacity / 1e9:.0f} GB less the reserve)")
    if float(sm.kv_capacity_tokens) < tokens:
        return (f"KV-cache room for {int(sm.kv_capacity_tokens):,} tokens per replica is less than one "
                f"request ({int(tokens):,} tokens)")
    return None


def _floor_reason(sm: Any, isl: float, osl: float, slo: Any) -> str | None:
    ttft0 = float(np.ravel(sm.step_time(0.0, 0.0, isl, 0.0))[0])
    tpot0 = float(np.ravel(sm.step_time(1.0, isl + osl / 2.0, 0.0, 0.0))[0])
    if slo.ttft is not None and ttft0 > slo.ttft:
        return f"TTFT floor {ttft0:.3g} s (idle replica, one prompt) exceeds the limit {slo.ttft:g} s"
    if slo.tpot is not None and tpot0 > slo.tpot:
        return f"TPOT floor {tpot0 * 1e3:.3g} ms (one sequence) exceeds the limit {slo.tpot * 1e3:g} ms"
    return None


def evaluate_candidate(task: Mapping[str, Any]) -> dict[str, Any]:
    """Evaluate one candidate (steps 1–5 of the module docstring). Module level: runs on executors.

    Returns a dict with ``accepted`` True and the plan row, or False and the rejection; both say
    which speculative decoding the candidate ran (``spec_decode``).
    """
    from ..engine.engine import Engine

    spec = Engine.load(task["engine"]).spec
    out = _evaluate(task)
    out.setdefault("spec_decode", spec.label() if spec is not None else "off")
    return out


def _evaluate(task: Mapping[str, Any]) -> dict[str, Any]:
    from ..engine.engine import Engine
    from ..serving import max_load, simulate, steady_state

    c: Candidate = task["candidate"]
    w, slo, rate, goal = task["workload"], task["slo"], task["rate"], task["target"]
    try:
        sm = _build(c)
    except PerfmodelError as exc:
        return {"accepted": False, **_reject(c, "layout", str(exc))}
    isl, osl = w.isl.mean, w.osl.mean + w.reasoning_tokens.mean
    reason = _memory_reason(sm, isl + osl)
    if reason:
        return {"accepted": False, **_reject(c, "memory", reason)}
    reason = _floor_reason(sm, isl, osl, slo)
    if reason:
        return {"accepted": False, **_reject(c, "SLO", reason)}
    eng = Engine.load(task["engine"])
    ss = steady_state(sm, float(eng.profile.max_num_seqs), isl, osl, engine=eng)
    x_max, n_cap = float(np.ravel(ss.throughput_rps)[0]), float(np.ravel(ss.n_decode)[0])
    # a run must hold several times the replica's concurrency limit, or overload never shows
    requests = max(task["requests"], int(3 * n_cap))
    search = max_load(sm, w, slo, target=goal, mode="rate", engine=eng, seed=task["seed"],
                      requests=requests, start=0.5 * x_max if x_max > 0 else None)
    cap = min(float(search.max_load), x_max)
    if cap <= 0:
        return {"accepted": False, **_reject(c, "SLO", f"attainment below {goal:g} even at the lowest "
                                                      f"load tried ({search.simulations} simulations)")}
    replicas = max(1, math.ceil(rate / cap - 1e-9))
    if replicas > task["max_replicas"]:
        return {"accepted": False, **_reject(c, "load", f"needs {replicas} replicas "
                                                        f"(> max_replicas {task['max_replicas']}) at "
                                                        f"{cap:.3g} req/s per replica")}
    summary: dict[str, Any] = {}
    for _ in range(task["extra_replicas"] + 1):
        res = simulate(sm, w.with_load(rate=rate), engine=eng, replicas=replicas, seed=task["seed"],
                       requests=max(requests, 100 * replicas, int(3 * n_cap * replicas)), slo=slo)
        summary = res.summary()
        if summary["slo_attainment"] >= goal or replicas >= task["max_replicas"]:
            break
        replicas += 1
    if summary["slo_attainment"] < goal:
        return {"accepted": False, **_reject(c, "SLO", f"attainment {summary['slo_attainment']:.3f} < {goal:g} "
                                                      f"at {rate:g} req/s with {replicas} replicas")}
    devices = int(replicas * sm.devices)
    power_w = float(c.power.power_w(devices)) if c.power is not None else float("nan")
    cost = _hourly(c, devices, task["tco"])
    out_tps = summary["throughput_output_tokens_per_s"]
    spec = eng.spec.label() if eng.spec is not None else "off"
    name = f"{c.name} x{replicas}" + (f" + {spec}" if eng.spec is not None else "")
    return {"accepted": True, "deployment": name, "hardware": c.hardware, **c.layout, "spec_decode": spec,
            "devices_per_replica": int(sm.devices), "replicas": replicas, "devices": devices,
            "per_replica_max_rps": cap, "per_replica_steady_state_rps": x_max, "offered_rps": rate, "goodput_rps": summary["goodput_rps"],
            "slo_attainment": summary["slo_attainment"], "ttft_mean_s": summary.get("ttft_mean_s"),
            "tpot_mean_s": summary.get("tpot_mean_s"), "ttft_p95_s": summary.get("ttft_p95_s"),
            "tpot_p95_s": summary.get("tpot_p95_s"), "output_tokens_per_s": out_tps, "power_w": power_w,
            "power_basis": c.power.describe() if c.power is not None else "not given",
            "cost_per_hour": cost, "price_source": c.price_source if np.isfinite(cost) else "not given",
            "tokens_per_s_per_mw": float(tokens_per_s_per_mw(out_tps, power_w)),
            "usd_per_m_output_all_in": cost / 3600.0 * 1e6 / out_tps if out_tps > 0 else float("nan")}


def _hourly(c: Candidate, devices: int, tco: TotalCost | None) -> float:
    if c.price is not None:
        return float(usd_per_hour(devices, price=c.price))
    if tco is not None and c.power is not None:
        return float(usd_per_hour(devices, tco=tco, device_power_w=float(c.power.power_w(1))))
    return float("nan")


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
         precisions: Sequence[str] = ("bf16",), tp: Sequence[int] = (1, 2, 4, 8), objective: str = "devices",
         engine: Any = "vllm", power: str = "tdp", tdp: Any = None, idle: Any = None,
         utilisation: float = 1.0, price: Any = None, tco: TotalCost | None = None, requests: int = 300,
         seed: int = 0, max_replicas: int = 256, extra_replicas: int = 3, executor: Any = None,
         progress: bool | None = False, list_prices: bool | None = None,
         price_provider: str | None = None, spec_decode: Sequence[Any] = (None,)) -> PlanResult:
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
        ``hardware`` × ``precisions`` × ``tp`` (:func:`enumerate_candidates`).
    rate : float, optional
        Target arrival rate λ [req/s] (default: the workload's).
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
    requests, seed, engine
        Simulation settings (per search point; the check at R replicas simulates
        ``max(requests, 100 R)`` requests).
    max_replicas, extra_replicas : int
        Load limit and how many replicas the check may add beyond ⌈λ/λ1⌉.
    executor : None | Executor | dask.distributed.Client
        Evaluate candidates in parallel (:func:`perfmodel.planning.executor.map_tasks`).
    progress : bool | None
        A bar of the candidates evaluated (:mod:`perfmodel.progress`: True always, None only when stderr
        is a terminal, False never).
    spec_decode : sequence, optional
        Speculative-decoding settings to search, each candidate under each (``None`` or ``"off"``,
        ``"eagle:k=3"``, ``"mtp:k=2"``...; :mod:`perfmodel.engine.speculative`); rows say which.

    Returns
    -------
    PlanResult
    """
    from ..serving import SLO, load_workload
    from .executor import map_tasks

    if objective not in OBJECTIVES:
        raise ConfigError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {objective!r}")
    utilisation = checks.real(utilisation, "utilisation (busy fraction)", 0, 1)
    requests, max_replicas = checks.count(requests, "requests"), checks.count(max_replicas, "max_replicas")
    extra_replicas, seed = checks.count(extra_replicas, "extra_replicas", 0), checks.count(seed, "seed", 0, 2**63 - 1)
    tp = [checks.count(t, "tp") for t in tp]
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
    use_list = objective == "cost" if list_prices is None else bool(list_prices)
    if price_provider is not None:
        from .prices import check_provider

        check_provider(price_provider)
    list_rows: dict[str, Any] = {}
    cands = []
    for c in _resolve_candidates(model, candidates, hardware, precisions, tp):
        pb = c.power
        if pb is None and c.hardware is not None:
            try:
                pb = power_basis(c.spec if c.spec is not None else c.hardware, power,
                                 tdp=_by_hw(tdp, c.hardware), idle=_by_hw(idle, c.hardware),
                                 utilisation=utilisation)
            except PerfmodelError:
                pb = None
        cands.append(_priced(replace(c, power=pb), price, tco, use_list, price_provider, list_rows))
    from ..engine.engine import Engine

    engines = [Engine.load(engine, spec_decode=opt) for opt in (spec_decode or (None,))]
    tasks = [{"candidate": c, "workload": w, "slo": s, "rate": lam, "target": s.target, "engine": e,
              "seed": seed, "requests": requests, "max_replicas": max_replicas,
              "extra_replicas": extra_replicas, "tco": tco} for c in cands for e in engines]
    results = map_tasks(evaluate_candidate, tasks, executor, progress, "candidates")
    keys = OBJECTIVES[objective]
    ranked = sorted((r for r in results if r.pop("accepted")),
                    key=lambda r: tuple(math.inf if not np.isfinite(r[k]) else r[k] for k in keys))
    for k, r in enumerate(ranked, 1):
        r["rank"] = k
    rejected = [r for r in results if "rejected_for" in r]
    inputs = {"model": model, "rate_rps": lam, "isl_mean": w.isl.mean, "osl_mean": w.osl.mean,
              "slo": s.limits(), "target": s.target, "objective": objective,
              "engine": engines[0].label,
              "spec_decode": [e.spec.label() if e.spec is not None else "off" for e in engines],
              "seed": seed, "requests_per_search_point": requests, "max_replicas": max_replicas,
              "power_basis": power, "utilisation": utilisation, "prices_usd_per_device_hour":
              {c.hardware: c.price for c in cands if c.price is not None},
              "price_sources": {c.hardware: c.price_source for c in cands if c.hardware is not None},
              "list_prices": {hw: (row.as_dict() if row is not None else None) for hw, row in list_rows.items()},
              "price_provider": price_provider,
              "tco": tco.as_dict() if tco is not None else None,
              "replicas_rule": "ceil(rate / per-replica max rate), checked by simulating all replicas"}
    return PlanResult(ranked, rejected, inputs)


def _by_hw(value: Any, hw: str) -> Any:
    return value.get(hw) if isinstance(value, Mapping) else value


def _resolve_candidates(model: str | None, candidates: Sequence[Any] | None, hardware: Sequence[str],
                        precisions: Sequence[str], tp: Sequence[int]) -> list[Candidate]:
    if candidates is None:
        if model is None or not hardware:
            raise ConfigError("plan: give candidates=, or model and hardware= to enumerate them")
        return enumerate_candidates(model, hardware, precisions, tp)
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
