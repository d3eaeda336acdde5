"""SteadyState under its glossary names: hand-computed values, the identities between them, and estimate's
columns being the same numbers (pins the behaviour the field rename must keep)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.engine.engine import Engine
from perfmodel.serving import load_engine, steady_state, steady_state_disagg
from perfmodel.serving.stand_in import ConstantStepModel

NAMES = ("ttft_mean_s", "tpot_mean_s", "e2e_mean_s", "requests_per_s", "output_tokens_per_s",
         "decode_batch_mean", "limited_by")


def _kv_bound():
    """Constant 10 ms steps, no overheads, reserve_full blocks of 32: 1000 + 1000 tokens take 2016, the pool
    holds 50 such requests; 100 and 200 clients queue for them."""
    eng = Engine.load("trtllm-preset", step_overhead=0.0, seq_overhead=0.0)
    model = ConstantStepModel(0.01, kv_capacity_tokens=2016 * 50)
    return steady_state(model, np.array([100.0, 200.0]), 1000, 1000, engine=eng)


def test_kv_bound_case_by_hand():
    """n = 50, TPOT = T, X = n / ((O - 1) T), TTFT = C / X - (O - 1) T, E2E = TTFT + (O - 1) T."""
    d = _kv_bound().as_dict()
    assert list(d) == list(NAMES)
    c, dec = np.array([100.0, 200.0]), 999 * 0.01
    np.testing.assert_allclose(d["decode_batch_mean"], 50.0)
    np.testing.assert_allclose(d["tpot_mean_s"], 0.01)
    np.testing.assert_allclose(d["requests_per_s"], 50.0 / dec)                    # 5.005 requests/s
    np.testing.assert_allclose(d["output_tokens_per_s"], 1000 * 50.0 / dec)
    np.testing.assert_allclose(d["ttft_mean_s"], c / (50.0 / dec) - dec, rtol=1e-9)  # 9.99 s, 29.97 s
    np.testing.assert_allclose(d["e2e_mean_s"], c / (50.0 / dec), rtol=1e-9)
    assert list(d["limited_by"]) == ["kv_cache", "kv_cache"]


@pytest.mark.parametrize("which", ["aggregated", "disaggregated"])
def test_attributes_are_the_output_names(which):
    """Each glossary name is an attribute holding the very array ``as_dict`` gives under that name."""
    if which == "aggregated":
        ss = _kv_bound()
    else:
        s = ConstantStepModel(0.01)
        ss = steady_state_disagg(s, s, 2, 1024, 101, kv_transfer_s=0.005,
                                 prefill_engine=load_engine("vllm", backend=None, step_overhead=0.0,
                                                            seq_overhead=0.0))
        assert float(ss.ttft_mean_s) == pytest.approx(0.015)        # 10 ms prefill step + 5 ms transfer
    for name, value in ss.as_dict().items():
        assert getattr(ss, name) is value, name
    steps = 999 if which == "aggregated" else 100       # O - 1 decode steps
    np.testing.assert_allclose(ss.e2e_mean_s, ss.ttft_mean_s + steps * ss.tpot_mean_s, rtol=1e-12)


def test_estimate_columns_are_the_steady_state():
    """``estimate`` over concurrencies reports the steady state of the same replica under the same names."""
    e = pm.estimate("llama-3.1-8b", "h100-sxm", engine="vllm", isl=512, osl=64, concurrency=[1, 8])
    sm = pm.StepModel("llama-3.1-8b", "h100-sxm", tp=1, weights="bf16", kv_cache="bf16")
    d = steady_state(sm, np.array([1.0, 8.0]), 512, 64, engine="vllm").as_dict()
    for name in ("ttft_mean_s", "tpot_mean_s", "e2e_mean_s", "requests_per_s", "decode_batch_mean"):
        assert e[name].tolist() == pytest.approx(np.asarray(d[name]).tolist(), rel=1e-9), name


@pytest.mark.parametrize("old, new", [("ttft_s", "ttft_mean_s"), ("tpot_s", "tpot_mean_s"), ("e2e_s", "e2e_mean_s"),
                                      ("n_decode", "decode_batch_mean"), ("throughput_rps", "requests_per_s"),
                                      ("throughput_output_tokens_per_s", "output_tokens_per_s")])
def test_old_names_warn_once_and_return_the_same_array(old, new):
    ss = _kv_bound()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(ss, old)
    assert [str(w.message) for w in caught] == [f"SteadyState.{old} is deprecated, use SteadyState.{new}"]
    assert caught[0].category is DeprecationWarning and caught[0].filename == __file__   # the caller's line
    assert value is getattr(ss, new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ss.as_dict():            # the new names do not warn
            getattr(ss, name)
    with pytest.raises(TypeError):
        type(ss)(**{**ss.as_dict(), old: value})   # the old names are not fields
