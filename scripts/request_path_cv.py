"""Held-out engine errors (grouped 5-fold) by engine and concurrency band, one backend at a time.

Usage::

    python scripts/request_path_cv.py [--backend vllm|sglang|trtllm|all] [--out held.csv] [--fit a,b,...]

Builds the shipped serving problem (calibrated per-op profile), runs
:func:`perfmodel.calibration.engine_fit.cross_validate` (``kfold``) on the rows of the chosen backend(s)
and prints TTFT/TPOT median, p90 and bias overall, by engine, by mode (aggregated, P/D-disaggregated,
and the P/D rows by engine), by concurrency band and for gpt-oss-120b at low load (C <= 16). ``--fit``
fits only the named parameters (default :data:`perfmodel.engine.calibration.FITTED`). Used to measure the request-path terms of issue 19.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from perfmodel.calibration import engine_fit
from perfmodel.calibration.engine_fit import cross_validate
from perfmodel.validation.data import shipped_path
from perfmodel.validation.metrics import add_errors, error_stats, not_flagged
from perfmodel.validation.run import serving_problem

BANDS = ((1, 1, "C=1"), (2, 16, "2-16"), (17, 128, "17-128"), (129, np.inf, ">128"))


def _line(label: str, df: pd.DataFrame) -> str:
    t, f = error_stats(df["tpot_pct_error"]), error_stats(df["ttft_pct_error"])
    if not t["n"]:
        return f"{label:<24} n=0"
    return (f"{label:<24} n={t['n']:4d}  TPOT {t['median_abs_pct_error']:6.1f} {t['p90_abs_pct_error']:6.1f} "
            f"{t['bias_pct']:+6.1f}   TTFT {f['median_abs_pct_error']:6.1f} {f['p90_abs_pct_error']:6.1f} "
            f"{f['bias_pct']:+6.1f}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="all")
    ap.add_argument("--out", default=None)
    ap.add_argument("--fit", default=None, help="comma-separated parameters to fit")
    a = ap.parse_args()
    if a.fit:
        engine_fit.fit_backend.__defaults__ = (None, tuple(a.fit.split(",")))
    t0 = time.perf_counter()
    problem, _ = serving_problem(pd.read_csv(shipped_path("serving")), "calibrated")
    if a.backend != "all":
        problem = problem.subset(problem.rows["backend"].to_numpy() == a.backend)
    t1 = time.perf_counter()
    held = add_errors(cross_validate(problem, "kfold"))
    t2 = time.perf_counter()
    held = held[not_flagged(held)]
    if a.out:
        held.to_csv(a.out, index=False)
    print(f"build {t1 - t0:.0f} s, cross-validation {t2 - t1:.0f} s")
    print(f"{'':<24} {'':6} TPOT med    p90   bias   TTFT med    p90   bias")
    print(_line("all", held))
    for b, sub in held.groupby("backend"):
        print(_line(str(b), sub))
    for m, sub in held.groupby("mode"):
        print(_line(f"mode {m}", sub))
    for b, sub in held[held["mode"] == "disagg"].groupby("backend"):
        print(_line(f"disagg {b}", sub))
    c = held["concurrency"].to_numpy(float)
    for lo, hi, name in BANDS:
        print(_line(f"band {name}", held[(c >= lo) & (c <= hi)]))
    oss = held[held["model"].astype(str).str.contains("gpt-oss-120b") & (c <= 16)]
    print(_line("gpt-oss-120b C<=16", oss))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
