"""scripts/kv_cliff_band.py: the KV-demand ratios and bands it tabulates, checked by hand."""

import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def band_script():
    return SimpleNamespace(**runpy.run_path(str(ROOT / "scripts" / "kv_cliff_band.py")))


def test_ratios_llama_70b_two_h100(band_script):
    # pool 462,048 tokens (Llama-3.1-70B FP8, TP2 H100, vLLM 0.9); 1024/8192 at C = 64 and 32:
    # full 64*9216/462048 = 1.2765, mean 64*5120/462048 = 0.7092; C = 32 halves both
    r_full, r_mean = band_script.demand_ratios(462048, [64, 32], 1024, 8192)
    np.testing.assert_allclose(r_full, [589824 / 462048, 294912 / 462048])
    np.testing.assert_allclose(r_mean, [327680 / 462048, 163840 / 462048])
    assert r_full[0] == pytest.approx(1.2765, abs=1e-4) and r_mean[0] == pytest.approx(0.7092, abs=1e-4)
    assert list(band_script.band(r_full, r_mean)) == ["band", "fits"]


def test_band_edges(band_script):
    # pool 1000 tokens, one client, I = 600: O = 800 -> full 1.4, mean 1.0 (the mean still fits: band);
    # O = 900 -> mean 1.05 binds; O = 400 -> full 1.0 exactly fits
    r_full, r_mean = band_script.demand_ratios(1000, 1, 600, [800, 900, 400])
    np.testing.assert_allclose(r_full, [1.4, 1.5, 1.0])
    np.testing.assert_allclose(r_mean, [1.0, 1.05, 0.8])
    assert list(band_script.band(r_full, r_mean)) == ["band", "mean binds", "fits"]


def test_source_label_drops_per_row_fields(band_script):
    s = ("db-dump/2026-04-27; config_id=636; silicon_concurrency=4; measured=2026-04-20T00:00:00.000Z; "
         "workflow_run_id=786; vllm/vllm-openai:v0.17.0")
    assert band_script.source_label(s) == "db-dump/2026-04-27; vllm/vllm-openai:v0.17.0"
    local = "source_file=/Users/x/data/h100_sxm/vllm/0.12.0/Qwen_Qwen3-32B.csv; silicon_concurrency=8"
    assert band_script.source_label(local) == "0.12.0/Qwen_Qwen3-32B.csv"
    assert band_script.source_label(float("nan")) == ""
