"""Low-load TTFT residuals and the parts of the predicted TTFT (diagnosis for issue 19).

Usage::

    python scripts/ttft_lowload.py [--max-c 4] [--held held.csv] [--out parts.csv]

Builds the shipped serving problem (calibrated per-op profile), keeps the aggregated rows with at most
``--max-c`` clients that are not flagged anomalous, and evaluates them under the shipped engine fit
(``perfmodel/data/engines_fit/calibrated.yaml``, in sample) with the request-path terms switched off one
after another. Each difference is one part of the prediction [ms]:

.. math:: \\widehat{\\mathrm{TTFT}} = \\underbrace{R}_{\\mathrm{RO}} + \\underbrace{k\\,\\mathrm{TPOT}}_{\\mathrm{FTS}}
          + \\underbrace{s\\,W}_{\\mathrm{wave}} + \\underbrace{\\Delta_{kern}}_{\\mathrm{pkern}}
          + \\mathrm{core}

RO the request overhead R (down to its lower bound, 1 ms, which stays in ``core``), FTS the
``first_token_steps`` k mean decode steps, wave the synchronised-wave wait weighted by ``sync_fraction``
s (:mod:`perfmodel.serving.waves`), pkern the per-kernel fixed times of prefill steps scaled by
``prefill_kernel_scale``, core the rest (prefill compute, the wait for a step boundary, 1 ms).
Removing R also shortens the closed loop's think time, so the parts are exact only to that small
feedback. ``need = measured − core − pkern − FTS`` is the request-path time (R + wave) the
measurement asks for. ``wave_step = T_pre(C, I) − T_pre(1, I)`` (:func:`perfmodel.engine.prefill.prefill_batch_time`)
is the time a fully synchronised wave of C prompts that fits one step adds to each request's prefill,
which the wave wait W leaves out (W = 0 whenever the C prompts fit one step). With ``--held`` (a CSV written by ``scripts/request_path_cv.py --out``) the
held-out prediction of each row (joined on ``id``) is shown beside the in-sample one.

Prints medians by model × engine × ISL, by engine × ISL, and the same deployment at ISL 1024 with
OSL 1024 against OSL 8192.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from perfmodel.engine.calibration import MIN_REQUEST_OVERHEAD, load_profile
from perfmodel.engine.prefill import prefill_batch_time
from perfmodel.validation.data import shipped_path
from perfmodel.validation.metrics import current_columns, not_flagged
from perfmodel.validation.predict import ServingProblem, engines_under
from perfmodel.validation.run import serving_problem

#: (name, parameters set on every backend) evaluated in turn; each switches off one more term.
STAGES = (("full", {}),
          ("no_ro", {"request_overhead": MIN_REQUEST_OVERHEAD}),
          ("no_fts", {"first_token_steps": 0.0}),
          ("no_wave", {"sync_fraction": 0.0}),
          ("no_pkern", {"prefill_kernel_scale": 0.0}))
#: Part name -> (stage before, stage after) whose TTFT difference it is.
PARTS = {"RO": ("full", "no_ro"), "FTS": ("no_ro", "no_fts"), "wave": ("no_fts", "no_wave"),
         "pkern": ("no_wave", "no_pkern")}
SHOWN = ["meas", "pred", "res", "ratio", "RO", "FTS", "wave", "pkern", "core", "need", "wave_step", "tpot"]


def wave_step(problem: ServingProblem, calibrations) -> np.ndarray:
    """T_pre(C, I) − T_pre(1, I) per row of ``problem`` [ms] (NaN for rows outside its batches)."""
    out = np.full(len(problem.rows), np.nan)
    engines = engines_under(calibrations)
    for backend, batches in problem.batches.items():
        eng = engines[backend]
        for b in batches:
            model = b.tables.adjusted(eng.terms)
            one = prefill_batch_time(model, eng.profile, b.isl, 1.0, budget=b.budget)
            wave = prefill_batch_time(model, eng.profile, b.isl, b.concurrency, budget=b.budget)
            out[b.positions] = 1e3 * (wave - one)
    return out


def parts(max_c: float) -> pd.DataFrame:
    """Rows with at most ``max_c`` clients (aggregated, not anomalous) and the parts of their TTFT [ms]."""
    problem, _ = serving_problem(pd.read_csv(shipped_path("serving")), "calibrated")
    r = problem.rows
    keep = (r["total_concurrency"].to_numpy(float) <= max_c) & not_flagged(r) & (r["mode"].to_numpy() == "agg")
    sub = problem.subset(keep)
    cal, values, ttft = load_profile("calibrated"), {}, {}
    for name, change in STAGES:
        values.update(change)
        t, tpot = sub.evaluate({b: c.with_values(values) for b, c in cal.items()})
        ttft[name] = 1e3 * t
        if name == "full":
            full_tpot = 1e3 * tpot
    out = sub.rows.copy()
    out["meas"] = 1e3 * out["measured_ttft_mean_s"].to_numpy(float)
    out["pred"] = ttft["full"]
    for part, (before, after) in PARTS.items():
        out[part] = ttft[before] - ttft[after]
    out["core"] = ttft[STAGES[-1][0]]
    out["tpot"] = full_tpot
    out["res"] = out["meas"] - out["pred"]
    out["ratio"] = out["meas"] / out["pred"]
    out["need"] = out["meas"] - out["core"] - out["pkern"] - out["FTS"]
    out["wave_step"] = wave_step(sub, cal)
    return out


def medians(df: pd.DataFrame, by: list[str], cols: list[str]) -> pd.DataFrame:
    """Row count and medians of ``cols`` per group."""
    g = df.groupby(by)[cols].median()
    g.insert(0, "n", df.groupby(by).size())
    return g


def osl_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """Same deployment and clients at ISL 1024: measured TTFT at OSL 1024 minus OSL 8192 [ms]."""
    d = df[df["isl"] == 1024]
    key = ["backend", "model", "hardware", "weights", "tp", "ep", "dp", "total_concurrency"]
    a = d[d["osl"] == 1024].groupby(key)[["meas", "core", "wave_step"]].median()
    b = d[d["osl"] == 8192].groupby(key)["meas"].median().rename("meas_osl8192")
    j = a.join(b, how="inner")
    j["extra"] = j["meas"] - j["meas_osl8192"]
    j["extra_over_wave_step"] = j["extra"] / j["wave_step"]
    return j


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-c", type=float, default=4.0, help="most clients of a row kept")
    ap.add_argument("--held", default=None, help="held-out CSV of scripts/request_path_cv.py --out")
    ap.add_argument("--out", default=None, help="write the rows with their parts here")
    a = ap.parse_args()
    df = parts(a.max_c)
    cols = list(SHOWN)
    if a.held:
        held = current_columns(pd.read_csv(a.held), a.held).drop_duplicates("id")
        held = held.set_index("id")["predicted_ttft_mean_s"]
        df["held_pred"] = 1e3 * df["id"].map(held).to_numpy(float)
        df["held_res"] = df["meas"] - df["held_pred"]
        cols[2:2] = ["held_pred", "held_res"]
    if a.out:
        df.to_csv(a.out, index=False)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    print(f"aggregated rows with C <= {a.max_c:g}, not anomalous: {len(df)}; medians [ms] "
          "(pred/res/ratio in sample, shipped engine fit)")
    print(medians(df, ["model", "backend", "isl"], cols).round(1).to_string())
    print()
    print(medians(df, ["backend", "isl"], cols).round(1).to_string())
    print("\nISL 1024, same deployment and C: OSL 1024 minus OSL 8192 [ms]")
    print(osl_pairs(df).round(2).to_string())
    return 0 if np.isfinite(df["pred"]).all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
