"""Regenerate the engine calibration profile and ``docs/validation.md`` from the public measurements.

Usage::

    python scripts/make_validation_report.py            # fit, cross-validate, write profile + report
    python scripts/make_validation_report.py --quick    # no cross-validation (report marks it missing)
    python scripts/make_validation_report.py --summary-from-page   # only docs/data/validation_summary.json,
                                                                    # read from the committed page

Writes ``perfmodel/data/engines_fit/calibrated.yaml`` (fitted engine parameters with provenance and
cross-validated errors), ``docs/validation.md``, ``docs/data/validation_summary.json`` (its headline tables,
quoted by the README through ``scripts/readme_figures.py``), ``docs/img/validation_*.png`` and
``docs/img/capacity_cliff.png`` (``scripts/capacity_cliff.py``). Every number in the report is computed here from ``perfmodel/data/validation/*.csv``; the findings section interprets them.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

import perfmodel as pm
from perfmodel.calibration.engine_calibrate import Calibration, calibrate, write_profile
from perfmodel.calibration.engine_fit import cross_validate
from perfmodel.core.efficiency import profile_for
from perfmodel.core.ops import StepShape
from perfmodel.core.step import StepModel
from perfmodel.engine.calibration import FITTED, presets
from perfmodel.validation import report as rep
from perfmodel.validation.data import shipped_path
from perfmodel.validation.metrics import add_errors, not_flagged, summarize
from perfmodel.validation.models import resolve_model
from perfmodel.validation.predict_openloop import MAX_STEADY_REQUESTS
from perfmodel.validation.published import validate_published
from perfmodel.validation.report_summary import (
    validation_summary,
    validation_summary_from_page,
    write_summary,
)
from perfmodel.validation.rows import measurement_coverage
from perfmodel.validation.run import published_summary, serving_problem

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # research/ sits beside the package
import capacity_cliff  # noqa: E402 (scripts/capacity_cliff.py, beside this script)

from research.attainable import (  # noqa: E402 (after the path is set)
    OFFSET_GROUPINGS,
    SWEEP_COLUMNS,
    concurrency_slopes,
    offset_bound,
    repeat_agreement,
    variance_explained,
)

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "perfmodel" / "data" / "engines_fit" / "calibrated.yaml"
DOC = ROOT / "docs" / "validation.md"
SUMMARY = ROOT / "docs" / "data" / "validation_summary.json"
IMG = ROOT / "docs" / "img"
TARGETS = {"tpot": (10.0, 30.0), "ttft": (20.0, 50.0)}
BASELINE = "6-parameter baseline (held out): TPOT median 14–17 %, p90 ~55 %; TTFT median 38–42 %, p90 ~95 %"


def _cv_job(args):
    problem, scheme = args
    return scheme, add_errors(cross_validate(problem, scheme))


def run_calibration(problem, quick: bool, workers: int) -> Calibration:
    result = calibrate(problem, cv_schemes=())
    if quick:
        return result
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for scheme, held in pool.map(_cv_job, [(problem, s) for s in ("kfold", "system", "model")]):
            result.cv[scheme] = held
            result.summaries[f"cv_{scheme}"] = summarize(held)
    return result


def _scored(df: pd.DataFrame) -> pd.DataFrame:
    return df[not_flagged(df)]


def _coverage_sentence(rows_read: int, predicted: int, skipped: pd.DataFrame) -> str:
    c = measurement_coverage(rows_read, predicted, skipped)
    return (f"Coverage: {c['predicted']} of {c['rows']} rows ({100 * c['coverage_rows']:.1f} %); "
            f"{c['duplicates']} rows repeat a measurement listed under another id, so {c['predicted']} of "
            f"{c['distinct']} distinct measurements ({100 * c['coverage_distinct']:.1f} %) are predicted.")


def build(quick: bool, workers: int) -> dict:
    data = shipped_path("serving")
    df = pd.read_csv(data)
    out: dict = {"rows": len(df)}
    t0 = time.perf_counter()
    problems = {}
    for eff in ("datasheet", "calibrated"):
        problems[eff], skipped = serving_problem(df, eff)
    out["skipped"] = skipped
    out["uncalibrated"] = add_errors(problems["datasheet"].predictions(presets()))
    out["perop_only"] = add_errors(problems["calibrated"].predictions(presets()))
    result = run_calibration(problems["calibrated"], quick, workers)
    out["result"] = result
    out["problem"] = problems["calibrated"]
    out["profile"] = write_profile(PROFILE, result, "perfmodel/data/validation/serving_measured.csv",
                                   "calibrated", len(df))
    pub = pd.read_csv(shipped_path("published"), keep_default_na=False, dtype=str)
    for eff in ("datasheet", "calibrated"):
        preds, sk = validate_published(pub, eff)
        out[f"published_{eff}"] = (preds, published_summary(preds, sk, len(pub)), sk)
    out["efficiency_profiles"] = {hw: profile_for(hw, "calibrated").name
                                  for hw in ("h100-sxm", "h200-sxm", "b200", "gb200")}
    out["seconds"] = time.perf_counter() - t0
    return out


def _headline_section(o: dict, tables: dict) -> str:
    r: Calibration = o["result"]
    rows = [rep.headline_row("datasheet roofline + preset engines (no calibration)",
                             summarize(o["uncalibrated"])),
            rep.headline_row("calibrated per-op + preset engines", summarize(o["perop_only"])),
            rep.headline_row("calibrated per-op + fitted engines (training)", r.summaries["train"])]
    names = {"kfold": "cross-validated: grouped 5-fold", "system": "cross-validated: leave one system out",
             "model": "cross-validated: leave one model out"}
    rows += [rep.headline_row(names[s], r.summaries[f"cv_{s}"]) for s in r.cv]
    tables["headline"] = rows
    return rep.markdown_table(rows)


def _parameters_section(o: dict) -> str:
    rows = []
    for backend, entry in o["profile"]["engines"].items():
        fit = entry.get("fit", {})
        rows.append({"engine": backend, "decode_kernel_scale": entry["decode_kernel_scale"],
                     "prefill_kernel_scale": entry["prefill_kernel_scale"],
                     "small_m_tactic": entry["small_m_tactic"],
                     "request_overhead [ms]": entry["request_overhead"] * 1e3,
                     "sync_fraction": entry["sync_fraction"],
                     "first_token_steps": entry.get("first_token_steps", 0.0),
                     "prefill_dp_lockstep": entry.get("prefill_dp_lockstep", 0.0),
                     "fixed: step / seq / layer overhead": "0 / 0 / 0", "rows fitted": fit.get("rows")})
    return rep.markdown_table(rows)


def _published_section(o: dict, tables: dict) -> str:
    rows = []
    for eff in ("datasheet", "calibrated"):
        _, summ, _ = o[f"published_{eff}"]
        for metric in ("ttft", "batch_latency"):
            if metric in summ:
                s = summ[metric]
                rows.append({"efficiency": eff, "metric": metric, "rows": s["n"],
                             "median abs %": s["median_abs_pct_error"], "p90 abs %": s["p90_abs_pct_error"],
                             "bias %": s["bias_pct"]})
    tables["published"] = rows
    preds, summ, sk = o["published_calibrated"]
    by = rep.group_rows(preds.rename(columns={"pct_error": "tpot_pct_error"}).assign(ttft_pct_error=float("nan")),
                        ["metric", "hardware"]) if len(preds) else []
    by = [{"metric / hardware": r["group"], "rows": r["rows"], "median abs %": r["TPOT median abs %"],
           "bias %": r["TPOT bias %"]} for r in by]
    skipped = [{"reason": k, "rows": v} for k, v in summ["skipped_reasons"].items()]
    return "\n\n".join([rep.markdown_table(rows), rep.markdown_table(by), rep.markdown_table(skipped)])


def _skipped_section(o: dict, tables: dict) -> str:
    reasons = o["skipped"]["reason"].where(~o["skipped"]["reason"].str.startswith("duplicate:"),
                                           "duplicate: same measurement under another id (one copy kept)")
    tables["skipped"] = [{"reason": k, "rows": int(v)} for k, v in reasons.value_counts().items()]
    return rep.markdown_table(tables["skipped"])


def _anomaly_section(train: pd.DataFrame) -> str:
    flagged = train[train["anomaly"].fillna("").astype(str) != ""]
    cats = flagged["anomaly"].str.split(";").explode().str.split(":").str[0].str.strip().value_counts()
    table = rep.markdown_table([{"check": k, "rows": int(v)} for k, v in cats.items()])
    examples = flagged.groupby(flagged["anomaly"].str.split(":").str[0]).head(3)
    ex = rep.markdown_table([{"id": r["id"], "measured TTFT [ms]": r["measured_ttft_mean_s"] * 1e3,
                              "measured TPOT [ms]": r["measured_tpot_mean_s"] * 1e3, "reason": r["anomaly"]}
                             for _, r in examples.iterrows()])
    return table + "\n\nExamples:\n\n" + ex


def _recorded(rows: pd.DataFrame, length: str) -> str:
    """The column of the recorded ``isl`` / ``osl`` (a harness rule runs some rows at their mean lengths)."""
    return f"{length}_recorded" if f"{length}_recorded" in rows else length


def _deepseek_example(rows: pd.DataFrame) -> dict:
    """Decode step of DeepSeek-R1 block-FP8 on 8×B200 at 4 sequences: modelled total and fixed part [ms]."""
    sm = StepModel(resolve_model("deepseek-ai/DeepSeek-R1"), "b200", tp=8, ep=1, moe_tp=8, weights="fp8_block",
                   kv_cache="fp8")
    parts = sm.breakdown(StepShape.make(4.0, 1536.0, 0.0, 0.0, 0.0))
    fixed = sum(float(np.ravel(v)[0]) for v in parts.overhead.values())
    sel = rows[(rows["model"] == "deepseek-r1") & (rows["system"] == "b200_sxm") & (rows["backend"] == "trtllm")
               & (rows["weights"] == "fp8_block") & (rows["tp"] == 8) & (rows["ep"] == 1)
               & (rows["concurrency"] == 4) & (rows[_recorded(rows, "isl")] == 1024)
               & (rows[_recorded(rows, "osl")] == 1024)]
    if sel.empty:
        raise SystemExit("the DeepSeek-R1 example row of the findings is not in the data any more")
    return {"ds_total": float(np.ravel(parts.total)[0]) * 1e3, "ds_fixed": fixed * 1e3,
            "ds_measured": float(sel["measured_tpot_mean_s"].median()) * 1e3}


def diagnostics(o: dict) -> dict:
    """Numbers quoted in the findings (recomputed on every run)."""
    r: Calibration = o["result"]
    held = _scored(r.cv.get("kfold", r.train))
    gpus = held["tp"] * held["dp"] * held["pp"]
    multi = ((held["system"] != "gb200") & (gpus > 8)).to_numpy()
    low = held[held["concurrency"] <= 8]
    dense = low["model"].isin(["llama-3.1-70b", "llama-3.1-8b", "qwen3-32b"])
    problem = o["problem"]
    d = {"multi_n": int(multi.sum()), "multi_ttft": held.loc[multi, "ttft_pct_error"].median(),
         "multi_tpot": held.loc[multi, "tpot_pct_error"].median(),
         "single_ttft": held.loc[~multi, "ttft_pct_error"].median()}
    for sysname in ("b200_sxm", "h200_sxm", "h100_sxm"):
        d[f"dense_{sysname}"] = low.loc[dense & (low["system"] == sysname), "ttft_pct_error"].median()
        d[f"moe_{sysname}"] = low.loc[~dense & (low["system"] == sysname), "ttft_pct_error"].median()
    fp4 = (problem.rows["system"].isin(["b200_sxm", "gb200"]) & (problem.rows["weights"] == "nvfp4")).to_numpy()
    for label, change in (("nosync", {"sync_fraction": 0.0}),
                          ("noscale", {"decode_kernel_scale": 1.0, "prefill_kernel_scale": 1.0}),
                          ("nosmallm", {"small_m_tactic": 0.0})):
        cals = {b: c.with_values(change) for b, c in r.calibrations.items()}
        preds = add_errors(problem.predictions(cals))
        s = summarize(_scored(preds))
        d[f"{label}_tpot"], d[f"{label}_ttft"] = s["tpot"], s["ttft"]
        d[f"{label}_fp4_bias"] = _scored(preds[fp4])["tpot_pct_error"].median()
    held_fp4 = held["system"].isin(["b200_sxm", "gb200"]) & (held["weights"] == "nvfp4")
    oss = held[(held["model"] == "gpt-oss-120b") & (held["backend"] == "trtllm")]
    for system in ("b200_sxm", "h200_sxm"):
        rows = oss[oss["system"] == system]
        d[f"oss_{system}"] = (rows["tpot_pct_error"].median(), rows["ttft_pct_error"].median())
    dis = held[held["mode"] == "disagg"]
    d["disagg_n"], d["disagg_sys"] = len(dis), ", ".join(f"{k} {v}" for k, v in dis["system"].value_counts().items())
    for metric in ("tpot", "ttft"):
        e = dis[f"{metric}_pct_error"]
        d[f"disagg_{metric}"] = (e.abs().median(), e.abs().quantile(0.9), e.median())
    d["fp4_rows"], d["fp4_bias"] = int(held_fp4.sum()), held.loc[held_fp4, "tpot_pct_error"].median()
    d["train"] = r.summaries["train"]
    trt_b200 = held[(held["system"] == "b200_sxm") & (held["backend"] == "trtllm")]
    d["r1_bias"] = trt_b200.loc[trt_b200["model"] == "deepseek-r1", "tpot_pct_error"].median()
    d["v3_bias"] = trt_b200.loc[trt_b200["model"] == "deepseek-v3", "tpot_pct_error"].median()
    d.update(_deepseek_example(problem.rows))
    d["sys_bias"] = ", ".join(f"{k} {_pct(v)}" for k, v in
                              held.groupby("system")["tpot_pct_error"].median().items())
    d["cal"] = {b: c.values() for b, c in r.calibrations.items()}
    return d


def write_report(o: dict, findings: str) -> None:
    """Write ``docs/validation.md`` and, beside it, ``docs/data/validation_summary.json`` (its headline
    tables as printed, :mod:`perfmodel.validation.report_summary`; the README quotes them)."""
    r: Calibration = o["result"]
    held = r.cv.get("kfold", r.train)
    scored = _scored(held)
    label = "grouped 5-fold held-out" if "kfold" in r.cv else "training (no CV run)"
    for metric in ("tpot", "ttft"):
        rep.scatter(scored, metric, IMG / f"validation_{metric}.png",
                    f"{metric.upper()}: {label} predictions, {len(scored)} rows")
    prov = o["profile"]["provenance"]
    tables: dict = {f"by_{g}": rep.group_rows(scored, col)
                    for g, col in (("system", "system"), ("engine", "backend"), ("model", "model"), ("mode", "mode"))}
    parts = [
        "# Validation: predicted vs measured serving performance\n",
        "_Generated by `scripts/make_validation_report.py` — do not edit by hand; rerun it after changing "
        "the cost model, the efficiency profiles or the serving model._\n",
        f"Data: `{prov['data']}` (sha256 `{prov.get('sha256', '?')[:16]}…`), {o['rows']} measured runs of "
        "TensorRT-LLM, vLLM and SGLang on H100/H200/B200/GB200 (provenance in "
        "`perfmodel/data/validation/README.md`). Per-op efficiency profiles used: "
        + ", ".join(f"{k}: `{v}`" for k, v in o["efficiency_profiles"].items()) + ".\n",
        f"Rows: {o['rows']} read, {len(r.train)} predicted, {len(o['skipped'])} skipped (reasons below), "
        f"{len(r.train) - len(_scored(r.train))} predicted but flagged anomalous and left out of the fit "
        "and of the error figures. " + _coverage_sentence(o["rows"], len(r.train), o["skipped"]) + "\n",
        "## Headline errors (percent, rows not flagged anomalous)\n",
        f"Targets (cross-validated): TPOT median ≤ {TARGETS['tpot'][0]:g} %, p90 ≤ {TARGETS['tpot'][1]:g} %; "
        f"TTFT median ≤ {TARGETS['ttft'][0]:g} %, p90 ≤ {TARGETS['ttft'][1]:g} %. Reference: {BASELINE}.\n",
        _headline_section(o, tables), "",
        "## Fitted engine parameters\n",
        f"Up to {len(FITTED)} global parameters per engine (`perfmodel/data/engines_fit/calibrated.yaml`; "
        "definitions in "
        "`perfmodel/engine/calibration.py`), fitted with `scipy.optimize.least_squares` (soft-L1 loss on "
        "log ratios of TPOT and TTFT) on all rows not flagged anomalous; the per-step and per-sequence "
        "overheads are held at 0 (the fit's loss rises from 0 for every engine when the per-sequence one is held at "
        "10–30 µs/seq and the rest refitted). The per-op kernel "
        "efficiencies are those of the per-accelerator profiles.\n",
        _parameters_section(o), "",
        f"## Errors by group ({label})\n",
        "### By system\n", rep.markdown_table(tables["by_system"]), "",
        "### By engine\n", rep.markdown_table(tables["by_engine"]), "",
        "### By model\n", rep.markdown_table(tables["by_model"]), "",
        "### By mode\n", rep.markdown_table(tables["by_mode"]), "",
        "### By speculative decoding\n",
        "As predicted: the row's `spec_decode` column, else the depth its public source documents "
        "(`perfmodel/validation/source_rules.py`; rules and citations in `perfmodel/data/validation/README.md`), "
        "else off.\n",
        rep.markdown_table(rep.group_rows(scored, "spec_decode_text")), "",
        "### By prefix caching\n", rep.markdown_table(rep.group_rows(scored, "prefix_caching")), "",
        "### Median signed TTFT error by concurrency\n",
        rep.markdown_table(rep.residual_by_concurrency(scored, "ttft")), "",
        "### Median signed TPOT error by concurrency\n",
        rep.markdown_table(rep.residual_by_concurrency(scored, "tpot")), "",
        f"![TPOT]({'img/validation_tpot.png'})\n\n![TTFT]({'img/validation_ttft.png'})\n",
        "## Largest systematic errors (model / system / engine, ≥ 8 rows)\n",
        "### TPOT\n", rep.markdown_table(rep.worst_groups(scored, ["model", "system", "backend"], "tpot")), "",
        "### TTFT\n", rep.markdown_table(rep.worst_groups(scored, ["model", "system", "backend"], "ttft")), "",
        "### TTFT by engine release (≥ 10 rows)\n",
        "The fixed time a request spends outside the engine's steps is one constant per engine "
        "(`request_overhead`); the residual left is organised by the engine's release more than by "
        "model, system or world size (the public file mixes dumps of many releases):\n",
        rep.markdown_table(rep.group_rows(scored.assign(backend_version=scored["backend_version"].fillna("?")),
                                          ["backend", "backend_version"], min_rows=10)), "",
        "## How low the error can go on this data\n", _attainable_section(_scored(r.train), tables), "",
        _capacity_cliff_section(),
        "## Findings and hypotheses\n", findings, "",
        "## Published static-batch figures (TensorRT-LLM performance docs, clean rows)\n",
        _published_section(o, tables), "",
        "## Skipped rows\n", _skipped_section(o, tables), "",
        "## Rows flagged anomalous (physics checks, not fitted)\n", _anomaly_section(r.train), "",
        "## Open-loop runs (request rate)\n", _open_loop_section(tables), OPEN_LOOP,
        "## Method\n", METHOD,
    ]
    text = "\n".join(parts) + "\n"
    DOC.write_text(text, encoding="utf-8")
    counts = {"read": o["rows"], "predicted": len(r.train), "skipped": len(o["skipped"]),
              "flagged": len(r.train) - len(_scored(r.train))}
    summary = validation_summary(tables, counts, TARGETS, str(shipped_path("open-loop-mlperf").relative_to(ROOT)),
                                 MAX_STEADY_REQUESTS)
    if summary != validation_summary_from_page(text):  # the page and its summary must say the same
        raise SystemExit(f"{SUMMARY}: the summary differs from what {DOC} prints; fix report_summary")
    write_summary(SUMMARY, summary)


def _open_loop_section(tables: dict) -> str:
    """Scores of the shipped open-loop runs (``perfmodel/data/validation/openloop``), simulated under the
    profile this script just wrote, with the servers' requests in flight (Little's law) beside them."""
    from perfmodel.validation.run import validate_file

    path = shipped_path("open-loop-mlperf")
    name = path.relative_to(ROOT)
    run = validate_file(path)
    o = run.summary["open_loop"]
    src = pd.read_csv(path).set_index("id")
    p = run.open_loop.assign(scenario=lambda d: src.loc[d["id"], "scenario"].to_numpy())
    src = src.loc[p["id"]]
    in_flight = (src["completed_samples_per_s"] * src["mean_latency_ms"] / 1e3).to_numpy()
    static = [1e3 * float(pm.predict(r["model"], r["hardware"], tp=int(r["tp"]), isl=int(r["isl"]),
                                     osl=int(r["osl"]), batch=[round(w / r["replicas"])],
                                     weights=r["weights"], kv_cache=r["kv_cache"],
                                     engine=r["backend"]).to_dataframe()["tpot_s"].iloc[0])
              for (_, r), w in zip(p.iterrows(), in_flight, strict=True)]
    rows = [{"run": r["id"], "engine": r["backend"],
             "GPUs (layout)": f"{r['replicas'] * r['tp']} (TP{r['tp']} × {r['replicas']})",
             "rate req/s": r["rate_requests_per_s"],
             "TTFT ms measured": 1e3 * r["measured_ttft_mean_s"], "TTFT ms predicted": 1e3 * r["predicted_ttft_mean_s"],
             "TPOT ms measured": 1e3 * r["measured_tpot_mean_s"], "TPOT ms predicted": 1e3 * r["predicted_tpot_mean_s"],
             "TPOT ms, static batch of λ·W / replicas": t, "in flight measured (λ·W)": float(w),
             "in flight simulated (peak)": float(r["simulated_peak_in_flight"]),
             "requests simulated": float(r["simulated_requests"])}
            for (_, r), w, t in zip(p.iterrows(), in_flight, static, strict=True)]
    ratio = (p["measured_tpot_mean_s"] / p["predicted_tpot_mean_s"]).to_numpy()
    static_gap = 1e3 * p["measured_tpot_mean_s"].to_numpy() / np.asarray(static)
    capped = p.loc[p["simulated_requests"] >= MAX_STEADY_REQUESTS, "id"].tolist()
    systems = ", ".join(sorted(src["system"].unique()))
    rounds = ", ".join(sorted({c.split()[2] for c in src["silicon_data_source"]}))
    tables["open_loop_headline"] = [rep.headline_row("MLPerf, simulated", o)]
    tables["open_loop_groups"] = rep.group_rows(p, "backend") + rep.group_rows(p, "scenario")
    tables["open_loop_runs"] = rows

    def spread(x):
        return f"{np.min(x):.1f}–{np.max(x):.1f}× (median {np.median(x):.1f}×)"
    return "\n".join([
        f"`{name}` ships {o['rows']} public open-loop runs: MLPerf Inference runs of Llama-2-70B "
        f"(rounds {rounds}; Server and Interactive scenarios: LoadGen's Poisson arrivals at a fixed "
        f"rate, mean TTFT and TPOT over every request) on {systems} under the submitters' TensorRT-LLM "
        "and vLLM harnesses; sources, layouts and caveats in the README beside it. Scored with "
        f"`perfmodel validate --data {name}` ({o['predicted']} simulated, {o['skipped']} skipped; every "
        "run completed more requests than are simulated, so the means are those of the simulation's "
        "steady-state window):\n",
        rep.markdown_table(tables["open_loop_headline"]), "",
        rep.markdown_table(tables["open_loop_groups"]), "",
        rep.markdown_table(rows), "",
        "Each run is tuned to the highest rate its scenario's p99 bounds allow. Measured over predicted "
        f"TPOT: {spread(ratio)}; measured TPOT over the model's static-batch TPOT at the measured "
        "in-flight count per replica (λ·W from the completed rate and mean latency): "
        f"{spread(static_gap)}. "
        + (f"{len(capped)} run(s) reached the {MAX_STEADY_REQUESTS:,}-request cap before the simulation's "
           f"window opened 1.5 mean latencies after its start ({', '.join(capped)}): their predictions "
           "are those of a simulation still filling or, where the rate exceeds the model's capacity, of a "
           "queue that keeps growing (its TTFT rises with the length simulated), while the measured "
           "server held a steady one. " if capped else "")
        + "Replayed at fixed mean lengths, the runs' spread of prompt (48–1,021 tokens) and output (3 "
        "to ~1,024) lengths is not represented.\n",
    ])


def _capacity_cliff_section() -> str:
    """Capacity cliffs: errors and the plot of ``scripts/capacity_cliff.py`` (its own predictions)."""
    p, table = capacity_cliff.predict()
    capacity_cliff.plot(p, capacity_cliff.IMG)
    return capacity_cliff.section(p, table)


def _attainable_section(train: pd.DataFrame, tables: dict) -> str:
    """Repeats, per-group rescaling and TTFT load slopes (research.attainable)."""
    repeats = repeat_agreement(train, by="backend")
    pairs = {(e["backend"], e["metric"], e["pairs"]): e for e in repeats}
    bound = dict(zip(OFFSET_GROUPINGS, offset_bound(train), strict=True))
    tables["repeats"], tables["rescaling"] = repeats, list(bound.values())
    release = bound["model / system / engine / release"]
    agg = train[train["mode"] == "agg"]
    slopes = concurrency_slopes(agg, "ttft")
    noise = float(np.sqrt(np.mean(slopes["slope_se"] ** 2)))
    explained = sorted(variance_explained(slopes["slope"], slopes, [c for c in SWEEP_COLUMNS if c in slopes]),
                       key=lambda e: -e["share beyond chance %"])
    best = explained[0]
    vllm_same = pairs.get(("vllm", "TTFT", "same release"))
    cross = [e["median disagreement %"] for (_, metric, kind), e in pairs.items()
             if metric == "TTFT" and kind == "different releases"]
    return "\n".join([
        "What limits the error on these rows (`research/attainable.py`; rows not flagged "
        "anomalous, training predictions).\n",
        "**Repeated measurements** (independent of any model). Where one deployment point (model, system, "
        "engine, layout, formats, lengths, concurrency) was measured more than once, the pairs disagree by "
        "(larger / smaller − 1), by engine:\n",
        rep.markdown_table(repeats), "",
        "Few engines and releases have repeats, so read these as examples, not rates: "
        + (f"vLLM reproduces itself within one release (TTFT median "
           f"{rep.fmt(vllm_same['median disagreement %'])} % over {vllm_same['n pairs']} pairs); "
           if vllm_same else "")
        + (f"pairs from two releases of one engine disagree by a median {min(cross):.0f}–{max(cross):.0f} % in "
           "TTFT. " if cross else "no point was measured under two releases. ")
        + "The release is an input the engine-wide parameters do not see, but not the main limit (next table).\n",
        "**Per-group rescaling of this model.** Each training prediction multiplied by the median measured / "
        "predicted ratio of its group, fitted on the same rows it is scored on (one free factor per group of "
        "≥ 3 rows; smaller groups keep their predictions). It shows how much of *this* model's error a "
        "constant per group would remove (a model with a better dependence on load, lengths or layout "
        "could do better):\n",
        rep.markdown_table(list(bound.values())), "",
        f"With a factor per (model, system, engine, release) TTFT would still be at "
        f"{rep.fmt(release['TTFT median abs %'])} / {rep.fmt(release['TTFT p90 abs %'])} % (median / p90; target "
        f"{TARGETS['ttft'][0]:g} / {TARGETS['ttft'][1]:g} %) and TPOT at {rep.fmt(release['TPOT median abs %'])} / "
        f"{rep.fmt(release['TPOT p90 abs %'])} % (target {TARGETS['tpot'][0]:g} / {TARGETS['tpot'][1]:g} %).\n",
        "**TTFT growth with load** (aggregated rows). Within each measured sweep of at least 3 points whose "
        "concurrency spans at least an e-fold range, the least-squares slope of ln(measured / predicted TTFT) "
        f"against ln C ({len(slopes)} sweeps) has a median of {slopes['slope'].median():+.2f} and a standard "
        f"deviation of {slopes['slope'].std():.2f}; the slopes' own standard errors are "
        f"{noise:.2f} (root mean square), so about {100 * min(1.0, (noise / slopes['slope'].std()) ** 2):.0f} % of that "
        "variance is estimation noise. Share of the slopes' variance each recorded column explains on its own "
        "(η²) and beyond what its number of groups explains by chance (ω²):\n",
        rep.markdown_table(explained), "",
        f"The most any single column explains beyond chance is {best['share beyond chance %']:.1f} % "
        f"(`{best['column']}`).",
    ])


def _pct(x) -> str:
    return f"{x:+.0f} %"


def _tactic_phrase(cal: dict) -> str:
    """How to read the fitted small_m_tactic values (at the bound, or inside the range)."""
    if min(c["small_m_tactic"] for c in cal.values() if "small_m_tactic" in c) >= 0.9:
        return ("at or near its upper bound, so it acts as a switch (the variant is the physical end of "
                "the range: no small-M compute penalty at all)")
    return ("where it is below 1 the optimum is flat: the fused-MoE FP4 terms (item 10) "
            "already carry part of the served FP4 speed-up, and the fit trades it against the kernel "
            "factors")


def findings_text(d: dict) -> str:
    """The interpretation, with the numbers of this run filled in."""
    cal = d["cal"]
    return f"""\
