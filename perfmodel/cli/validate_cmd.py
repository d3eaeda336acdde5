"""``perfmodel validate``: predict measured runs and report the error; optionally fit engine overheads.

Examples::

    perfmodel validate --data perfmodel/data/validation/serving_measured.csv --format json
    perfmodel validate --data serving_measured.csv --efficiency datasheet --out predictions.csv
    perfmodel validate --data result.json --hardware h100-sxm --engine vllm --tp 2   # vLLM / AIPerf JSON
    perfmodel validate --data benchmarks.json --hardware h100-sxm --engine vllm      # GuideLLM report
    perfmodel validate --data reports-20260101-000000/ --hardware h100-sxm --engine vllm --model ...  # inference-perf
    perfmodel validate --data my_runs.csv --calibrate my_engines.yaml              # fit engine overheads
"""

from __future__ import annotations

from .argtypes import POSITIVE
from .dtype_args import add_dtype_args
from .output import add_format_arg, add_quiet_arg, deprecations_as_notes, emit, format_table, progress_of

#: --weights of a measured run: what the server was told, read as the measured rows' precision column.
MEASURED_WEIGHTS_HELP = ("weight format the server ran: bf16, fp8, fp8_block, nvfp4 (fp4), int4_wo... (default: "
                         "the checkpoint's own); read as the measured rows' precision column, so fp8 of a "
                         "block-scaled checkpoint is that checkpoint's fp8_block (docs/validation.md)")

#: Error statistics a validation summary can hold, in table order.
METRICS = ("tpot", "ttft", "batch_latency", "latency")
#: Why a statistic of the tables can be missing.
WHY = dict.fromkeys(("median_abs_pct_error", "p90_abs_pct_error", "bias_pct", "tpot_median_%", "tpot_bias_%",
                     "ttft_median_%", "ttft_bias_%"), "no row of this group has a prediction and a measurement (n = 0)")


def register(sub) -> None:
    p = sub.add_parser(
        "validate", help="compare predictions with measured runs (TTFT/TPOT errors)",
        description="Predict every row of a measurement table (serving_measured.csv schema, "
                    "published_end_to_end.csv, per-op tables, or a vLLM/AIPerf/GenAI-Perf/GuideLLM/inference-perf "
                    "result JSON) and report per-row errors and aggregates. Rows that cannot be mapped are "
                    "listed with the reason. Open-loop runs (a request rate) are simulated and reported as "
                    "their own group.")
    p.add_argument("--data", required=True, help="measurement file (CSV, CSV.gz or benchmark result JSON) or an "
                                                 "inference-perf report folder (its stage_N_lifecycle_metrics.json)")
    p.add_argument("--efficiency", default="calibrated",
                   help="per-op efficiency profile: 'calibrated' (default) or 'datasheet'; per-op tables also "
                        "take 'calibrated-nokernel' (no kernel-level decode terms) and 'calibrated-plain'")
    p.add_argument("--calibration", "--engines", dest="engines", default="calibrated",
                   help="engine calibration profile: 'calibrated' (default), 'preset' (uncalibrated) "
                        "or a YAML path")
    p.add_argument("--out", help="write per-row predictions to this CSV")
    p.add_argument("--include-anomalous", action="store_true",
                   help="count rows flagged anomalous in the error figures (default: reported apart)")
    p.add_argument("--calibrate", metavar="PROFILE.yaml",
                   help="fit the engine-level parameters on this data and write a calibration profile")
    g = p.add_argument_group("deployment of a benchmark result JSON")
    g.add_argument("--hardware", "--system", dest="hardware",
                   help="accelerator or system id (h100-sxm, b200, gb200, ...) or a measured table's system "
                        "name (h100_sxm, h200_sxm, b200_sxm)")
    g.add_argument("--engine", "--backend", dest="engine", choices=("vllm", "sglang", "trtllm"),
                   help="serving engine that produced the file")
    g.add_argument("--model", help="HF repo id (default: the one in the file)")
    g.add_argument("--tp", type=POSITIVE, default=1)
    g.add_argument("--pp", type=POSITIVE, default=1)
    g.add_argument("--dp-attention", "--attention-dp", dest="dp_attention", type=POSITIVE, default=1)
    g.add_argument("--ep", type=POSITIVE, default=1)
    g.add_argument("--replicas", type=POSITIVE, default=1, help="replicas sharing the client concurrency")
    add_dtype_args(g, kv_cache=False, old_precision=True, weights_help=MEASURED_WEIGHTS_HELP)
    g.add_argument("--concurrency", type=POSITIVE, help="client concurrency (default: the one in the file)")
    g.add_argument("--arrival-process", choices=("constant", "poisson"),
                   help="load type of an inference-perf report with no config.yaml beside it "
                        "(default: the tool's default, constant)")
    add_format_arg(p)
    add_quiet_arg(p)
    p.set_defaults(func=run)


