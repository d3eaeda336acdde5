"""``perfmodel simulate`` and ``perfmodel max-load``: serving under load with continuous batching.

Examples::

    perfmodel simulate --model llama-3.1-8b --hardware h100-sxm --tp 1 --isl 1024 --osl 256 \\
        --rate 4 --requests 2000 --slo-ttft 2s --slo-tpot 50ms --seed 1 --format json
    perfmodel max-load --model llama-3.1-8b --hardware h100-sxm --isl 1024 --osl 256 \\
        --slo-ttft 2s --slo-tpot 50ms --target 0.95 --format json
"""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ConfigError
from .argtypes import (
    FRACTION,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_REAL,
    SEED,
    count_list,
    real,
    real_list,
    refuse_with_deployment,
    single_name,
)
from .dtype_args import add_dtype_args
from .output import (
    add_format_arg,
    add_quiet_arg,
    checkpoint_note,
    emit,
    engine_note,
    format_table,
    print_notes,
    progress_of,
    shown_name,
)
from .predict_cmd import add_memory_fraction_args, add_prefix_hit_arg, add_spec_decode_arg, serving_engine


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model and hardware (a perfmodel.core.step.StepModel per replica)")
    g.add_argument("--model", type=single_name("model"), help="model id, HF repo id or config.json path")
    g.add_argument("--hardware", type=single_name("hardware"), help="accelerator or system id, or spec YAML path")
    g.add_argument("--tp", type=POSITIVE, default=1, help="tensor parallelism per replica (default 1)")
    g.add_argument("--pp", type=POSITIVE, default=1, help="pipeline stages per replica (default 1)")
    g.add_argument("--ep", type=POSITIVE, default=1, help="expert parallelism per replica (default 1)")
    add_dtype_args(g)
    g.add_argument("--deployment", help="deployment YAML (aggregated or prefill/decode pools) instead of "
                                        "--model/--hardware")
    g = p.add_argument_group("engine and replicas")
    g.add_argument("--engine", default="vllm",
                   help="serving engine: vllm (default), vllm-2k, sglang, trtllm (with the terms fitted on measured runs), "
                        "vllm-preset, sglang-preset, trtllm-preset (uncalibrated) or a profile YAML path")
    add_spec_decode_arg(g)
    add_memory_fraction_args(g)
    add_prefix_hit_arg(g)
    g.add_argument("--engine-set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override an engine field, e.g. max_num_batched_tokens=2048 (repeatable)")
    g.add_argument("--replicas", type=POSITIVE, default=None, help="replicas behind the router (default 1)")
    g.add_argument("--router", default="least_loaded",
                   choices=("least_loaded", "least-loaded", "round_robin", "round-robin", "random", "session"),
                   help="routing of arrivals to replicas (default least_loaded; session: a session's "
                        "later turns stay on its first turn's replica)")
    g = p.add_argument_group("workload (flags override --workload)")
    g.add_argument("--workload", help="workload YAML (see workloads/)")
    g.add_argument("--isl", type=POSITIVE, help="input tokens per request (fixed)")
    g.add_argument("--osl", type=POSITIVE, help="output (answer) tokens per request (fixed)")
    g.add_argument("--reasoning-tokens", type=NON_NEGATIVE, help="reasoning tokens before the answer (fixed)")
    load = g.add_mutually_exclusive_group()
    load.add_argument("--rate", "--arrival-rate", dest="rate", type=real_list(0, lo_open=True),
                      help="open loop: Poisson arrivals per second; simulate takes a list, e.g. 2,4,8 (one "
                           "simulation each), max-load one value (where its search starts)")
    load.add_argument("--concurrency", type=count_list(),
                      help="closed loop: clients with one request each; a list in simulate, e.g. 1,8,32, one "
                           "value in max-load")
    g.add_argument("--burstiness", type=POSITIVE_REAL, help="open loop: CV of inter-arrival gaps (gamma; 1 = Poisson)")
    g.add_argument("--think-time", help="closed loop: pause between a response and the next request, e.g. 1s")
    g.add_argument("--ramp-up", help="closed loop: client k starts at k x RAMP/C, e.g. 30s; default auto: one "
                                     "mean request duration at that load (steady state); 0 starts all clients "
                                     "at once, which with fixed lengths runs in synchronised waves "
                                     "(docs/serving.md)")
    g.add_argument("--requests", type=POSITIVE, help="requests to send (default: workload's, else 1000)")
    g.add_argument("--horizon", help="stop at this simulated time, e.g. 600s (unfinished = in_flight)")
    g.add_argument("--timeout", help="cancel a request without a first token after this long, e.g. 20s")
    g = p.add_argument_group("SLO (joint: a request meets it if every limit holds)")
    g.add_argument("--slo-ttft", help="TTFT limit, e.g. 2s")
    g.add_argument("--slo-tpot", help="TPOT limit, e.g. 50ms")
    g.add_argument("--slo-e2e", help="end-to-end limit, e.g. 30s")
    g.add_argument("--target", "--slo-target", dest="target", type=FRACTION,
                   help="share of requests that must meet every limit, e.g. 0.95 (default: the SLO's, 0.95); "
                        "max-load searches for the largest load that reaches it")
    p.add_argument("--seed", type=SEED, default=0, help="random seed (default 0)")
    p.add_argument("--warmup", type=real(0, 1, hi_open=True), default=0.0, help="fraction of earliest requests left out of "
                                                             "the statistics (default 0)")
    add_format_arg(p)
    add_quiet_arg(p)


