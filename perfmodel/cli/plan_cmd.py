"""``perfmodel plan`` (cheapest deployments meeting a joint SLO) and ``perfmodel claim`` (vendor claims).

Examples::

    perfmodel plan --model llama-3.1-70b --rate 20 --isl 2048 --osl 256 --slo-ttft 2s --slo-tpot 50ms \\
        --target 0.95 --hardware h100-sxm,h200-sxm,b200 --price h100-sxm=2.5/h --format json
    perfmodel plan ... --hardware my-gpu.yaml,h100-sxm --objective cost   # list prices where none given
    perfmodel claim --list
    perfmodel claim nvidia-lpx-35x-tokens-per-mw
"""

from __future__ import annotations

from ..errors import ConfigError, unknown_name
from .argtypes import (
    FRACTION,
    POSITIVE,
    POSITIVE_REAL,
    SEED,
    count,
    count_list,
    name_list,
    no_feasible_point,
    prices_by_hardware,
    single_name,
)
from .dtype_args import add_dtype_args, add_renamed_flag
from .output import (
    add_format_arg,
    add_quiet_arg,
    checkpoint_note,
    deprecations_as_notes,
    emit,
    engine_note,
    format_table,
    number,
    print_notes,
    progress_of,
)


def register(sub) -> None:
    p = sub.add_parser(
        "plan", help="cheapest deployments meeting a joint SLO at a target load",
        description="Rank candidate replicas (hardware x layout x precision, aggregated or P/D-disaggregated) "
                    "by devices, power or cost: memory, the idle TTFT/TPOT floors and a capacity bound screen "
                    "every candidate; those that could beat the best found are sized with the serving "
                    "simulator to meet the SLO attainment target at the given rate. Rejected candidates are "
                    "listed with the reason (layout, memory, SLO, load); the counts enumerated, pruned and "
                    "simulated are printed.")
    p.add_argument("--model", type=single_name("model"), required=True, help="model id, e.g. llama-3.1-70b")
    p.add_argument("--rate", type=POSITIVE_REAL, required=True, help="target arrival rate [requests/s]")
    p.add_argument("--isl", type=POSITIVE, required=True, help="prompt tokens per request")
    p.add_argument("--osl", type=POSITIVE, required=True, help="output tokens per request")
    p.add_argument("--slo-ttft", help="TTFT limit incl. queueing, e.g. 2s")
    p.add_argument("--slo-tpot", help="TPOT limit, e.g. 50ms")
    p.add_argument("--slo-e2e", help="end-to-end limit, e.g. 20s")
    p.add_argument("--target", type=FRACTION, default=0.95, help="fraction of requests meeting all limits "
                                                               "(default 0.95)")
    p.add_argument("--hardware", type=name_list, required=True,
                   help="comma-separated hardware ids or YAML files (e.g. my-gpu.yaml,h100-sxm)")
    add_dtype_args(p, weights_list=True, old_precision=True)
    p.add_argument("--tp", type=count_list(), default=[1, 2, 4, 8], help="tensor-parallel sizes (default 1,2,4,8)")
    p.add_argument("--pp", type=count_list(), default=[1], help="pipeline stages per replica to try with every "
                   "layout (default 1); a replica spans tp x dp-attention x pp devices")
    p.add_argument("--dp-attention", type=count_list(), default=[1],
                   help="MoE models: attention data-parallel ranks per replica to try (default 1); a replica "
                        "spans tp x dp-attention devices")
    p.add_argument("--ep", type=count_list(), default=None,
                   help="MoE models: expert-parallel sizes to try (default: tp x dp-attention, wide EP)")
    p.add_argument("--decode-weights", type=name_list, default=None,
                   help="with --disaggregated: weight formats of the decode pool, each paired with every "
                        "--weights of the prefill pool (default: the prefill pool's)")
    add_renamed_flag(p, "--decode-precision", "--decode-weights", "decode_weights", type=name_list)
    p.add_argument("--disaggregated", action="store_true",
                   help="also search P/D-disaggregated pairs (prefill and decode pools, each layout above, "
                        "worker counts sized by simulation)")
    p.add_argument("--no-prune", dest="prune", action="store_false",
                   help="simulate every feasible candidate (full ranking) instead of only those whose analytic "
                        "bound could beat the best found")
    p.add_argument("--objective", choices=("devices", "power", "cost"), default="devices",
                   help="ranking key (default devices)")
    p.add_argument("--engine", type=name_list, default=["vllm"],
                   help="serving engines to search, comma-separated: vllm (default), sglang, trtllm (fitted "
                        "terms), vllm-2k, <name>-preset or a profile YAML; each candidate is tried under each")
    p.add_argument("--max-num-seqs", type=count_list(), default=None,
                   help="sequence limits to search with every engine, e.g. 128,256,1024 (vLLM --max-num-seqs, "
                        "SGLang --max-running-requests, TensorRT-LLM max_batch_size; default: each engine's); "
                        "a limit the KV cache keeps from binding collapses into the smallest such one")
    p.add_argument("--max-num-batched-tokens", type=count_list(), default=None,
                   help="per-step token budgets to search with every engine, e.g. 2048,8192 (vLLM "
                        "--max-num-batched-tokens, SGLang --chunked-prefill-size, TensorRT-LLM max_num_tokens; "
                        "default: each engine's)")
    p.add_argument("--spec-decode", action="append", default=None, metavar="SPEC",
                   help="speculative decoding to search, repeatable: off, eagle:k=3, mtp:k=2, ... (default off "
                        "only); each candidate is tried under each")
    p.add_argument("--price", action="append", help="USD per device-hour, HARDWARE=PRICE (e.g. h100-sxm=2.5/h); "
                                                    "repeat or comma-separate")
    p.add_argument("--price-provider", help="with --objective cost and no --price: take list prices from this "
                                            "provider only (default: the cheapest row of any provider)")
    p.add_argument("--power-basis", choices=("tdp", "utilisation"), default="tdp",
                   help="power basis: device TDP x devices (default) or P_idle + u (TDP - P_idle)")
    p.add_argument("--idle", help="P_idle per device for --power-basis utilisation, e.g. 150W")
    p.add_argument("--utilisation", type=FRACTION, default=1.0, help="busy fraction u for the utilisation basis")
    p.add_argument("--requests", type=POSITIVE, default=300, help="requests per simulated load point (default 300)")
    p.add_argument("--seed", type=SEED, default=0, help="simulation seed (default 0)")
    p.add_argument("--max-replicas", type=POSITIVE, default=256, help="load limit per candidate (default 256)")
    p.add_argument("--launch", metavar="ENGINE", nargs="?", const="",
                   help="also print the launch configuration of the best plan: vllm, sglang, trtllm or dynamo "
                        "(P/D plans); without a value, for the engine the best plan ran, with its knob values")
    add_format_arg(p)
    add_quiet_arg(p)
    p.set_defaults(func=run)
    c = sub.add_parser("claim", help="check a vendor performance claim against the model",
                       description="Predict a claim's metric at its operating point, the ratio found, the value "
                                   "of each unknown that would give the claimed ratio, and the sensitivity.")
    c.add_argument("claim", nargs="?", help="shipped claim id or claim YAML path")
    c.add_argument("--list", action="store_true", help="list the shipped claims")
    c.add_argument("--points", type=count(2), default=9, help="scan points per continuous unknown (default 9)")
    add_format_arg(c)
    c.set_defaults(func=run_claim)


