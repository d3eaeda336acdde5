"""Prediction machinery of perfmodel.validation: metrics, step-time tables, steady-state settings, fit."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from perfmodel.calibration.engine_fit import INTERIOR_START, _constrained, folds
from perfmodel.engine.calibration import EngineCalibration, load_profile, presets, profile_from_dict
from perfmodel.engine.engine import Engine
from perfmodel.serving import load_engine, steady_state
from perfmodel.serving.waves import wave_wait
from perfmodel.validation.metrics import add_errors, error_stats, pct_error, summarize
from perfmodel.validation.predict import STEADY_STATE_ITERATIONS
from perfmodel.validation.stepmodels import StepModelCache
from perfmodel.validation.surrogate import RowTables, build_tables


def test_pct_error_and_stats_by_hand():
    assert pct_error([110.0, 90.0], [100.0, 100.0]).tolist() == [10.0, -10.0]
    s = error_stats([10.0, -20.0, 30.0, np.nan])
    assert s == {"n": 3, "median_abs_pct_error": 20.0, "p90_abs_pct_error": pytest.approx(28.0),
                 "bias_pct": 10.0}
    assert error_stats([np.nan])["n"] == 0


def test_summary_shape_and_anomalies_left_out():
    df = pd.DataFrame({"predicted_tpot_mean_s": [1.1, 2.0, 9.0], "measured_tpot_mean_s": [1.0, 2.0, 1.0],
                       "predicted_ttft_mean_s": [1.0, 1.0, 1.0], "measured_ttft_mean_s": [1.0, 0.5, 1.0],
                       "system": ["a", "b", "b"], "model": "m", "mode": "agg", "backend": "x",
                       "anomaly": ["", "", "tpot_above_ceiling: ..."]})
    skipped = pd.DataFrame({"reason": ["disagg: no workers", "unknown model: z"]})
    s = summarize(add_errors(df), skipped, rows=5)
    assert (s["rows"], s["predicted"], s["skipped"], s["anomalous"], s["scored"]) == (5, 3, 2, 1, 2)
    assert s["skipped_reasons"] == {"disagg": 1, "unknown model": 1}
    assert s["tpot"]["median_abs_pct_error"] == pytest.approx(5.0)
    assert set(s["by"]) == {"system", "model", "mode", "backend"}
    assert s["by"]["system"]["b"]["ttft"]["bias_pct"] == pytest.approx(100.0)


@pytest.fixture(scope="module")
def llama_rows():
    cache = StepModelCache("calibrated")
    sm = cache.get(("meta-llama/Llama-3.1-70B", "h200-sxm", 4, 1, 1, 1, 0, "fp8", "fp8", "fp8"))
    c = np.array([1.0, 8.0, 64.0, 256.0, 16.0, 200.0])
    i = np.array([1024.0, 8192.0, 1024.0, 2048.0, 15000.0, 128.0])
    o = np.array([1024.0, 1024.0, 8192.0, 256.0, 500.0, 128.0])
    return sm, c, i, o


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_tables_reproduce_the_exact_steady_state(llama_rows, engine):
    sm, c, i, o = llama_rows
    served = Engine.load(engine)   # the fitted engine: its step terms enter both, once
    eng = served.profile
    exact = steady_state(sm, c, i, o, engine=served)
    tables = RowTables(build_tables(sm, i, o, c, np.maximum(i, eng.max_num_batched_tokens)),
                       sm.kv_capacity_tokens).adjusted(served.terms)
    fast = steady_state(tables, c, i, o, engine=served, iterations=STEADY_STATE_ITERATIONS)
    assert np.max(np.abs(fast.tpot_mean_s / exact.tpot_mean_s - 1)) < 0.01
    assert np.max(np.abs(fast.ttft_mean_s / exact.ttft_mean_s - 1)) < 0.02


def test_tables_refuse_points_outside_their_contract(llama_rows):
    sm, c, i, o = llama_rows
    tables = RowTables(build_tables(sm, i, o, c, np.maximum(i, 8192.0)))
    with pytest.raises(ValueError, match="mean context"):
        tables.step_time(c, i + 1.0, 0.0, 0.0)


def test_small_m_variant_only_for_fp4_with_an_untuned_small_m_table():
    from perfmodel.core.efficiency import profile_for, small_m_variant

    b200 = profile_for("b200")
    v = small_m_variant(b200, "fp4")
    assert v.op("gemm.fp4")["m_half"] == 0.0 and b200.op("gemm.fp4")["m_half"] > b200.op("gemm.fp8")["m_half"]
    assert {k: x for k, x in v.op("gemm.fp4").items() if k != "m_half"} == \
        {k: x for k, x in b200.op("gemm.fp4").items() if k != "m_half"}
    assert v.op("gemm.fp8") == b200.op("gemm.fp8")
    assert small_m_variant(b200, "fp8") is None and small_m_variant(b200, "bf16") is None
    assert small_m_variant(profile_for("h200-sxm"), "fp4") is None   # no FP4 shape terms on Hopper


def test_small_m_share_moves_decode_steps_to_the_variant():
    key = ("meta-llama/Llama-3.1-70B", "b200", 1, 1, 1, 1, 0, "nvfp4", "nvfp4", "fp8")
    cache = StepModelCache("calibrated")
    sm, alt = cache.get(key), cache.small_m_variant(key)
    assert cache.small_m_variant(key[:-3] + ("fp8", "fp8", "fp8")) is None
    c, i, o = np.array([4.0, 64.0]), np.array([1024.0, 1024.0]), np.array([1024.0, 1024.0])
    tab = build_tables(sm, i, o, c, np.array([8192.0, 8192.0]), small_m_model=alt)
    n, cbar = np.array([4.0, 64.0]), i + o / 2
    base = RowTables(tab).step_time(n, cbar, 0.0)
    assert RowTables(tab).adjusted(EngineCalibration("vllm", 0.0, 0.0)).step_time(n, cbar, 0.0) == pytest.approx(base)
    full = RowTables(tab).adjusted(EngineCalibration("vllm", 0.0, 0.0, small_m_tactic=1.0)).step_time(n, cbar, 0.0)
    assert full == pytest.approx(alt.step_time(n, cbar, 0.0), rel=0.01)
    assert np.all(full < 0.9 * base)   # the untuned FP4 table is far from the weight-streaming bound
    half = RowTables(tab).adjusted(EngineCalibration("vllm", 0.0, 0.0, small_m_tactic=0.5)).step_time(n, cbar, 0.0)
    assert half == pytest.approx((base + full) / 2)
    with pytest.raises(ValueError, match="small_m"):
        RowTables(tab).adjusted(EngineCalibration("vllm", 0.0, 0.0, small_m_tactic=1.5))


def test_wave_wait_by_hand():
    class Flat:
        def step_time(self, n, c, p, q):
            return np.full(np.shape(p), 0.1)

    # 8 prompts of 1024 tokens, budget 2048: 2 per step, 4 steps; mean wait (4 - 1)/2 steps of 0.1 + 0.01 s
    eng = load_engine("vllm", max_num_batched_tokens=2048, step_overhead=0.01, seq_overhead=0.0)
    w = wave_wait(Flat(), np.array([8.0, 1.0]), np.array([1024.0, 1024.0]), eng)
    assert w.tolist() == pytest.approx([1.5 * 0.11, 0.0])
    # two attention-DP schedulers prefill 4 prompts per step: (2 - 1)/2 steps
    assert wave_wait(Flat(), 8.0, 1024.0, eng, schedulers=2) == pytest.approx(0.5 * 0.11)
    # a 5000-token prompt in 3 chunk steps of <= 2048 tokens, one prompt per step, 3 prompts
    assert wave_wait(Flat(), 3.0, 5000.0, eng) == pytest.approx(1.0 * 3 * 0.11)


def test_engine_profile_round_trip_and_errors():
    data = {"kind": "engine_calibration", "engines": {"vllm": {"step_overhead": 0.002, "sync_fraction": 0.5}}}
    cal = profile_from_dict(data, "test")["vllm"]
    assert cal.step_overhead == 0.002 and cal.sync_fraction == 0.5
    assert cal.seq_overhead == presets()["vllm"].seq_overhead
    assert cal.engine().step_overhead == 0.002
    with pytest.raises(ValueError, match="unknown field"):
        profile_from_dict({"kind": "engine_calibration", "engines": {"vllm": {"typo": 1}}}, "test")
    with pytest.raises(KeyError):
        load_profile("no-such-profile")


def test_folds_cover_every_row_once():
    rows = pd.DataFrame({"model": list("aabbcc"), "system": list("xyxyxy"), "backend": "v", "tp": 1,
                         "pp": 1, "dp": 1, "ep": 1, "weights": "fp8"})
    for scheme in ("kfold", "system", "model"):
        masks = [m for _, m in folds(rows, scheme, k=3)]
        assert np.array_equal(np.sum(masks, axis=0), np.ones(6))
    with pytest.raises(ValueError):
        folds(rows, "bogus")


def test_lockstep_share_fitted_only_where_a_prefill_pool_has_attention_dp():
    # a backend whose P/D rows all prefill on one rank (or that has none) keeps the preset 0
    def problem(*ranks):
        batches = [SimpleNamespace(prefill_schedulers=np.array(r, dtype=float)) for r in ranks]
        return SimpleNamespace(disagg={"trtllm": batches} if batches else {})

    names = ("sync_fraction", "prefill_dp_lockstep")
    assert _constrained(problem([1.0, 8.0]), "trtllm", names) == list(names)
    assert _constrained(problem([1.0, 1.0]), "trtllm", names) == ["sync_fraction"]
    assert _constrained(problem(), "trtllm", names) == ["sync_fraction"]
    assert _constrained(problem([4.0]), "vllm", names) == ["sync_fraction"]
    assert INTERIOR_START["prefill_dp_lockstep"] == 0.5
