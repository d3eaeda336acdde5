"""The README's validation figures come from the reports' JSON summaries (issue 21).

perfmodel.validation.report_summary writes and reads the summaries (checked here on small hand-made tables,
with hand-computed statistics); scripts/readme_figures.py prints the README's blocks from them (checked on
synthetic summaries); the committed summaries equal the committed pages' tables; the README's
``readme-*`` blocks are what the script prints today (fast tier; the other generated blocks are checked by
tests/test_split_microbatch.py::test_docs_numbers_are_generated, slow tier).
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from perfmodel.validation import report as rep
from perfmodel.validation import report_summary as rs
from perfmodel.validation.metrics import summarize

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def figures():
    return _script("readme_figures")


def test_cell_values():
    assert rs.cell_value("—") is None and rs.cell_value(" 12 ") == 12 and rs.cell_value("-41.3") == -41.3
    assert rs.cell_value("56 %") == 56 and rs.cell_value("0.5 %") == 0.5
    assert rs.cell_value("nvfp4 TP4") == "nvfp4 TP4" and rs.cell_value("0.5.1.post1") == "0.5.1.post1"
    assert isinstance(rs.cell_value("12"), int) and isinstance(rs.cell_value("12.0"), float)


def _tiny() -> pd.DataFrame:
    """Five rows of two engines; errors in percent chosen so the statistics are easy by hand."""
    return pd.DataFrame({"backend": ["vllm", "vllm", "vllm", "sglang", "sglang"],
                         "mode": ["agg", "agg", "disagg", "agg", "disagg"],
                         "tpot_pct_error": [10.0, -20.0, 30.0, 5.0, -5.0],
                         "ttft_pct_error": [40.0, 40.0, -100.0, 1.0 / 3.0, 2.0 / 3.0]})


def test_records_are_the_cells_the_page_prints():
    by_engine = rs.records(rep.group_rows(_tiny(), "backend"))
    sglang, vllm = by_engine
    # sglang: |e| = 5, 5 -> median 5, p90 5, bias median(5, -5) = 0; TTFT 1/3, 2/3 -> median 0.5,
    # p90 = 1/3 + 0.9 * 1/3 = 0.633 printed 0.6, bias 0.5
    assert sglang == {"group": "sglang", "rows": 2, "TPOT median abs %": 5.0, "TPOT p90 abs %": 5.0,
                      "TPOT bias %": 0.0, "TTFT median abs %": 0.5, "TTFT p90 abs %": 0.6, "TTFT bias %": 0.5}
    # vllm: |e| = 10, 20, 30 -> median 20, p90 = 20 + 0.8 * 10 = 28, bias median(10, -20, 30) = 10
    assert (vllm["TPOT median abs %"], vllm["TPOT p90 abs %"], vllm["TPOT bias %"]) == (20.0, 28.0, 10.0)
    # TTFT 40, 40, -100: |e| median 40, p90 = 40 + 0.8 * 60 = 88, bias 40
    assert (vllm["TTFT median abs %"], vllm["TTFT p90 abs %"], vllm["TTFT bias %"]) == (40.0, 88.0, 40.0)
    # the page's table read back gives the same values
    assert rs.parse_table(rep.markdown_table(rep.group_rows(_tiny(), "backend")).splitlines()) == by_engine


def _page(tables: dict) -> str:
    """A page laid out as scripts/make_validation_report.py lays out docs/validation.md."""
    t = {k: rep.markdown_table(v) for k, v in tables.items()}
    return "\n".join([
        "# Validation", "", "Rows: 7 read, 5 predicted, 2 skipped (reasons below), 0 predicted but flagged anomalous.",
        "", "## Headline errors (percent)", "",
        "Targets (cross-validated): TPOT median ≤ 10 %, p90 ≤ 30 %; TTFT median ≤ 20 %, p90 ≤ 50 %.", "",
        t["headline"], "", "## Errors by group", "", "### By system", "", t["by_system"], "",
        "### By engine", "", t["by_engine"], "", "### By model", "", t["by_model"], "", "### By mode", "",
        t["by_mode"], "", "## How low the error can go on this data", "", t["repeats"], "", "text", "",
        t["rescaling"], "", "## Published static-batch figures", "", t["published"], "", "## Skipped rows", "",
        t["skipped"], "", "## Open-loop runs", "",
        "Scored with `perfmodel validate --data x/open.csv` (1 simulated):", "", t["open_loop_headline"], "",
        t["open_loop_groups"], "", t["open_loop_runs"], "", "(doubled, at most 64000", "requests) ...", "",
        "## Method", "", "| not | a table we read |", "|---|---|", "| 1 | 2 |", ""])


def test_a_table_without_rows_reads_back_empty():
    text = "## A\n\n" + rep.markdown_table([]) + "\n\n" + rep.markdown_table([{"x": 1.25}]) + "\n\n## B\n\n| y |\n|---|\n| 2 |\n"
    assert rs.parse_tables(text, "## A") == [[], [{"x": 1.2}]] and rs.records([]) == []


def _tables() -> dict:
    df = _tiny().assign(system="h100_sxm", model="m")
    return {"headline": [rep.headline_row("cross-validated: grouped 5-fold", summarize(df))],
            "by_system": rep.group_rows(df, "system"), "by_engine": rep.group_rows(df, "backend"),
            "by_model": rep.group_rows(df, "model"), "by_mode": rep.group_rows(df, "mode"),
            "repeats": [{"backend": "vllm", "metric": "TTFT", "pairs": "same release", "n pairs": 3,
                         "median disagreement %": 2.25}],
            "rescaling": [{"grouping": "none", "TTFT median abs %": 40.0}],
            "published": [{"efficiency": "datasheet", "metric": "batch_latency", "rows": 3, "median abs %": 37.26}],
            "open_loop_headline": [rep.headline_row("MLPerf, simulated", summarize(df))],
            "open_loop_groups": rep.group_rows(df, "backend"),
            "open_loop_runs": [{"run": "r1", "engine": "vllm", "requests simulated": 64000.0}],
            "skipped": [{"reason": "duplicate: same measurement under another id (one copy kept)", "rows": 2}]}


def test_validation_summary_written_equals_read_back_from_the_page():
    tables = _tables()
    written = rs.validation_summary(tables, {"read": 7, "predicted": 5, "skipped": 2, "flagged": 0},
                                    {"tpot": (10.0, 30.0), "ttft": (20.0, 50.0)}, "x/open.csv", 64000)
    assert written == rs.validation_summary_from_page(_page(tables))
    assert written["tables"]["by_mode"][1]["group"] == "disagg"  # '### By mode' is not '### By model'
    assert written["tables"]["repeats"][0]["median disagreement %"] == 2.2  # as printed: f"{2.25:.1f}"
    assert written["tables"]["published"][0]["median abs %"] == 37.3
    assert written["open_loop"] == {"file": "x/open.csv", "request_cap": 64000}
    with pytest.raises(ValueError, match="missing"):
        rs.validation_summary({k: v for k, v in tables.items() if k != "by_mode"}, written["rows"],
                              {"tpot": (10, 30), "ttft": (20, 50)}, "x", 1)


def test_summary_json_round_trip(tmp_path):
    summary = {"tables": {"t": rs.records([{"a": 1.25, "b": "−x", "c": None}])}}
    path = rs.write_summary(tmp_path / "sub" / "s.json", summary)
    assert path.read_text(encoding="utf-8").endswith("}\n") and "−x" in path.read_text(encoding="utf-8")
    assert rs.read_summary(path) == {"tables": {"t": [{"a": 1.2, "b": "−x", "c": None}]}}


def test_plan_summary_rows_as_printed():
    pvm = _script("plan_vs_measured")
    stats = {"groups": 3, "median_regret_pct": 10.0 / 3.0, "p90_regret_pct": 100.0, "within_share": 2.0 / 3.0,
             "best_share": 1.0 / 3.0}
    rows = pvm.summary_rows({("tpot", "calibrated", 0.5): stats})
    s = rs.plan_summary({"summary": rows, "breakdown": []}, 10, 8, 2, 3)
    assert s["tables"]["summary"] == [{"per-user speed": "1/TPOT", "engine terms": "calibrated",
                                       "floor (quantile of measured speeds)": "p50", "groups": 3,
                                       "median regret %": 3.3, "p90 regret %": 100.0, "within 10 %": 67,
                                       "pick = measured best": 33}]
    assert s["rows"] == {"csv": 10, "used": 8} and s["same_picks"] == {"groups": 2, "of": 3}


@pytest.mark.parametrize("page, summary, reader", [
    ("validation.md", "validation_summary.json", rs.validation_summary_from_page),
    ("plan-vs-measured.md", "plan_vs_measured_summary.json", rs.plan_summary_from_page)])
def test_committed_summaries_are_the_committed_pages(page, summary, reader):
    """Regenerating a report rewrites both; editing one by hand breaks this."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    committed = json.loads((ROOT / "docs" / "data" / summary).read_text(encoding="utf-8"))
    assert committed == reader(text), f"docs/data/{summary} differs from docs/{page}: rerun its script"