1. **Per-kernel fixed costs decide small-batch decode and prefill, and they are exposed differently in
   graph-replayed decode steps and eagerly launched prefill steps.** The per-accelerator profiles charge
   every kernel the fixed time measured one kernel at a time (for FP8/FP4 GEMMs including the
   activation-quantisation pass). On the serving rows the fit scales it by
   {cal['trtllm']['decode_kernel_scale']:.2f} (TensorRT-LLM), {cal['vllm']['decode_kernel_scale']:.2f} (vLLM)
   and {cal['sglang']['decode_kernel_scale']:.2f} (SGLang) in decode steps and by
   {cal['trtllm']['prefill_kernel_scale']:.1f}, {cal['vllm']['prefill_kernel_scale']:.1f} and
   {cal['sglang']['prefill_kernel_scale']:.1f} in steps carrying prompt tokens. With both factors at 1
   (everything else as fitted) the training error is TPOT
   {d['noscale_tpot']['median_abs_pct_error']:.1f} / {d['noscale_tpot']['p90_abs_pct_error']:.1f} % and TTFT
   {d['noscale_ttft']['median_abs_pct_error']:.1f} / {d['noscale_ttft']['p90_abs_pct_error']:.1f} % (median /
   p90) instead of {d['train']['tpot']['median_abs_pct_error']:.1f} / {d['train']['tpot']['p90_abs_pct_error']:.1f} %
   and {d['train']['ttft']['median_abs_pct_error']:.1f} / {d['train']['ttft']['p90_abs_pct_error']:.1f} %.
   Hypotheses: decode batches are CUDA-graph replays with programmatic dependent launch, so part of the
   isolated per-kernel time (launch, prologue, tail) overlaps the neighbouring kernels; prefill and mixed
   steps run eagerly, each kernel paying a CPU launch cost of tens of µs, and they run kernels the op
   list does not have (RoPE / KV-cache writes; MoE routing, permutation and finalize have been in the
   fused-MoE form since item 10). On the datasheet
   profile (no kernel overheads) the same excess shows as ≈ 70–160 µs per layer per step, growing
   linearly with the layer count (gpt-oss 36 layers, DeepSeek 61, Qwen3-235B 94), not as a per-step
   constant. The fixed part is a large share of a small-batch decode step (DeepSeek-R1 block FP8, TP8
   on 8×B200, 4 sequences, 1024/1024: step model {d['ds_total']:.1f} ms, of which {d['ds_fixed']:.1f} ms
   kernel fixed time; measured TPOT with TensorRT-LLM {d['ds_measured']:.1f} ms), and the isolated fixed
   costs are about the same on Hopper and Blackwell while Blackwell streams weights 1.7–2.4× faster, so
   one factor per engine cannot be right on every accelerator: held-out TPOT bias by system is
   {d['sys_bias']} and leave-one-system-out errors are the worst of the three schemes.
