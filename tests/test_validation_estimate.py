"""Estimates under load with the fitted engines (perfmodel.estimate): the validated path, thin."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from perfmodel.cli import main
from perfmodel.engine.calibration import load_profile
from perfmodel.errors import PerfmodelError
from perfmodel.serving.estimate import PrefillPool, estimate
from perfmodel.validation.data import shipped_path
from perfmodel.validation.run import serving_problem


def test_estimate_reproduces_the_validation_prediction_of_a_measured_row():
    df = pd.read_csv(shipped_path("serving"))
    row = df[df["id"] == "minimaxm2_5_h200_vllm_fp8_agg_1024x1024_c16_cfg606"]
    problem, _ = serving_problem(row)
    pred = problem.predictions(load_profile("calibrated")).iloc[0]
    # the row's "fp8" is the checkpoint's block-scaled FP8: estimate's default (weights="fp8" is per-tensor)
    est = estimate("MiniMaxAI/MiniMax-M2.5", "h200_sxm", engine="vllm", concurrency=[16], isl=1024, osl=1024,
                   tp=4).iloc[0]
    assert (est["weights"], est["kv_cache"]) == ("fp8_block", "fp8")
    # same formats, step models, engine and steady state; the validation interpolates tabulated steps
    assert est["ttft_mean_s"] == pytest.approx(pred["predicted_ttft_mean_s"], rel=0.01)
    assert est["tpot_mean_s"] == pytest.approx(pred["predicted_tpot_mean_s"], rel=0.01)


def test_closed_loop_identities_and_calibration_effect():
    kw = {"tp": 4, "weights": "fp8"}
    cal = estimate("llama-3.1-70b", "h200-sxm", engine="vllm", concurrency=[1, 8, 64], isl=1024, osl=512, **kw)
    pre = estimate("llama-3.1-70b", "h200-sxm", engine="vllm-preset", concurrency=[1, 8, 64], isl=1024, osl=512,
                   **kw)
    for out in (cal, pre):
        assert out["e2e_mean_s"].to_numpy() == pytest.approx(out["ttft_mean_s"] + 511 * out["tpot_mean_s"])
        assert (out["requests_per_s"] * out["e2e_mean_s"]).to_numpy() == pytest.approx([1, 8, 64])
        assert out["output_tokens_per_s_per_device"].to_numpy() == pytest.approx(out["output_tokens_per_s"] / 4)
        assert np.all(np.diff(out["tpot_mean_s"]) > 0)
    # the fitted engine adds the request overhead outside the engine (≥ 1 ms by its bounds)
    assert np.all(cal["ttft_mean_s"] > pre["ttft_mean_s"])
    assert set(cal["engine_calibration"]) == {"calibrated"} and set(cal["mode"]) == {"agg"}
    assert "fitted terms" in cal["engine"][0] and "uncalibrated" in pre["engine"][0]


def test_disaggregated_estimate():
    out = estimate("deepseek-ai/DeepSeek-R1", "gb200", engine="trtllm", concurrency=[64, 512], isl=8192, osl=1024,
                   tp=8, ep=8, weights="fp4", prefill=PrefillPool(tp=4, ep=4, workers=2, decode_workers=1))
    assert set(out["mode"]) == {"disagg"} and set(out["devices"]) == {8 + 2 * 4}
    assert np.all(np.isfinite(out[["ttft_mean_s", "tpot_mean_s"]].to_numpy()))
    assert out["ttft_mean_s"].iloc[1] > out["ttft_mean_s"].iloc[0] and out["tpot_mean_s"].iloc[1] > out["tpot_mean_s"].iloc[0]


@pytest.mark.parametrize("kwargs,match", [
    ({"engine": "tgi"}, "unknown engine 'tgi'"),
    ({"concurrency": [0]}, "concurrency"),
    ({"isl": 0}, "isl"),
    ({"model": "lama-3.1-70b"}, "did you mean 'llama-3.1-70b'"),
    ({"tp": 1, "weights": "bf16", "hardware": "h100-sxm"}, "do not fit"),
    ({"hardware": "h300-sxm"}, "unknown hardware 'h300-sxm'; did you mean"),
    ({"ep": 4}, "dense"),
    ({"dp_attention": 4, "concurrency": [2]}, "concurrency: expected numbers >= 4"),
    ({"osl": 1}, "osl: expected an integer >= 2"),
    ({"isl": 200_000}, "exceeds llama-3.1-70b's context"),
    ({"prefill": PrefillPool(workers=0)}, "prefill.workers"),
    ({"calibration": "/nonexistent/engines.yaml"}, "file not found"),
    ({"rate": [2.0]}, "not both"),
])
def test_estimate_errors(kwargs, match):
    args = {"model": "llama-3.1-70b", "hardware": "h200-sxm", "engine": "vllm", "concurrency": [8],
            "isl": 1024, "osl": 256, "tp": 4, "weights": "fp8"}
    args.update(kwargs)
    with pytest.raises(PerfmodelError, match=match):
        estimate(args.pop("model"), args.pop("hardware"), **args)


def test_engine_profile_values_are_checked_against_their_bounds(tmp_path):
    bad = tmp_path / "engines.yaml"
    bad.write_text("kind: engine_calibration\nengines:\n  vllm:\n    small_m_tactic: 1.5\n")
    with pytest.raises(PerfmodelError, match=r"engines.vllm.small_m_tactic: must be a number within \[0, 1\]"):
        estimate("llama-3.1-8b", "h100-sxm", engine="vllm", concurrency=[8], isl=1024, osl=256, calibration=str(bad))


def test_estimate_reports_what_binds():
    out = estimate("llama-3.1-70b", "h100-sxm", engine="vllm", concurrency=[8, 2048], isl=1024, osl=8192, tp=4,
                   weights="fp8")
    assert out["limited_by"].tolist() == ["clients", "kv_cache"]
    assert out["decode_batch_mean"].iloc[0] == pytest.approx(8, rel=0.05) and out["decode_batch_mean"].iloc[1] < 2048


def test_cli_json(capsys):
    assert main(["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "sglang",
                 "--concurrency", "1,16", "--isl", "1024", "--osl", "256", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine_calibration"] == "calibrated" and out["mode"] == "agg" and len(out["points"]) == 2
    with pytest.raises(SystemExit) as info:  # refused while parsing the flags
        main(["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "sglang",
              "--concurrency", "4", "--isl", "1024", "--osl", "0"])
    assert info.value.code == 2 and "--osl: must be a whole number in [1," in capsys.readouterr().err
    # pool options without --prefill-workers would be silently ignored: refused
    assert main(["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "sglang",
                 "--concurrency", "4", "--isl", "1024", "--osl", "64", "--decode-workers", "2"]) == 2
    assert "--decode-workers: P/D pool options need --prefill-workers" in capsys.readouterr().err
