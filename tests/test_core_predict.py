"""predict(): API, memory fit, parallel layouts, MoE/MLA specifics, KV offload and the CLI contract."""

from __future__ import annotations

import json

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.cli import main
from perfmodel.core.ops import StepShape
from perfmodel.testing import make_accelerator, tiny_model


def test_vectorised_equals_scalar():
    vec = pm.predict("llama-3.1-8b", "h100-sxm", isl=[512, 2048], osl=[64, 256], batch=[1, 16])
    for k in range(2):
        one = pm.predict("llama-3.1-8b", "h100-sxm", isl=vec.isl[k], osl=vec.osl[k], batch=vec.batch[k])
        for f in ("ttft_s", "tpot_s", "e2e_s", "kv_bytes_per_device"):
            assert getattr(vec, f)[k] == pytest.approx(float(getattr(one, f)), rel=1e-12)


def test_chunked_evaluation_matches_single_pass(monkeypatch):
    import perfmodel.core.predict as core_predict

    batch = np.arange(1, 40)
    ref = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=128, batch=batch)
    monkeypatch.setattr(core_predict, "CHUNK", 7)
    chunked = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=128, batch=batch)
    np.testing.assert_allclose(chunked.tpot_s, ref.tpot_s, rtol=1e-12)
    np.testing.assert_array_equal(chunked.decode_bound, ref.decode_bound)


def test_memory_fit_is_a_flag_with_a_reason_not_an_error():
    # Llama-3.1-405B in bf16 (~810 GB) on one 80 GB GPU
    p = pm.predict("llama-3.1-405b", "h100-sxm", tp=1, batch=1)
    assert not bool(p.fits) and "weights alone" in str(p.fit_reason)
    assert p.max_batch_at_context == 0
    # 70B fp8 on 8 GPUs fits; an absurd batch at long context does not, for the KV cache
    q = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, weights="fp8", isl=32768, osl=1024, batch=[1, 4096])
    assert q.fits.tolist() == [True, False]
    assert "KV cache" in q.fit_reason[1]
    assert 1 < q.max_batch_at_context[0] < 4096


def test_kv_bytes_per_device_llama70b_tp8():
    # 327,680 B/token in bf16 over 80 layers, split over 8 GPUs (8 KV heads -> 1 per GPU)
    p = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, isl=1000, osl=24, batch=2)
    assert float(p.kv_bytes_per_device) == pytest.approx(2 * 1024 * 327680 / 8, rel=1e-12)


def test_mla_kv_is_replicated_across_tp():
    sm1 = pm.StepModel("deepseek-v3", "b200", tp=1, kv_cache="bf16")
    sm8 = pm.StepModel("deepseek-v3", "b200", tp=8, kv_cache="bf16")
    # the latent is not split by heads: the replica holds 8 copies with TP8
    assert sm8.kv_bytes_per_token == pytest.approx(8 * sm1.kv_bytes_per_token, rel=1e-12)
    assert sm1.kv_bytes_per_token == pytest.approx(70272, rel=1e-12)


def test_moe_decode_reads_only_experts_hit():
    sm = pm.StepModel("deepseek-v3", "b200", tp=8, weights="fp8", efficiency="datasheet")
    one = sm.breakdown(StepShape.make(n_decode=1, context=1000)).memory["moe"]
    many = sm.breakdown(StepShape.make(n_decode=512, context=1000)).memory["moe"]
    # batch 1 touches 8 of 256 experts per layer; batch 512 touches almost all
    assert float(many) / float(one) > 15


def test_sliding_window_layers_cap_kv_and_attention():
    full = pm.predict("gpt-oss-120b", "h100-sxm", isl=32000, osl=2, batch=1)
    sm = pm.StepModel("gpt-oss-120b", "h100-sxm")
    per_seq = sm.kv_bytes_per_token * 32002
    assert float(full.kv_bytes_per_device) < 0.6 * per_seq  # half the layers hold only 128 tokens


