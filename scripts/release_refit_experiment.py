"""Experiment: do engine parameters fitted per engine *release* predict held-out rows better?

The public serving rows mix many releases of each engine, and the same deployment point measured under
two releases differs by a median ≈ 38 % in TTFT (``docs/validation.md``, "How low the error can go").
This script checks whether that is something the engine parameters could learn. Inside each fold of the
grouped 5-fold split it:

1. fits the engine-wide parameters on the training rows (as ``docs/validation.md`` does);
2. for every recorded release with at least ``--min-rows`` training rows, refits the same parameters on
   that release's training rows alone, starting from the engine-wide fit (rows whose release is not
   recorded are never refitted);
3. predicts the held-out rows of that release with the release's parameters, and every other held-out
   row with the engine-wide ones.

It prints both sets of held-out errors (median / p90 of |error|, rows not flagged anomalous), over all
rows and over the rows that got release parameters. It takes about 7 minutes on two cores. Result of
2026-12-01 with ``--min-rows 30``: over all 1,819 rows TTFT 27.1 / 84.0 → 27.1 / 81.7 % and TPOT
11.3 / 33.7 → 11.1 / 33.4 %; over the 976 rows that got release parameters TTFT 23.0 / 65.8 →
23.4 / 63.5 % and TPOT 11.8 / 31.9 → 11.3 / 31.2 %. The gain is too small to justify per-release
profiles, which would also be unusable for a release nobody has measured.

Usage::

    python scripts/release_refit_experiment.py [--min-rows 30]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from perfmodel.calibration.engine_fit import fit_backend, fit_engines, folds
from perfmodel.validation.data import shipped_path
from perfmodel.validation.metrics import error_stats, not_flagged, pct_error
from perfmodel.validation.run import serving_problem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-rows", type=int, default=30, help="fewest training rows of a release to refit it")
    args = parser.parse_args(argv)
    problem, _ = serving_problem(pd.read_csv(shipped_path("serving")), "calibrated")
    rows = problem.rows
    versions = rows["backend_version"].astype(object).where(rows["backend_version"].notna(), "?")
    release = (rows["backend"] + "/" + versions.astype(str)).to_numpy()
    scored = not_flagged(rows)
    predicted = {kind: {m: np.full(len(rows), np.nan) for m in ("ttft", "tpot")} for kind in ("engine", "release")}
    refitted = np.zeros(len(rows), dtype=bool)
    for name, held in folds(rows, "kfold"):
        fitted = fit_engines(problem, train=~held)
        ttft, tpot = problem.subset(held).evaluate(fitted.calibrations)
        for kind in predicted:
            predicted[kind]["ttft"][held], predicted[kind]["tpot"][held] = ttft, tpot
        train = ~held & scored
        for rel in np.unique(release[held]):
            backend, version = rel.split("/", 1)
            mine = release == rel
            if version == "?" or np.sum(train & mine) < args.min_rows:
                continue
            cal = fit_backend(problem.subset(train & mine), backend, fitted.calibrations[backend])
            ttft, tpot = problem.subset(held & mine).evaluate({backend: cal})
            predicted["release"]["ttft"][held & mine], predicted["release"]["tpot"][held & mine] = ttft, tpot
            refitted |= held & mine & scored
        print(f"{name} done", flush=True)
    for subset, mask in (("all rows", scored), ("rows refitted", refitted)):
        for kind, label in (("engine", "engine-wide parameters"), ("release", "per-release parameters")):
            parts = []
            for metric in ("tpot", "ttft"):
                err = pct_error(predicted[kind][metric], rows[f"measured_{metric}_mean_s"].to_numpy(float))[mask]
                s = error_stats(err)
                parts.append(f"{metric.upper()} {s['median_abs_pct_error']:.1f} / {s['p90_abs_pct_error']:.1f} %")
            print(f"{subset} ({int(mask.sum())}), {label} (grouped 5-fold, median / p90): " + ", ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
