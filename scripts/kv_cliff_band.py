r"""Which vLLM / SGLang sweeps jump where the KV pool is short of C·(I + O) but not of C·(I + O/2).

On-demand engines (vLLM, SGLang) allocate KV blocks as sequences grow; the steady state
(:func:`perfmodel.serving.steady_state`) caps the decode batch where the clients' *mean* context
C·(I + O/2) meets the pool N, as it would if the clients' phases were spread over the request cycle.
Clients that start together with fixed lengths grow in phase and their demand peaks at C·(I + O) at the
end of each wave. For every aggregated vLLM/SGLang row this script computes, with the pool as the
validation sizes it (:func:`perfmodel.engine.kv_memory.engine_kv_tokens` times ``kv_capacity_fraction``,
per replica):

.. math:: r_{full} = C\,(I + O) / N, \qquad r_{mean} = C\,(I + O/2) / N

and prints

1. every row in the *band* r_full > 1 ≥ r_mean, with what the measurement CSV records about the run
   (engine version, data source / harness, weights and the KV format the validation assumes, layout,
   date), the measured and predicted TTFT, the TTFT at the sweep's next-lower concurrency and whether the
   row is a *jump* (≥ 5 s and ≥ 5× that TTFT, as in ``scripts/capacity_cliff.py``) and whether that
   next-lower concurrency was measured by the same engine version and data source (``same_run_as_prev``);
2. the measured / predicted TTFT by r_full bin and engine (rows not flagged anomalous);
3. the jumps at r_full ≤ 1, where neither rule lets the KV pool bind;
4. with ``--simulate``: the rows of 1 and the jumps (attention-DP 1, not flagged anomalous, same run as the
   next-lower concurrency), and
   that next-lower concurrency, simulated (:func:`perfmodel.serving.simulate`, which preempts the newest
   running request when a running one needs a block and admits nothing in a step that preempted, as vLLM's
   ``Scheduler.schedule`` does) with every client starting at once and fixed lengths — the most
   synchronised phases — over 10·C requests (the closed-loop benchmarks' usual count), with the pool
   scaled by ``kv_capacity_fraction`` f = 1, 0.8, 0.65, 0.5: which pool would reproduce the jump if the
   phases were fully aligned.

5. with ``--kv-h100-bf16``: the TTFT and TPOT errors of the aggregated vLLM rows (not flagged anomalous)
   with the shipped engine terms, by accelerator and on the vLLM rows at and past a jump
   (``scripts/capacity_cliff.py``), when vLLM's runs on H100 keep a bf16 KV cache
   (:class:`~perfmodel.validation.rows.KVPolicy` ``model_dtype_kv``) against the shipped FP8 assumption;
   with ``--cv`` also held out (vLLM's terms refitted in grouped 5-fold cross-validation,
   :func:`perfmodel.calibration.engine_fit.cross_validate`, from the shipped terms; about a minute).

Usage::

    python scripts/kv_cliff_band.py [--csv rows.csv] [--simulate] [--kv-h100-bf16 [--cv]]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfmodel.engine.calibration import presets  # noqa: E402
from perfmodel.engine.kv_memory import engine_kv_tokens  # noqa: E402
from perfmodel.errors import PerfmodelError  # noqa: E402
from perfmodel.validation.data import shipped_path  # noqa: E402
from perfmodel.validation.rows import DEFAULT_KV_POLICY, KVPolicy  # noqa: E402
from perfmodel.validation.run import validate_serving  # noqa: E402
from perfmodel.validation.stepmodels import CONFIG_COLUMNS, StepModelCache, config_groups  # noqa: E402

BACKENDS = ("vllm", "sglang")
#: A jump: measured TTFT >= JUMP_S and >= JUMP_RATIO x the next-lower concurrency's (capacity_cliff.py).
JUMP_S, JUMP_RATIO = 5.0, 5.0
#: Columns that identify one sweep (the concurrency varies within it).
SWEEP = ["model", "hardware", "backend", "weights", "kv_cache", "tp", "dp", "ep", "isl", "osl"]
#: r_full bins of the error table.
BINS = (0.0, 0.5, 0.75, 1.0, 1.5, 2.0, np.inf)


def demand_ratios(pool_tokens, concurrency, isl, osl) -> tuple[np.ndarray, np.ndarray]:
    """(r_full, r_mean): KV demand of C clients at full length I + O and at mean context I + O/2 over the
    pool N [tokens] (module docstring)."""
    n, c = np.asarray(pool_tokens, dtype=float), np.asarray(concurrency, dtype=float)
    i, o = np.asarray(isl, dtype=float), np.asarray(osl, dtype=float)
    return c * (i + o) / n, c * (i + o / 2.0) / n


def band(r_full, r_mean) -> np.ndarray:
    """``"band"`` where r_full > 1 >= r_mean, ``"mean binds"`` where r_mean > 1, ``"fits"`` otherwise."""
    r_full, r_mean = np.asarray(r_full, dtype=float), np.asarray(r_mean, dtype=float)
    return np.where(r_mean > 1.0, "mean binds", np.where(r_full > 1.0, "band", "fits"))


def source_label(s: str) -> str:
    """Harness / data source of a ``silicon_data_source`` cell without the per-row fields."""
    if not isinstance(s, str):
        return ""
    fields = [f.strip() for f in s.split(";")]
    drop = ("config_id=", "silicon_concurrency=", "measured=", "workflow_run_id=")
    keep = [f for f in fields if f and not f.startswith(drop)]
    return "; ".join(f.rsplit("/", 2)[-2] + "/" + f.rsplit("/", 1)[-1] if f.startswith("source_file=/") else f
                     for f in keep)


def pool_tokens(deployments: pd.DataFrame) -> pd.Series:
    """KV pool per replica [tokens] of every row, as the validation sizes it (NaN where no step model)."""
    engines = {b: c.engine() for b, c in presets().items()}
    cache = StepModelCache("calibrated")
    out = pd.Series(np.nan, index=deployments.index)
    for key, rows in config_groups(deployments, (*CONFIG_COLUMNS, "backend")):
        eng = engines[key[-1]]
        try:
            out[rows.index] = engine_kv_tokens(cache.get(key[:-1]), eng) * eng.kv_capacity_fraction
        except PerfmodelError:
            continue
    return out


def table() -> pd.DataFrame:
    """Predicted aggregated vLLM/SGLang rows with pool, ratios, band, source and jump columns."""
    df = pd.read_csv(shipped_path())
    df = df[(df["mode"] == "agg") & df["backend"].isin(BACKENDS)]
    p = validate_serving(df).predictions
    p["anomaly"] = p["anomaly"].fillna("")
    raw = df.set_index("id")["silicon_data_source"]
    p["source"] = p["id"].map(raw).map(source_label)
    p["date"] = p["id"].map(raw).str.extract(r"measured=(\d{4}-\d\d-\d\d)")[0].fillna("")
    p["backend_version"] = p["backend_version"].fillna("")
    p["pool_tokens"] = pool_tokens(p)
    p["r_full"], p["r_mean"] = demand_ratios(p["pool_tokens"], p["concurrency"], p["isl"], p["osl"])
    p["band"] = band(p["r_full"], p["r_mean"])
    p["ttft_prev_s"], p["jump"], p["same_run_as_prev"] = np.nan, False, True
    for _, g in p.groupby(SWEEP, dropna=False):
        levels = g.groupby("concurrency")
        lower = levels["measured_ttft_mean_s"].min().shift(1)
        prev = g["concurrency"].map(lower)
        p.loc[g.index, "ttft_prev_s"] = prev
        t = g["measured_ttft_mean_s"]
        p.loc[g.index, "jump"] = (t >= JUMP_S) & (t >= JUMP_RATIO * prev)
        # the next-lower concurrency measured by the same engine version and data source?
        runs = levels.apply(lambda x: set(zip(x["backend_version"], x["source"], strict=True))).shift(1)
        p.loc[g.index, "same_run_as_prev"] = [
            not isinstance(r, set) or (v, s) in r
            for v, s, r in zip(g["backend_version"], g["source"], g["concurrency"].map(runs), strict=True)]
    p["measured_over_predicted"] = p["measured_ttft_mean_s"] / p["predicted_ttft_mean_s"]
    return p


def by_bin(p: pd.DataFrame) -> pd.DataFrame:
    """Rows, rows measured >= 3x predicted, jumps and median measured/predicted TTFT by engine and r_full."""
    ok = p[p["anomaly"] == ""].assign(r_full_bin=lambda x: pd.cut(x["r_full"], BINS))
    return ok.groupby(["backend", "r_full_bin"], observed=True).agg(
        rows=("id", "size"), measured_3x_predicted=("measured_over_predicted", lambda m: int((m >= 3).sum())),
        jumps=("jump", "sum"), median_measured_over_predicted=("measured_over_predicted", "median"))


ROW_COLUMNS = ["model", "hardware", "backend", "backend_version", "source", "date", "weights", "kv_cache",
               "tp", "dp", "ep", "isl", "osl", "concurrency", "r_mean", "r_full", "ttft_prev_s",
               "measured_ttft_mean_s", "predicted_ttft_mean_s", "jump", "same_run_as_prev", "anomaly"]


#: Pool scale factors f of the synchronised simulation.
POOL_FRACTIONS = (1.0, 0.8, 0.65, 0.5)


def synchronised_ttft(p: pd.DataFrame) -> pd.DataFrame:
    """Mean TTFT [s] and preemptions of fully synchronised closed-loop simulations of the rows ``p``
    (attention-DP 1) with the pool scaled by each of :data:`POOL_FRACTIONS` (item 4 of the docstring)."""
    from perfmodel.engine.calibration import load_profile
    from perfmodel.engine.engine import Engine
    from perfmodel.serving import simulate
    from perfmodel.serving.workload import Workload

    calibrations, cache, out = load_profile("calibrated"), StepModelCache("calibrated"), []
    for key, rows in config_groups(p, (*CONFIG_COLUMNS, "backend")):
        cal = calibrations[key[-1]]
        sm = cache.get(key[:-1])
        for _, r in rows.drop_duplicates(["isl", "osl", "concurrency"]).iterrows():
            rec = {c: r[c] for c in ("model", "hardware", "backend", "tp", "isl", "osl", "concurrency",
                                     "measured_ttft_mean_s", "r_full")}
            for f in POOL_FRACTIONS:
                engine = Engine(cal.engine().model_copy(update={"kv_capacity_fraction": f}), cal, True,
                                f"pool x {f:g}")
                c = int(r["concurrency"])
                s = simulate(sm, Workload.fixed(int(r["isl"]), int(r["osl"]), concurrency=c), engine=engine,
                             requests=10 * c).summary()
                rec[f"f={f:g}"] = f"{s['ttft_mean_s']:.3g} s / {s['preemptions']}"
            out.append(rec)
    return pd.DataFrame(out)


#: The alternative KV policy of item 5: vLLM on H100 keeps the model dtype (bf16) for its KV cache.
H100_BF16 = KVPolicy(model_dtype_kv=(("vllm", "h100-sxm"),))


def error_stats(p: pd.DataFrame) -> dict:
    """Rows and median / p90 absolute and median signed TTFT and TPOT errors [%]."""
    out = {"rows": len(p)}
    for m in ("ttft", "tpot"):
        e = 100.0 * (p[f"predicted_{m}_mean_s"] / p[f"measured_{m}_mean_s"] - 1.0)
        out |= {f"{m} median": e.abs().median(), f"{m} p90": np.percentile(e.abs(), 90) if len(e) else np.nan,
                f"{m} signed": e.median()}
    return out


def kv_policy_errors(cv: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Item 5: vLLM errors under the shipped KV policy and under :data:`H100_BF16` (with ``cv`` also
    held out), and the rows whose predicted TTFT moves by more than 1.5x between the two."""
    import capacity_cliff  # beside this script

    from perfmodel.calibration.engine_fit import cross_validate
    from perfmodel.engine.calibration import load_profile
    from perfmodel.validation.run import serving_problem

    df = pd.read_csv(shipped_path())
    past = set(capacity_cliff.cliff_rows(df)[2])
    df = df[(df["mode"] == "agg") & (df["backend"] == "vllm")]
    rows, ttft = [], {}

    def add(label: str, p: pd.DataFrame) -> None:
        p = p[p["anomaly"].fillna("") == ""]
        groups = [("all", p), *((hw, g) for hw, g in p.groupby("hardware")),
                  ("past a jump", p[p["id"].isin(past)])]
        rows.extend({"policy": label, "rows of": name, **error_stats(g)} for name, g in groups)

    for label, policy in (("fp8 KV (shipped)", DEFAULT_KV_POLICY), ("bf16 KV on H100", H100_BF16)):
        p = validate_serving(df, kv_policy=policy).predictions
        ttft[label] = p.set_index("id")["predicted_ttft_mean_s"]
        add(label, p)
        if cv:
            problem, _ = serving_problem(df, kv_policy=policy)
            add(f"{label}, held out", cross_validate(problem, "kfold", start=load_profile("calibrated")))
    p = p[p["anomaly"].fillna("") == ""]
    moved = p.assign(**{f"predicted, {k}": p["id"].map(v) for k, v in ttft.items()})
    ratio = moved["predicted, bf16 KV on H100"] / moved["predicted, fp8 KV (shipped)"]
    cols = ["model", "hardware", "tp", "isl", "osl", "concurrency", "measured_ttft_mean_s",
            *(f"predicted, {k}" for k in ttft)]
    return (pd.DataFrame(rows).set_index(["rows of", "policy"]).sort_index(),
            moved[(ratio > 1.5) | (ratio < 1 / 1.5)][cols].sort_values(["model", "tp", "isl", "concurrency"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", help="write every row with its ratios here")
    ap.add_argument("--simulate", action="store_true", help="item 4: synchronised simulations (~1 min)")
    ap.add_argument("--kv-h100-bf16", action="store_true", help="item 5: vLLM errors with bf16 KV on H100")
    ap.add_argument("--cv", action="store_true", help="item 5 held out too (grouped 5-fold refits, ~1 min)")
    args = ap.parse_args(argv)
    p = table()
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    pd.set_option("display.max_colwidth", 48)
    fmt = {"float_format": lambda v: f"{v:.3g}"}
    in_band = p[p["band"] == "band"].sort_values(["backend", "r_full"])
    print(f"1. rows with C(I+O) > pool >= C(I+O/2): {len(in_band)} ({int(in_band['jump'].sum())} jumps)")
    print(in_band[ROW_COLUMNS].assign(anomaly=in_band["anomaly"].str.split(":").str[0]).to_string(**fmt))
    print("\n2. measured / predicted TTFT by r_full = C(I+O)/pool (rows not flagged anomalous)")
    print(by_bin(p).to_string(**fmt))
    far = p[p["jump"] & (p["r_full"] <= 1.0)].sort_values(["backend", "r_full"])
    print(f"\n3. jumps with C(I+O) <= pool: {len(far)}")
    print(far[ROW_COLUMNS].assign(anomaly=far["anomaly"].str.split(":").str[0]).to_string(**fmt))
    if args.simulate:
        picked = p[((p["band"] == "band") | (p["jump"] & p["same_run_as_prev"]))
                   & (p["dp"] == 1) & (p["anomaly"] == "")]
        lower = pd.concat([p[(p[SWEEP] == r[SWEEP]).all(axis=1) & (p["concurrency"] < r["concurrency"])
                             & (p["source"] == r["source"])].nlargest(1, "concurrency")
                           for _, r in picked.iterrows()])
        sims = synchronised_ttft(pd.concat([picked, lower]).drop_duplicates("id"))
        print("\n4. all clients start together, fixed lengths, 10 C requests: mean TTFT / preemptions "
              "with the pool scaled by f")
        print(sims.sort_values(["model", "hardware", "tp", "isl", "osl", "concurrency"]).to_string(**fmt))
    if args.kv_h100_bf16:
        print("\n5. aggregated vLLM rows not flagged: TTFT / TPOT error [%] by KV format assumed on H100")
        errors, moved = kv_policy_errors(args.cv)
        print(errors.to_string(**fmt))
        print("rows whose predicted TTFT [s] moves by more than 1.5x")
        print(moved.to_string(**fmt))
    if args.csv:
        p.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