def test_invalid_layouts_raise_clear_errors():
    with pytest.raises(pm.ConfigError, match="tp=3 does not divide"):
        pm.predict("llama-3.1-8b", "h100-sxm", tp=3)
    with pytest.raises(pm.ConfigError, match=r"ep=3 must divide tp\*dp_attention=8"):
        pm.predict("deepseek-v3", "b200", tp=8, ep=3)
    with pytest.raises(pm.ConfigError, match="dense"):
        pm.predict("llama-3.1-8b", "h100-sxm", tp=2, ep=2)
    with pytest.raises(pm.ConfigError, match=r"batch: must be whole numbers in \[1, .*got 0"):
        pm.predict("llama-3.1-8b", "h100-sxm", batch=0)
    with pytest.raises(pm.ConfigError, match="isl: must be whole numbers.*got nan"):
        pm.predict("llama-3.1-8b", "h100-sxm", isl=float("nan"))
    with pytest.raises(pm.ConfigError, match="whole numbers"):
        pm.predict("llama-3.1-8b", "h100-sxm", osl=2.5)
    with pytest.raises(pm.UnknownNameError, match="known: bf16"):  # no fp4 peak on v5e
        pm.predict("llama-3.1-8b", "tpu-v5e", weights="fp4", activations="fp4")
    # FP4 weights alone run weight-only there (bf16 activations), as engines run them on Hopper
    assert pm.predict("llama-3.1-8b", "tpu-v5e", weights="fp4").config["precision"] == "w:fp4 a:bf16 kv:fp8"
    with pytest.raises(pm.ConfigError, match="kv_host_fraction"):
        pm.predict("llama-3.1-8b", "h100-sxm", kv_host_fraction=1.5)


def test_kv_offload_frees_memory_and_costs_host_link_time():
    base = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, isl=8192, osl=1024, batch=32)
    off = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, isl=8192, osl=1024, batch=32, kv_host_fraction=0.5)
    assert float(off.kv_bytes_per_device) == pytest.approx(0.5 * float(base.kv_bytes_per_device))
    assert float(off.max_batch_at_context) >= 2 * float(base.max_batch_at_context) - 1
    assert float(off.tpot_s) > float(base.tpot_s)
    hidden = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, isl=8192, osl=1024, batch=32,
                        kv_host_fraction=0.5, kv_host_overlap=1.0)
    assert float(hidden.tpot_s) <= float(off.tpot_s)


def test_fallback_profile_is_flagged():
    p = pm.predict("llama-3.1-8b", "a100-sxm", batch=1)
    rec = p.records()[0]
    assert rec["efficiency_fallback"] in (True, False)
    if rec["efficiency"] != "datasheet":
        assert rec["efficiency_fallback"] is True


def test_precision_changes_weights_and_peak():
    # Pure roofline: half the weight bytes, lower TPOT. (With the calibrated Hopper profile fp8 GEMMs
    # carry ~13 us of measured per-call overhead, so at batch 1 the two come out close.)
    bf16 = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, batch=1, efficiency="datasheet")
    fp8 = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, batch=1, weights="fp8", efficiency="datasheet")
    assert fp8.weights_bytes_per_device < 0.55 * bf16.weights_bytes_per_device
    assert float(fp8.tpot_s) < float(bf16.tpot_s)
    int4 = pm.StepModel("llama-3.1-70b", "h100-sxm", tp=8, weights="int4")
    assert int4.precision.compute == "bf16"  # weight-only int4 computes in bf16


def test_user_hardware_and_model_objects():
    p = pm.predict(tiny_model(), make_accelerator(), batch=[1, 2])
    assert p.ttft_s.shape == (2,) and np.all(p.tpot_s > 0)
    assert p.config["hardware"] == "test-gpu"


CLI_KEYS = {"batch", "isl", "osl", "ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "per_user_tokens_per_s",
            "fits", "weights_bytes_per_device", "kv_bytes_per_device", "decode_bound", "prefill_bound"}


def test_cli_predict_json_contract(capsys):
    rc = main(["predict", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "8", "--isl", "2048",
               "--osl", "256", "--batch", "1,8,64", "--weights", "fp8", "--kv-cache", "fp8", "--format", "json"])
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["batch"] for r in rows] == [1, 8, 64]
    assert CLI_KEYS <= set(rows[0])
    assert rows[0]["ttft_s"] > 0 and rows[2]["tpot_s"] > rows[0]["tpot_s"]


def test_cli_predict_errors_are_one_line(capsys):
    assert main(["predict", "--model", "llama-3.1-8b", "--hardware", "h100-sxn"]) == 2
    err = capsys.readouterr().err
    assert "h100-sxm" in err and "Traceback" not in err


def test_max_batch_agrees_with_fits():
    p = pm.predict("llama-3.1-70b", "h100-sxm", tp=2, isl=2048, osl=256, batch=[1, 2, 8, 32])
    for b, fits, mx in zip(p.batch, p.fits, p.max_batch_at_context, strict=True):
        assert bool(fits) == (b <= mx)
    q = pm.predict("llama-3.1-8b", "h100-sxm", isl=2048, osl=256, batch=np.arange(1, 400, 7))
    mx = q.max_batch_at_context[0]
    assert np.all(q.fits == (q.batch <= mx))
    edge = pm.predict("llama-3.1-8b", "h100-sxm", isl=2048, osl=256, batch=[mx, mx + 1])
    assert edge.fits.tolist() == [True, False]


