"""Invariants of the cost model, checked with hypothesis (1000 cases each; those over ~5 s in the slow tier)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import perfmodel as pm
from perfmodel.core.efficiency import Efficiency
from perfmodel.core.ops import StepShape
from perfmodel.modelspec.derived import params_total
from perfmodel.testing import make_accelerator, tiny_model

N = 1000
MODEL = tiny_model()
# A profile with non-trivial efficiencies and overheads, so the invariants hold beyond the pure roofline
EFF = Efficiency(gemm_compute={"default": 0.7}, gemm_m_half=16.0, memory=0.85, attention_compute=0.5,
                 attention_memory=0.8, kernel_overhead=3e-6, collective_alpha=5e-6,
                 collective_bandwidth=0.8, step_overhead=1e-4, name="test")
batches = st.integers(min_value=1, max_value=512)
lengths = st.integers(min_value=1, max_value=32768)
factors = st.floats(min_value=1.0, max_value=100.0)
efficiencies = st.sampled_from(["datasheet", EFF])


def _predict(hw, batch, isl, osl, eff, model=MODEL, **kw):
    return pm.predict(model, hw, isl=isl, osl=osl, batch=batch, efficiency=eff, **kw)


@settings(max_examples=N, deadline=None)
@given(batch=batches, isl=lengths, osl=lengths)
def test_tpot_is_at_least_bytes_over_bandwidth_and_flops_over_peak(batch, isl, osl):
    bw, peak = 2e12, 500e12
    hw = make_accelerator(bandwidth="2 TB/s", bf16="500 TFLOP/s")
    p = _predict(hw, batch, isl, osl, "datasheet")
    embed = MODEL.vocab_size * MODEL.hidden_size
    matrix_params = params_total(MODEL) - embed  # every non-embedding weight is read each step
    assert p.tpot_s >= matrix_params * 2 / bw * (1 - 1e-12)
    assert p.tpot_s >= 2 * batch * matrix_params / peak * (1 - 1e-12)


@pytest.mark.slow
@settings(max_examples=N, deadline=None)
@given(batch=batches, isl=lengths, osl=lengths, fb=factors, fc=factors, eff=efficiencies)
def test_more_bandwidth_or_flops_is_never_slower(batch, isl, osl, fb, fc, eff):
    base = make_accelerator(bandwidth=2e12, bf16=5e14)
    faster = make_accelerator(bandwidth=2e12 * fb, bf16=5e14 * fc)
    a, b = _predict(base, batch, isl, osl, eff), _predict(faster, batch, isl, osl, eff)
    assert b.ttft_s <= a.ttft_s * (1 + 1e-12)
    assert b.tpot_s <= a.tpot_s * (1 + 1e-12)


@pytest.mark.slow
@settings(max_examples=N, deadline=None)
@given(batch=batches, extra=st.integers(1, 512), context=lengths, chunk=st.integers(0, 8192),
       eff=efficiencies, tp=st.sampled_from([1, 2, 4]))
def test_larger_batch_never_lowers_step_time(batch, extra, context, chunk, eff, tp):
    sm = pm.StepModel(MODEL, make_accelerator(), tp=tp, efficiency=eff)
    small = sm.step_time(n_decode=batch, mean_context=context, prefill_tokens=chunk)
    large = sm.step_time(n_decode=batch + extra, mean_context=context, prefill_tokens=chunk)
    assert large >= small * (1 - 1e-12)


@pytest.mark.parametrize("eff", ["datasheet", EFF], ids=["datasheet", "profile"])
@pytest.mark.parametrize(("batch", "isl", "osl"), [(1, 1, 1), (1, 128, 2), (8, 1000, 37), (64, 4096, 300)])
def test_e2e_is_the_prefill_plus_each_decode_step(batch, isl, osl, eff):
    """E2E against the request's steps added one by one: the batch's prefill (which gives the first
    token), then OSL − 1 decode steps at contexts ISL+1 … ISL+OSL−1. ``predict`` gets there another way
    (TPOT by Simpson's rule over the contexts, E2E = TTFT + (OSL − 1)·TPOT); decode time is linear in the
    context here (no sliding window, no KV offload), so the two agree to rounding."""
    hw = make_accelerator()
    sm = pm.StepModel(MODEL, hw, efficiency=eff)
    contexts = np.arange(isl + 1, isl + osl, dtype=float)
    prefill = float(sm.breakdown(StepShape.make(n_prefill=batch, chunk=isl)).total)
    decode = sum(float(sm.breakdown(StepShape.make(n_decode=batch, context=c)).total) for c in contexts)
    p = _predict(hw, batch, isl, osl, eff)
    assert float(p.ttft_s) == pytest.approx(prefill, rel=1e-12)
    assert float(p.e2e_s) == pytest.approx(prefill + decode, rel=1e-9)
    assert decode > 0 or osl == 1


@pytest.mark.slow
@settings(max_examples=N, deadline=None)
@given(batch=batches, isl=lengths, osl=lengths, bw_gb=st.floats(100, 20000), cap_gb=st.floats(1, 500))
def test_results_do_not_depend_on_the_units_inputs_were_written_in(batch, isl, osl, bw_gb, cap_gb):
    decimal = make_accelerator(bandwidth=f"{bw_gb} GB/s", capacity=f"{cap_gb} GB", bf16="989 TFLOP/s")
    tera = make_accelerator(bandwidth=f"{bw_gb / 1000} TB/s", capacity=f"{cap_gb * 1e9} B",
                            bf16="0.989 PFLOP/s")
    binary = make_accelerator(bandwidth=f"{bw_gb * 1e9 / 2**30} GiB/s", capacity=f"{cap_gb * 1e9 / 2**20} MiB",
                              bf16="989e12 FLOP/s")
    ref = _predict(decimal, batch, isl, osl, EFF)
    for other in (tera, binary):
        p = _predict(other, batch, isl, osl, EFF)
        np.testing.assert_allclose(p.tpot_s, ref.tpot_s, rtol=1e-9)
        np.testing.assert_allclose(p.ttft_s, ref.ttft_s, rtol=1e-9)
        assert bool(p.fits) == bool(ref.fits) or abs(p.memory_capacity_bytes / ref.memory_capacity_bytes - 1) < 1e-9
