"""Time never falls as work grows at fixed hardware: GEMM cost over M for every shipped profile."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.core.costs import gemm_time
from perfmodel.core.efficiency import PROFILE_OF, load_profile
from perfmodel.hardware import load_accelerator

FORMATS = {"bf16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "fp4": "fp4"}


@pytest.mark.parametrize("hardware", sorted(PROFILE_OF))
def test_gemm_time_never_falls_as_m_grows(hardware):
    acc, eff = load_accelerator(hardware), load_profile(PROFILE_OF[hardware])
    rng = np.random.default_rng(0)
    m = np.arange(1, 8193, dtype=float)
    checked = 0
    for fmt, peak in FORMATS.items():
        if peak not in acc.compute or not eff.op(f"gemm.{fmt}"):
            continue
        for _ in range(40):  # random N, K (multiples of 16 up to 64k, as model layers are)
            n, k = (int(x) * 16 for x in rng.integers(1, 4096, size=2))
            t = gemm_time(m, n, k, acc.peak_flops(peak), acc.memory_bandwidth, eff, fmt,
                          0.5 if fmt == "fp4" else 1.0).total
            falls = np.flatnonzero(t[1:] < t[:-1] * (1 - 1e-9))
            assert not falls.size, (fmt, n, k, m[falls[:3]], t[falls[:3]], t[falls[:3] + 1])
            checked += 1
    assert checked >= 80


def test_issue_example_gptj_gb200_fp4():
    """gptj-6b on GB200 TP2 FP4, prefill FFN up-projection (N = 16384 / 2, K = 4096): 94 vs 141 tokens."""
    acc, eff = load_accelerator("gb200"), load_profile("gb200")
    t = gemm_time(np.array([94.0, 141.0]), 8192, 4096, acc.peak_flops("fp4"), acc.memory_bandwidth, eff,
                  "fp4", 0.5).total
    assert t[1] >= t[0]


MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mistral-7b", "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b"]


def test_predict_never_gets_faster_as_batch_isl_or_osl_grow():
    """Random valid configurations on every profiled accelerator: TTFT and TPOT are non-decreasing in
    batch, ISL and OSL (relative tolerance 1e-9); before the monotone wave form 162 of 2,255 draws
    (seed 1) fell as the batch grew."""
    import perfmodel as pm
    from perfmodel.errors import PerfmodelError

    rng = np.random.default_rng(7)
    checked = 0
    while checked < 120:
        model, hw = str(rng.choice(MODELS)), str(rng.choice(sorted(PROFILE_OF)))
        tp = int(rng.choice([1, 2, 4, 8]))
        weights = str(rng.choice(["bf16", "fp8", "fp4"] if hw in ("b200", "gb200") else ["bf16", "fp8"]))
        b, i, o = (np.sort(rng.integers(lo, hi, 8)) for lo, hi in ((1, 257), (16, 8192), (2, 2048)))
        try:
            for grid in ({"batch": b, "isl": int(i[0]), "osl": int(o[0])},
                         {"batch": int(b[0]), "isl": i, "osl": int(o[0])},
                         {"batch": int(b[0]), "isl": int(i[0]), "osl": o}):
                p = pm.predict(model, hw, tp=tp, weights=weights, **grid)
                for t in (np.ravel(p.ttft_s), np.ravel(p.tpot_s)):
                    assert np.all(t[1:] >= t[:-1] * (1 - 1e-9)), (model, hw, tp, weights, grid, t)
        except PerfmodelError:  # an invalid layout for this model (tp does not divide the heads ...)
            continue
        checked += 1


def _non_decreasing(t: np.ndarray, axis: int = -1) -> bool:
    t = np.moveaxis(np.asarray(t, dtype=float), axis, -1)
    return bool(np.all(t[..., 1:] >= t[..., :-1] * (1 - 1e-9)))


@pytest.mark.parametrize("hardware", sorted(PROFILE_OF))
def test_attention_and_moe_time_never_fall_as_work_grows(hardware):
    """Decode attention (GQA kernel-level and fallback forms, MLA) grows with sequences and KV length,
    prefill attention with sequences and prompt length, fused MoE with tokens (routed pairs and hit
    experts growing with them), for random shapes on every shipped profile."""
    from perfmodel.core.attention_costs import attention_decode_time, attention_prefill_time
    from perfmodel.core.costs import moe_time

    acc, eff = load_accelerator(hardware), load_profile(PROFILE_OF[hardware])
    peak, bw = acc.peak_flops("bf16"), acc.memory_bandwidth
    rng = np.random.default_rng(3)
    grid = np.arange(1, 1025, dtype=float)
    for _ in range(30):
        kv_heads = int(rng.choice([1, 2, 4, 8]))
        heads, d = kv_heads * int(rng.choice([1, 2, 4, 8, 16, 64])), int(rng.choice([64, 128]))
        length = float(rng.integers(16, 131072))
        for family, width, dq, dv in (("attention_decode", 2 * kv_heads * d, d, d),
                                      ("attention_decode.kernel", 2 * kv_heads * d, d, d),
                                      ("mla_decode", 576, 576, 512)):
            streams = 1 if family == "mla_decode" else kv_heads
            by_batch = attention_decode_time(grid, length, heads, width, dq, dv, 2.0, peak, bw, eff,
                                             kv_streams=streams, family=family).total
            by_len = attention_decode_time(float(rng.integers(1, 257)), grid * 64, heads, width, dq, dv, 2.0,
                                           peak, bw, eff, kv_streams=streams, family=family).total
            assert _non_decreasing(by_batch) and _non_decreasing(by_len), (family, heads, kv_heads, d, length)
        for family in ("attention_prefill", "mla_prefill"):
            by_batch = attention_prefill_time(grid[:256], length / 16, heads, kv_heads, d, d, peak, bw, eff,
                                              family=family).total
            by_isl = attention_prefill_time(float(rng.integers(1, 65)), grid * 16, heads, kv_heads, d, d, peak,
                                            bw, eff, family=family).total
            assert _non_decreasing(by_batch) and _non_decreasing(by_isl), (family, heads, kv_heads, d, length)
        experts, top_k = int(rng.choice([8, 64, 128, 256])), int(rng.choice([1, 2, 4, 8]))
        hidden, inter = int(rng.choice([2048, 4096, 7168])), int(rng.choice([256, 768, 2048, 14336]))
        tokens = np.arange(1, 8193, dtype=float)
        routed = tokens * top_k
        hit = experts * (1.0 - (1.0 - 1.0 / experts) ** routed)   # expected experts receiving a token
        for fmt in ("bf16", "fp8"):
            if not eff.op(f"moe.{fmt}"):
                continue
            t = moe_time(tokens, routed, hit, hidden, inter, 3, acc.peak_flops(fmt), bw, eff, fmt,
                         2.0 if fmt == "bf16" else 1.0).total
            assert _non_decreasing(t), (fmt, experts, top_k, hidden, inter)
