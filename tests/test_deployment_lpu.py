"""FFN pools in SRAM: fit, flagged overflow, explicit DDR spill, minimum chip counts, power."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from test_deployment_helpers import _write_tiny_config, gpu_spec

import perfmodel as pm
from perfmodel.deployment import (
    load_deployment,
    min_devices_for_weights,
    part_weight_bytes,
    predict_deployment,
)
from perfmodel.deployment.power import pool_power

FFN_BYTES_TINY = 2 * 3 * 64 * 128 * 2.0  # 2 layers x 3 matrices x h x I x bf16


def lpu_spec(tmp_path, sram="50 kB", ddr=None):
    memory = {"sram": {"capacity": sram, "bandwidth": "100 TB/s"}}
    if ddr:
        memory["ddr"] = {"capacity": ddr, "bandwidth": "100 GB/s"}
    data = {"kind": "accelerator", "id": "test-lpu", "name": "LPU", "memory": memory,
            "compute": {"bf16": "500 TFLOP/s"}, "scale_up": {"link": "groq-c2c", "domain": 256}}
    f = tmp_path / ("lpu-ddr.yaml" if ddr else "lpu.yaml")
    f.write_text(yaml.safe_dump(data))
    return str(f)


def tiny_split(tmp_path, lpu, count=1, spill=None, reserve=0.0):
    model = tmp_path / "tiny.json"
    _write_tiny_config(model, 2)
    pool = {"hardware": lpu, "count": count, "reserve": reserve}
    if spill:
        pool["spill"] = spill
    return {"model": str(model), "efficiency": "datasheet",
            "pools": {"gpu": {"hardware": gpu_spec(tmp_path)}, "lpu": pool},
            "placement": {"prefill": "gpu", "decode_attention": "gpu", "decode_ffn": "lpu"},
            "links": {"gpu-lpu": {"bandwidth": "100 GB/s", "alpha": "1 us"}}}


def test_min_devices_tiny_by_hand(tmp_path):
    _write_tiny_config(tmp_path / "t.json", 2)
    model = pm.load_model(str(tmp_path / "t.json"))
    assert part_weight_bytes(model, "bf16", "ffn") == FFN_BYTES_TINY
    assert min_devices_for_weights(model, lpu_spec(tmp_path), "bf16") == math.ceil(FFN_BYTES_TINY / 50e3)
    assert min_devices_for_weights(model, lpu_spec(tmp_path), "bf16", reserve=0.5) == math.ceil(FFN_BYTES_TINY / 25e3)


def test_min_devices_kimi_k2_on_lp30():
    """Kimi-K2's FFN/MoE weights (~1.02 TB at fp8) need ~2,036 LP30 chips: eight 256-chip LPX racks."""
    n = min_devices_for_weights("kimi-k2", "groq-lp30", "fp8")
    assert 2000 <= n <= 2100 and math.ceil(n / 256) == 8
    assert min_devices_for_weights("kimi-k2", "groq-lp30", "fp8", reserve=0.10) > n
    # a GPU holds it in HBM: 288 GB Rubin packages
    assert min_devices_for_weights("kimi-k2", "rubin", "fp8") == math.ceil(part_weight_bytes(
        pm.load_model("kimi-k2"), "fp8") / 288e9)
    with pytest.raises(pm.UnknownNameError, match="memory level"):
        min_devices_for_weights("kimi-k2", "groq-lp30", "fp8", level="hbm")


def test_overflow_is_flagged_never_a_silent_fit(tmp_path):
    p = predict_deployment(tiny_split(tmp_path, lpu_spec(tmp_path)), 100, 8, 4)
    assert not bool(p.fits) and not bool(p.pools["lpu"].memory_fits)
    assert "exceed its usable sram" in str(p.fit_reason) and "at least 2 needed" in str(p.fit_reason)
    with pytest.raises(pm.ConfigError, match="does not fit"):
        predict_deployment(tiny_split(tmp_path, lpu_spec(tmp_path)), 100, 8, 4, strict=True)
    # 2 chips hold the weights (49,152 B each) but not the activation workspace too: still flagged
    assert not bool(predict_deployment(tiny_split(tmp_path, lpu_spec(tmp_path), count=2), 100, 8, 4).fits)
    ok = predict_deployment(tiny_split(tmp_path, lpu_spec(tmp_path), count=3), 100, 8, 4)
    assert bool(ok.fits)


