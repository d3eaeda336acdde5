"""Print the README's validation figures as Markdown, from the generated summaries, so they cannot drift.

The README quotes these between ``<!-- generated-md: readme-NAME -->`` markers, refreshed by
``scripts/gen_doc_blocks.py`` (``--check`` in the tests). Sources, all written by the project's scripts:

- ``docs/data/validation_summary.json`` (``scripts/make_validation_report.py``, the tables of
  ``docs/validation.md``) and ``docs/data/plan_vs_measured_summary.json`` (``scripts/plan_vs_measured.py``);
- ``perfmodel/data/calibration/*.yaml`` (``python -m perfmodel.calibration.fit_ops``: held-out per-op errors,
  the tables of ``docs/calibration.md``);
- the own H200 rows ``perfmodel/data/validation/own_h200/`` scored here as ``docs/own-measurements.md``
  scores them (a few seconds);
- ``benchmarks/peer_table.py`` (perfmodel against the peer tools' quoted figures).

    python scripts/readme_figures.py {error-table,by-engine,open-loop,limits,plan-vs-measured,peer}
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"
VALIDATION = DATA / "validation_summary.json"
PLAN = DATA / "plan_vs_measured_summary.json"
CALIBRATION = ROOT / "perfmodel" / "data" / "calibration"
HOPPER, BLACKWELL = ("h100-sxm", "h200-sxm"), ("b200", "gb200")
#: The per-op target: held-out median absolute error [%] (docs/calibration.md, "Errors").
PER_OP_TARGET = 10
ENGINES = {"vllm": "vLLM", "trtllm": "TensorRT-LLM", "sglang": "SGLang"}
KFOLD = "cross-validated: grouped 5-fold"
DATASHEET = "datasheet roofline + preset engines (no calibration)"


def _load(path: Path) -> dict:
    from perfmodel.validation.report_summary import read_summary

    if not path.is_file():
        raise SystemExit(f"{path.relative_to(ROOT)} is missing: run the script that writes it "
                         "(its --summary-from-page option reads it from the committed page)")
    return read_summary(path)


def row(table: Sequence[dict], key: str, value: str, where: str) -> dict:
    """The row of ``table`` whose ``key`` is ``value``; a clear error naming ``where`` if there is none."""
    for r in table:
        if r.get(key) == value:
            return r
    raise SystemExit(f"{where}: no row with {key} = {value!r}; rows: {[r.get(key) for r in table]}")


def signed(v: float) -> str:
    """A signed percentage as prose writes it: ``+4.0 %``, ``−41.3 %`` (minus sign U+2212)."""
    return f"{'−' if v < 0 else '+'}{abs(v):.1f} %"


def pair(r: dict, metric: str) -> str:
    """``median / p90`` of one metric of a table row [%]."""
    return f"{r[f'{metric} median abs %']:.1f} / {r[f'{metric} p90 abs %']:.1f}"


def and_join(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def meets(r: dict, metric: str, targets: dict) -> bool:
    med, p90 = targets[metric.lower()]
    return r[f"{metric} median abs %"] <= med and r[f"{metric} p90 abs %"] <= p90


def span(values: Sequence[float], digits: int) -> str:
    """``lo–hi`` of the values rounded to ``digits`` (one number where both ends agree)."""
    lo, hi = (f"{v:.{digits}f}" for v in (min(values), max(values)))
    return lo if lo == hi else f"{lo}–{hi}"


# ---------------------------------------------------------------- per-op (calibration profiles)

def _per_op(kind: str, form: str, profiles: Sequence[str]) -> list[float]:
    """Held-out median absolute error [%] of one op table under one profile form, per accelerator."""
    out = []
    for p in profiles:
        doc = yaml.safe_load((CALIBRATION / f"{p}.yaml").read_text(encoding="utf-8"))
        entry = doc["provenance"]["errors_pct"].get(kind, {}).get(form)
        if not entry:
            raise SystemExit(f"{p}.yaml: no held-out {kind} / {form} errors in provenance.errors_pct")
        out.append(float(entry["test"]["median_abs_pct_error"]))
    return out


def _own_h200() -> dict[str, float]:
    """Median absolute error [%] of the own H200 rows: bf16 GEMMs and whole decode steps, per profile
    (the figures of docs/own-measurements.md, computed the same way)."""
    from perfmodel.validation import shipped_path
    from perfmodel.validation.run import validate_file

    out = {}
    for key, name in (("own-h200-gemm", "gemm"), ("own-h200-decode-step", "step")):
        for eff in ("calibrated", "datasheet"):
            pred = validate_file(shipped_path(key), efficiency=eff).predictions
            if name == "gemm":
                pred = pred[pred["dtype"] == "bfloat16"]
            out[f"{name}_{eff}"] = float(np.median(np.abs(pred["error_pct"])))
    return out


def error_table() -> str:
    """The README's error table: per-op, own H200, serving and published rows."""
    v = _load(VALIDATION)
    t, targets = v["tables"], v["targets_pct"]
    allp = HOPPER + BLACKWELL
    attn = {g: _per_op("attention_decode", "calibrated", g) for g in (HOPPER, BLACKWELL)}
    fallback = {g: _per_op("attention_decode", "nokernel", g) for g in (BLACKWELL, HOPPER)}
    own = _own_h200()
    ds = row(t["headline"], "prediction", DATASHEET, "docs/validation.md headline")
    cv = row(t["headline"], "prediction", KFOLD, "docs/validation.md headline (run with cross-validation)")
    disagg = row(t["by_mode"], "group", "disagg", "docs/validation.md by mode")
    pub = {eff: row([r for r in t["published"] if r["metric"] == "batch_latency"], "efficiency", eff,
                    "docs/validation.md published") for eff in ("datasheet", "calibrated")}
    tgt = {m: f"≤ {targets[m][0]:g} / {targets[m][1]:g} %" for m in ("tpot", "ttft")}
    rows = [
        ("per-op GEMM latency, held-out shapes (median abs error)", f"{span(_per_op('gemm', 'datasheet', allp), 0)} %",
         f"{span(_per_op('gemm', 'calibrated', allp), 1)} %", f"≤ {PER_OP_TARGET} %"),
        ("per-op decode attention (GQA), held-out", f"{span(_per_op('attention_decode', 'datasheet', allp), 0)} %",
         f"{span(attn[BLACKWELL], 1)} % Blackwell, {span(attn[HOPPER], 1)} % Hopper (kernel-level form, which the "
         "step model uses for grouped attention; the coarser fallback: "
         f"{span(fallback[BLACKWELL], 1)} / {span(fallback[HOPPER], 1)} %)", f"≤ {PER_OP_TARGET} %"),
        ("per-op fused MoE block, held-out", f"{span(_per_op('moe', 'datasheet', allp), 0)} %",
         f"{span(_per_op('moe', 'calibrated', allp), 1)} %", "—"),
        ("our own H200 runs (PyTorch kernels, never fitted): bf16 GEMM / whole Llama-3.1-8B decode step (median)",
         f"{own['gemm_datasheet']:.0f} / {own['step_datasheet']:.0f} %",
         f"{own['gemm_calibrated']:.1f} / {own['step_calibrated']:.1f} %", f"≤ {PER_OP_TARGET} %"),
        (f"serving TPOT, {cv['rows']:,} scored measured runs ({disagg['rows']:,} of them P/D-disaggregated), "
         "5-fold CV (median / p90)", f"{pair(ds, 'TPOT')} %", f"{pair(cv, 'TPOT')} %", tgt["tpot"]),
        ("serving TTFT, same runs, 5-fold CV (median / p90)", f"{pair(ds, 'TTFT')} %", f"{pair(cv, 'TTFT')} %",
         tgt["ttft"]),
        (f"published static-batch latency, {pub['calibrated']['rows']:,} clean rows (median)",
         f"{pub['datasheet']['median abs %']:.1f} %", f"{pub['calibrated']['median abs %']:.1f} %", "—"),
    ]
    head = ["| what | datasheet roofline | perfmodel (calibrated) | target |", "|---|---|---|---|"]
    return "\n".join(head + ["| " + " | ".join(r) + " |" for r in rows])