def test_multi_node_collectives_are_hierarchical():
    # TP16 over two HGX nodes: inside each node on NVLink, across nodes on the NIC (S/8 per GPU)
    sm = pm.StepModel("llama-3.1-70b", "h100-sxm", tp=16, efficiency="datasheet")
    assert sm.domain == 8
    size = 1e8
    from perfmodel.core.ops import Message

    t = float(sm._message_time(Message("ar", "all_reduce", np.asarray(size), 16)))
    nvlink, nic = 450e9, 50e9
    local = 2 * 2e-6 + 2 * 7 / 8 * size / nvlink  # two-shot inside the node (auto picks it)
    cross = 2 * 1 * 5e-6 + 2 * 1 / 2 * size / 8 / nic  # 2 nodes: one step each way, S/8 per NIC
    assert t == pytest.approx(local + cross, rel=1e-9)
    flat_nic = 2 * 15 / 16 * size / nic
    assert t < flat_nic  # far cheaper than a flat ring at NIC bandwidth
    with pytest.raises(pm.ConfigError, match="multiple of the domain"):
        pm.StepModel("deepseek-v3", "h100-sxm", tp=4, dp_attention=3, ep=4)


@pytest.mark.parametrize("model, hw, kw", [
    ("llama-3.1-70b", "h100-sxm", {"tp": 8}), ("deepseek-v3", "b200", {"tp": 8}),
    ("gpt-oss-120b", "h100-sxm", {}), ("llama-3.1-8b", "h100-sxm", {"pp": 2}),
    ("qwen3-30b-a3b", "b200", {"tp": 2, "ep": 2})])
def test_fast_path_by_batch_equals_the_definition(model, hw, kw):
    from perfmodel.core.predict import _phase_times, _phase_times_by_batch

    sm = pm.StepModel(model, hw, **kw)
    rng = np.random.default_rng(3)
    b = rng.integers(1, 40, 400).astype(float)
    i = rng.integers(16, 8192, 400).astype(float)
    o = rng.integers(1, 2048, 400).astype(float)
    ref, fast = _phase_times(sm, b, i, o), _phase_times_by_batch(sm, b, i, o)
    for k in range(2):
        np.testing.assert_allclose(fast[k], ref[k], rtol=1e-12)
    np.testing.assert_array_equal(fast[2], ref[2])
    assert np.mean(fast[3] == ref[3]) > 0.99  # ties between equal parts may round either way


@pytest.mark.parametrize("model,hardware", [("llama-3.1-8b", "h100-sxm"), ("deepseek-v3", "b200")])
def test_chunk_after_a_cached_prefix_costs_less_than_the_whole_prompt(model, hardware):
    """A chunk of p tokens after q cached ones has fewer attention pairs than p + q fresh tokens:
    p·q + p²/2 <= (p + q)²/2, so its prefill attention must not cost more (it did, 30x for p = 1,
    q = 8191, when the fitted per-tile cost was scaled with the pair ratio)."""
    from perfmodel.core.step import StepModel

    sm = StepModel(model=model, hardware=hardware, tp=8, weights="fp8", kv_cache="fp8")
    p = np.array([1.0, 64.0, 512.0, 4096.0])
    q = 8192.0 - p
    with_past = sm.breakdown(StepShape.make(n_prefill=1, chunk=p, past=q)).op_total["attention"]
    fresh = sm.breakdown(StepShape.make(n_prefill=1, chunk=p + q)).op_total["attention"]
    assert np.all(with_past <= fresh)
    # and the pair count still grows with the prefix
    shorter = sm.breakdown(StepShape.make(n_prefill=1, chunk=p, past=q / 2)).op_total["attention"]
    assert np.all(shorter < with_past)


def test_selected_breakdown_rows_keep_every_time_part():
    """select(k) of a stacked breakdown is the breakdown of shape k: the MoE block's serial kernels
    and the fitted smooth roofline survive (they were dropped, 0.23 s against a 0.36 s prefill)."""
    from perfmodel.core.step import StepModel

    sm = StepModel(model="deepseek-v3", hardware="b200", tp=8, weights="fp8_block", kv_cache="fp8")
    shapes = StepShape.make(n_decode=np.array([0.0, 16.0]), context=2048.0,
                            n_prefill=np.array([16.0, 0.0]), chunk=1024.0)
    whole = sm.breakdown(shapes)
    for k in range(2):
        part = whole.select(k)
        assert float(part.total) == pytest.approx(float(np.asarray(whole.total)[k]), rel=1e-12)
        assert sum(float(v) for v in part.op_total.values()) + float(part.comm_total) \
            + float(part.step_overhead) == pytest.approx(float(part.total), rel=1e-12)


