"""``perfmodel demo``: the reference article's scenario, as a table and plots."""

from __future__ import annotations

import time


def register(sub) -> None:
    p = sub.add_parser("demo", help="run the built-in scenario (8-GPU node vs NVL72 slice vs GPU/LPU split)")
    p.add_argument("--out", default="perfmodel-demo", help="folder for the CSV and plots (default ./perfmodel-demo)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..demo import RATES_NOTE, SPLIT_ASSUMPTIONS, DemoScenario, run_demo, summary_table, write_outputs
    from .output import format_table

    t0 = time.perf_counter()
    sc = DemoScenario()
    df = run_demo(sc)
    print(f"perfmodel demo — {sc.model}, weights {sc.weights}, KV cache {sc.kv_cache}, "
          f"ISL {sc.isl} / OSL {sc.osl} tokens, static batches {list(sc.batches)}")
    print("TTFT is an idle replica's prefill (no queueing); TPOT averages the decode steps; "
          "efficiencies: calibrated profiles (fallbacks flagged in comparison.csv).")
    print(format_table(summary_table(df).to_dict("records")))
    print(f"rates: {RATES_NOTE}")
    print("GPU/LPU split assumptions: " + "; ".join(f"{k}: {v}" for k, v in SPLIT_ASSUMPTIONS.items()))
    paths = write_outputs(df, args.out)
    print(f"\nwrote {', '.join(str(p) for p in paths)} in {time.perf_counter() - t0:.1f} s")
    return 0
