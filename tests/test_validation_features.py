"""validate reads speculative decoding and prefix caching of measured rows and reports error by them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.serving import steady_state
from perfmodel.validation.features import row_features
from perfmodel.validation.rows import map_rows
from perfmodel.validation.run import validate_file

FIXTURE = "tests/data/serving_features.csv"


@pytest.fixture(scope="module")
def run():
    return validate_file(FIXTURE)


def test_groups_in_summary(run):
    s = run.summary
    assert (s["rows"], s["predicted"], s["skipped"]) == (8, 6, 2)
    assert {k: v["n"] for k, v in s["by"]["spec_decode"].items()} == {"eagle": 2, "off": 4}
    assert {k: v["n"] for k, v in s["by"]["prefix_caching"].items()} == {"off": 4, "on": 2}
    reasons = " | ".join(s["skipped_reasons_detail"])
    assert "spec_decode='Y'" in reasons and "prefix_hit_rate='1.5'" in reasons


def test_features_reach_the_prediction(run):
    p = run.predictions.set_index("id")
    assert p.at["eagle", "predicted_tpot_mean_s"] < p.at["plain", "predicted_tpot_mean_s"]
    assert p.at["eagle_c8", "predicted_tpot_mean_s"] < p.at["plain_c8", "predicted_tpot_mean_s"]
    assert p.at["prefix", "predicted_ttft_mean_s"] < p.at["plain", "predicted_ttft_mean_s"]
    # prefix caching on without a hit rate is predicted as hit rate 0, grouped under "on"
    assert p.at["caching_no_rate", "prefix_caching"] == "on"
    assert p.at["caching_no_rate", "predicted_ttft_mean_s"] == pytest.approx(p.at["plain", "predicted_ttft_mean_s"], rel=1e-9)
    # the EAGLE row is the steady state of the engine with that speculation (the path estimate takes),
    # up to the interpolation of the tabulated step times (perfmodel.validation.surrogate; 3e-5 here)
    sm = StepModel("llama-3.1-8b", "h100-sxm", weights="bf16", kv_cache="bf16")
    ref = steady_state(sm, 1.0, 1024, 128, engine=Engine.load("vllm", spec_decode="eagle:k=3"), iterations=20)
    assert p.at["eagle", "predicted_tpot_mean_s"] == pytest.approx(float(ref.tpot_mean_s), rel=1e-3)
    assert p.at["eagle", "spec_decode_label"].startswith("eagle:k=3,accept=")


def test_cli_table_shows_the_groups(capsys):
    from perfmodel.cli import main

    assert main(["validate", "--data", FIXTURE]) == 0
    out = capsys.readouterr().out
    assert "by spec_decode:" in out and "by prefix_caching:" in out and "eagle" in out


def test_row_features_spellings():
    assert row_features({})["spec_decode"] == "off"
    assert row_features({"spec_decode": "MTP:k=3"})["spec_decode"] == "mtp"
    assert row_features({"spec_decode": np.nan, "prefix_hit_rate": "0.25"})["prefix_caching"] == "on"
    assert row_features({"prefix_caching": "false"})["prefix_caching"] == "off"
    for row, match in (({"spec_decode": "yes"}, "which method"), ({"spec_decode": "medusa:k=2"}, "medusa"),
                       ({"prefix_hit_rate": "-0.1"}, r"\[0, 1\)"), ({"prefix_caching": "maybe"}, "on/off")):
        with pytest.raises(ValueError, match=match):
            row_features(row)


def test_shipped_rows_record_no_features():
    df = pd.read_csv("perfmodel/data/validation/serving_measured.csv", nrows=40)
    dep, _ = map_rows(df)
    assert set(dep["spec_decode"]) == {"off"} and set(dep["prefix_caching"]) == {"off"}
