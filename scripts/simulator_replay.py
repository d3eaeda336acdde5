"""Replay measured serving runs through the simulator: the error of ``simulate`` with the fitted engines.

``docs/validation.md`` publishes the error of the closed-form steady state (the path the fit and the
cross-validation need: one numpy pass per engine). This script measures the error of the number a
``simulate`` / ``max-load`` / ``plan`` user reads: every aggregated, non-anomalous measured row (or a
seeded random sample of them) is replayed as a closed loop of its C clients with its fixed ISL/OSL,
under its engine with the shipped fitted terms, and the mean TTFT and TPOT of the simulated requests
(after a warm-up share) are compared with the measurement — next to the steady state's prediction of
the same rows.

Clients start as ``simulate`` starts them by default (``--start auto``: over one mean request duration
from the engine-aware steady state, ``ramp_up: auto``), or together (``--start together``,
``ramp_up = 0``, as benchmark clients do, in the synchronised waves that the closed form represents by
``sync_fraction``), or spread over the validated steady state's predicted request duration
(``--start spread``, ``--spread``). Attention-DP ranks are one
scheduler with S times the token budget and sequence limit (the steady state keeps S schedulers).
P/D-disaggregated rows are not replayed.

Usage::

    python scripts/simulator_replay.py --rows 300 --seed 0      # a sample (minutes on one core)
    python scripts/simulator_replay.py --rows 60 --start together --part 1/2   # half of a sample
    python scripts/simulator_replay.py --rows 0                  # every row (long)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from perfmodel.engine.calibration import load_profile
from perfmodel.engine.engine import Engine
from perfmodel.errors import PerfmodelError
from perfmodel.serving import Workload, simulate
from perfmodel.validation.data import shipped_path
from perfmodel.validation.metrics import add_errors, current_columns, error_stats, not_flagged
from perfmodel.validation.run import serving_problem
from perfmodel.validation.stepmodels import CONFIG_COLUMNS, StepModelCache


def _ramp(r: pd.Series, start: str) -> float | str:
    """The row's ramp-up: ``"auto"``, 0 (together) or its predicted request duration [s] (spread)."""
    if start == "auto":
        return "auto"
    if start == "together":
        return 0.0
    return float(r["predicted_ttft_mean_s"] + (r["osl"] - 1) * r["predicted_tpot_mean_s"])


#: This script's own columns as an --out CSV written before they were named as means has them.
OLD_COLUMNS = {"sim_ttft_s": "sim_ttft_mean_s", "sim_tpot_s": "sim_tpot_mean_s"}


def replay(rows: pd.DataFrame, requests_per_client: int, warmup: float, start: str = "auto") -> pd.DataFrame:
    """Simulated mean TTFT and TPOT [s] of each row (``sim_ttft_mean_s``, ``sim_tpot_mean_s``; NaN on failure)."""
    cache = StepModelCache("calibrated")
    timers: dict = {}
    out = rows.copy()
    out["sim_ttft_mean_s"], out["sim_tpot_mean_s"], out["sim_reason"] = np.nan, np.nan, ""
    for idx, r in rows.iterrows():
        try:
            sm = cache.get(tuple(r[c] for c in CONFIG_COLUMNS))
            base = Engine.load(r["backend"])
            s = int(r["dp"])
            engine = Engine.load(base, max_num_batched_tokens=base.profile.max_num_batched_tokens * s,
                                 max_num_seqs=base.profile.max_num_seqs * s)
            c = max(int(round(r["concurrency"])), 1)
            w = Workload.fixed(int(r["isl"]), max(int(r["osl"]), 2), concurrency=c, ramp_up=_ramp(r, start))
            res = simulate(sm, w, engine=engine, requests=max(requests_per_client * c, 40), seed=1,
                           timer_cache=timers).summary(warmup=warmup)
            out.loc[idx, ["sim_ttft_mean_s", "sim_tpot_mean_s"]] = res["ttft_mean_s"], res["tpot_mean_s"]
        except PerfmodelError as exc:
            out.loc[idx, "sim_reason"] = str(exc)[:120]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=300, help="rows sampled (0 = all aggregated rows)")
    ap.add_argument("--seed", type=int, default=0, help="sampling seed")
    ap.add_argument("--requests-per-client", type=int, default=6, help="requests simulated per client")
    ap.add_argument("--warmup", type=float, default=0.3, help="share of the run dropped")
    ap.add_argument("--start", choices=("auto", "together", "spread"), default="auto",
                    help="how the clients start: simulate's default ramp_up auto, all at once, or spread over "
                         "the validated steady state's request duration (default auto)")
    ap.add_argument("--spread", action="store_true", help="same as --start spread")
    ap.add_argument("--part", default=None, metavar="I/N",
                    help="replay only the I-th of N equal parts of the sample (to split a long run)")
    ap.add_argument("--out", default=None, help="CSV of the replayed rows")
    ap.add_argument("--combine", nargs="+", default=None, metavar="CSV",
                    help="print the table of the --out CSVs of earlier parts instead of replaying")
    args = ap.parse_args(argv)
    if args.combine:
        parts = [current_columns(pd.read_csv(f), f).rename(columns=OLD_COLUMNS) for f in args.combine]
        report(pd.concat(parts, ignore_index=True), 0.0)
        return 0
    t0 = time.perf_counter()
    problem, _ = serving_problem(pd.read_csv(shipped_path("serving")), "calibrated")
    pred = add_errors(problem.predictions(load_profile("calibrated")))
    rows = pred[(pred["mode"] == "agg") & not_flagged(pred)]
    if args.rows and args.rows < len(rows):
        rows = rows.sample(args.rows, random_state=args.seed)
    if args.part:
        i, n = (int(x) for x in args.part.split("/"))
        rows = rows.iloc[(i - 1) * len(rows) // n: i * len(rows) // n]
    done = replay(rows, args.requests_per_client, args.warmup, "spread" if args.spread else args.start)
    report(done, time.perf_counter() - t0)
    if args.out:
        done.to_csv(args.out, index=False)
    return 0


def report(done: pd.DataFrame, wall: float) -> None:
    """Print the error table of the replayed rows ``done``."""
    ok = done[np.isfinite(done["sim_ttft_mean_s"])]
    print(f"rows replayed: {len(ok)} of {len(done)} sampled; {wall:.0f} s")
    table = []
    for metric in ("ttft", "tpot"):
        for label, col in (("simulate", f"sim_{metric}_mean_s"), ("steady state", f"predicted_{metric}_mean_s")):
            e = error_stats(100.0 * (ok[col].to_numpy() / ok[f"measured_{metric}_mean_s"].to_numpy() - 1.0))
            table.append({"metric": metric.upper(), "path": label, **e})
    print(pd.DataFrame(table).to_string(index=False))
    ratio = ok["sim_ttft_mean_s"] / ok["predicted_ttft_mean_s"]
    print(f"simulate / steady state TTFT: median {ratio.median():.2f}, p10 {ratio.quantile(0.1):.2f}, "
          f"p90 {ratio.quantile(0.9):.2f}; TPOT median "
          f"{(ok['sim_tpot_mean_s'] / ok['predicted_tpot_mean_s']).median():.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