# ---------------------------------------------------------------- serving (docs/validation.md)

def by_engine() -> str:
    """Whether the held-out serving errors meet the targets, and the errors by engine and of P/D rows."""
    v = _load(VALIDATION)
    t, targets = v["tables"], v["targets_pct"]
    cv = row(t["headline"], "prediction", KFOLD, "docs/validation.md headline (run with cross-validation)")
    met = [m for m in ("TPOT", "TTFT") if meets(cv, m, targets)]
    if len(met) == 2:
        lead = "The serving targets are reached over all rows."
    elif met:
        other = "TTFT" if met == ["TPOT"] else "TPOT"
        lead = f"Over all rows the {met[0]} target is reached, the {other} target **not yet**."
    else:
        lead = "The serving targets are **not reached yet** over all rows."
    order = [e for e in ENGINES if any(r["group"] == e for r in t["by_engine"])]
    order += sorted(r["group"] for r in t["by_engine"] if r["group"] not in ENGINES)
    parts = []
    for e in order:
        r = row(t["by_engine"], "group", e, "docs/validation.md by engine")
        ok = [m for m in ("TPOT", "TTFT") if meets(r, m, targets)]
        note = ", within the targets" if len(ok) == 2 else (f", {ok[0]} within its targets" if ok else "")
        parts.append(f"{ENGINES.get(e, e)} TPOT {pair(r, 'TPOT')} %, TTFT {pair(r, 'TTFT')} % ({r['rows']:,} rows{note})")
    d = row(t["by_mode"], "group", "disagg", "docs/validation.md by mode")
    parts.append(f"P/D-disaggregated rows TPOT {pair(d, 'TPOT')} %, TTFT {pair(d, 'TTFT')} % ({d['rows']:,} rows)")
    return f"{lead} By engine (same 5-fold CV, median / p90): " + "; ".join(parts) + ". " + coverage(v)