def _synthetic() -> dict:
    """The committed validation summary with the numbers the checks below need."""
    v = json.loads((ROOT / "docs" / "data" / "validation_summary.json").read_text(encoding="utf-8"))
    v = copy.deepcopy(v)
    for r in v["tables"]["headline"]:
        if r["prediction"] == "cross-validated: grouped 5-fold":
            r.update({"TPOT median abs %": 9.0, "TPOT p90 abs %": 29.0, "TTFT median abs %": 25.0,
                      "TTFT p90 abs %": 40.0})
    return v


def test_targets_sentence_follows_the_numbers(figures, monkeypatch):
    v = _synthetic()
    monkeypatch.setattr(figures, "_load", lambda path: v)
    assert figures.by_engine().startswith("Over all rows the TPOT target is reached, the TTFT target **not yet**.")
    cv = next(r for r in v["tables"]["headline"] if r["prediction"] == "cross-validated: grouped 5-fold")
    cv["TTFT median abs %"] = 20.0  # on the target counts as reached
    assert figures.by_engine().startswith("The serving targets are reached over all rows.")
    cv["TPOT p90 abs %"] = 30.1
    assert figures.by_engine().startswith("Over all rows the TTFT target is reached, the TPOT target **not yet**.")


def test_open_loop_cap_and_signs(figures, monkeypatch):
    v = _synthetic()
    runs = v["tables"]["open_loop_runs"]
    for i, r in enumerate(runs):
        r["requests simulated"] = 64000.0 if i < 2 else 16000.0
        r["TTFT ms predicted"], r["TTFT ms measured"] = (5000.0 + 1000 * i, 200.0 + 10 * i)
    monkeypatch.setattr(figures, "_load", lambda path: v)
    text = figures.open_loop()
    assert "2 runs reach the 64,000-request simulation cap" in text
    assert "(predicted TTFT 5.0–6.0 s, measured 0.20–0.21 s)" in text
    h = v["tables"]["open_loop_headline"][0]
    assert f"(bias {figures.signed(h['TPOT bias %'])})" in text
    assert figures.signed(-41.3) == "−41.3 %" and figures.signed(4.0) == "+4.0 %"
    for r in runs:
        r["requests simulated"] = 16000.0
    assert "cap" not in figures.open_loop()


