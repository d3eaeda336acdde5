"""P/D-disaggregated TTFT residuals against the parts of the prediction (issue 19 diagnosis; no model change).

Usage::

    python scripts/disagg_ttft.py [--held held.csv] [--out parts.csv] [--engines calibrated]

Predicts the P/D rows of the shipped serving data with :func:`perfmodel.serving.steady_state_disagg` under
an engine profile (default the shipped fit) and, per row, the parts the TTFT is made of: requests per
second X, one prompt's prefill step t(1), the pool's capacity :math:`P\\,m_{max}/t(m_{max})` and its
utilisation :math:`\\rho_p` = X / capacity, the utilisation measured from the row's own TTFT and TPOT by
Little's law (:math:`X_{meas} = C / (\\mathrm{TTFT} + (O-1)\\,\\mathrm{TPOT})`), the KV transfer time
(:func:`perfmodel.deployment.disagg.request_kv_transfer_time`), the weighted wave wait and what caps the
loop. ``--held`` joins held-out predictions (``request_path_cv.py --out``) on the row id; the tables
then show both ratios predicted / measured TTFT. Prints the median ratio and residual (ms) by prefill
layout (TP, attention DP 4, DP >= 8), by :math:`\\rho_p`, by KV transfer time, by P:D ratio and by
engine and system.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from perfmodel.engine.calibration import load_profile
from perfmodel.engine.engine import Engine
from perfmodel.engine.prefill import prefill_batch_time
from perfmodel.serving.waves import wave_wait
from perfmodel.validation.data import shipped_path
from perfmodel.validation.metrics import current_columns, not_flagged
from perfmodel.validation.predict import DISAGG_ITERATIONS, engines_under
from perfmodel.validation.run import serving_problem


def parts(problem, engines: dict) -> pd.DataFrame:
    """One row per predicted P/D row: the prediction's parts (SI units, see the module docstring)."""
    out = []
    for backend, batches in problem.disagg.items():
        eng = Engine.load(engines[backend])
        for b in batches:
            res = b.solve(eng, DISAGG_ITERATIONS)
            pm = eng.step(b.prefill.adjusted(eng.terms))
            pe = eng.profile
            isl, p, sp = b.isl, b.prefill_replicas, b.prefill_schedulers
            m_max = np.maximum(np.floor(float(pe.max_num_batched_tokens) / isl), 1.0) * sp
            capacity = p * m_max / prefill_batch_time(pm, pe, isl, m_max)
            out.append(pd.DataFrame({
                "position": b.positions, "clients": b.clients, "p_to_d": p / b.decode_replicas,
                "requests_per_s": res.requests_per_s, "prefill_one_s": prefill_batch_time(pm, pe, isl, 1.0),
                "prefill_capacity_per_s": capacity, "rho_prefill": res.requests_per_s / capacity,
                "kv_transfer_s": b.kv_transfer_s,
                "wave_s": eng.terms.sync_fraction * wave_wait(pm, b.clients / p, isl, pe, sp),
                "ttft_mean_s": res.ttft_mean_s, "limited_by": res.limited_by}))
    got = pd.concat(out).sort_values("position")
    rows = problem.rows.iloc[got["position"].to_numpy()].reset_index(drop=True)
    got = got.drop(columns="position").reset_index(drop=True)
    df = pd.concat([rows, got], axis=1)
    df["measured_requests_per_s"] = df["clients"] / (df["measured_ttft_mean_s"]
                                                     + (df["osl"] - 1) * df["measured_tpot_mean_s"])
    df["rho_prefill_measured"] = df["measured_requests_per_s"] / df["prefill_capacity_per_s"]
    df["prefill_layout"] = np.where(df["p_dp"] >= 8, "DP>=8", np.where(df["p_dp"] > 1, "DP4", "TP"))
    df["ratio"] = df["ttft_mean_s"] / df["measured_ttft_mean_s"]
    df["residual_ms"] = 1e3 * (df["measured_ttft_mean_s"] - df["ttft_mean_s"])
    return df


def table(df: pd.DataFrame, by) -> pd.DataFrame:
    """Median ratio(s) and residual by group."""
    agg = {"rows": ("ratio", "size"), "ratio": ("ratio", "median"), "residual_ms": ("residual_ms", "median"),
           "measured_ms": ("measured_ttft_mean_s", lambda x: 1e3 * x.median())}
    if "held_ratio" in df:
        agg["held_ratio"] = ("held_ratio", "median")
    return df.groupby(by, observed=True).agg(**agg).round(2)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--held", default=None, help="held-out predictions (request_path_cv.py --out)")
    ap.add_argument("--out", default=None, help="write the per-row parts to this CSV")
    ap.add_argument("--engines", default="calibrated", help="engine calibration profile")
    a = ap.parse_args()
    problem, _ = serving_problem(pd.read_csv(shipped_path("serving")), "calibrated")
    problem = problem.subset((problem.rows["mode"] == "disagg").to_numpy() & not_flagged(problem.rows))
    df = parts(problem, engines_under(load_profile(a.engines)))
    if a.held:
        held = current_columns(pd.read_csv(a.held), a.held)[["id", "predicted_ttft_mean_s"]]
        held = held.rename(columns={"predicted_ttft_mean_s": "held_ttft_mean_s"})
        df = df.merge(held, on="id", how="left")
        df["held_ratio"] = df["held_ttft_mean_s"] / df["measured_ttft_mean_s"]
    if a.out:
        df.to_csv(a.out, index=False)
    pd.set_option("display.width", 200)
    print(f"{len(df)} P/D rows; ratio = predicted / measured TTFT (median), residual = measured - predicted")
    for by in (["backend", "prefill_layout"], pd.cut(df["rho_prefill"], [0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1.01]),
               pd.cut(1e3 * df["kv_transfer_s"], [0, 1, 3, 10, 100]), pd.cut(df["p_to_d"], [0, 0.2, 0.5, 1, 2, 100]),
               "limited_by", ["backend", "system"]):
        print(table(df, by).to_string(), end="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
