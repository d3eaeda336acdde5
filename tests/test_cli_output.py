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
    assert {"ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "per_device_tokens_per_s"} <= set(header)


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