def test_block_fp8_and_eager_moe_launches_in_step_times():
    """fp8_block weights select the block-FP8 GEMM/MoE terms (same peak); the MoE block's measured
    eager fixed time is charged in steps carrying prompt tokens and capped in decode-only steps."""
    from perfmodel.core.efficiency import load_profile
    from perfmodel.core.step import StepModel

    block = StepModel(model="deepseek-v3", hardware="h200-sxm", tp=8, weights="fp8_block", kv_cache="fp8")
    tensor = StepModel(model="deepseek-v3", hardware="h200-sxm", tp=8, weights="fp8", kv_cache="fp8")
    assert block.peak == tensor.peak
    # Hopper block-FP8 fused MoE reaches about half the per-tensor FP8 compute efficiency: slower prefill
    assert float(block.step_time(0, 0, 8192)) > 1.2 * float(tensor.step_time(0, 0, 8192))
    eff = load_profile("h200-sxm")
    t_k = eff.op("moe.fp8_block")["kernel_overhead"]
    cap = 2 * eff.op("gemm.bf16")["kernel_overhead"]
    moe_layers = 58
    mixed = block.breakdown(StepShape.make(n_decode=8, context=2048, n_prefill=1, chunk=1))
    decode = block.breakdown(StepShape.make(n_decode=8, context=2048))
    assert float(mixed.overhead["moe"] - decode.overhead["moe"]) == pytest.approx(moe_layers * (t_k - cap),
                                                                                  rel=0.02)


def test_mxfp4_experts_use_their_own_moe_terms():
    """gpt-oss's MXFP4 experts: W4A16 on Hopper, MXFP4 x MXFP8 on Blackwell select moe.mxfp4_a16 /
    moe.mxfp4_a8; a profile without them falls back to the GEMM format's terms."""
    from dataclasses import replace

    from perfmodel.core.efficiency import load_profile
    from perfmodel.core.step import StepModel

    for hw, act, fmt in (("h200-sxm", "bf16", "mxfp4_a16"), ("b200", "fp8", "mxfp4_a8")):
        sm = StepModel(model="gpt-oss-120b", hardware=hw, weights="mxfp4", activations=act)
        assert sm.precision.moe_format == fmt
        # without activations the checkpoint's own kernels: MXFP8 where there is an FP4 peak, else W4A16
        assert StepModel(model="gpt-oss-120b", hardware=hw, weights="mxfp4").precision == sm.precision
        eff = load_profile(hw)
        without = replace(eff, op_params={k: v for k, v in eff.op_params.items() if k != f"moe.{fmt}"})
        other = StepModel(model="gpt-oss-120b", hardware=hw, weights="mxfp4", activations=act, efficiency=without)
        shape = StepShape.make(n_decode=0, context=0, n_prefill=1, chunk=4096)
        assert float(sm.breakdown(shape).total) != pytest.approx(float(other.breakdown(shape).total), rel=1e-3)


def test_cli_notes_checkpoint_formats(capsys):
    from perfmodel.cli.output import checkpoint_note

    assert "fp8_block" in checkpoint_note("deepseek-ai/DeepSeek-R1", "fp8")
    assert "mxfp4" in checkpoint_note("gpt-oss-120b", "nvfp4")
    assert checkpoint_note("deepseek-v3", "fp8_block") is None
    assert checkpoint_note("llama-3.1-70b", "fp8") is None
    assert "fp8_block" in checkpoint_note("Qwen/Qwen3-235B-A22B-FP8", "fp8")
    assert checkpoint_note("qwen3-235b-a22b", "fp8") is None            # the bf16 checkpoint
    assert checkpoint_note("unsloth/gpt-oss-120b-BF16", "nvfp4") is None  # a bf16 re-export
    assert checkpoint_note("not-a-model", "fp8") is None
    rc = main(["predict", "--model", "deepseek-v3", "--hardware", "h200-sxm", "--tp", "8", "--weights", "fp8",
               "--isl", "1024", "--osl", "16", "--batch", "1", "--format", "json"])
    out = capsys.readouterr()
    assert rc == 0 and "block-scaled" in out.err and json.loads(out.out)[0]["weights"] == "fp8"