def register(sub) -> None:
    p = sub.add_parser("simulate", help="simulate serving under load (continuous batching, SLO, goodput)",
                       description="Discrete-event simulation of continuous batching on one or more "
                                   "replicas: percentiles of TTFT (with queueing), TPOT and E2E, "
                                   "throughput, joint SLO attainment and goodput.")
    _common(p)
    p.set_defaults(func=run_simulate)
    q = sub.add_parser("max-load", help="highest arrival rate or concurrency meeting an SLO target",
                       description="Bisection over simulations (cached) for the largest load whose joint "
                                   "SLO attainment is at least --target; prints the load-latency curve.")
    _common(q)
    q.add_argument("--search", choices=("rate", "concurrency"), default=None,
                   help="what to search (default: concurrency if --concurrency is given or the "
                        "workload is closed loop, else rate)")
    q.add_argument("--rel-tol", type=real(0, 1, lo_open=True, hi_open=True), default=0.02, help="relative width of the final rate bracket")
    q.add_argument("--max-simulations", type=POSITIVE, default=30, help="upper bound on simulations")
    q.set_defaults(func=run_max_load)


# ----------------------------------------------------------------------------------------------
# building the inputs


def _engine(args):
    overrides: dict[str, Any] = {}
    for item in args.engine_set:
        if "=" not in item:
            raise ConfigError(f"--engine-set: expected FIELD=VALUE, got {item!r}")
        key, value = (s.strip() for s in item.split("=", 1))
        overrides[key.replace("-", "_")] = _scalar(value)
    return serving_engine(args, **overrides)


