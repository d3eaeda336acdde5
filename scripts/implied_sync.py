"""The wave synchronisation each measured row implies, by concurrency band (aggregated rows of one backend).

Usage::

    python scripts/implied_sync.py [--backend vllm|sglang|trtllm]

With every other engine term at its calibrated value, the steady state's TTFT is nearly linear in
``sync_fraction`` s (the wave wait of :mod:`perfmodel.serving.waves` is added to it, and enters the
closed loop as think time), so row i implies

.. math:: s_i = \\frac{\\mathrm{TTFT}_i - \\widehat{\\mathrm{TTFT}}_i(s = 0)}
                     {\\widehat{\\mathrm{TTFT}}_i(s = 1) - \\widehat{\\mathrm{TTFT}}_i(s = 0)}

Prints the median and interquartile range of s_i by concurrency band, and by the ratio x of the full
wave's prefill duration to the decode phase, 2W / ((O − 1)·TPOT): a constant fitted s is right where the
implied one does not move with the band. Rows at C ≤ 4 have almost no wave (denominator ≈ 0); their
s_i is noise. Diagnostic for the high-concurrency TTFT of issue 19.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from perfmodel.engine.calibration import load_profile
from perfmodel.validation.data import shipped_path
from perfmodel.validation.metrics import not_flagged
from perfmodel.validation.run import serving_problem

BANDS = ((1, 4), (5, 16), (17, 64), (65, 128), (129, 256), (257, np.inf))
RATIOS = ((0, 0.01), (0.01, 0.03), (0.03, 0.1), (0.1, 0.3), (0.3, 1.0), (1.0, np.inf))


def _line(label: str, s: np.ndarray, keep: np.ndarray) -> str:
    if not keep.any():
        return f"{label:<22} n=0"
    q1, med, q3 = np.percentile(s[keep], [25, 50, 75])
    return f"{label:<22} n={keep.sum():4d}  implied s median {med:6.3f}  IQR {q1:6.3f} .. {q3:6.3f}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="vllm")
    b = ap.parse_args().backend
    problem, _ = serving_problem(pd.read_csv(shipped_path("serving")), "calibrated")
    rows = problem.rows
    problem = problem.subset((rows["backend"].to_numpy() == b) & not_flagged(rows)
                             & (rows["mode"].to_numpy() != "disagg"))
    cal = load_profile("calibrated")[b]
    rows = problem.rows
    c, osl = rows["concurrency"].to_numpy(float), rows["osl"].to_numpy(float)
    measured = rows["measured_ttft_s"].to_numpy(float)
    t0, tpot = problem.evaluate({b: cal.with_values({"sync_fraction": 0.0})}, backends=(b,))
    t1, _ = problem.evaluate({b: cal.with_values({"sync_fraction": 1.0})}, backends=(b,))
    s = (measured - t0) / np.maximum(t1 - t0, 1e-12)
    x = 2.0 * (t1 - t0) / ((osl - 1.0) * tpot)
    print(f"{b}: fitted sync_fraction {cal.sync_fraction:.3f}")
    for lo, hi in BANDS:
        print(_line(f"C {lo}-{hi:g}", s, (c >= lo) & (c <= hi)))
    for lo, hi in RATIOS:
        print(_line(f"x {lo:g}-{hi:g} (C > 4)", s, (x >= lo) & (x < hi) & (c > 4)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