2. **Served NVFP4 GEMMs are faster than the isolated FP4 tables.** The B200/GB200 FP4 GEMM tables were
   measured through one library path whose latency is flat from M = 1 to 256 (16384² at 44–48 µs on
   B200, ≈ 3.2 TB/s of weights against ≈ 4.5 TB/s for FP8); their fit carries it as a small-M penalty
   (M½ ≈ 170 tokens against ≈ 27 for FP8). With that penalty the NVFP4 rows on Blackwell were predicted
   {_pct(d['nosmallm_fp4_bias'])} slow in TPOT (median signed, training, small_m_tactic = 0). Engines
   autotune their FP4 GEMMs per M bucket, so the engine parameter `small_m_tactic` moves the step time
   towards the profile's variant without the penalty (`perfmodel.core.efficiency.small_m_variant`); it fits
   at {cal['trtllm']['small_m_tactic']:.2f} (TensorRT-LLM), {cal['vllm']['small_m_tactic']:.2f} (vLLM) and
   {cal['sglang']['small_m_tactic']:.2f} (SGLang) — {_tactic_phrase(cal)}. Held out, those {d['fp4_rows']} rows are now
   {_pct(d['fp4_bias'])} off in TPOT: even without the small-M penalty served FP4 decode is faster than the
   table's memory efficiency and fixed costs give. Without the parameter the training error is TPOT
   {d['nosmallm_tpot']['median_abs_pct_error']:.1f} / {d['nosmallm_tpot']['p90_abs_pct_error']:.1f} %.
   Multi-node replicas are no longer a systematic error: collectives beyond the scale-up domain are
   costed hierarchically, and rows spanning more than one 8-GPU node ({d['multi_n']} rows) have a median
   TTFT error of {_pct(d['multi_ttft'])} (single node {_pct(d['single_ttft'])}) and TPOT {_pct(d['multi_tpot'])}.