def _scalar(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _model(args) -> tuple[Any, int]:
    if args.deployment:
        from ..serving.from_deployment import pools_from_deployment

        refuse_with_deployment(args)

        model, replicas = pools_from_deployment(args.deployment)
        return model, args.replicas or replicas
    if not args.model or not args.hardware:
        raise ConfigError("--model and --hardware are required (or --deployment FILE)")
    from ..core.step import StepModel

    print_notes(checkpoint_note(args.model, args.weights))
    return StepModel(args.model, args.hardware, tp=args.tp, pp=args.pp, ep=args.ep, weights=args.weights,
                     kv_cache=args.kv_cache), args.replicas or 1


def _formats(model) -> dict[str, str]:
    """The formats as predict's records name them: ``weights``, ``activations``, ``kv_cache`` of a replica
    (or of every pool, when the pools agree); ``prefill_weights``... and ``decode_weights``... of a P/D
    deployment whose pools differ; ``{}`` if unknown."""
    from ..precision import label_fields

    prec = getattr(model, "precision", None)
    if prec is not None:
        return label_fields(prec.label())
    items = model.items() if isinstance(model, dict) else vars(model).items() if hasattr(model, "__dict__") else ()
    pools = {k: label_fields(m.precision.label()) for k, m in items if hasattr(m, "precision")}
    if len({tuple(f.items()) for f in pools.values()}) == 1:
        return next(iter(pools.values()))
    return {f"{pool}_{k}": v for pool, f in pools.items() for k, v in f.items()}


def _workload(args, placeholder: str | None = None):
    """The workload from --workload and the flags; ``placeholder`` ("rate" or "concurrency") supplies a
    load when none is given (max-load searches it anyway)."""
    from ..serving import Workload, load_workload

    if args.workload:
        w = load_workload(args.workload)
    else:
        missing = [f for f in ("isl", "osl") if getattr(args, f) is None]
        if missing:
            raise ConfigError(f"--{' and --'.join(missing)} required without --workload FILE")
        rate, conc = args.rate, args.concurrency
        if rate is None and conc is None:
            if placeholder is None:
                raise ConfigError("give --rate R (open loop, requests/s) or --concurrency C "
                                  "(closed loop), or --workload FILE")
            rate, conc = (1.0, None) if placeholder == "rate" else (None, 8)
        w = Workload.fixed(args.isl, args.osl, rate=rate, concurrency=conc, cv=args.burstiness or 1.0,
                           name="cli")
    changes: dict[str, Any] = {}
    for flag, field in (("isl", "isl"), ("osl", "osl"), ("reasoning_tokens", "reasoning_tokens"),
                        ("timeout", "timeout"), ("requests", "requests"), ("horizon", "horizon"),
                        ("prefix_hit_rate", "prefix_hit_rate")):
        v = getattr(args, flag)
        if v is not None:
            changes[field] = v
    if changes:
        w = w.replace(**changes)
    if args.workload and (args.rate is not None or args.concurrency is not None):
        w = w.with_load(rate=args.rate, concurrency=args.concurrency)
    a = w.arrival
    if args.burstiness is not None and a.process in ("poisson", "gamma"):
        w = w.replace(arrival={**a.model_dump(), "process": "gamma", "cv": args.burstiness})
    for flag, field in (("think_time", "think_time"), ("ramp_up", "ramp_up")):
        value = getattr(args, flag, None)
        if value is None:
            continue
        if not w.is_closed_loop:
            raise ConfigError(f"--{flag.replace('_', '-')}: only for a closed loop (--concurrency)")
        w = w.replace(arrival={**w.arrival.model_dump(), field: value})
    slo = dict(w.slo.model_dump()) if w.slo is not None else {}
    for flag, field in (("slo_ttft", "ttft"), ("slo_tpot", "tpot"), ("slo_e2e", "e2e"),
                        ("target", "target")):
        v = getattr(args, flag)
        if v is not None:
            slo[field] = v
    if slo:
        w = w.replace(slo=slo)
    return w


def _router(name: str) -> str:
    return name.replace("-", "_")


# ----------------------------------------------------------------------------------------------
# commands


#: Rows of the simulate table, in order (those the summary holds).
TABLE_KEYS = ("arrived", "completed", "cancelled", "rejected", "in_flight", "requests_per_s",
              "output_tokens_per_s", "ttft_mean_s", "ttft_p50_s", "ttft_p95_s", "ttft_p99_s",
              "tpot_mean_s", "tpot_p50_s", "tpot_p95_s", "tpot_p99_s", "e2e_mean_s", "e2e_p50_s", "e2e_p95_s",
              "itl_p99_s", "queue_mean_s", "preemptions", "slo_attainment", "slo_attainment_ttft",
              "slo_attainment_tpot", "goodput_requests_per_s", "prefix_hit_rate")


def _loads(args) -> list[tuple[str | None, float | int | None]]:
    """``(flag, value)`` per load to simulate: each value of a --rate or --concurrency list, or the
    workload's own load (``(None, None)``)."""
    if args.rate is not None:
        return [("rate", v) for v in args.rate]
    if args.concurrency is not None:
        return [("concurrency", v) for v in args.concurrency]
    return [(None, None)]


def _at_load(args, flag: str | None, value) -> argparse.Namespace:
    """``args`` with one load value in place of the lists."""
    return argparse.Namespace(**{**vars(args), "rate": value if flag == "rate" else None,
                                 "concurrency": value if flag == "concurrency" else None})


def _engine_pool(eng, model, verb: str) -> tuple[Any, float | None]:
    """How the engine splits a device's memory (None: no memory rule) and the KV tokens a replica holds
    with a draft model's share taken out; an empty pool, which would reject every request, is refused
    with the split rather than simulated."""
    mem = eng.memory(model) if not isinstance(model, dict) else None
    if mem is None:
        return None, None
    from ..engine.kv_memory import short_pool_reason

    held = float(eng.step(model).kv_capacity_tokens)
    short = short_pool_reason(mem, held * eng.profile.kv_capacity_fraction, 1.0)
    if short:
        raise ConfigError(f"cannot {verb} this deployment: {short}")
    return mem, held


def run_simulate(args) -> int:
    from ..serving import simulate

    eng = _engine(args)
    loads = _loads(args)
    workloads = [_workload(_at_load(args, flag, v)) for flag, v in loads]  # every load checked before a run
    model, replicas = _model(args)
    mem, held = _engine_pool(eng, model, "simulate")
    outs, results = [], []
    for w in workloads:
        res = simulate(model, w, engine=eng, replicas=replicas, router=_router(args.router), seed=args.seed,
                       progress=progress_of(args))
        s = res.summary(warmup=args.warmup)
        if s["arrived"] and not s["completed"]:  # percentiles of nothing: say what happened instead
            raise ConfigError(f"no request completed{_load_label(w)}: {s['arrived']} arrived, {s['cancelled']} "
                              f"cancelled (first-token timeout), {s['rejected']} rejected (queue full), "
                              f"{s['in_flight']} still in flight at the horizon; lower the load or raise "
                              f"--timeout / --horizon")
        results.append(res)
        outs.append({**s, "workload": w.model_dump(mode="json", exclude={"description"}),
                     "engine": eng.describe(), "replicas": res.meta["replicas"], "router": res.meta["router"],
                     "seed": args.seed, "step_model": res.meta["step_model"], **_formats(model),
                     "simulation_wall_s": res.meta["wall_s"], "note": engine_note(eng),
                     **_ramp_keys(res.meta.get("ramp_up")),
                     "kv_memory": None if mem is None else mem.as_dict()})

    def table() -> None:
        print(_title(outs[0], workloads[0], len(outs) > 1))
        prof = eng.profile
        print(f"engine {eng.name}: policy={prof.policy}, chunked_prefill={prof.chunked_prefill}, "
              f"max_num_batched_tokens={prof.max_num_batched_tokens}, max_num_seqs={prof.max_num_seqs}, "
              f"step_overhead={prof.step_overhead:g} s, seq_overhead={prof.seq_overhead:g} s, "
              f"request_overhead={eng.request_overhead:g} s, first_token_steps={eng.terms.first_token_steps:.2g}")
        if mem is not None:
            draft = f" ({mem.kv_tokens:,.0f} before the draft model's share)" if held != mem.kv_tokens else ""
            print(f"KV pool ({mem.rule}): {held:,.0f} tokens per replica{draft}; per device "
                  f"{mem.kv_pool / 2**30:.1f} GiB of {mem.device_bytes / 2**30:.1f} GiB (weights "
                  f"{mem.weights / 2**30:.1f}, activations {mem.activations / 2**30:.1f}, runtime "
                  f"{mem.runtime / 2**30:.1f} GiB)")
        keys = [k for k in TABLE_KEYS if k in outs[0]]
        names = ["value"] if len(outs) == 1 else [f"{flag}={v:g}" for flag, v in loads]
        print(format_table([{"metric": k, **{n: o.get(k) for n, o in zip(names, outs, strict=True)}}
                            for k in keys]))
        empty: dict[str, list[str]] = {}
        for o in outs:
            undefined = {**{k: "no SLO given (--slo-ttft, --slo-tpot, --slo-e2e or the workload's slo)"
                            for k in keys if k.startswith(("slo_", "goodput")) and o[k] is None},
                         **o.get("undefined", {})}
            for key, why in undefined.items():
                if key in keys and key not in empty.get(why, []):
                    empty.setdefault(why, []).append(key)
        for why, which in empty.items():
            print(f"note: no value for {', '.join(map(shown_name, which))}: {why}")
        ramps = [_ramp_line(o, n) for o, n in zip(outs, names, strict=True) if o["ramp_up_s"] is not None]
        for line in ramps:
            print(f"note: {line}")
        print(f"note: {engine_note(eng)}")

    document = outs[0] if len(outs) == 1 else {"points": outs}
    emit(args.format, table=table, rows=outs, document=document)
    return 0


def _ramp_keys(ramp: dict | None) -> dict[str, Any]:
    """``ramp_up_s`` and ``ramp_up_basis`` of a closed loop's resolved ramp (None for an open loop)."""
    return {"ramp_up_s": None if ramp is None else ramp["ramp_up_s"],
            "ramp_up_basis": None if ramp is None else ramp["basis"]}


def _ramp_line(out: dict, column: str) -> str:
    """How a closed loop's clients were started, for the table's notes."""
    at = "" if column == "value" else f" ({column})"
    t = out["ramp_up_s"]
    if out["ramp_up_basis"] != "given":
        return (f"clients started over {t:.3g} s{at}: --ramp-up auto, one mean request duration; "
                "--ramp-up 0 starts them together")
    if t == 0:
        return (f"clients started together{at} (--ramp-up 0): with fixed lengths they run in synchronised "
                "waves; --ramp-up auto spreads them over one request duration")
    return f"clients started over {t:.3g} s{at} (--ramp-up)"


def _title(out: dict, w, several: bool) -> str:
    """What was simulated: the step model of each pool, replicas and router, the request lengths and load."""
    pools = "; ".join(v if k == "both" else f"{k}: {v}" for k, v in out["step_model"].items())
    load = "loads in the columns" if several else _load_label(w).strip()
    return (f"simulated {pools}; {out['replicas']} replica(s), router {out['router']}; workload {w.name}: "
            f"ISL {w.isl.mean:g}, OSL {w.osl.mean:g} (means), {load}; seed {out['seed']}")


def _load_label(w) -> str:
    """`` at rate 4`` / `` at concurrency 8`` for an error message."""
    a = w.arrival
    return f" at concurrency {a.concurrency:g}" if w.is_closed_loop else f" at rate {getattr(a, 'rate', 0):g}"


def run_max_load(args) -> int:
    from ..serving import max_load

    for flag in ("rate", "concurrency"):
        values = getattr(args, flag)
        if values is not None and len(values) > 1:
            raise ConfigError(f"--{flag}: max-load searches the load itself and takes one start value, got "
                              f"{','.join(f'{v:g}' for v in values)}; `perfmodel simulate --{flag} "
                              f"{','.join(f'{v:g}' for v in values)} ...` simulates each")
    args = _at_load(args, *next(iter(_loads(args))))
    eng = _engine(args)
    guess = args.search or ("concurrency" if args.concurrency is not None else "rate")
    w = _workload(args, placeholder=guess)
    mode = args.search or ("concurrency" if w.is_closed_loop else "rate")
    model, replicas = _model(args)
    _engine_pool(eng, model, "search the load of")
    start = args.rate if mode == "rate" else args.concurrency
    found = max_load(model, w, target=args.target, mode=mode, engine=eng, replicas=replicas,
                     router=_router(args.router), seed=args.seed, start=start, rel_tol=args.rel_tol,
                     max_simulations=args.max_simulations, warmup=args.warmup, progress=progress_of(args))
    formats = _formats(model)
    out = {**found.as_dict(), "engine": eng.describe(),
           "slo": w.slo.model_dump() if w.slo else None, "replicas": replicas, "seed": args.seed,
           **formats, "search_note": found.note, "note": engine_note(eng)}
    key = "max_arrival_requests_per_s" if mode == "rate" else "max_concurrency"

    def table() -> None:
        bound = "" if found.bracketed else ">= "
        print(f"{key}: {bound}{found.max_load:g} (attainment {found.attainment:.3f} >= target {found.target:g}; "
              f"{found.simulations} simulations)")
        print("formats: " + ", ".join(f"{k} {v}" for k, v in formats.items()))
        if found.note:
            print(f"note: {found.note}")
        cols = ["load", "slo_attainment", "goodput_requests_per_s", "output_tokens_per_s", "ttft_p95_s",
                "tpot_p95_s", "cancelled"]
        if any("ramp_up_s" in r for r in found.curve):
            cols.append("ramp_up_s")
            how = ("--ramp-up auto: one mean request duration at each load" if w.arrival.closed and
                   w.arrival.auto_ramp else "--ramp-up")
            print(f"note: ramp_up_s: the clients of each load started over this ({how}; 0 starts them together)")
        print(format_table(found.curve, cols, why={c: "no request of that load completed with this metric"
                                                   for c in cols}))
        print(f"note: {engine_note(eng)}")

    rows = [{"search": mode, key: found.max_load, "bracketed": found.bracketed, "target": found.target, **formats,
             **r} for r in found.curve]
    emit(args.format, table=table, rows=rows, document=out)
    return 0