def run(args) -> int:
    from ..hardware import load_hardware
    from ..modelspec import load_model
    from ..planning.plan import plan
    from ..serving import SLO, Workload
    from ..serving.workload import check_context

    if args.launch:
        from ..planning.launch import LAUNCH_ENGINES

        if args.launch not in LAUNCH_ENGINES:  # before the search, not after it
            raise unknown_name("launch engine (--launch)", args.launch, LAUNCH_ENGINES)
    limits = {k: v for k, v in (("ttft", args.slo_ttft), ("tpot", args.slo_tpot), ("e2e", args.slo_e2e)) if v}
    if not limits:
        raise ConfigError("give at least one of --slo-ttft, --slo-tpot, --slo-e2e")
    tps = list(args.tp)
    slo = SLO(**limits, target=args.target)
    workload = Workload.fixed(args.isl, args.osl, rate=args.rate)
    check_context(workload, load_model(args.model))
    print_notes(*(checkpoint_note(args.model, w) for w in dict.fromkeys((args.weights or []) + (args.decode_weights or []))))
    # resolve names and files once, before the prices that may name a file's hardware by its id
    hardware = [load_hardware(h) for h in args.hardware]
    result = plan(args.model, workload, slo, hardware=hardware, weights=args.weights, kv_cache=args.kv_cache,
                  tp=tps,
                  rate=args.rate, objective=args.objective, engine=args.engine, power=args.power_basis,
                  idle=args.idle, utilisation=args.utilisation, price=prices_by_hardware(args.price) or None,
                  requests=args.requests, seed=args.seed, max_replicas=args.max_replicas,
                  price_provider=args.price_provider, spec_decode=args.spec_decode or (None,),
                  progress=progress_of(args), dp_attention=args.dp_attention, ep=args.ep,
                  disaggregated=args.disaggregated, prune=args.prune, pp=args.pp,
                  decode_weights=args.decode_weights, max_num_seqs=args.max_num_seqs,
                  max_num_batched_tokens=args.max_num_batched_tokens)
    status = no_feasible_point("plan", result.rejected, len(result.ranked) + len(result.rejected), "reason")
    launch, launch_error = _launch(result, args.launch)
    if launch_error:
        status = 2  # the plan is printed; its launch configuration is not expressible (bad input)
    extra = {"launch": launch.as_dict() if launch is not None else None, "launch_error": launch_error} \
        if args.launch is not None else {}
    rows = [{"status": kind, **r} for kind, part in (("ranked", result.ranked), ("rejected", result.rejected),
                                                     ("pruned", result.pruned)) for r in part]
    emit(args.format, table=lambda: _plan_table(result, args, launch, launch_error), rows=rows,
         document={**result.as_dict(), **extra, "note": _engine_notes(args.engine)})
    return status