3. **Prefill is too slow on B200 and H200.** Median TTFT error at C ≤ 8 (little queueing), dense / MoE
   models: B200 {_pct(d['dense_b200_sxm'])} / {_pct(d['moe_b200_sxm'])}, H200 {_pct(d['dense_h200_sxm'])} /
   {_pct(d['moe_h200_sxm'])}, H100 {_pct(d['dense_h100_sxm'])} / {_pct(d['moe_h100_sxm'])}. Dense FP8 models
   (Llama-3.1-70B) are the clearest case: their prefill is GEMM-bound, and the op tables themselves show
   B200 FP8 GEMMs at 2.4–3.2 PFLOP/s for M ≥ 4096, more than the profiles' FP8 efficiency gives. The
   engine parameters are per engine and cannot fix a per-accelerator error.
4. **Synchronised closed loops.** Measured TTFT grows about linearly with concurrency at fixed lengths
   while `steady_state` stays flat until a capacity binds: benchmark clients start together and fixed
   ISL/OSL keep them in phase, so prompts arrive in waves. The wave term of `perfmodel/serving/waves.py`
   weighted by the fitted synchronisation ({cal['trtllm']['sync_fraction']:.2f} TensorRT-LLM,
   {cal['vllm']['sync_fraction']:.2f} vLLM, {cal['sglang']['sync_fraction']:.2f} SGLang) moves the TTFT
   bias from {_pct(d['nosync_ttft']['bias_pct'])} to {_pct(d['train']['ttft']['bias_pct'])} and the median
   error from {d['nosync_ttft']['median_abs_pct_error']:.1f} % to {d['train']['ttft']['median_abs_pct_error']:.1f} %
   (p90 {d['nosync_ttft']['p90_abs_pct_error']:.1f} → {d['train']['ttft']['p90_abs_pct_error']:.1f} %; the
   wave wait uses the step model's prefill time, which item 3 shows is too slow on B200/H200). The wait
   is time the client spends outside the decode batch, so it enters the closed loop as think time (a
   smaller decode batch, a lower TPOT) as well as the TTFT. It belongs in `perfmodel.serving` (an
   arrival-synchronisation option of `steady_state`). TensorRT-LLM's measured TTFT at the same prompt
   length also depends on the output length (1024/1024 runs ≈ 1.1× the 1024/8192 runs at equal
   concurrency, up to 4×), which no term here explains.
5. **KV cache on demand is admission, not waiting, in vLLM/SGLang.** `steady_state` caps the decode batch
   by the KV pool each engine sizes (`perfmodel/engine/kv_memory.py`, section "Capacity cliffs") and makes
   the other clients wait; on-demand engines admit the prompt and preempt later, so the measured TTFT of
   KV-pressured runs often stays small while TPOT rises (and some vLLM sweeps jump where C·(I + O), not
   C·(I + O/2), meets the pool). The KV-format choice
   (FP8 KV with FP8/NVFP4 weights in all engines: ModelOpt checkpoints declare `kv_cache_quant_algo: FP8`)
   is also what keeps long-context vLLM runs out of this regime; with bf16 KV, Llama-3.1-70B FP8 on one
   B200 at C = 64, 1024/8192 is predicted at 76 s TTFT against 0.38 s measured.
6. **Suspect measurements.** SGLang DeepSeek runs on B200 are bimodal (the same configuration measures
   ≈ 0.4 s or ≈ 7 s TTFT; the slow ones are flagged `ttft_above_ceiling`, likely warm-up or JIT
   compilation inside the timed window). TensorRT-LLM on B200 predicts DeepSeek-R1's TPOT
   {_pct(d['r1_bias'])} off but DeepSeek-V3's (same architecture) {_pct(d['v3_bias'])} — consistent with
   multi-token prediction being on in the R1 runs (the CSV does not record it). The nvidia/Llama-3.1-8B-Instruct-FP8 vLLM rows on H200
   imply a prefill throughput near the FP8 peak at C ≥ 64 and are predicted 2× too slow (prefix caching?).
   GB200 Qwen3-32B rows with 28–130 ms TPOT at 1–32 clients are only partly flagged; they dominate the
   GB200 error (11 rows).
7. **Smaller systematic errors.** gpt-oss's MXFP4 experts run on their own fused-MoE terms (W4A16
   Triton kernels on Hopper, MXFP4 × MXFP8 on Blackwell; before, they borrowed the bf16 / NVFP4 terms
   and TensorRT-LLM's TPOT was −28 % on H200 and +22 % on B200); now TensorRT-LLM's TPOT is
   {_pct(d['oss_h200_sxm'][0])} on H200 and {_pct(d['oss_b200_sxm'][0])} on B200. Its TTFT is over-predicted
   ({_pct(d['oss_h200_sxm'][1])} H200, {_pct(d['oss_b200_sxm'][1])} B200): these runs' measured TTFT at low load
   (40–100 ms) leaves only ≈ 10–30 ms outside the predicted prefill, while the engine-wide request
   overhead ({cal['trtllm']['request_overhead'] * 1e3:.0f} ms) is set mostly by DeepSeek runs whose low-load
   TTFT leaves 80–160 ms at 1k-token prompts (and ≈ 0 at 8k: a fixed time per request that differs by
   data set, not a per-engine constant). The checkpoint's attention and router weights are bf16 but are
   costed in the expert format (≈ +4 % of the TPOT at small batch). SGLang's TTFT carries a large fixed part (fitted request overhead
   {cal['sglang']['request_overhead'] * 1e3:.0f} ms, prefill kernel factor
   {cal['sglang']['prefill_kernel_scale']:.1f}): its low-concurrency TTFT is ≈ 0.2–0.3 s for every model,
   which the per-op prefill model cannot explain.