def coverage(v: dict) -> str:
    """Rows predicted, of all rows and of the distinct measurements (a duplicate row repeats one;
    :func:`perfmodel.validation.rows.measurement_coverage` on the page's skipped-rows table)."""
    import pandas as pd

    from perfmodel.validation.rows import measurement_coverage

    table = v["tables"]["skipped"]
    skipped = pd.DataFrame({"reason": [r["reason"] for r in table for _ in range(int(r["rows"]))]})
    c = measurement_coverage(v["rows"]["read"], v["rows"]["predicted"], skipped)
    return (f"Predicted: {c['predicted']:,} of {c['rows']:,} measured rows ({100 * c['coverage_rows']:.1f} %), "
            f"{c['predicted']:,} of {c['distinct']:,} distinct measurements ({100 * c['coverage_distinct']:.1f} %; "
            f"{c['duplicates']:,} rows repeat a measurement under another id); each skip has its reason in "
            "docs/validation.md.")


def open_loop() -> str:
    """The open-loop (MLPerf) scores: overall, by engine, and the runs that reach the simulation cap."""
    v = _load(VALIDATION)
    t, ol = v["tables"], v["open_loop"]
    h = t["open_loop_headline"][0]
    runs = t["open_loop_runs"]
    engines = [e for e in ENGINES if any(r["engine"] == e for r in runs)]
    by = []
    for e in engines:
        g = row(t["open_loop_groups"], "group", e, "docs/validation.md open-loop groups")
        by.append(f"{ENGINES[e]} runs ({g['rows']}) TPOT {g['TPOT median abs %']:.1f} % "
                  f"({signed(g['TPOT bias %'])}), TTFT {g['TTFT median abs %']:.1f} % ({signed(g['TTFT bias %'])})")
    text = (f"`perfmodel validate --data {ol['file']}` scores the {h['rows']} runs at TPOT median / p90 error "
            f"{pair(h, 'TPOT')} % (bias {signed(h['TPOT bias %'])}) and TTFT {pair(h, 'TTFT')} % (bias "
            f"{signed(h['TTFT bias %'])}); median (bias): " + "; ".join(by) + ".")
    capped = [r for r in runs if r["requests simulated"] >= ol["request_cap"]]
    if capped:
        pred = [r["TTFT ms predicted"] / 1e3 for r in capped]
        meas = [r["TTFT ms measured"] / 1e3 for r in capped]
        n = len(capped)
        text += (f" {n} run{'s' if n > 1 else ''} reach{'' if n > 1 else 'es'} the {ol['request_cap']:,}-request "
                 "simulation cap with the simulated queue still filling or growing (predicted TTFT "
                 f"{span(pred, 1)} s, measured {span(meas, 2)} s).")
    return text + ' Per run: [docs/validation.md](docs/validation.md), "Open-loop runs".'


