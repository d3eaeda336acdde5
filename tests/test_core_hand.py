"""Hand-computed cases: one GEMM and one decode step of a tiny dense model, to 1e-9 relative."""

from __future__ import annotations

import pytest

import perfmodel as pm
from perfmodel.core.costs import gemm_time
from perfmodel.core.efficiency import DATASHEET, Efficiency
from perfmodel.testing import make_accelerator, tiny_model


def test_single_gemm_datasheet():
    m, n, k = 4096, 8192, 8192
    t = gemm_time(m, n, k, peak_flops=989e12, bandwidth=3.35e12, eff=DATASHEET, compute="bf16",
                  weight_bytes=2.0).total
    flops = 2 * m * n * k
    data = n * k * 2 + (m * k + m * n) * 2
    assert t == pytest.approx(max(flops / 989e12, data / 3.35e12), rel=1e-9)


def test_single_gemm_with_efficiencies():
    eff = Efficiency(gemm_compute={"bf16": 0.8}, gemm_m_half=32.0, memory=0.9, kernel_overhead=4e-6)
    m, n, k = 16, 4096, 4096
    t = gemm_time(m, n, k, 1e15, 4e12, eff, "bf16", weight_bytes=1.0).total
    eta_c = 0.8 * m / (m + 32.0)
    expected = max(2 * m * n * k / (1e15 * eta_c), (n * k * 1.0 + (m * k + m * n) * 2) / (4e12 * 0.9)) + 4e-6
    assert t == pytest.approx(expected, rel=1e-9)


def _op(flops, data, peak, bw):
    return max(flops / peak, data / bw)


def test_decode_step_of_tiny_dense_model_by_hand():
    model = tiny_model()
    hw = make_accelerator(bandwidth="2 TB/s", bf16="500 TFLOP/s")
    B, L = 4, 100  # sequences, attended tokens
    P, BW = 500e12, 2e12
    h, hd, nq, nkv, inter, vocab = 64, 16, 4, 2, 128, 256
    per_layer = (
        _op(2 * B * (nq + 2 * nkv) * hd * h, (nq + 2 * nkv) * hd * h * 2 + B * ((nq + 2 * nkv) * hd + h) * 2, P, BW)
        + _op(B * 2 * nq * (hd + hd) * L, B * (L * 2 * nkv * hd * 2 + nq * (hd + hd) * 2), P, BW)
        + _op(2 * B * h * nq * hd, h * nq * hd * 2 + B * (h + nq * hd) * 2, P, BW)
        + _op(2 * B * 2 * inter * h, 2 * inter * h * 2 + B * (2 * inter + h) * 2, P, BW)
        + _op(2 * B * h * inter, h * inter * 2 + B * (h + inter) * 2, P, BW)
        + 2 * (8 * h * B + 3 * inter * B) / BW
    )
    once = B * h * 4 / BW + _op(2 * B * vocab * h, vocab * h * 2 + B * (vocab + h) * 2, P, BW) + B * vocab * 8 / BW
    expected = 2 * per_layer + once
    sm = pm.StepModel(model, hw, efficiency="datasheet")
    assert sm.step_time(n_decode=B, mean_context=L) == pytest.approx(expected, rel=1e-9)


def test_prefill_attention_flops_are_causal():
    model = tiny_model()
    hw = make_accelerator(bandwidth="1 PB/s", bf16="1 TFLOP/s")  # compute-bound everywhere
    sm = pm.StepModel(model, hw, efficiency="datasheet")
    S = 50
    t = sm.breakdown(pm.core.ops.StepShape.make(n_prefill=1, chunk=S)).compute["attention"]
    pairs = S * (S + 1) / 2
    assert float(t) == pytest.approx(2 * 2 * 4 * (16 + 16) * pairs / 1e12, rel=1e-9)


def test_sliding_window_caps_attended_pairs():
    from perfmodel.core.ops import windowed_pairs

    assert windowed_pairs(10, None) == 55
    assert windowed_pairs(10, 4) == 4 * 5 / 2 + 6 * 4
    assert windowed_pairs(3, 4) == 6


def test_expected_experts_hit():
    from perfmodel.core.ops import expected_experts_hit

    assert expected_experts_hit(256, 8, 1) == pytest.approx(8.0, rel=1e-12)
    assert expected_experts_hit(256, 8, 10_000) == pytest.approx(256.0, rel=1e-9)
    assert expected_experts_hit(8, 2, 2) == pytest.approx(8 * (1 - 0.75**2), rel=1e-12)