def test_spill_to_ddr_by_hand(tmp_path):
    dep = tiny_split(tmp_path, lpu_spec(tmp_path, ddr="1 GB"), spill="ddr", reserve=0.1)
    p = predict_deployment(dep, 100, 8, 4)
    assert bool(p.pools["lpu"].memory_fits)
    w, cap = FFN_BYTES_TINY, 50e3 * 0.9  # SRAM usable share; the reserve holds the workspace
    overflow = w - cap
    b_eff = w / ((w - overflow) / 100e12 + overflow / 100e9)
    plan = p.details["plan"]
    assert plan.ffn_sm.hardware.memory_bandwidth == pytest.approx(b_eff, rel=1e-12)
    assert any("spill to ddr" in a for a in p.assumptions)
    unspilled = predict_deployment(tiny_split(tmp_path, lpu_spec(tmp_path, ddr="1 GB"), reserve=0.1), 100, 8, 4)
    assert float(p.tpot_s) > float(unspilled.tpot_s)  # DDR reads are slower, never free
    with pytest.raises(pm.ConfigError, match="do not fit the"):
        load_deployment(tiny_split(tmp_path, lpu_spec(tmp_path, ddr="1 kB"), spill="ddr"))
    with pytest.raises(pm.ConfigError, match="no 'ddr' memory level"):
        load_deployment(tiny_split(tmp_path, lpu_spec(tmp_path), count=3, spill="ddr"))  # fits, but no ddr


def test_lpu_pool_uses_per_chip_figures():
    acc = pm.load_accelerator("groq-lp30")
    dep = {"model": "kimi-k2", "precision": {"weights": "fp8", "kv_cache": "fp8"}, "efficiency": "datasheet",
           "pools": {"gpu": {"hardware": "gb200", "count": 8, "tp": 8}, "lpu": {"hardware": "groq-lp30", "count": 2304}},
           "placement": {"prefill": "gpu", "decode_attention": "gpu", "decode_ffn": "lpu"},
           "links": {"gpu-lpu": {"bandwidth": "200 GB/s", "alpha": "5 us"}}}
    plan = predict_deployment(dep, 1024, 16, 1).details["plan"]
    assert plan.ffn_sm.bandwidth == acc.memory["sram"].bandwidth.value == 150e12  # per chip, not 40 PB/s
    assert plan.ffn_sm.peak == 1.2e15 and plan.ffn_sm.parallel.group == 2304
    assert plan.activation_link.bandwidth == 200e9  # not the LPX 640 TB/s scale-up aggregate


def test_power_rules():
    assert pool_power("p", pm.load_accelerator("h100"), 8).watts == 8 * 700
    sysp = pool_power("p", pm.load_accelerator("gb200"), 16, pm.load_hardware("gb200-nvl72"))
    assert sysp.watts == pytest.approx(120e3 * 16 / 72) and "third-party" in sysp.basis
    unknown = pool_power("lpu", pm.load_accelerator("groq-lp30"), 256)
    assert unknown.watts is None and "power_per_device" in unknown.note
    user = pool_power("lpu", pm.load_accelerator("groq-lp30"), 256, power_per_device=300.0)
    assert user.watts == 256 * 300.0 and user.basis == "user"


def test_tokens_per_mw_with_user_power():
    dep = {"model": "llama-3.1-8b", "pools": {"g": {"hardware": "h100", "power_per_device": "1 kW"}}}
    p = predict_deployment(dep, 1024, 64, [1, 8])
    np.testing.assert_allclose(p.output_tokens_per_s_per_mw, p.output_tokens_per_s / 1e-3)
    assert p.config["power_w"] == 1000.0