def limits() -> str:
    """What limits the serving error: engine releases (repeats) and the per-release rescaling bound."""
    v = _load(VALIDATION)
    t, targets = v["tables"], v["targets_pct"]
    cross = [r for r in t["repeats"] if r["metric"] == "TTFT" and r["pairs"] == "different releases"]
    cross.sort(key=lambda r: -r["n pairs"])
    same = [r for r in t["repeats"] if r["metric"] == "TTFT" and r["pairs"] == "same release"
            and r["backend"] == "vllm"]
    rel = row(t["rescaling"], "grouping", "model / system / engine / release", "docs/validation.md rescaling")
    med, p90 = targets["ttft"]
    within = rel["TTFT median abs %"] <= med and rel["TTFT p90 abs %"] <= p90
    text = ('What limits the rest (`docs/validation.md`, "How low the error can go"): the public file mixes '
            "engine releases, and where one deployment point was measured under two releases of an engine the "
            "TTFTs differ by a median " + and_join(
                [f"{r['median disagreement %']:.1f} % ({ENGINES.get(r['backend'], r['backend'])}, "
                 f"{r['n pairs']} pairs)" for r in cross]))
    if same:
        text += (f"; vLLM repeats within one release agree to {same[0]['median disagreement %']:.1f} % "
                 f"({same[0]['n pairs']} pairs)")
    return text + (". One correction factor per (model, system, engine, release), fitted in-sample, would "
                   f"{'bring' if within else 'still leave'} TTFT {'to' if within else 'at'} "
                   f"{rel['TTFT median abs %']:.1f} / {rel['TTFT p90 abs %']:.1f} % (median / p90; target "
                   f"{med:g} / {p90:g} %)" + ("." if within else ": the release is not the main limit."))


# ---------------------------------------------------------------- plan vs measured

def plan_vs_measured() -> str:
    """The headline of docs/plan-vs-measured.md (1/TPOT speed, median floor)."""
    s = _load(PLAN)
    table = s["tables"]["summary"]
    within = next(k for k in table[0] if k.startswith("within "))

    def pick(profile: str) -> dict:
        for r in table:
            if (r["per-user speed"], r["engine terms"], r["floor (quantile of measured speeds)"]) == \
                    ("1/TPOT", profile, "p50"):
                return r
        raise SystemExit(f"docs/plan-vs-measured.md: no 1/TPOT, {profile}, p50 row in the summary")

    cal, pre = pick("calibrated"), pick("preset")
    return ("Whether the configuration the predictions rank best also measured best, for every workload measured "
            "under several configurations: `docs/plan-vs-measured.md` (`python scripts/plan_vs_measured.py`). At "
            "the median per-user speed floor with the fitted engine terms the median regret is "
            f"{cal['median regret %']:.1f} %, and {cal[within]} % of {cal['groups']} groups pick {within} of the "
            f"measured best throughput per GPU ({cal['pick = measured best']} % pick the measured best itself); "
            f"{pre['median regret %']:.1f} % and {pre[within]} % with the uncalibrated presets.")


def peer() -> str:
    """perfmodel (calibrated) against AIConfigurator's quoted figures (``benchmarks/peer_table.py``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("peer_table", ROOT / "benchmarks" / "peer_table.py")
    peer_table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer_table)
    ratios = peer_table.aic_ratios(peer_table.ours()["perfmodel calibrated"])
    return ("Llama-3.1-70B BF16 on 8×H100 (TP8, 2048/256, batch "
            + ", ".join(map(str, peer_table.BATCHES)) + ") against NVIDIA's database-driven AIConfigurator: "
            f"TTFT {span([r[0] for r in ratios], 2)}×, TPOT {span([r[1] for r in ratios], 2)}× of its figures "
            "(`python benchmarks/peer_table.py`).")


BLOCKS = {"error-table": error_table, "by-engine": by_engine, "open-loop": open_loop, "limits": limits,
          "plan-vs-measured": plan_vs_measured, "peer": peer}
#: Width of the README's prose lines.
WIDTH = 110


def block(name: str) -> str:
    """The Markdown of one block: the table as it is, prose wrapped like the README's own."""
    text = BLOCKS[name]()
    if text.startswith("|"):
        return text
    glued = text  # no line break inside "a / b" or before a unit
    for plain in (" / ", " %", " s,", " s)"):
        glued = glued.replace(plain, plain.replace(" ", "\0"))
    return textwrap.fill(glued, WIDTH, break_long_words=False, break_on_hyphens=False).replace("\0", " ")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("block", choices=sorted(BLOCKS), help="which README figure to print")
    args = ap.parse_args(argv)
    print(block(args.block))
    return 0


if __name__ == "__main__":
    sys.exit(main())