#: Why a ranked plan row can lack a value.
PLAN_WHY = {"cost_per_hour": "no price for this hardware (give --price HARDWARE=USD/h, or --objective cost "
                             "for list prices)",
            "power_w": "no power figure for this hardware", "output_tokens_per_s_per_mw": "no power figure for this hardware"}


def _plan_table(result, args, launch, launch_error: str | None) -> None:
    i = result.inputs
    print(f"{i['model']}: {i['rate_requests_per_s']:g} req/s, ISL {i['isl_mean']:g} / OSL {i['osl_mean']:g}, SLO "
          f"{', '.join(f'{k} < {v:g} s' for k, v in i['slo'].items())} for {i['target']:.0%} of requests; "
          f"ranked by {i['objective']}; engine {i['engine']}; power basis {i['power_basis']}")
    cols = ["rank", "deployment", "devices", "replicas", "goodput_requests_per_s", "slo_attainment", "ttft_mean_s",
            "ttft_p95_s", "tpot_mean_s", "tpot_p95_s", "power_w", "cost_per_hour", "output_tokens_per_s_per_mw"]
    for hw, row in i["list_prices"].items():
        print(f"cost of {hw}: " + (_list_price_line(row) if row else "no list price in the shipped table "
                                   "(pass --price HARDWARE=USD/h); ranked last"))
    space = i.get("search_space")
    if isinstance(space, dict):
        print(f"search space: {', '.join(space['weights'])} x tp {','.join(map(str, space['tp']))}; MoE models: "
              f"dp-attention {','.join(map(str, space['dp_attention']))}, ep "
              f"{','.join(map(str, space['ep'])) if isinstance(space['ep'], list) else space['ep']}; "
              f"pp {','.join(map(str, space['pp']))}; aggregated {'on' if space['aggregated'] else 'off'}, "
              f"P/D {'on' if space['disaggregated'] else 'off'}"
              + (f" (decode pool {', '.join(space['decode_weights'])})"
                 if isinstance(space['decode_weights'], list) else "") + "; "
              f"pruning {'on' if i['prune'] else 'off'}" + _engine_space(space))
    print(format_table(result.ranked, cols, why=PLAN_WHY))
    print(result.search_line() + (" (--no-prune simulates every feasible one; --format json lists the pruned)"
                                   if result.pruned else ""))
    if result.rejected:
        print("\nrejected:")
        print(format_table(_grouped(result.rejected), ["deployment", "rejected_for", "reason"]))
    print(f"note: {_engine_notes(args.engine)}")
    if launch is not None:
        print(f"\nlaunch configuration of rank 1 ({result.ranked[0]['deployment']}):\n{launch.text()}")
    elif args.launch is not None:
        print(f"\nno {args.launch or 'engine'} launch configuration: {launch_error}")


