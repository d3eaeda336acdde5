"""Per-op validation scores every shipped accelerator a table names (B300 / GB300 included)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel.calibration import ops_data
from perfmodel.calibration.op_validation import predict_table, validate_table

OPS = Path(__file__).parent / "data" / "ops"


@pytest.mark.parametrize(("system", "accelerator"), [
    ("b200_sxm", "b200"), ("gb200", "gb200"), ("b300_sxm", "b300"), ("gb300", "gb300"),
    ("b300", "b300"), ("h100-sxm", "h100-sxm"), ("tpu_x9", None), ("", None), (float("nan"), None)])
def test_system_names_map_to_shipped_accelerators(system, accelerator):
    assert ops_data.accelerator_of(system) == accelerator


def _relabelled(table: str) -> pd.DataFrame:
    """The sample table plus its B200 rows relabelled B300 and its GB200 rows relabelled GB300."""
    d = pd.read_csv(OPS / f"{table}.csv.gz")
    b300 = d[d.system == "b200_sxm"].assign(system="b300_sxm")
    gb300 = d[d.system == "gb200"].assign(system="gb300")
    return pd.concat([d, b300, gb300], ignore_index=True)


@pytest.mark.parametrize("table", ["gemm", "attention_decode", "moe", "nccl"])
def test_b300_and_gb300_rows_are_predicted_with_the_family_profile(table):
    summary = validate_table(_relabelled(table))
    assert summary["skipped"] == 0, summary["skipped_reasons"]
    assert summary["profiles"]["b300_sxm"] == "b200 (fallback for b300)"
    assert summary["profiles"]["gb300"] == "gb200 (fallback for gb300)"
    assert {"b300_sxm", "gb300"} <= set(summary["by"]["system"])


def test_b300_equals_b200_where_their_datasheets_agree():
    # B300 and B200 specs: same dense bf16/fp8 peaks (2.25 / 4.5 PFLOP/s) and HBM bandwidth (8 TB/s);
    # with B200's profile, bf16/fp8 rows cost the same; fp4 rows (B300 dense fp4 14 vs 9 PFLOP/s)
    # are never slower.
    b200, b300 = ops_data.device("b200"), ops_data.device("b300")
    assert (b300.peaks["bf16"], b300.peaks["fp8"], b300.bandwidth) == (b200.peaks["bf16"], b200.peaks["fp8"],
                                                                       b200.bandwidth)
    assert b300.peaks["fp4"] > b200.peaks["fp4"]
    out = predict_table(_relabelled("gemm"))
    a = out[out.system == "b200_sxm"].reset_index(drop=True)
    b = out[out.system == "b300_sxm"].reset_index(drop=True)
    same = a["dtype"] != "nvfp4"
    np.testing.assert_allclose(b.loc[same, "predicted_s"], a.loc[same, "predicted_s"], rtol=1e-12)
    assert (b.loc[~same, "predicted_s"] <= a.loc[~same, "predicted_s"] * (1 + 1e-12)).all()
    assert (~same).any()


def test_unknown_system_is_skipped_with_its_name():
    d = pd.read_csv(OPS / "gemm.csv.gz").head(5).assign(system="tpu_x9")
    summary = validate_table(d)
    assert summary["predicted"] == 0
    assert summary["skipped_reasons"] == {"unknown system tpu_x9": 5}


def test_cli_scores_b300_rows_of_a_per_op_table(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    path = tmp_path / "gemm.csv"
    _relabelled("gemm").to_csv(path, index=False)
    assert main(["validate", "--data", str(path), "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["skipped"] == 0 and {"b300_sxm", "gb300"} <= set(s["by"]["system"])