8. **P/D-disaggregated rows.** The {d['disagg_n']} disaggregated rows that record both pools' worker
   counts ({d['disagg_sys']}) are predicted by `steady_state_disagg` with the engine parameters fitted on
   all rows: held out, TPOT {d['disagg_tpot'][0]:.1f} / {d['disagg_tpot'][1]:.1f} % (median / p90, bias
   {_pct(d['disagg_tpot'][2])}) and TTFT {d['disagg_ttft'][0]:.1f} / {d['disagg_ttft'][1]:.1f} % (bias
   {_pct(d['disagg_ttft'][2])}). Their decode pools are large attention-DP / wide-EP layouts, where the
   decode step is predicted too fast (no expert load imbalance or DP synchronisation in the step
   model; rows with MTP run the speculative decode step, as aggregated ones do); their TTFT at high concurrency is dominated by prefill-pool
   queueing, which the closed form keeps shorter than the simulator does (docs/serving.md).
9. **History.** With the plain per-op form (one η per format, before the step model read the profiles'
   shape terms, commit 540e1bb) and the profiles of 2026-11-30 11:28, the same pipeline cross-validated
   at TPOT 12.5 / 37.7 % and TTFT 31.0 / 96.6 % (grouped 5-fold; leave-one-system-out TPOT 15.5 / 45.5 %).
   The shape terms fit the isolated kernels better but transfer worse to served steps (items 1 and 2);
   before `small_m_tactic` and the wave wait as think time (commit 91055f7 and after) the grouped 5-fold
   errors on the 1,740 aggregated rows were TPOT 14.3 / 45.6 % and TTFT 29.5 / 87.5 %
   (leave-one-system-out TPOT 20.5 / 57.1 %); the disaggregated rows joined the fit afterwards (TTFT
   28.9 / 88.2 % on all 1,882 rows). Costing the prompts of a wave side by side with their own attention
   pairs (they were costed as one long sequence) and long prompts' last chunk for its own tokens then
   moved the TTFT to the figures above: the more faithful wave is shorter, and the data preferred the
   longer one for TensorRT-LLM (whose TTFT at 1024/1024 is also higher than at 1024/8192, item 4):
   grouped 5-fold TPOT 11.6 / 35.5 %, TTFT 30.4 / 90.7 % (leave-one-system-out 12.6 / 38.6 % and
   30.7 / 94.0 %; leave-one-model-out 12.7 / 38.1 % and 32.8 / 101.2 %). Items 10–13 then gave
   grouped 5-fold TPOT 10.9 / 31.2 % and TTFT 27.5 / 83.0 % on 1,882 rows; the step model's switch to the
   kernel-level decode-attention terms for grouped-query attention (decided by our own H200
   measurements, docs/own-measurements.md: 11.3 / 32.2 % and 27.3 / 82.3 % on the same rows) and
   counting once the 93 DeepSeek-R1 rows that repeat DeepSeek-V3 measurements gave the figures at the
   top.
