"""Replay measured serving runs through the simulator: the error of ``simulate`` with the fitted engines.

``docs/validation.md`` publishes the error of the closed-form steady state (the path the fit and the
cross-validation need: one numpy pass per engine). This script measures the error of the number a
``simulate`` / ``max-load`` / ``plan`` user reads: every aggregated, non-anomalous measured row (or a
seeded random sample of them) is replayed as a closed loop of its C clients with its fixed ISL/OSL,
under its engine with the shipped fitted terms, and the mean TTFT and TPOT of the simulated requests
(after a warm-up share) are compared with the measurement — next to the steady state's prediction of
the same rows.

Clients start together (``ramp_up = 0``), as benchmark clients do; the simulator then runs the
synchronised waves that the closed form represents by ``sync_fraction``. Attention-DP ranks are one
scheduler with S times the token budget and sequence limit (the steady state keeps S schedulers).
P/D-disaggregated rows are not replayed.

Usage::

    python scripts/simulator_replay.py --rows 300 --seed 0      # a sample (minutes on one core)
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
from perfmodel.validation.metrics import add_errors, error_stats, not_flagged
from perfmodel.validation.run import serving_problem
from perfmodel.validation.stepmodels import CONFIG_COLUMNS, StepModelCache


def replay(rows: pd.DataFrame, requests_per_client: int, warmup: float, spread: bool = False) -> pd.DataFrame:
    """Simulated mean TTFT and TPOT [s] of each row (``sim_ttft_s``, ``sim_tpot_s``; NaN on failure)."""
    cache = StepModelCache("calibrated")
    timers: dict = {}
    out = rows.copy()
    out["sim_ttft_s"], out["sim_tpot_s"], out["sim_reason"] = np.nan, np.nan, ""
    for idx, r in rows.iterrows():
        try:
            sm = cache.get(tuple(r[c] for c in CONFIG_COLUMNS))
            base = Engine.load(r["backend"])
            s = int(r["dp"])
            engine = Engine.load(base, max_num_batched_tokens=base.profile.max_num_batched_tokens * s,
                                 max_num_seqs=base.profile.max_num_seqs * s)
            c = max(int(round(r["concurrency"])), 1)
            ramp = float(r["predicted_ttft_s"] + (r["osl"] - 1) * r["predicted_tpot_s"]) if spread else 0.0
            w = Workload.fixed(int(r["isl"]), max(int(r["osl"]), 2), concurrency=c, ramp_up=ramp)
            res = simulate(sm, w, engine=engine, requests=max(requests_per_client * c, 40), seed=1,
                           timer_cache=timers).summary(warmup=warmup)
            out.loc[idx, ["sim_ttft_s", "sim_tpot_s"]] = res["ttft_mean_s"], res["tpot_mean_s"]
        except PerfmodelError as exc:
            out.loc[idx, "sim_reason"] = str(exc)[:120]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=300, help="rows sampled (0 = all aggregated rows)")
    ap.add_argument("--seed", type=int, default=0, help="sampling seed")
    ap.add_argument("--requests-per-client", type=int, default=6, help="requests simulated per client")
    ap.add_argument("--warmup", type=float, default=0.3, help="share of the run dropped")
    ap.add_argument("--spread", action="store_true",
                    help="start the clients spread over one predicted request duration (default: together)")
    ap.add_argument("--out", default=None, help="CSV of the replayed rows")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    problem, _ = serving_problem(pd.read_csv(shipped_path("serving")), "calibrated")
    pred = add_errors(problem.predictions(load_profile("calibrated")))
    rows = pred[(pred["mode"] == "agg") & not_flagged(pred)]
    if args.rows and args.rows < len(rows):
        rows = rows.sample(args.rows, random_state=args.seed)
    done = replay(rows, args.requests_per_client, args.warmup, args.spread)
    ok = done[np.isfinite(done["sim_ttft_s"])]
    print(f"rows replayed: {len(ok)} of {len(done)} sampled ({len(rows)} aggregated, scored); "
          f"{time.perf_counter() - t0:.0f} s")
    table = []
    for metric in ("ttft", "tpot"):
        for label, col in (("simulate", f"sim_{metric}_s"), ("steady state", f"predicted_{metric}_s")):
            e = error_stats(100.0 * (ok[col].to_numpy() / ok[f"measured_{metric}_s"].to_numpy() - 1.0))
            table.append({"metric": metric.upper(), "path": label, **e})
    print(pd.DataFrame(table).to_string(index=False))
    ratio = ok["sim_ttft_s"] / ok["predicted_ttft_s"]
    print(f"simulate / steady state TTFT: median {ratio.median():.2f}, p10 {ratio.quantile(0.1):.2f}, "
          f"p90 {ratio.quantile(0.9):.2f}; TPOT median "
          f"{(ok['sim_tpot_s'] / ok['predicted_tpot_s']).median():.2f}")
    if args.out:
        done.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