def _engine_space(space: dict) -> str:
    """The engines and knob values searched ("" for one engine at its own values)."""
    knobs = [f"{k} {','.join(map(str, space[k]))}" for k in ("max_num_batched_tokens", "max_num_seqs")
             if isinstance(space.get(k), list)]
    if len(space.get("engine", ())) < 2 and not knobs:
        return ""
    return f"; engines {', '.join(space['engine'])}" + "".join(f" x {k}" for k in knobs)


def _engine_notes(engines: list[str]) -> str:
    """:func:`engine_note` of each engine searched, joined."""
    return "; ".join(engine_note(e) for e in engines)


def _launch(result, engine: str | None):
    """(launch configuration of the best plan, None) or (None, why there is none)."""
    from ..errors import PerfmodelError

    if engine is None:
        return None, None
    if not result.ranked:
        return None, "no deployment meets the SLO"
    try:
        return result.launch(engine or None), None
    except PerfmodelError as exc:
        return None, str(exc)


def _grouped(rows: list[dict]) -> list[dict]:
    """One row per (rejected_for, reason): the first deployment and how many more share it."""
    groups: dict[tuple, list[str]] = {}
    for r in rows:
        groups.setdefault((r["rejected_for"], r["reason"]), []).append(r["deployment"])
    return [{"deployment": names[0] + (f" (+{len(names) - 1} like it)" if len(names) > 1 else ""),
             "rejected_for": kind, "reason": reason} for (kind, reason), names in groups.items()]


def _list_price_line(row: dict) -> str:
    when = f"as of {row['as_of']}, " if row.get("as_of") else ""
    return (f"${row['usd_per_device_hour']:.4g}/device-h, {row['provider']} {row['instance']} "
            f"({row['id']}; {when}seen {row['seen']}; {row['basis']}) {row['source']}")


#: Why a claim table can lack a value (rendering only; the values are the claim check's).
CLAIM_WHY = {
    "nominal": "null nominal: the claim's own value stays (e.g. the sourced acceptance of its spec_decode)",
    "value_needed": "this unknown alone does not give the claimed ratio in its range (see finding)",
    "candidate_batch": "no batch size of the candidate reaches this per-user speed",
    "baseline_batch": "no batch size of the baseline reaches this per-user speed",
    "ratio": "not defined: the baseline reaches no batch at this per-user speed (its throughput is 0)",
}


def run_claim(args) -> int:
    from ..planning.claims import check_claim, list_claims, load_claim

    if args.list or not args.claim:
        rows = [{"id": cid, "title": load_claim(cid).title} for cid in list_claims()]
        emit(args.format, table=lambda: print(format_table(rows)), rows=rows)
        return 0
    with deprecations_as_notes("claim"):   # a claim file's old keys: one note each
        r = check_claim(args.claim, points=args.points)
    emit(args.format, table=lambda: _claim_table(r), rows=lambda: _claim_rows(r), document=r.as_dict())
    return 0


def _claim_rows(r) -> list[dict]:
    """CSV rows of a claim check: ``section`` says which table a row belongs to."""
    rows = [{"section": "operating_point", "system": name, **s}
            for name, s in (("baseline", r.baseline), ("candidate", r.candidate)) if s is not None]
    rows += [{"section": "needed", **n} for n in r.needed]
    if r.interactivity is not None:
        rows += [{"section": "ratio_vs_floor", **x} for x in r.interactivity.to_dict(orient="records")]
    return rows


def _claim_table(r) -> None:
    c = r.claim
    print(f"{c.title}\n  source: {c.source}\n  {r.verdict}")
    for name, s in (("baseline", r.baseline), ("candidate", r.candidate)):
        if s is not None:
            where = f"at batch {s['batch']}" if s["batch"] is not None else "(no batch reaches the operating point)"
            print(f"  {name}: {c.metric} = {number(s['value'])} {where} ({s['devices']} devices, power "
                  f"{number(s['power_w'])} W, per-user max {number(s['max_per_user_tokens_per_s'])} tok/s)")
    print("\nassumptions needed (one unknown at a time, others nominal):")
    print(format_table(r.needed, ["unknown", "nominal", "value_needed", "unit", "finding"], why=CLAIM_WHY))
    if r.interactivity is not None:
        print("\nratio against the per-user speed floor (nominal unknowns):")
        print(format_table(r.interactivity.to_dict(orient="records"), why=CLAIM_WHY))
