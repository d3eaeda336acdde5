"""Prefill/decode disaggregation: KV transfer by hand, zero-cost invariants, device ratio."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_deployment_helpers import _write_tiny_config, gpu_spec

import perfmodel as pm
from perfmodel.deployment import ExchangeLink, kv_transfer_time, pd_balance, predict_deployment


def pd_dep(tmp_path, alpha=2e-6, bandwidth=10e9, mode="after_prefill", pre_count=1, dec_count=1):
    model = tmp_path / "tiny.json"
    _write_tiny_config(model, 2)
    return {"model": str(model), "efficiency": "datasheet",
            "pools": {"pre": {"hardware": gpu_spec(tmp_path, "pre"), "count": pre_count},
                      "dec": {"hardware": gpu_spec(tmp_path, "dec"), "count": dec_count}},
            "placement": {"prefill": "pre", "decode": "dec"},
            "links": {"pre-dec": {"bandwidth": bandwidth, "alpha": alpha}},
            "options": {"kv_transfer": mode}}


KV_PER_TOKEN = 2 * 2 * 2 * 16 * 2.0  # layers x (K,V) x kv heads x head_dim x bf16


def test_kv_transfer_by_hand(tmp_path):
    b, isl, osl, alpha, bw = 4, 1000, 32, 2e-6, 10e9
    p = predict_deployment(pd_dep(tmp_path, alpha, bw), isl, osl, b)
    expected = alpha + b * isl * KV_PER_TOKEN / bw
    assert float(p.kv_transfer_s) == pytest.approx(expected, rel=1e-12)
    pre = pm.predict(str(tmp_path / "tiny.json"), str(tmp_path / "pre.yaml"), isl=isl, osl=osl, batch=b,
                     efficiency="datasheet")
    assert float(p.ttft_s) == pytest.approx(float(pre.ttft_s) + expected, rel=1e-12)


def test_layerwise_transfer_exposes_only_the_last_layer_when_the_link_keeps_up(tmp_path):
    b, isl, alpha, bw = 4, 1000, 2e-6, 1e12
    p = predict_deployment(pd_dep(tmp_path, alpha, bw, "layerwise"), isl, 32, b)
    assert float(p.kv_transfer_s) == pytest.approx(alpha + b * isl * KV_PER_TOKEN / 2 / bw, rel=1e-12)
    link = ExchangeLink(1e9, 0.0)
    # slow link: s = 1 ms per layer, p = 0.1 ms per layer, L = 2: exposed 2 s_l - p
    assert float(kv_transfer_time(2e6, link, 2, 2e-4, "layerwise")) == pytest.approx(2e-3 - 1e-4)


@settings(max_examples=20, deadline=None)
@given(b=st.integers(1, 64), isl=st.integers(1, 3585), osl=st.integers(2, 512))  # isl + osl - 1 <= 4096 (context)
def test_pd_with_free_transfer_gives_the_pools_own_times(tmp_path_factory, b, isl, osl):
    tmp = tmp_path_factory.mktemp("pd")
    p = predict_deployment(pd_dep(tmp, 0.0, 1e300), isl, osl, b)
    model, hw = str(tmp / "tiny.json"), str(tmp / "pre.yaml")
    own = pm.predict(model, hw, isl=isl, osl=osl, batch=b, efficiency="datasheet")
    assert float(p.kv_transfer_s) < 1e-290  # bytes / 1e300 B/s
    assert float(p.ttft_s) == pytest.approx(float(own.ttft_s), rel=1e-12)
    assert float(p.tpot_s) == pytest.approx(float(own.tpot_s), rel=1e-12)


def test_prefill_prompts_spread_over_prefill_replicas(tmp_path):
    one = predict_deployment(pd_dep(tmp_path, pre_count=1), 512, 16, 8)
    four = predict_deployment(pd_dep(tmp_path, pre_count=4), 512, 16, 8)
    assert float(four.prefill_s) < float(one.prefill_s)  # 2 prompts per replica instead of 8
    assert four.devices == 5


def test_pd_balance_ratio():
    dep = {"model": "llama-3.1-70b", "precision": {"weights": "fp8", "kv_cache": "fp8"},
           "pools": {"pre": {"hardware": "h200", "count": 8, "tp": 4}, "dec": {"hardware": "h200", "count": 8, "tp": 8}},
           "placement": {"prefill": "pre", "decode": "dec"}, "links": {"pre-dec": "ib-ndr"}}
    bal = pd_balance(dep, isl=[512, 8192], osl=256, batch=32, prefill_batch=1)
    r = bal.prefill_to_decode_devices
    expected = bal.isl * bal.decode_tokens_per_s_per_device / ((bal.osl - 1) * bal.prefill_tokens_per_s_per_device)
    np.testing.assert_allclose(r, expected)
    assert r[1] > r[0]  # longer prompts need relatively more prefill devices
    assert len(bal.to_dataframe()) == 2
