"""Attention–FFN split: hand-computed decode steps, the article's round-trip example, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_deployment_helpers import (
    H,
    _write_tiny_config,
    attention_layer,
    ffn_layer,
    head,
    split_dep,
)

import perfmodel as pm
from perfmodel.deployment import (
    ExchangeLink,
    offload_analysis,
    pipelined_layers_time,
    predict_deployment,
    split_step,
)
from perfmodel.testing import tiny_model


def test_tiny_config_matches_testing_helper(tmp_path):
    _write_tiny_config(tmp_path / "t.json", 2)
    spec, ref = pm.load_model(str(tmp_path / "t.json")), tiny_model()
    for f in ("hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim", "intermediate_size"):
        assert getattr(spec, f) == getattr(ref, f)


def test_split_tpot_by_hand_two_layers(tmp_path):
    """2 layers, α = 3 µs, B = 100 GB/s: TPOT = Σ attention + Σ FFN + head + 2L(α + T h b_a / B)."""
    b, isl, osl, alpha, bw = 4, 100, 21, 3e-6, 100e9
    c = isl + 1 + (osl - 2) / 2  # step time is linear in context: Simpson = the midpoint value
    expected = 2 * attention_layer(b, c) + 2 * ffn_layer(b) + head(b) + 2 * 2 * (alpha + b * H * 2 / bw)
    p = predict_deployment(split_dep(tmp_path, alpha, bw), isl=isl, osl=osl, batch=b)
    assert float(p.tpot_s) == pytest.approx(expected, rel=1e-9)
    assert float(p.comm_s_per_token) == pytest.approx(2 * 2 * (alpha + b * H * 2 / bw), rel=1e-9)
    assert float(p.kv_transfer_s) == 0.0 and p.mode == "af-split"


def test_split_micro_batches_by_hand(tmp_path):
    """n = 2 micro-batches: max(resource bound + fill/drain, dependency chain + stagger)."""
    b, isl, osl, alpha, bw, n, L = 8, 100, 21, 3e-6, 1e9, 2, 2
    c = isl + 1 + (osl - 2) / 2
    a, f = attention_layer(b / n, c), ffn_layer(b / n)
    occ = (b / n) * H * 2 / bw
    lat = alpha + occ
    busiest = max(a, f, occ)
    r = a + f + 2 * lat
    expected = max(n * L * busiest + r - busiest, L * r + (n - 1) * busiest) + head(b)
    p = predict_deployment(split_dep(tmp_path, alpha, bw, micro_batches=n), isl=isl, osl=osl, batch=b)
    assert float(p.tpot_s) == pytest.approx(expected, rel=1e-9)


def test_pipelined_rule_reduces_to_plain_sum():
    a, f, lat, occ = 3e-6, 5e-6, 2e-6, 1e-6
    assert pipelined_layers_time(a, f, lat, occ, 80, 1) == pytest.approx(80 * (a + f + 2 * lat), rel=1e-12)
    assert pipelined_layers_time(a, f, lat, occ, 80, 4) >= 80 * (a + f + 2 * lat)  # the chain still binds


@pytest.mark.parametrize(("alpha_us", "expected_ms"), [(5.0, 0.8), (25.0, 4.0)])
def test_article_80_round_trips(tmp_path, alpha_us, expected_ms):
    """80 dependent round trips per token at 10 µs (α = 5 µs per message) add 0.8 ms; at 50 µs, 4 ms."""
    dep = split_dep(tmp_path, alpha=alpha_us * 1e-6, bandwidth=1e300, layers=80)
    p = predict_deployment(dep, isl=128, osl=16, batch=1)
    assert float(p.comm_s_per_token) == pytest.approx(expected_ms * 1e-3, rel=1e-9)
    free = predict_deployment(split_dep(tmp_path, alpha=0.0, bandwidth=1e300, layers=80), isl=128, osl=16, batch=1)
    assert float(p.tpot_s - free.tpot_s) == pytest.approx(expected_ms * 1e-3, rel=1e-6)


def test_split_with_free_link_equals_aggregated_on_one_device(tmp_path):
    """Same hardware, one device each, free link: the split step is the aggregated step."""
    dep = split_dep(tmp_path, alpha=0.0, bandwidth=1e300)
    agg = {"model": dep["model"], "efficiency": "datasheet", "pools": {"gpu": dep["pools"]["gpu"]}}
    b, i, o = np.array([1, 3, 16]), np.array([10, 200, 1000]), np.array([2, 40, 300])
    s, a = predict_deployment(dep, i, o, b), predict_deployment(agg, i, o, b)
    np.testing.assert_allclose(s.tpot_s, a.tpot_s, rtol=1e-12)
    np.testing.assert_allclose(s.ttft_s, a.ttft_s, rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(alpha=st.floats(0.0, 1e-4), extra=st.floats(1e-9, 1e-4), bw=st.floats(1e8, 1e13),
       batch=st.integers(1, 256), n=st.integers(1, 4), ctx=st.floats(1.0, 8192.0))
def test_raising_alpha_never_lowers_the_step(alpha, extra, bw, batch, n, ctx):
    sm = pm.StepModel(tiny_model(), pm.testing.make_accelerator(), efficiency="datasheet")
    t0 = split_step(sm, sm, ExchangeLink(bw, alpha), batch, ctx, 1, 1, n).total
    t1 = split_step(sm, sm, ExchangeLink(bw, alpha + extra), batch, ctx, 1, 1, n).total
    t2 = split_step(sm, sm, ExchangeLink(bw * 2.0, alpha), batch, ctx, 1, 1, n).total
    assert t1 >= t0 and t2 <= t0


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 512), ctx=st.floats(1.0, 32768.0), n_attn=st.sampled_from([1, 2, 4, 8]),
       n_ffn=st.sampled_from([1, 8, 64]))
def test_free_link_reduces_to_compute_on_the_two_pools(batch, ctx, n_attn, n_ffn):
    model = tiny_model()
    attn = pm.StepModel(model, "h100-sxm", tp=1, dp_attention=n_attn, efficiency="datasheet")
    ffn = pm.StepModel(model, "groq-lp30", tp=1, dp_attention=n_ffn, weights="fp8", efficiency="datasheet")
    step = split_step(attn, ffn, ExchangeLink(np.inf, 0.0), batch, ctx, n_attn, n_ffn, 1)
    shape = pm.core.ops.StepShape.make(n_decode=batch, context=ctx)
    expected = (attn.breakdown_part(shape, "attention").total + ffn.breakdown_part(shape, "ffn").total
                + attn.breakdown_part(shape, "head").total)
    assert float(step.total) == pytest.approx(float(expected), rel=1e-12)
    assert float(step.exchange_exposed) == 0.0


def test_exchange_uses_the_link_not_the_rack_scale_up(tmp_path):
    """The LPU pool's scale-up (C2C, 1.25 TB/s per chip) does not set the GPU↔LPU rate."""
    slow, fast = split_dep(tmp_path, 0.0, 1e9), split_dep(tmp_path, 0.0, 1e12)
    ps, pf = predict_deployment(slow, 100, 8, 64), predict_deployment(fast, 100, 8, 64)
    assert float(ps.comm_s_per_token) == pytest.approx(2 * 2 * 64 * H * 2 / 1e9, rel=1e-9)
    assert float(pf.comm_s_per_token) == pytest.approx(2 * 2 * 64 * H * 2 / 1e12, rel=1e-9)


def test_offload_analysis_verdict_matches_offload_pays(tmp_path):
    dep = split_dep(tmp_path, alpha=1e-3, bandwidth=1e9)  # a terrible link: the split cannot pay
    oa = offload_analysis(dep, isl=100, osl=10, batch=[1, 64])
    assert not np.any(oa.pays)
    np.testing.assert_array_equal(oa.pays, pm.offload_pays(oa.t_local_ffn_s, oa.t_remote_ffn_s, oa.t_comm_s,
                                                           oa.overlap))
    free = offload_analysis(split_dep(tmp_path, alpha=0.0, bandwidth=1e300), isl=100, osl=10, batch=4)
    assert float(free.t_comm_s) == 0.0
    with pytest.raises(pm.ConfigError, match="split"):
        offload_analysis({"model": dep["model"], "pools": {"gpu": dep["pools"]["gpu"]}}, 100, 10, 1)