10. **Fused MoE blocks are costed from their own measurements.** The step model costed the routed
   experts as one grouped GEMM with the format's GEMM terms, which the fused-MoE tables put 50–63 % low
   (median, held out; worse at many tokens and high EP, where routing, permutation and finalize over
   every token of the step dominate). `perfmodel.core.costs.moe_time` with the `moe.<format>` terms of
   the per-accelerator profiles is 12–16 % off on held-out shapes (docs/calibration.md). In decode-only
   steps (CUDA-graph replays) the block's fixed time is capped at two GEMM launches: the tables launch
   its ≈ 6 kernels one by one (≈ 30 µs per block), and with that time uncapped gpt-oss (36 layers,
   2–6 ms TPOT) was predicted 30–45 % slow; steps carrying prompt tokens, launched eagerly, keep it.
   The serving errors hardly moved (grouped 5-fold TPOT 11.6 / 35.5 → 11.6 / 34.0 %,
   TTFT 30.4 / 90.7 → 30.9 / 90.2 %), but the prefill kernel factors the engines need fell (decode, before →
   after: TensorRT-LLM 1.73 → 1.78, vLLM 2.25 → 2.22, SGLang 2.11 → 1.95; prefill 5.5 → 4.9,
   10.1 → 7.6, 1.7 → 1.2, the prefill ones after item 11 too) and calibrated per-op prediction with
   preset engines improved from TPOT 16.4 / 43.6 % to the figure at the top.
