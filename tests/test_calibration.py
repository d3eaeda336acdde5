"""Calibration profiles, per-op validation and the fit (on the small samples in tests/data/ops)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from perfmodel.calibration import fit_ops, ops_data
from perfmodel.calibration.op_validation import DECODE_KERNEL_FAMILY, predict_table, validate_table
from perfmodel.core.attention_costs import attention_decode_time
from perfmodel.core.costs import OpTime, gemm_time, smooth_max
from perfmodel.core.efficiency import DATASHEET, Efficiency, load_profile

SAMPLES = Path(__file__).parent / "data" / "ops"
PROFILES = Path(__file__).parents[1] / "perfmodel" / "data" / "calibration"
ACCELERATORS = ("h100-sxm", "h200-sxm", "b200", "gb200")
HOPPER = ("h100_sxm", "h200_sxm")
# Held-out median |error| bounds [%]. GEMM and decode attention meet the 10 % target on Blackwell;
# Hopper GQA decode attention with the kernel-level terms (``attention_decode.kernel``: TRT-LLM's
# kernel paths, work units, split-KV) is at 10.1 % H100 and 10.0 % H200 on the full tables, and at
# 17.2 / 20.2 % with the coarser fallback form (no kernel terms). These are regression bounds on the values
# reached, not the target. FULL: the full-table numbers recorded in the profiles' provenance;
# SAMPLE: recomputed here on tests/data/ops (GQA + MLA rows).
GEMM_BOUND = 10.0
DECODE_BOUND_FULL = {"b200": 6.0, "gb200": 6.0, "h100-sxm": 10.8, "h200-sxm": 10.8}
NOKERNEL_DECODE_BOUND_FULL = {"b200": 10.0, "gb200": 10.0, "h100-sxm": 19.0, "h200-sxm": 22.0}
MLA_DECODE_BOUND_FULL = 13.0
# Fused MoE (routed experts): held-out median |error| was 30-39 % (bias -30 to -35 %) with the GEMM
# terms alone; with the fitted moe.<format> terms 12-16 % on the full tables (regression bound).
MOE_BOUND = 17.0
DECODE_BOUND_SAMPLE = {"b200_sxm": 9.0, "gb200": 8.5, "h100_sxm": 10.5, "h200_sxm": 12.5}


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    return {k: ops_data.read_table(k, SAMPLES) for k in ops_data.TABLES}


@pytest.fixture(scope="module")
def calibrated(tables) -> dict[str, pd.DataFrame]:
    return {k: predict_table(v, "calibrated") for k, v in tables.items()}


def _median_abs(df: pd.DataFrame) -> float:
    ok = df["skip_reason"] == ""
    return float(np.median(np.abs(df.loc[ok, "predicted_s"] / df.loc[ok, "latency_s"] - 1.0)) * 100)


@pytest.mark.parametrize("acc", ACCELERATORS)
def test_profile_loads_in_physical_ranges(acc):
    eff = load_profile(acc)
    assert eff.name == acc and "aiconfigurator-core 0.12.0" in eff.source
    assert set(eff.gemm_compute) >= {"bf16", "fp8", "default"}
    assert all(0.2 < v <= 1.0 for v in eff.gemm_compute.values())
    assert 0 <= eff.gemm_m_half <= 4096
    assert 0.3 < eff.memory <= 1.0 and 0.3 < eff.attention_memory <= 1.0
    assert 0.05 < eff.attention_compute <= 1.0
    assert 0.5e-6 < eff.kernel_overhead < 30e-6
    assert 0.5e-6 < eff.collective_alpha < 30e-6 and 0.2 < eff.collective_bandwidth <= 1.0
    assert eff.step_overhead == 0.0
    for fam, terms in eff.op_params.items():
        assert fam.split(".")[0] in {"gemm", "attention_decode", "mla_decode", "attention_prefill",
                                     "mla_prefill", "nccl", "moe"}
        for key in ("compute", "memory", "bandwidth", "compute_fp8"):
            if key in terms:
                assert 0 < terms[key] <= 1.0, (fam, key)
        if "kernel_overhead" in terms:  # a fused MoE block is several kernels (Triton W4A16 on Hopper ≈ 90 µs)
            assert 0.5e-6 < terms["kernel_overhead"] < (120e-6 if fam.startswith("moe.") else 50e-6), fam
        if "overlap" in terms:
            assert 1.0 <= terms["overlap"] <= 20.0
    # one fused-MoE form per GEMM format the tables measure
    assert {"moe.bf16", "moe.fp8", "moe.fp8_block"} <= set(eff.op_params)


@pytest.mark.parametrize("acc", ACCELERATORS)
def test_profile_provenance(acc):
    doc = yaml.safe_load((PROFILES / f"{acc}.yaml").read_text())
    prov = doc["provenance"]
    assert doc["name"] == acc and prov["date"]
    files = prov["data"]["files"]
    assert set(files) == {f"{k}.csv.gz" for k in ops_data.TABLES}
    for f in files.values():
        assert f["train"] + f["test"] == f["rows"] > 0 and len(f["sha256_16"]) == 16
    err = prov["errors_pct"]
    held = {k: v["calibrated"]["test"]["median_abs_pct_error"] for k, v in err.items()}
    assert held["gemm"] <= GEMM_BOUND
    assert held["attention_decode"] <= DECODE_BOUND_FULL[acc]
    fallback = err["attention_decode"]["nokernel"]["test"]["median_abs_pct_error"]
    assert held["attention_decode"] < fallback <= NOKERNEL_DECODE_BOUND_FULL[acc]
    assert held["mla_decode"] <= MLA_DECODE_BOUND_FULL
    assert held["moe"] <= MOE_BOUND
    for kind, v in err.items():  # calibrated beats the datasheet roofline on held-out rows
        assert held[kind] < v["datasheet"]["test"]["median_abs_pct_error"], kind
    # the profile was fitted with the datasheet figures the hardware specs give today
    dev = ops_data.device(acc)
    assert prov["datasheet"]["peaks_flops"] == pytest.approx(dev.peaks, rel=0.02)
    assert prov["datasheet"]["hbm_bandwidth"] == pytest.approx(dev.bandwidth, rel=0.02)


def test_heldout_gemm_error(calibrated):
    test = calibrated["gemm"][calibrated["gemm"]["split"] == "test"]
    for system, g in test.groupby("system"):
        assert _median_abs(g) <= GEMM_BOUND, system


def test_heldout_moe_error(calibrated):
    test = calibrated["moe"][calibrated["moe"]["split"] == "test"]
    for system, g in test.groupby("system"):
        assert _median_abs(g) <= MOE_BOUND, system


def test_heldout_decode_attention_error(calibrated):
    both = pd.concat([calibrated["attention_decode"], calibrated["mla_decode"]])
    test = both[both["split"] == "test"]
    for system, g in test.groupby("system"):
        assert _median_abs(g) <= DECODE_BOUND_SAMPLE[system], system


@pytest.mark.parametrize("kind", ops_data.TABLES)
def test_calibrated_beats_datasheet(tables, kind):
    cal = validate_table(tables[kind], "calibrated", split="test")["latency"]["median_abs_pct_error"]
    raw = validate_table(tables[kind], "datasheet", split="test")["latency"]["median_abs_pct_error"]
    assert cal < raw, (kind, cal, raw)


def test_summary_shape_and_skips(tables):
    df = pd.read_csv(SAMPLES / "gemm.csv.gz").head(50)  # raw rows, edited before tidying
    df.loc[df.index[:3], "dtype"] = "int4_awq"          # unknown format -> skipped, counted
    df.loc[df.index[3:5], "system"] = "tpu_x9"          # no shipped accelerator -> skipped, counted
    s = validate_table(df, "calibrated")
    assert set(s) == {"table", "rows", "predicted", "profiles", "skipped", "skipped_reasons", "latency", "by"}
    assert s["table"] == "gemm" and s["rows"] == 50
    assert s["predicted"] + s["skipped"] == 50 and s["skipped"] == 5
    assert sum(s["skipped_reasons"].values()) == 5
    assert set(s["latency"]) == {"rows", "median_abs_pct_error", "p90_abs_pct_error", "bias_pct"}
    assert {"system", "dtype", "split"} <= set(s["by"])
    h100_fp4 = tables["gemm"][tables["gemm"]["system"] == "h100_sxm"].head(2).assign(dtype="nvfp4")
    s = validate_table(h100_fp4, "calibrated")
    assert s["skipped_reasons"] == {"no fp4 peak on h100-sxm": 2}


def test_table_recognition_and_units(tables):
    for kind, df in tables.items():
        raw = pd.read_csv(SAMPLES / f"{kind}.csv.gz")
        assert ops_data.table_kind(raw) == kind
        assert np.allclose(df["latency_s"], raw["latency_ms"] * 1e-3)
        assert set(df["accelerator"]) <= set(ACCELERATORS)
    assert ops_data.SYSTEM_TO_ACCELERATOR["b200_sxm"] == "b200"
    assert ops_data.DTYPE_TO_COMPUTE["fp8_block"] == "fp8" and ops_data.DTYPE_TO_COMPUTE["nvfp4"] == "fp4"


def test_split_is_deterministic_and_by_shape(tables):
    g = tables["gemm"]
    again = ops_data.read_table("gemm", SAMPLES)
    assert (g["split"].to_numpy() == again["split"].to_numpy()).all()
    assert 0.7 < (g["split"] == "train").mean() < 0.9
    # one shape is on one side on every system
    assert (g.groupby(["m", "n", "k"])["split"].nunique() == 1).all()


@pytest.mark.slow
def test_fit_is_deterministic(tables):
    one = fit_ops.fit_system("gb200", tables, max_rows=200)
    two = fit_ops.fit_system("gb200", tables, max_rows=200)
    assert one == two
    assert one.op("gemm.bf16") and 0 < one.gemm_compute["bf16"] <= 1


def test_costs_extension_is_backward_compatible():
    m, n, k = np.array([1.0, 64.0, 4096.0]), 4096.0, 4096.0
    plain = Efficiency(gemm_compute={"bf16": 0.8}, gemm_m_half=32.0, memory=0.9, kernel_overhead=4e-6)
    t = gemm_time(m, n, k, 1e15, 4e12, plain, "bf16", 2.0)
    flops, data = 2 * m * n * k, n * k * 2 + (m * k + m * n) * 2
    expect = np.maximum(flops / (1e15 * 0.8 * m / (m + 32)), data / (4e12 * 0.9)) + 4e-6
    assert np.allclose(t.total, expect) and math.isinf(t.overlap)
    assert np.allclose(gemm_time(m, n, k, 1e15, 4e12, DATASHEET, "bf16", 2.0).total,
                       np.maximum(flops / 1e15, data / 4e12))
    assert np.allclose(smooth_max([1.0, 3.0], [2.0, 0.0], 1.0), [3.0, 3.0])
    assert np.allclose(OpTime(np.array([1.0]), np.array([1.0]), np.array([0.0]), 2.0).total, [2**0.5])


def test_moe_time_by_hand():
    """The fitted MoE form term by term, and the plain form = one grouped GEMM with two launches."""
    from perfmodel.core.costs import moe_time

    T, R, E, H, inter, m = 64.0, 512.0, 32.0, 4096.0, 1024.0, 3.0
    terms = {"compute": 0.5, "m_half": 16.0, "memory": 0.8, "token_bytes": 10.0, "pair_bytes": 4.0,
             "expert_overhead": 1e-6, "kernel_overhead": 30e-6}
    eff = Efficiency(memory=0.7, kernel_overhead=3e-6, op_params={"moe.fp8": terms,
                                                                  "gemm.bf16": {"kernel_overhead": 2e-6}})
    P, B = 2e15, 4e12
    t = moe_time(T, R, E, H, inter, m, P, B, eff, "fp8", 1.0)
    flops = 2 * R * m * H * inter
    data = E * m * H * inter * 1.0 + R * (2 * H + m * inter) * 2.0
    m_e = R / E
    compute = flops / (P * 0.5 * m_e / (m_e + 16.0))
    memory = data / (B * 0.8)
    serial = H * (T * 10.0 + R * 4.0) / (B * 0.8) + E * 1e-6
    assert t.total == pytest.approx(max(compute, memory) + serial + 30e-6, rel=1e-12)
    # replayed as a CUDA graph the per-block fixed time is capped at two bf16 GEMM launches
    replayed = moe_time(T, R, E, H, inter, m, P, B, eff, "fp8", 1.0, graph_replayed=[True, False])
    assert replayed.total == pytest.approx([t.total - 30e-6 + 4e-6, t.total], rel=1e-12)
    # nothing routed: no time at all
    assert moe_time(T, 0.0, 0.0, H, inter, m, P, B, eff, "fp8", 1.0).total == 0.0
    # without moe terms: the grouped-GEMM roofline of the format (here the scalar fields)
    plain = moe_time(T, R, E, H, inter, m, P, B, Efficiency(memory=0.7, kernel_overhead=3e-6), "fp8", 1.0)
    assert plain.total == pytest.approx(max(flops / P, data / (B * 0.7)) + 2 * 3e-6, rel=1e-12)


def test_slower_moe_backend_of_a_shape_is_skipped_with_a_reason():
    base = {"system": "b200_sxm", "backend": "trtllm", "backend_version": "x", "moe_dtype": "nvfp4",
            "num_tokens": 8, "hidden_size": 7168, "inter_size": 2048, "topk": 8, "num_experts": 256,
            "moe_tp_size": 1, "moe_ep_size": 8, "distribution": "balanced"}
    raw = pd.DataFrame([{**base, "kernel_source": "moe_torch_flow_cutlass", "latency_ms": 0.10},
                        {**base, "kernel_source": "moe_torch_flow_min_latency", "latency_ms": 0.06},
                        {**base, "kernel_source": "moe_torch_flow_nongated", "latency_ms": 0.05},
                        {**base, "num_tokens": 16, "kernel_source": "moe_torch_flow_cutlass",
                         "latency_ms": 0.2}])
    tidy = ops_data.tidy(raw, "moe")
    # the slower gated duplicate is marked; non-gated rows are a different FFN
    assert list(tidy["slower_duplicate"]) == [True, False, False, False]
    pred = predict_table(tidy, "calibrated")
    assert pred["skip_reason"].iloc[0].startswith("slower backend") and np.isnan(pred["predicted_s"].iloc[0])
    assert (pred["skip_reason"].iloc[1:] == "").all() and pred["predicted_s"].iloc[1:].notna().all()


KERNEL_TERMS = {"memory": 1.0, "compute": 1.0, "kernel_overhead": 8e-6, "overlap": 20.0,
                "max_group": 32.0, "slots": 100.0, "unit_cost": 1e-6, "unit_cost_group": 3e-6,
                "unit_cost_group_fp8": 0.5e-6, "kernel_overhead_fp8": 6e-6, "unit_half": 1.0,
                "split_cost": 2e-6, "split_tokens": 512.0, "split_window": 0.0,
                "split_chunk": 256.0, "split_fill": 2.0}


def _kernel_eff(**terms) -> Efficiency:
    return Efficiency(op_params={"attention_decode": {**KERNEL_TERMS, **terms}})


@pytest.mark.parametrize(("kv_bytes", "window", "split_window", "expected_us"), [
    # bf16 grouped kernel: U = 4 x 8 = 32 units, s = clip(1024/256, 1, 2*100/32) = 4 splits,
    # t = 8 + 3 * 32 * 4 / 100 + 2 (split pass, L >= 512) = 13.84 us
    (2.0, 0, 0.0, 13.84),
    # fp8 grouped kernel (d = 128): t_k = 6, unit cost 0.5: 6 + 0.5 * 128 / 100 + 2 = 8.64 us
    (1.0, 0, 0.0, 8.64),
    # window 128, grid clipped to the window (omega = 0): s = 1, no split pass: 8 + 0.96 = 8.96 us
    (2.0, 128, 0.0, 8.96),
    # same, grid sized from the full history (omega = 1, Hopper): s = 4 again, no split pass
    (2.0, 128, 1.0, 11.84),
])
def test_decode_kernel_terms_by_hand(kv_bytes, window, split_window, expected_us):
    eff = _kernel_eff(split_window=split_window)
    # huge peak and bandwidth: only the launch, work-unit and split terms remain
    t = attention_decode_time(4, 1024, 32, 2 * 8 * 128, 128, 128, kv_bytes, 1e30, 1e30, eff,
                              kv_streams=8, window=window)
    assert float(t.total) * 1e6 == pytest.approx(expected_us, rel=1e-6)
    # the work-unit and split time is device work (serial), not a per-launch overhead
    assert float(t.overhead) * 1e6 == pytest.approx(6.0 if kv_bytes == 1.0 else 8.0)


def test_decode_kernel_occupancy_reread_and_per_head_path():
    plain = Efficiency(op_params={"attention_decode": {"memory": 1.0, "compute": 1.0, "overlap": 20.0}})
    # memory-bound single stream (b = 1, H_kv = 1): bandwidth fraction U / (U + U_half) = 1/2
    args = (1, 65536, 8, 2 * 128, 128, 128, 2.0, 1e30, 1e12)
    assert float(attention_decode_time(*args, _kernel_eff(), kv_streams=1).memory) == pytest.approx(
        2.0 * float(attention_decode_time(*args, plain, kv_streams=1).memory))
    # group 64 > max_group: per-head kernel, U = b H = 2 x 64 units at unit_cost
    t = attention_decode_time(2, 16, 64, 2 * 128, 128, 128, 1.0, 1e30, 1e30, _kernel_eff(), kv_streams=1)
    assert float(t.total) * 1e6 == pytest.approx(8.0 + 1.0 * 128 / 100)
    # its KV bytes: 1 + rho (g - 1) reads, rho = reread_fraction (default 1: every query head re-reads)
    big = (1, 4096, 64, 2 * 128, 128, 128, 2.0, 1e30, 1e12)
    kv = 4096 * 256 * 2.0
    for rho, reads in ((None, 64.0), (0.25, 1 + 0.25 * 63)):
        eff = _kernel_eff(unit_half=0.0, head_bytes=0.0, **({} if rho is None else {"reread_fraction": rho}))
        mem = float(attention_decode_time(*big, eff, kv_streams=1, act_bytes=0.0).memory)
        assert mem == pytest.approx(kv * reads / 1e12)
    # the per-head path streams at memory_head (bf16 KV) / memory_head_fp8 (fp8 KV)
    eff = _kernel_eff(unit_half=0.0, memory_head=0.5, memory_head_fp8=0.25)
    for kv_bytes, eta in ((2.0, 0.5), (1.0, 0.25)):
        mem = float(attention_decode_time(1, 4096, 8, 2 * 8 * 128, 128, 128, kv_bytes, 1e30, 1e12, eff,
                                          kv_streams=8, act_bytes=0.0).memory)
        assert mem == pytest.approx(4096 * 2 * 8 * 128 * kv_bytes / (1e12 * eta))
    # an absent op (b = 0) adds no work-unit or split time
    t0 = attention_decode_time(0, 4096, 32, 2 * 8 * 128, 128, 128, 2.0, 1e30, 1e30, _kernel_eff(), kv_streams=8)
    assert float(t0.total) * 1e6 == pytest.approx(8.0)


def test_kernel_decode_terms_carry_the_hopper_improvement(tables):
    """Held-out Hopper GQA decode: the shipped kernel-level terms beat the fallback form by a wide
    margin (they are not inert), and the step model reads them for grouped-query attention."""
    dec = tables["attention_decode"]
    test = dec[(dec["split"] == "test") & dec["system"].isin(HOPPER)]
    for system, g in test.groupby("system"):
        kernel = _median_abs(predict_table(g, "calibrated"))
        fallback = _median_abs(predict_table(g, "calibrated-nokernel"))
        assert kernel < 0.8 * fallback, (system, kernel, fallback)
    from perfmodel.core.step import StepModel
    from perfmodel.modelspec import load_model
    full = load_profile("h100-sxm")
    assert full.op(DECODE_KERNEL_FAMILY) and full.decode_family() == DECODE_KERNEL_FAMILY
    assert full.decode_family("mla_decode") == "mla_decode"
    without = replace(full, op_params={k: v for k, v in full.op_params.items() if k != DECODE_KERNEL_FAMILY})
    assert without.decode_family() == "attention_decode"
    sm = {e.name + str(i): StepModel(load_model("llama-3.1-8b"), "h100-sxm", efficiency=e)
          for i, e in enumerate((full, without))}
    full_sm, without_sm = sm.values()
    # the decode-attention part alone differs (the kernel form reads long KV at a higher efficiency)
    a_full = float(full_sm.decode_attention_time(64, 8192.0))
    a_without = float(without_sm.decode_attention_time(64, 8192.0))
    assert a_full < 0.9 * a_without
    assert float(full_sm.step_time(64, 8192.0)) < float(without_sm.step_time(64, 8192.0))
    # plain MHA (Llama-2-7B: 32 query and 32 KV heads) keeps the fallback form
    assert full.decode_family(grouped=False) == "attention_decode"
    mha = [float(StepModel(load_model("llama-2-7b"), "h100-sxm", efficiency=e).decode_attention_time(64, 8192.0))
           for e in (full, without)]
    assert mha[0] == mha[1]
