"""Model specs: hand-checked parameter counts, KV bytes and weight bytes for shipped models.

Notation as in perfmodel.modelspec.derived: h hidden, L layers, V vocab, n_q / n_kv heads, d head_dim.
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

from perfmodel.modelspec import (
    LayerGroup,
    ModelSpec,
    from_hf_config,
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_elems_per_token_per_layer,
    list_models,
    load_model,
    params_active,
    params_total,
    weight_bytes,
)
from perfmodel.modelspec.derived import attention_params, layer_params, params_breakdown

SHIPPED = [
    "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-2-7b", "llama-2-13b", "llama-2-70b",
    "mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b",
    "deepseek-v3", "deepseek-r1", "kimi-k2", "gpt-oss-20b", "gpt-oss-120b", "llama-4-scout",
    "llama-4-maverick", "gptj-6b", "llama-3.2-1b",
]


def test_every_required_id_is_shipped_and_loads():
    assert set(SHIPPED) <= set(list_models())
    for model_id in list_models():
        spec = load_model(model_id)
        assert spec.id == model_id
        assert sum(g.count for g in spec.layer_groups) == spec.num_layers
        assert spec.source and spec.source.startswith(("https://github.com/", "https://pypi.org/project/"))
        assert spec.hf_repo_id and "/" in spec.hf_repo_id and " " not in spec.hf_repo_id
        assert 0 < params_active(spec) <= params_total(spec)


# ---------------------------------------------------------------------------------------------
# Dense GQA
# ---------------------------------------------------------------------------------------------
def test_llama_3_1_70b_params_and_kv():
    spec = load_model("llama-3.1-70b")
    # attention: h*n_q*d*2 (q, o) + h*n_kv*d*2 (k, v) = 2*8192*8192 + 2*8192*1024 = 150,994,944
    assert attention_params(spec) == 150_994_944
    # FFN 3*8192*28672 = 704,643,072; two RMSNorms 2*8192; 80 layers; embedding + LM head 2*128256*8192;
    # final norm 8192.
    expected = 80 * (150_994_944 + 704_643_072 + 16_384) + 2 * 128_256 * 8192 + 8192
    assert params_total(spec) == expected == 70_553_706_496
    assert params_total(spec) == pytest.approx(70.6e9, rel=0.005)  # Meta model card: 70.6B
    assert params_active(spec) == params_total(spec)  # dense
    # KV: 2 (K, V) * 8 kv heads * 128 * 80 layers * 2 B = 327,680 B/token, exact
    assert kv_bytes_per_token(spec, "bf16") == 327_680
    assert kv_bytes_per_token(spec, "fp8") == 163_840


def test_llama_3_1_8b_params():
    spec = load_model("llama-3.1-8b")
    assert params_total(spec) == pytest.approx(8.03e9, rel=0.005)  # Meta: 8.03B
    assert kv_bytes_per_token(spec) == 32 * 2 * 8 * 128 * 2  # 131,072 B


def test_llama_2_7b_is_mha():
    spec = load_model("llama-2-7b")
    assert spec.num_kv_heads == spec.num_attention_heads == 32
    assert params_total(spec) == pytest.approx(6.74e9, rel=0.005)
    assert kv_bytes_per_token(spec) == 32 * 2 * 4096 * 2  # 524,288 B


def test_llama_3_2_1b_tied_embedding_counted_once():
    spec = load_model("llama-3.2-1b")
    assert spec.tie_word_embeddings
    b = params_breakdown(spec)
    assert b["lm_head"] == 0 and b["embedding"] == 128_256 * 2048
    assert params_total(spec) == pytest.approx(1.236e9, rel=0.002)


def test_qwen3_32b_explicit_head_dim():
    spec = load_model("Qwen/Qwen3-32B")
    assert spec.id == "qwen3-32b"
    # head_dim is explicit (128), not hidden/heads = 5120/64 = 80
    assert spec.head_dim == 128 and spec.hidden_size // spec.num_attention_heads == 80
    assert spec.qk_norm
    assert kv_bytes_per_token(spec) == 64 * 2 * 8 * 128 * 2  # 262,144 B
    assert params_total(spec) == pytest.approx(32.8e9, rel=0.005)  # Qwen3 card: 32.8B


def test_qwen2_attention_bias_counted():
    spec = load_model("qwen2.5-7b")
    assert spec.attention_bias and not spec.attention_out_bias
    h, nq, nkv, d = 3584, 28, 4, 128
    assert attention_params(spec) == 2 * h * nq * d + 2 * h * nkv * d + nq * d + 2 * nkv * d
    assert params_total(spec) == pytest.approx(7.61e9, rel=0.005)  # Qwen2.5 card: 7.61B


def test_gptj_plain_mlp_and_derived_inner_size():
    spec = load_model("gptj-6b")
    assert spec.ffn_matrices == 2 and spec.intermediate_size == 4 * 4096 and spec.head_dim == 256
    assert spec.num_kv_heads == 16  # MHA
    assert params_total(spec) == pytest.approx(6.05e9, rel=0.005)


def test_mistral_sliding_window_caps_kv():
    spec = load_model("mistral-7b")
    assert spec.layer_groups == (LayerGroup(32, "dense", 4096),)
    per_token = 32 * 2 * 8 * 128 * 2
    assert kv_cache_bytes(spec, "bf16", 8192) == per_token * 4096


# ---------------------------------------------------------------------------------------------
# MoE / MLA
# ---------------------------------------------------------------------------------------------
def test_deepseek_v3_params_and_mla_kv():
    spec = load_model("deepseek-v3")
    assert spec.attention == "mla"
    assert spec.layer_groups == (LayerGroup(3, "dense", None), LayerGroup(58, "moe", None))
    # MLA attention per layer: q_a 7168*1536 + q_b 1536*128*192 + kv_a 7168*(512+64)
    # + kv_b 512*128*(128+128) + o 128*128*7168 = 187,105,280
    assert attention_params(spec) == 187_105_280
    # DeepSeek-V3 model card: 671B total, 37B activated (MTP module excluded).
    assert params_total(spec) == pytest.approx(671e9, rel=0.01)
    assert params_active(spec) == pytest.approx(37e9, rel=0.03)
    # MLA KV: (512 + 64) elements * 61 layers * 2 B = 70,272 B/token, exact (no factor 2)
    assert kv_elems_per_token_per_layer(spec) == 576
    assert kv_bytes_per_token(spec, "bf16") == 70_272


def test_deepseek_r1_same_architecture_as_v3():
    v3, r1 = load_model("deepseek-v3"), load_model("deepseek-ai/DeepSeek-R1")
    assert params_total(v3) == params_total(r1) and kv_bytes_per_token(r1) == 70_272


def test_mixtral_8x7b_total_and_active():
    spec = load_model("mixtral-8x7b")
    assert spec.moe.num_experts == 8 and spec.moe.top_k == 2
    # Mistral AI: 46.7B total, 12.9B active per token.
    assert params_total(spec) == pytest.approx(46.7e9, rel=0.005)
    assert params_active(spec) == pytest.approx(12.9e9, rel=0.01)


def test_gpt_oss_120b_params_against_model_card():
    spec = load_model("gpt-oss-120b")
    # OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card" (Aug 2025), Table 1: 116.83B total, 5.13B
    # active; its active count includes the unembedding but not the embedding table.
    assert params_total(spec) == pytest.approx(116.83e9, rel=0.001)
    assert params_active(spec, input_embedding=False) == pytest.approx(5.13e9, rel=0.01)
    assert params_active(spec) == pytest.approx(5.1e9 + 201_088 * 2880, rel=0.03)
    small = load_model("gpt-oss-20b")  # card: 20.91B total, 3.61B active
    assert params_total(small) == pytest.approx(20.91e9, rel=0.002)
    assert params_active(small, input_embedding=False) == pytest.approx(3.61e9, rel=0.01)


def test_gpt_oss_sliding_window_kv_at_4096():
    spec = load_model("gpt-oss-120b")
    assert spec.layer_groups == (LayerGroup(18, "moe", 128), LayerGroup(18, "moe", None))
    per_layer_token = 2 * 8 * 64 * 2  # K and V, 8 kv heads, d 64, bf16 = 2,048 B
    full_equivalent = 36 * 4096 * per_layer_token  # 301,989,888 B
    capped = (18 * 4096 + 18 * 128) * per_layer_token  # 155,713,536 B
    assert kv_cache_bytes(spec, "bf16", 4096) == capped == 155_713_536
    assert capped < full_equivalent
    assert kv_bytes_per_token(spec, "bf16", context=4096) == capped / 4096
    assert kv_bytes_per_token(spec, "bf16") == 36 * per_layer_token  # context within every window


def test_kv_cache_bytes_broadcasts_over_context():
    spec = load_model("gpt-oss-20b")
    ctx = np.array([[0, 64], [128, 1000]])
    out = kv_cache_bytes(spec, "bf16", ctx)
    assert out.shape == (2, 2)
    per = 2048.0
    expected = per * (12 * ctx + 12 * np.minimum(ctx, 128))
    np.testing.assert_array_equal(out, expected)


def test_qwen3_moe_params():
    a3b, a22b = load_model("qwen3-30b-a3b"), load_model("qwen3-235b-a22b")
    assert params_total(a3b) == pytest.approx(30.5e9, rel=0.01)  # Qwen3 card: 30.5B / 3.3B
    assert params_active(a3b) == pytest.approx(3.3e9, rel=0.03)
    assert params_total(a22b) == pytest.approx(235e9, rel=0.01)  # 235B / 22B
    assert params_active(a22b) == pytest.approx(22e9, rel=0.03)


def test_kimi_k2_params():
    spec = load_model("moonshotai/Kimi-K2-Instruct")
    assert spec.id == "kimi-k2" and spec.attention == "mla"
    assert spec.layer_groups == (LayerGroup(1, "dense", None), LayerGroup(60, "moe", None))
    # Moonshot: 1T total (1.03e12 from the config), 32B activated. Ours: 32.86B with both
    # embedding tables (2 * 163840 * 7168 = 2.35B), 31.69B without the input embedding.
    assert params_total(spec) == pytest.approx(1.03e12, rel=0.01)
    assert params_active(spec) == pytest.approx(32e9, rel=0.03)
    assert kv_bytes_per_token(spec) == 576 * 61 * 2


def test_llama4_scout_and_maverick():
    scout, mav = load_model("llama-4-scout"), load_model("llama-4-maverick")
    # Scout: every layer MoE (16 experts + 1 shared), chunked attention (8192) except every 4th layer.
    assert scout.layer_groups == (LayerGroup(36, "moe", 8192), LayerGroup(12, "moe", None))
    # Maverick: MoE on odd layers (interleave step 2); NoPE/global layers are 3, 7, ... (all odd).
    assert mav.layer_groups == (LayerGroup(24, "dense", 8192), LayerGroup(12, "moe", 8192),
                                LayerGroup(12, "moe", None))
    assert scout.moe.num_shared_experts == 1 and mav.intermediate_size == 16384
    # Meta: Scout 109B total / 17B active, Maverick 400B / 17B. Our counts are the text model only
    # (107.77B, 400.71B); Meta's totals include the ~0.9B vision encoder and projector, so Scout's
    # total sits 1.1% low. Active counts include both embedding tables (17.17B, 17.18B).
    assert params_total(scout) == pytest.approx(109e9, rel=0.015)
    assert params_active(scout) == pytest.approx(17e9, rel=0.02)
    assert params_total(mav) == pytest.approx(400e9, rel=0.005)
    assert params_active(mav) == pytest.approx(17e9, rel=0.02)
    # chunked layers cap the cache at 8192 tokens: 12 global + 36 chunked at context 32768
    per = 2 * 8 * 128 * 2
    assert kv_cache_bytes(scout, "bf16", 32768) == per * (12 * 32768 + 36 * 8192)


def test_moe_layer_active_counts_only_top_k_experts():
    spec = load_model("deepseek-v3")
    moe_layer = layer_params(spec, LayerGroup(1, "moe"))
    expert = 3 * 7168 * 2048
    assert moe_layer.routed_experts == 256 * expert and moe_layer.routed_active == 8 * expert
    assert moe_layer.shared_experts == expert and moe_layer.router == 256 * 7168 + 256


# ---------------------------------------------------------------------------------------------
# Weight bytes: float bits per element
# ---------------------------------------------------------------------------------------------
def test_weight_bytes_bf16_is_two_bytes_per_parameter():
    spec = load_model("llama-3.1-70b")
    assert weight_bytes(spec, "bf16") == 2 * params_total(spec)


@pytest.mark.parametrize("fmt, bits", [("nvfp4", 4.5), ("int4", 4.125), ("mxfp4", 4.25), ("fp8", 8.0)])
def test_weight_bytes_low_precision_use_float_bits(fmt, bits):
    spec = load_model("llama-3.1-8b")
    b = params_breakdown(spec)
    matrices = b["attention"] + b["dense_ffn"]
    kept_bf16 = b["norms"] + b["embedding"] + b["lm_head"]
    expected = matrices * bits / 8 + kept_bf16 * 2
    assert weight_bytes(spec, fmt) == pytest.approx(expected, rel=1e-12)
    if bits < 8:  # integer byte sizes would give 0 bytes for sub-byte formats (4 // 8 == 0)
        assert weight_bytes(spec, fmt) > kept_bf16 * 2 + matrices * 0.5


def test_weight_bytes_expert_dtype_override_gpt_oss():
    spec = load_model("gpt-oss-120b")
    b = params_breakdown(spec)
    mixed = weight_bytes(spec, "bf16", expert_dtype="mxfp4")
    expected = (b["attention"] + b["router"]) * 2 + b["routed_experts"] * 4.25 / 8 + (
        b["norms"] + b["embedding"] + b["lm_head"]) * 2
    assert mixed == pytest.approx(expected, rel=1e-12)
    # 65.19e9 B = 60.71 GiB; OpenAI's gpt-oss model card lists a 60.8 GiB checkpoint (MXFP4 experts,
    # everything else bf16).
    assert mixed / 2**30 == pytest.approx(60.8, rel=0.005)


def test_spec_methods_match_functions():
    spec = load_model("mixtral-8x7b")
    assert spec.params_total() == params_total(spec)
    assert spec.params_active() == params_active(spec)
    assert spec.kv_bytes_per_token("bf16") == kv_bytes_per_token(spec, "bf16")


def test_spec_without_layer_groups_defaults_to_one_group():
    spec = ModelSpec(id="toy", family="llama", hidden_size=64, num_layers=2, vocab_size=10,
                     num_attention_heads=4, num_kv_heads=2, head_dim=16, v_head_dim=16,
                     attention="gqa", intermediate_size=128)
    assert spec.groups == (LayerGroup(2, "dense", None),)
    # per layer: attn 64*64*2 + 64*32*2 = 12,288; ffn 3*64*128 = 24,576; norms 128; + 2*640 + 64
    assert params_total(spec) == 2 * (12_288 + 24_576 + 128) + 2 * 640 + 64


def test_kimi_k2_read_the_same_under_deepseek_v3_model_type():
    text = resources.files("perfmodel").joinpath("data/models/kimi-k2.json").read_text()
    config = dict(json.loads(text)["config"], model_type="deepseek_v3")
    spec = from_hf_config(config, "kimi-as-v3")
    assert spec.family == "deepseek_v3"
    assert params_total(spec) == params_total(load_model("kimi-k2"))


def test_weight_bytes_takes_weights_and_its_old_name_warns():
    spec = load_model("llama-3.1-8b")
    with pytest.warns(DeprecationWarning, match="weight_bytes: weights_dtype= is deprecated, use weights="):
        old = weight_bytes(spec, weights_dtype="fp8")
    assert old == weight_bytes(spec, weights="fp8") == weight_bytes(spec, "fp8")
    assert spec.kv_bytes_per_token(kv_cache="fp8") == spec.kv_bytes_per_token("bf16") / 2