11. **Chunked prefill of long prompts.** Two errors made every prompt longer than the token budget left
   by the decodes too slow: `steady_state` charged each of its k chunks a full chunk (an 8192-token
   prompt with vLLM's 8192-token budget and a few decodes running costs one full chunk and a remainder
   of a few tokens, not two full chunks), and the step model scaled the fitted per-tile cost of prefill
   attention with a chunk's cached prefix (a 1-token chunk after 8191 cached tokens cost more than the
   whole 8192-token prefill). Fixing both moved vLLM's median signed TTFT error on its 220 rows with
   8192-token prompts from +34 % to +14 % (training), and the grouped 5-fold TTFT from 30.9 / 90.2 %
   to 28.4 / 86.5 %.
12. **Block-scaled FP8.** DeepSeek-V3/R1, MiniMax-M2.5 and Qwen's `-FP8` checkpoints are 128 × 128
   block-scaled (their config.json says `weight_block_size`), though the CSV labels most of their
   rows `fp8`.
   They now use the profiles' `gemm.fp8_block` / `moe.fp8_block` terms, measured on the block-FP8
   kernels, instead of per-tensor FP8's: on Hopper the block-FP8 fused MoE reaches 34–40 % of the FP8
   peak against 65–81 % per-tensor. With the MoE block's eager fixed time kept in prompt-carrying steps
   (item 10) the grouped 5-fold errors went from TPOT 11.8 / 34.0 %, TTFT 28.4 / 86.5 % (eager time
   capped everywhere) to 11.5 / 34.6 % and 28.7 / 86.8 %, and with block-FP8 to the figures at the top.
   TensorRT-LLM's DeepSeek TTFT on H200 moved from about −48 % to −28 %, while SGLang's, already
   predicted about 2× too slow, moved further up: SGLang's Hopper block-FP8 kernels (DeepGEMM) are
   faster than the TensorRT-LLM kernels the tables measured, which one set of per-accelerator terms
   cannot express (its fitted prefill kernel factor fell below 1).
13. **First token a few steps late.** The sixth engine parameter, `first_token_steps`, adds that many
   mean decode steps to the TTFT: overlap schedulers (TensorRT-LLM's, vLLM's async scheduling) hand
   a step's tokens back one step late, and streaming or detokenisation may batch a few more. A step
   with speculative decoding emits E tokens and lasts E TPOTs, so the term adds k·E·TPOT there. It fits
   at {cal['trtllm']['first_token_steps']:.1f} (TensorRT-LLM), {cal['vllm']['first_token_steps']:.1f} (vLLM)
   and {cal['sglang']['first_token_steps']:.1f} (SGLang) within its bounds [0, 3]; values at the bound
   mean the TTFT grows with the decode step, i.e. with load, faster than the closed form's queueing
   explains, and the term stands in for that. It took the fitted request overheads from 115 / 39 /
   260 ms to {cal['trtllm']['request_overhead'] * 1e3:.0f} / {cal['vllm']['request_overhead'] * 1e3:.0f} /
   {cal['sglang']['request_overhead'] * 1e3:.0f} ms (TensorRT-LLM's 115 ms exceeded the measured TTFT of 5 %
   of its rows) and the grouped 5-fold errors from TPOT 11.8 / 34.0 %, TTFT 28.6 / 88.3 % to the figures
   at the top. With a bound of 20 the fit went to 3.4 (vLLM), 5.6 (TensorRT-LLM) and 20 (SGLang, with a
   32 ms request overhead and no prefill kernel time), so the bound is kept at what the mechanisms
   above can explain; that all three engines sit on it is part of the unexplained TTFT.