def test_limits_sentence_follows_the_target(figures, monkeypatch):
    v = _synthetic()
    monkeypatch.setattr(figures, "_load", lambda path: v)
    rel = next(r for r in v["tables"]["rescaling"] if r["grouping"] == "model / system / engine / release")
    rel.update({"TTFT median abs %": 15.0, "TTFT p90 abs %": 45.0})
    assert figures.limits().endswith("would bring TTFT to 15.0 / 45.0 % (median / p90; target 20 / 50 %).")
    rel["TTFT p90 abs %"] = 63.4
    assert figures.limits().endswith("still leave TTFT at 15.0 / 63.4 % (median / p90; target 20 / 50 %): "
                                     "the release is not the main limit.")


def test_span_and_join(figures):
    assert figures.span([6.17, 6.9, 6.2], 1) == "6.2–6.9" and figures.span([5.26, 5.3], 1) == "5.3"
    assert figures.span([62.4, 78.3], 0) == "62–78"
    assert figures.and_join(["a"]) == "a" and figures.and_join(["a", "b", "c"]) == "a, b and c"


def test_readme_blocks_are_current(figures, monkeypatch):
    """README.md's readme-* blocks are what scripts/readme_figures.py prints from today's summaries
    (rendered in-process with gen_doc_blocks' own block logic; about 2 s)."""
    gen = _script("gen_doc_blocks")
    assert ROOT / "README.md" in gen.PAGES

    def run(name: str) -> str:
        assert name.startswith("readme-"), f"README block {name} is not a readme_figures block"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            figures.main([name.removeprefix("readme-")])
        return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").splitlines()) + "\n"

    monkeypatch.setattr(gen, "run", run)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    names = [m.group("md") or m.group("name") for m in gen.BLOCK.finditer(text)]
    assert sorted(names) == sorted(f"readme-{b}" for b in figures.BLOCKS)
    assert gen.render(text) == text, "README.md is stale: run python scripts/gen_doc_blocks.py --page README.md"


def test_coverage_counts_duplicated_measurements_once():
    rf = _script("readme_figures")
    v = {"rows": {"read": 7, "predicted": 4, "skipped": 3, "flagged": 0},
         "tables": {"skipped": [{"reason": "duplicate: same measurement under another id (one copy kept)", "rows": 2},
                                {"reason": "disagg: pool worker counts not recorded", "rows": 1}]}}
    # 7 rows, 2 repeats -> 5 distinct measurements; 4 predicted: 57.1 % of rows, 80.0 % of measurements
    assert "4 of 7 measured rows (57.1 %), 4 of 5 distinct measurements (80.0 %;" in rf.coverage(v)
