"""``perfmodel estimate``: mean TTFT/TPOT/throughput under load with a fitted engine (:func:`perfmodel.estimate`).

Examples::

    perfmodel estimate --model meta-llama/Llama-3.1-70B --hardware h200-sxm --engine vllm --tp 4 \\
        --weights fp8 --concurrency 1,8,64 --isl 1024 --osl 1024
    perfmodel estimate --model deepseek-ai/DeepSeek-R1 --hardware gb200 --engine trtllm --tp 8 --ep 8 \\
        --weights fp4 --prefill-tp 4 --prefill-ep 4 --prefill-workers 2 --decode-workers 1 \\
        --concurrency 64,512 --isl 8192 --osl 1024 --format json
"""

from __future__ import annotations

from ..errors import ConfigError
from .argtypes import POSITIVE, count_list, real_list, single_name
from .dtype_args import add_dtype_args
from .output import add_format_arg, checkpoint_note, emit, format_table, print_notes
from .predict_cmd import add_memory_fraction_args, add_prefix_hit_arg, add_spec_decode_arg, serving_engine

#: Columns printed in the table view.
TABLE_COLUMNS = ("ttft_mean_s", "tpot_mean_s", "e2e_mean_s", "requests_per_s", "output_tokens_per_s",
                 "output_tokens_per_s_per_device", "decode_batch_mean", "limited_by")
#: What the time columns are (estimate has no percentiles; simulate has both).
MEANS_NOTE = ("note: times are means over requests (E2E = TTFT + (OSL - 1) x TPOT); "
              "for percentiles run perfmodel simulate with the same load")
#: P/D pool options and their defaults (given without --prefill-workers they are an error).
POOL_OPTIONS = {"decode_workers": 1, "prefill_tp": 1, "prefill_dp_attention": 1, "prefill_ep": 1}


def register(sub) -> None:
    p = sub.add_parser(
        "estimate", help="closed-loop serving estimate with the validated engine calibration",
        description="Mean TTFT, TPOT, E2E and throughput of a deployment under C closed-loop clients, "
                    "computed by the pipeline whose error against measured runs is published in "
                    "docs/validation.md (same format defaults, steady state and fitted engine parameters). "
                    "Aggregated by default; --prefill-workers makes it P/D-disaggregated.")
    p.add_argument("--model", type=single_name("model"), required=True, help="model id, HF repo id or config.json path")
    p.add_argument("--hardware", type=single_name("hardware"), required=True, help="accelerator id (h100-sxm, h200-sxm, b200, gb200, ...)")
    p.add_argument("--engine", required=True,
                   help="serving engine: vllm, sglang, trtllm (fitted terms) or <name>-preset (uncalibrated)")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--concurrency", type=count_list(),
                      help="closed-loop clients, comma-separated (per replica; whole system when disaggregated)")
    load.add_argument("--rate", type=real_list(0, lo_open=True),
                      help="open-loop Poisson request rates per replica [1/s], comma-separated (simulated)")
    p.add_argument("--isl", type=POSITIVE, required=True, help="prompt tokens per request")
    p.add_argument("--osl", type=POSITIVE, required=True, help="output tokens per request")
    p.add_argument("--tp", type=POSITIVE, default=1, help="tensor parallelism of a (decode) replica (default 1)")
    p.add_argument("--pp", type=POSITIVE, default=1, help="pipeline stages (default 1)")
    p.add_argument("--dp-attention", type=POSITIVE, default=1,
                   help="attention data-parallel ranks (default 1); a replica spans tp x dp-attention x pp GPUs, "
                        "so TensorRT-LLM's 'TP 8 with attention DP' is --tp 1 --dp-attention 8 --ep 8")
    p.add_argument("--ep", type=POSITIVE, default=1, help="expert parallelism (default 1)")
    add_dtype_args(p, weights_list=True, old_precision=True)
    g = p.add_argument_group("P/D disaggregation")
    g.add_argument("--prefill-workers", type=POSITIVE, help="prefill replicas (makes the deployment disaggregated)")
    g.add_argument("--decode-workers", type=POSITIVE, help="decode replicas (default 1)")
    g.add_argument("--prefill-tp", type=POSITIVE, help="tensor parallelism of a prefill replica (default 1)")
    g.add_argument("--prefill-dp-attention", type=POSITIVE, help="attention DP ranks of a prefill replica (default 1)")
    g.add_argument("--prefill-ep", type=POSITIVE, help="expert parallelism of a prefill replica (default 1)")
    p.add_argument("--calibration", "--engines", dest="engines", default="calibrated",
                   help="engine calibration: 'calibrated' (default), 'preset' (uncalibrated) or a YAML path")
    p.add_argument("--efficiency", default="calibrated", help="per-op efficiency profile (default calibrated)")
    add_spec_decode_arg(p)
    add_memory_fraction_args(p)
    add_prefix_hit_arg(p)
    add_format_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..serving.estimate import PrefillPool, estimate

    given = {k: getattr(args, k) for k in POOL_OPTIONS if getattr(args, k) is not None}
    prefill = None
    if args.prefill_workers is not None:
        pool = {**POOL_OPTIONS, **given}
        prefill = PrefillPool(tp=pool["prefill_tp"], dp_attention=pool["prefill_dp_attention"],
                              ep=pool["prefill_ep"], workers=args.prefill_workers,
                              decode_workers=pool["decode_workers"])
    elif given:
        raise ConfigError(f"{', '.join('--' + k.replace('_', '-') for k in given)}: P/D pool options need "
                          f"--prefill-workers (the deployment is aggregated without it)")
    print_notes(*(checkpoint_note(args.model, w) for w in args.weights or ()))
    out = estimate(args.model, args.hardware, engine=serving_engine(args, calibration=args.engines),
                   concurrency=args.concurrency, rate=args.rate,
                   isl=args.isl, osl=args.osl, tp=args.tp, pp=args.pp, dp_attention=args.dp_attention,
                   ep=args.ep, weights=args.weights, kv_cache=args.kv_cache, prefill=prefill, calibration=args.engines,
                   efficiency=args.efficiency, prefix_hit_rate=args.prefix_hit_rate or 0.0)
    several = out[["weights", "kv_cache"]].nunique().max() > 1
    formats = ["weights", "kv_cache", "kv_cache_tokens"] if several else []
    columns = ["rate" if args.rate is not None else "concurrency", *formats, *TABLE_COLUMNS]
    first = out.iloc[0]
    meta = {"mode": first["mode"], "devices": int(first["devices"]),
            **({} if formats else {"weights": first["weights"], "kv_cache": first["kv_cache"],
                                   "kv_cache_tokens": int(first["kv_cache_tokens"])}),
            "efficiency_profile": first["efficiency_profile"],
            "engine_calibration": first["engine_calibration"], "engine": first["engine"], "path": first["path"],
            "error": "see docs/validation.md (cross-validated error of this pipeline on measured runs)"}
    points = out[columns].to_dict("records")

    def table() -> None:
        print(", ".join(f"{k}: {v}" for k, v in meta.items()))
        print(format_table(points))
        print(MEANS_NOTE)

    emit(args.format, table=table, rows=[{**meta, **r} for r in points], document={**meta, "points": points})
    return 0