"""


OPEN_LOOP = """\
A run whose requests arrive at a fixed rate whatever the server does (`vllm bench serve
--request-rate`, GuideLLM `poisson`/`constant` benchmarks, inference-perf rate stages, AIPerf
`--request-rate`) is not a closed loop, and the steady state above does not answer for it. Import and
score such runs with

```bash
perfmodel validate --data vllm-4.0qps-Llama-3.1-8B.json --hardware h100-sxm --engine vllm --tp 1
perfmodel validate --data benchmarks.json --hardware h200-sxm --engine sglang --model Qwen/Qwen3-32B
perfmodel validate --data reports-20260101-000000/ --hardware b200 --engine trtllm \\
                   --model meta-llama/Llama-3.1-70B-Instruct --tp 4 --weights fp8
```

(a GuideLLM report gives one row per benchmark, an inference-perf report folder one per
`stage_N_lifecycle_metrics.json`, whose load type is read from the `config.yaml` beside them, else
`--arrival-process`, else the tool's default `constant`), or give a
`serving_measured.csv`-schema table the columns `arrival` = `open`, `rate_requests_per_s`,
`arrival_process` (`poisson`, `gamma` with `arrival_cv`, `constant`), `replicas`, `requests` and
`max_concurrency` (meanings in `perfmodel/validation/arrivals.py`; field sources per tool in
`perfmodel/validation/openloop_import.py`). Each open-loop row is simulated
(`perfmodel.serving.simulate`) on its configuration under its engine with the fitted terms (a P/D row
as its two pools with the closed-loop path's KV transfer time), with the recorded arrival process and
total rate over its replicas and as many requests as the run completed
(1000 when the file does not say, at most 16000), averaged over every completed request as the tools
do; a run longer than that is averaged over the middle half of the simulated arrivals (its steady
state: the simulation's fill and drain left out), the simulation lengthened (doubled, at most 64000
requests) until that window opens 1.5 mean latencies after its start. Seeded replications are added until the 95 %
confidence half-width of the mean TTFT and TPOT is within 5 % (3 to 8 replications; the half-widths
reached are columns of `--out`). The errors form their own group (`open_loop` in `--format json`, its
own table otherwise), never part of the figures
above. Skipped with the reason: runs whose client-side cap on requests in flight (vLLM
`--max-concurrency` with a rate, AIPerf `--concurrency` with `--request-rate`) binds, i.e. the
simulation without it exceeds it (where it stays within the cap the run is scored), GuideLLM `throughput` benchmarks, vLLM ramp-up rates, P/D rows
with `replicas` other than 1 (give the rate of one P/D system), and P/D rows recording speculative
decoding or a prefix-cache hit rate (aggregated rows are simulated with them). Constant-rate arrivals are simulated as gamma
gaps with a coefficient of variation of 0.05 (the simulator has no deterministic process).
"""

METHOD = """\
- **Mapping** (`perfmodel/validation/rows.py`): `system` → accelerator; `model_path` → model spec
  (Kimi-K2.5 and MiniMax-M2.5 through documented bridges); weights from `gemm_quant_mode`, else
  `precision`, else the checkpoint's own format (`fp8` of a block-scaled FP8 checkpoint is `fp8_block`,
  `fp4` of gpt-oss's MXFP4 checkpoint is `mxfp4`, run with MXFP8 activations on Blackwell and as W4A16
  on Hopper, TensorRT-LLM's documented defaults); FP8 KV cache for TensorRT-LLM with FP8/FP4 weights,
  bf16 otherwise (engine defaults); replica = tp × pp × attention-DP GPUs running `batch_size ×
  attention_dp` requests (closed loops on identical replicas are independent).
- **Prediction** (`predict.py`): `perfmodel.serving.steady_state` per row (closed loop at the replica's
  concurrency, fixed ISL/OSL, the engine preset's scheduler) on step times of `perfmodel.core.step.StepModel`,
  tabulated per row (`surrogate.py`, < 1 % from the exact model) so one call covers all rows of an engine.
  The fitted request overhead and the synchronised-wave wait (`perfmodel/serving/waves.py`) are time a client spends
  outside the decode batch: they enter the closed loop as think time and are added to the TTFT.
- **Anomalies** (`anomalies.py`): rows below the datasheet roofline floor, above a 5× + 20 ms ceiling, or
  whose id contradicts the recorded layout are reported and excluded from fit and headline.
- **Fit and CV** (`perfmodel/calibration/engine_fit.py`): per engine, six global parameters; grouped 5-fold (groups = deployment
  configurations), leave-one-system-out and leave-one-model-out; every held-out row is predicted by
  parameters fitted without it. Errors are 100·(predicted − measured)/measured; bias = median signed error.
- **Disaggregated rows** that record both pools' worker counts (146 of 829) are predicted with
  `perfmodel.serving.steady_state_disagg` (prefill pool, KV transfer, decode pool; `predict_disagg.py`)
  under the same engine parameters; the other 683 are skipped. Attention-DP ranks schedule their own
  batches (`schedulers` = the attention-DP degree of each pool).
- **Speculative decoding and prefix caching** (`features.py`, `predict_direct.py`): optional columns
  `spec_decode` (the `--spec-decode` spelling, or off), `prefix_hit_rate` (0 to < 1) and `prefix_caching`
  (on/off). Aggregated rows with either are predicted by `steady_state` on their step model under the
  engine with that speculation and hit rate (not tabulated); disaggregated ones are skipped with the reason,
  as is a bare `Y` that names no method. The summary reports error by `spec_decode` (method or `off`) and
  `prefix_caching`. The public rows record neither; where a row's public source documents MTP (InferenceX
  TensorRT-LLM DeepSeek-R1 sweeps), `source_rules.py` fills `spec_decode` by a cited rule
  (`spec_decode_rule` names it), and flags GB200 P/D runs recorded as aggregated as anomalous.
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="skip cross-validation")
    ap.add_argument("--workers", type=int, default=2, help="processes for cross-validation")
    ap.add_argument("--summary-from-page", action="store_true",
                    help=f"only write {SUMMARY.relative_to(ROOT)} from the committed page's tables (no fit)")
    args = ap.parse_args()
    if args.summary_from_page:
        write_summary(SUMMARY, validation_summary_from_page(DOC.read_text(encoding="utf-8")))
        print(f"wrote {SUMMARY.relative_to(ROOT)} from {DOC.relative_to(ROOT)}")
        return 0
    o = build(args.quick, args.workers)
    write_report(o, findings_text(diagnostics(o)))
    print(f"wrote {PROFILE.relative_to(ROOT)}, {DOC.relative_to(ROOT)} in {o['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
