"""Output formats of the command line (issue: "One presentation"): ``--format table|json|csv`` from one
helper, tables without NaN or inf ("—" and the reason), CSV with the JSON's SI values and names."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from perfmodel.cli import main
from perfmodel.cli.output import MISSING, format_table, number, print_csv


@pytest.mark.parametrize(("value", "text"), [
    (0.297011, "0.297"), (86566.906469, "86570"), (3526.0, "3526"), (30.999999999999993, "31"),
    (0.00123456, "0.001235"), (1.2e-5, "1.200e-05"), (2.5e9, "2.500e+09"), (-0.0456789, "-0.04568"),
    (7, "7"), (0.0, "0"), (True, "True"), ("fp8", "fp8"),
    (float("nan"), MISSING), (float("inf"), MISSING), (-float("inf"), MISSING), (None, MISSING),
])
def test_number_has_four_significant_figures_and_no_exponent_in_the_human_range(value, text):
    assert number(value) == text


def test_table_shows_a_dash_and_the_reason_never_nan_or_inf():
    import numpy as np

    rows = [{"floor": 141, "batch": 49.0, "ratio": 1.309181}, {"floor": 218, "batch": np.nan, "ratio": np.inf},
            {"floor": 336, "batch": np.float64("nan"), "ratio": float("nan")}]
    out = format_table(rows, why={"batch": "no batch reaches this speed"})
    body = out.splitlines()
    assert "nan" not in out.lower() and "inf" not in out.lower()
    assert body[3].split() == ["218", MISSING, MISSING]
    assert f"{MISSING} in batch: no batch reaches this speed" in body
    # a column with NaN and no reason given still gets a footnote, never a bare dash
    assert any(line.startswith(f"{MISSING} in ratio: ") for line in body)
    # None without a reason is shown as a dash without a footnote (an absent optional field)
    assert format_table([{"a": None}]).splitlines() == ["a", "-", MISSING]


def test_csv_has_one_header_row_si_values_and_empty_cells_for_missing():
    stream = io.StringIO()
    print_csv([{"ttft_s": 0.25, "nested": {"power_w": 700.0}, "tags": ["a", "b"], "x": float("nan")},
               {"ttft_s": 1e-3, "extra": True, "x": float("inf")}], stream=stream)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "ttft_s,nested.power_w,tags,x,extra"
    rows = list(csv.DictReader(io.StringIO(stream.getvalue())))
    assert rows[0] == {"ttft_s": "0.25", "nested.power_w": "700.0", "tags": '["a", "b"]', "x": "", "extra": ""}
    assert rows[1]["ttft_s"] == "0.001" and rows[1]["x"] == "" and rows[1]["extra"] == "True"


def _run(capsys, argv: list[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


PREDICT = ["predict", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "1,8", "--isl", "1024",
           "--osl", "128"]


@pytest.mark.parametrize("argv", [PREDICT, ["hardware", "list", "--kind", "accelerator"], ["models", "list"],
                                  ["claim", "--list"]], ids=["predict", "hardware-list", "models-list", "claims"])
def test_csv_is_the_json_records_row_for_row(capsys, argv):
    records = json.loads(_run(capsys, [*argv, "--format", "json"]))
    rows = _csv_rows(_run(capsys, [*argv, "--format", "csv"]))
    assert len(rows) == len(records) and records
    for rec, row in zip(records, rows, strict=True):
        for key, value in rec.items():
            if isinstance(value, float):
                assert float(row[key]) == pytest.approx(value, rel=1e-12), key
            elif value is None:
                assert row[key] == "", key
            elif not isinstance(value, (dict, list)):
                assert row[key] == str(value), key


def test_predict_csv_columns_carry_si_unit_suffixes(capsys):
    header = _run(capsys, [*PREDICT, "--format", "csv"]).splitlines()[0].split(",")
    assert {"ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "output_tokens_per_s_per_device"} <= set(header)


def test_hardware_show_csv_gives_each_figure_in_si_with_unit_and_source(capsys):
    rows = {r["figure"]: r for r in _csv_rows(_run(capsys, ["hardware", "show", "h100-sxm", "--format", "csv"]))}
    bw = rows["memory.hbm.bandwidth"]
    assert float(bw["value"]) == pytest.approx(3.35e12) and bw["unit"] == "B/s" and bw["source"].startswith("http")


def test_claim_table_prints_no_nan_or_inf_and_says_why(capsys):
    """`perfmodel claim nvidia-lpx-35x-tokens-per-mw` printed nan and inf where no batch meets a floor."""
    out = _run(capsys, ["claim", "nvidia-lpx-35x-tokens-per-mw", "--points", "2"])
    words = out.replace("|", " ").split()
    assert not {"nan", "inf", "None"} & set(words), out
    assert f"{MISSING} in ratio: " in out and f"{MISSING} in baseline_batch: " in out
    assert "at batch None" not in out


def test_claim_csv_sections_hold_the_ratio_table(capsys):
    rows = _csv_rows(_run(capsys, ["claim", "nvidia-lpx-35x-tokens-per-mw", "--points", "2", "--format", "csv"]))
    sections = {r["section"] for r in rows}
    assert {"operating_point", "needed"} <= sections
    ratios = [r for r in rows if r["section"] == "ratio_vs_floor"]
    assert ratios and all(r["ratio"] == "" or math.isfinite(float(r["ratio"])) for r in ratios)


def test_validate_csv_rows_are_the_summary_statistics(capsys, tmp_path):
    import pandas as pd

    rows = pd.read_csv("perfmodel/data/validation/serving_measured.csv", dtype=str, keep_default_na=False)
    path = tmp_path / "few.csv"
    rows.head(40).to_csv(path, index=False)
    summary = json.loads(_run(capsys, ["validate", "--data", str(path), "--format", "json"]))
    got = _csv_rows(_run(capsys, ["validate", "--data", str(path), "--format", "csv"]))
    overall = {r["metric"]: r for r in got if r["group"] == "all"}
    assert set(overall) == {m for m in ("tpot", "ttft") if isinstance(summary.get(m), dict)} and overall
    for metric, row in overall.items():
        assert float(row["median_abs_pct_error"]) == pytest.approx(summary[metric]["median_abs_pct_error"])
        assert int(row["n"]) == summary[metric]["n"]
    for group, values in summary["by"].items():
        for value, stats in values.items():
            row = next(r for r in got if r["group"] == group and r["value"] == value and r["metric"] == "tpot")
            assert float(row["bias_pct"]) == pytest.approx(stats["tpot"]["bias_pct"])


def test_validate_csv_has_the_open_loop_statistics(capsys):
    """An open-loop run (a vLLM result JSON at 2 requests/s) is reported in the CSV too, as ``arrival=open``
    rows holding the JSON's ``open_loop`` figures; the closed-loop rows say ``arrival=closed``."""
    argv = ["validate", "--data", "tests/data/vllm_open_tiny.json", "--hardware", "h100-sxm", "--engine", "vllm",
            "--tp", "1", "--quiet"]
    summary = json.loads(_run(capsys, [*argv, "--format", "json"]))
    got = _csv_rows(_run(capsys, [*argv, "--format", "csv"]))
    assert {r["arrival"] for r in got} == {"closed", "open"}
    assert all(r["n"] == "0" for r in got if r["arrival"] == "closed")     # no closed-loop row in the file
    opened = {(r["group"], r["value"], r["metric"]): r for r in got if r["arrival"] == "open"}
    o = summary["open_loop"]
    for metric in ("tpot", "ttft"):
        assert float(opened["all", "", metric]["bias_pct"]) == pytest.approx(o[metric]["bias_pct"], rel=1e-12)
        by = o["by"]["arrival_process"]["poisson"][metric]
        assert float(opened["arrival_process", "poisson", metric]["median_abs_pct_error"]) == pytest.approx(
            by["median_abs_pct_error"], rel=1e-12)


