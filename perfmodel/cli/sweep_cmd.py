"""``perfmodel sweep``: the analytic model over a grid (:func:`perfmodel.planning.sweep`).

Examples::

    perfmodel sweep --model llama-3.1-8b,llama-3.1-70b --hardware h100-sxm,h200-sxm,my-gpu.yaml \\
        --tp 1,2,4,8 --weights bf16,fp8 --batch 1,8,64 --isl 2048 --osl 256 --out sweep.csv
    perfmodel sweep --model llama-3.1-70b --hardware b200 --tp 8 --replicas 1,2 --sequences 16,64 --format csv
"""

from __future__ import annotations

from ..precision import label_fields
from .argtypes import count_list, name_list, prices_by_hardware, real
from .dtype_args import add_dtype_args, add_renamed_flag
from .output import add_format_arg, add_quiet_arg, blank_unfit, emit, format_table, progress_of

#: Columns of the table view (the CSV and JSON have every column of the frame).
TABLE_COLUMNS = ["model", "hardware", "tp", "pp", "ep", "dp", "devices", "weights", "kv_cache", "batch", "isl",
                 "osl", "ttft_s", "tpot_s", "per_user_tokens_per_s", "output_tokens_per_s", "output_tokens_per_s_per_device",
                 "fits"]
#: Metrics the table leaves out where a point cannot run or does not fit.
METRICS = ("ttft_s", "tpot_s", "per_user_tokens_per_s", "output_tokens_per_s", "output_tokens_per_s_per_device")
#: Why a table cell of a sweep can be empty.
WHY = {c: "the layout cannot run, the load does not split over dp, or the point does not fit in memory "
          "(why_not says which; --format json or csv has the values of points that do not fit)"
       for c in ("devices", *METRICS)}


def with_formats(df):
    """The frame with ``weights``, ``activations`` and ``kv_cache`` columns in place of the ``precision``
    label, as every command's output names the formats (the Python frame keeps the label for plot titles)."""
    import pandas as pd

    fields = pd.DataFrame([label_fields(p) for p in df["precision"]], index=df.index)
    at = df.columns.get_loc("precision")
    out = df.drop(columns="precision")
    for k, name in enumerate(fields.columns):
        out.insert(at + k, name, fields[name])
    return out


def register(sub) -> None:
    p = sub.add_parser(
        "sweep", help="the analytic model over models x hardware x layouts x formats x loads x lengths",
        description="Static-batch TTFT, TPOT and throughput (no queueing) for every combination of the "
                    "lists given (comma-separated), one vectorised prediction per model, hardware, "
                    "weight format and layout. Layouts that cannot run are kept as rows with the reason.")
    p.add_argument("--model", type=name_list, required=True, help="model ids, HF repo ids or config.json paths")
    p.add_argument("--hardware", type=name_list, required=True,
                   help="accelerator or system ids or spec YAML paths (e.g. h100-sxm,my-gpu.yaml)")
    p.add_argument("--tp", type=count_list(), default=[1], help="tensor-parallel sizes (default 1)")
    p.add_argument("--pp", type=count_list(), default=[1], help="pipeline stages (default 1)")
    p.add_argument("--ep", type=count_list(), default=[1], help="expert-parallel sizes (default 1)")
    p.add_argument("--dp-attention", type=count_list(), default=[1],
                   help="attention data-parallel ranks (default 1)")
    p.add_argument("--replicas", "--dp", dest="replicas", type=count_list(), default=[1],
                   help="data-parallel replicas (default 1; sweep(dp=) in Python)")
    add_dtype_args(p, weights_list=True, old_precision=True)
    load = p.add_mutually_exclusive_group()
    load.add_argument("--batch", type=count_list(), default=None,
                      help="sequences per replica, e.g. 1,8,64 (default 1)")
    load.add_argument("--sequences", type=count_list(), default=None,
                      help="sequences over all replicas (split evenly; a count the replicas do not divide "
                           "is flagged invalid)")
    add_renamed_flag(load, "--concurrency", "--sequences", "sequences", type=count_list())
    p.add_argument("--isl", type=count_list(), default=[1024], help="prompt tokens, e.g. 512,2048 (default 1024)")
    p.add_argument("--osl", type=count_list(), default=[128], help="output tokens, e.g. 256 (default 128)")
    p.add_argument("--efficiency", default="calibrated",
                   help="'calibrated' (default), 'datasheet' (pure roofline) or a profile name")
    p.add_argument("--power-basis", choices=("tdp", "utilisation", "system"), default="tdp",
                   help="power basis of output_tokens_per_s_per_mw (default tdp)")
    p.add_argument("--idle", help="P_idle per device for --power-basis utilisation, e.g. 150W")
    p.add_argument("--utilisation", type=real(0, 1, lo_open=True), default=1.0,
                   help="busy fraction u for the utilisation basis (default 1)")
    p.add_argument("--price", action="append",
                   help="USD per device-hour, HARDWARE=PRICE (e.g. h100-sxm=2.5/h); repeat or comma-separate")
    p.add_argument("--out", help="also write the whole frame (every column, SI units) to this CSV file")
    add_format_arg(p)
    add_quiet_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..planning.sweep import sweep

    batch = args.batch if args.batch is not None or args.sequences is not None else [1]
    df = sweep(args.model, args.hardware, tp=args.tp, pp=args.pp, ep=args.ep, dp_attention=args.dp_attention,
               dp=args.replicas, weights=args.weights, kv_cache=args.kv_cache, batch=batch,
               sequences=args.sequences, isl=args.isl, osl=args.osl, efficiency=args.efficiency,
               power=args.power_basis, idle=args.idle, utilisation=args.utilisation,
               price=prices_by_hardware(args.price) or None, progress=progress_of(args))
    df = with_formats(df)
    if args.out:
        df.to_csv(args.out, index=False)
    records = df.to_dict(orient="records")

    def table() -> None:
        rows = [{**r, "why_not": "" if r["valid"] and r["fits"] else r["reason"]}
                for r in blank_unfit(records, METRICS)]
        cols = TABLE_COLUMNS + (["why_not"] if any(r["why_not"] for r in rows) else [])
        print(f"{len(rows)} points ({int(df['valid'].sum())} valid, {int(df['fits'].sum())} fit); static batch "
              f"on an idle replica, TTFT without queueing; efficiency {args.efficiency}")
        print(format_table(rows, cols, why=WHY))
        if args.out:
            print(f"\nall {len(df.columns)} columns written to {args.out}")

    emit(args.format, table=table, rows=records)
    return 0