def _deployment(args):
    from pathlib import Path

    if not (args.data.lower().endswith(".json") or Path(args.data).is_dir()):
        return None
    from ..errors import ConfigError
    from ..validation.importers import MeasuredDeployment
    from ..validation.run import stage_reports

    if Path(args.data).is_dir():
        stage_reports(Path(args.data))  # a folder that is not a report folder: say that first

    if not args.hardware or not args.engine:
        raise ConfigError("--data is a benchmark result JSON or report folder: --hardware and --engine are required "
                          "(with --tp/--ep/... for the layout)")
    return MeasuredDeployment(system=args.hardware, backend=args.engine, model=args.model, tp=args.tp,
                              pp=args.pp, attention_dp=args.dp_attention, ep=args.ep,
                              replicas=args.replicas, weights=args.weights or "",
                              concurrency=args.concurrency, arrival_process=args.arrival_process)


def _print_table(run) -> None:
    s = run.summary
    print(f"{run.kind}{' (closed loop)' if 'open_loop' in s else ''}: {s.get('rows')} rows, {s.get('predicted')} predicted, {s.get('skipped')} skipped"
          + (f", {s['anomalous']} flagged anomalous (excluded)" if s.get("anomalous") else ""))
    metrics = [m for m in METRICS if isinstance(s.get(m), dict)]
    rows = [{"metric": m, **{k: v for k, v in s[m].items()}} for m in metrics]
    if rows:
        print(format_table(rows, why=WHY))
    for group, values in (s.get("by") or {}).items():
        if run.kind.startswith("ops:") or run.kind == "step":
            print(f"\nby {group}:")
            print(format_table([{group: k, **v} for k, v in values.items()], why=WHY))
            continue
        if run.kind != "serving":
            continue
        print(f"\nby {group}:")
        print(format_table(_group_rows(group, values), why=WHY))
    if s.get("skipped_reasons"):
        print("\nskipped:")
        print(format_table([{"reason": k, "rows": v} for k, v in s["skipped_reasons"].items()]))
    if isinstance(s.get("open_loop"), dict):
        _print_open_loop(s["open_loop"])


def _group_rows(group: str, values: dict) -> list[dict]:
    """Table rows of a serving summary's ``by[group]``: count, TPOT and TTFT median and bias [%]."""
    return [{group: k, "n": v["n"], "tpot_median_%": v["tpot"]["median_abs_pct_error"],
             "tpot_bias_%": v["tpot"]["bias_pct"], "ttft_median_%": v["ttft"]["median_abs_pct_error"],
             "ttft_bias_%": v["ttft"]["bias_pct"]} for k, v in values.items()]


def _print_open_loop(o: dict) -> None:
    """The open-loop group of a serving validation: its own counts and errors, never the closed loop's."""
    print(f"\nopen loop (request rate, simulated): {o['rows']} rows, {o['predicted']} predicted, "
          f"{o['skipped']} skipped\n{o['method']}")
    if o["predicted"]:
        print(format_table([{"metric": m, **o[m]} for m in ("tpot", "ttft")], why=WHY))
        print(format_table(_group_rows("arrival_process", o["by"].get("arrival_process", {})), why=WHY))
    if o.get("skipped_reasons_detail"):
        print(format_table([{"reason": k, "rows": v} for k, v in o["skipped_reasons_detail"].items()]))


def run(args) -> int:
    from ..engine.calibration import load_profile

    load_profile(args.engines)  # a wrong profile name is refused before the data and pandas load
    import pandas as pd

    from ..validation.run import validate_file

    with deprecations_as_notes("validate"):   # a measurement table's old column names: one note each
        result = validate_file(args.data, efficiency=args.efficiency, engines=args.engines,
                               deployment=_deployment(args), include_anomalous=args.include_anomalous,
                               progress=progress_of(args))
        if args.calibrate:
            from ..calibration.engine_calibrate import calibrate_file

            result.summary["calibration"] = calibrate_file(args.data, args.calibrate, efficiency=args.efficiency,
                                                           deployment=_deployment(args))
    if args.out and (len(result.predictions) or len(result.open_loop)):
        parts = [result.predictions.assign(arrival="closed")] if len(result.predictions) else []
        parts += [result.open_loop.assign(arrival="open")] if len(result.open_loop) else []
        pd.concat(parts, ignore_index=True).to_csv(args.out, index=False)

    def table() -> None:
        _print_table(result)
        if args.calibrate:
            print(f"\nengine calibration written to {args.calibrate}")

    emit(args.format, table=table, rows=lambda: summary_rows(result.summary), document=result.summary)
    return 0


def summary_rows(summary: dict) -> list[dict]:
    """The error statistics of a validation summary as CSV rows: ``arrival`` (``closed``, or ``open`` for the
    simulated open-loop runs of ``summary["open_loop"]``), ``group`` (``all`` or what the rows are grouped
    by), ``value`` (the group's value), ``metric`` and the statistics of that metric."""
    rows = []
    for arrival, part in (("closed", summary), ("open", summary.get("open_loop"))):
        if not isinstance(part, dict) or (arrival == "open" and not part.get("rows")):
            continue
        rows += [{"arrival": arrival, "group": "all", "value": "", "metric": m, **part[m]} for m in METRICS
                 if isinstance(part.get(m), dict)]
        for group, values in (part.get("by") or {}).items():
            for value, stats in values.items():
                nested = {k: v for k, v in stats.items() if isinstance(v, dict)}
                flat = {k: v for k, v in stats.items() if not isinstance(v, dict)}
                head = {"arrival": arrival, "group": group, "value": value}
                rows += ([{**head, "metric": m, **flat, **st} for m, st in nested.items()] if nested
                         else [{**head, "metric": "", **stats}])
    return rows