def test_estimate_csv_carries_the_json_values(capsys):
    est = ["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "vllm", "--concurrency",
           "1,8", "--isl", "512", "--osl", "64"]
    doc = json.loads(_run(capsys, [*est, "--format", "json"]))
    rows = _csv_rows(_run(capsys, [*est, "--format", "csv"]))
    assert [float(r["tpot_mean_s"]) for r in rows] == pytest.approx([p["tpot_mean_s"] for p in doc["points"]], rel=1e-12)
    assert all(r["engine"] == doc["engine"] and r["devices"] == "1" for r in rows)


def test_max_load_csv_is_the_curve_with_the_answer_on_each_row(capsys):
    ml = ["max-load", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--isl", "512", "--osl", "64",
          "--requests", "100", "--slo-ttft", "1s", "--max-simulations", "3"]
    doc = json.loads(_run(capsys, [*ml, "--format", "json"]))
    rows = _csv_rows(_run(capsys, [*ml, "--format", "csv"]))
    assert [float(r["load"]) for r in rows] == pytest.approx([c["load"] for c in doc["curve"]])
    assert {r["search"] for r in rows} == {"rate"}
    assert [float(r["max_arrival_requests_per_s"]) for r in rows] == pytest.approx([doc["max_arrival_requests_per_s"]] * len(rows))


def test_points_that_do_not_fit_show_no_timings_in_the_table_but_keep_them_in_json(capsys):
    argv = ["predict", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "8", "--batch", "1,4096",
            "--isl", "8192", "--osl", "128"]
    records = json.loads(_run(capsys, [*argv, "--format", "json"]))
    assert [r["fits"] for r in records] == [True, False] and records[1]["ttft_s"] > 0
    lines = _run(capsys, argv).splitlines()
    fits, unfit = (line.split() for line in lines[3:5])
    assert lines[1].split()[3] == "ttft_ms" and fits[3] == number(records[0]["ttft_s"] * 1e3)
    assert unfit[3:9] == [MISSING] * 6
    assert "exceed usable memory" in lines[4]
    assert lines[5].startswith(f"{MISSING} in ttft_ms, tpot_ms, e2e_ms") and "does not fit" in lines[5]
    assert lines[6] == "times in ms (JSON/CSV/DataFrame: SI seconds)"


def test_every_dash_in_the_simulate_table_is_explained(capsys):
    out = _run(capsys, ["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--isl", "512", "--osl",
                        "1", "--rate", "2", "--requests", "40"])
    dashed = [line.split()[0] for line in out.splitlines() if line.split()[1:] == [MISSING]]
    notes = " ".join(line for line in out.splitlines() if line.startswith("note: no value for"))
    assert {"tpot_p50_ms", "slo_attainment", "goodput_requests_per_s"} <= set(dashed)
    assert all(name in notes for name in dashed) and "no SLO given" in notes
