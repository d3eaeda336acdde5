"""Hybrid and sparse-attention model families read from config.json: Qwen3.5 / Qwen3-Next (Gated
DeltaNet + gated full attention), GLM-5 / DeepSeek-V3.2 (MLA + DeepSeek Sparse Attention), Nemotron-H
(Mamba-2 hybrid of single-sublayer blocks), MiniMax-M2.

Parameter counts and KV / state bytes are derived by hand from the shipped config.json fields.
"""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.core.memory import kv_bytes_per_token_device, state_bytes_per_sequence_device
from perfmodel.core.ops import Message, StepShape, attention_ops, recurrent_ops
from perfmodel.core.parallel import Parallel, attention_layout
from perfmodel.core.step import StepModel
from perfmodel.errors import SpecError
from perfmodel.modelspec import from_hf_config, kv_bytes_per_token, load_model, params_active, params_total
from perfmodel.modelspec.derived import state_bytes_per_sequence
from perfmodel.precision import Precision


def test_qwen35_397b_layers_params_kv_and_state_by_hand():
    m = load_model("Qwen/Qwen3.5-397B-A17B")
    assert m.id == "qwen3.5-397b-a17b" and m.recurrent is not None
    # full_attention_interval 4 over 60 layers: 15 attention, 45 Gated DeltaNet, all MoE
    assert {(g.mixer, g.ffn, g.count) for g in m.layer_groups} == {("recurrent", "moe", 45),
                                                                    ("attention", "moe", 15)}
    h, V = 4096, 248320
    attn = h * 32 * 256 * 2 + h * 2 * (256 + 256) + 32 * 256 * h        # gated Q (x2), K, V, O
    key_dim, value_dim = 16 * 128, 64 * 128
    gdn = h * (2 * key_dim + 2 * value_dim + 2 * 64) + value_dim * h + (2 * key_dim + value_dim) * 4 \
        + 64 * 2 + 128                                                 # in/out proj, conv, A/dt, norm
    moe = 512 * 3 * h * 1024 + 3 * h * 1024 + 512 * h + h              # experts, shared, router, gate
    active_moe = 10 * 3 * h * 1024 + 3 * h * 1024 + 512 * h + h
    norms_attn, norms_gdn = 2 * h + 2 * 256, 2 * h
    total = 15 * (attn + moe + norms_attn) + 45 * (gdn + moe + norms_gdn) + h + 2 * V * h
    active = 15 * (attn + active_moe + norms_attn) + 45 * (gdn + active_moe + norms_gdn) + h + 2 * V * h
    assert params_total(m) == total == 396_346_350_336
    assert params_active(m) == active                                  # "A17B"
    assert 17.0e9 < active < 17.5e9
    # KV only in the 15 attention layers: 2 KV heads x (K 256 + V 256) x 2 B
    assert kv_bytes_per_token(m, "bf16") == 15 * 2 * 512 * 2 == 30_720
    # state per sequence: 45 x (64 heads x 128 x 128 fp32 + 3 conv inputs x 12288 channels bf16)
    assert state_bytes_per_sequence(m) == 45 * (64 * 128 * 128 * 4 + 3 * 12288 * 2) == 192_061_440
    assert m.kv_cache_bytes("bf16", 4096) == pytest.approx(30_720 * 4096)


def test_glm5_and_deepseek_v32_params_and_kv_by_hand():
    m = load_model("zhipuai/GLM-5")
    dsa = m.sparse_attention
    assert (m.id, m.attention, dsa.index_heads, dsa.index_head_dim, dsa.top_k) == ("glm-5", "mla", 32, 128, 2048)
    h, V = 6144, 154880
    q = h * 2048 + 2048 * 64 * (192 + 64)
    kv = h * (512 + 64) + 512 * 64 * (192 + 256)
    o = 64 * 256 * h
    indexer = 2048 * 32 * 128 + h * 128 + 2 * 128 + h * 32
    attn = q + kv + o + indexer
    norms = 2 * h + 2048 + 512
    dense = attn + 3 * h * 12288 + norms
    moe = attn + 256 * 3 * h * 2048 + 3 * h * 2048 + 256 * h + 256 + norms
    assert params_total(m) == 3 * dense + 75 * moe + h + 2 * V * h == 743_911_218_432
    # MLA latent 512 + rope key 64 + the indexer's key 128 per token per layer
    assert kv_bytes_per_token(m, "fp8") == 78 * (512 + 64 + 128) == 54_912
    v32 = load_model("deepseek-ai/DeepSeek-V3.2")
    assert v32.sparse_attention.index_heads == 64
    assert kv_bytes_per_token(v32, "bf16") == 61 * (512 + 64 + 128) * 2
    assert params_total(v32) - params_total(load_model("deepseek-v3")) == 61 * (
        1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64)            # the indexers alone


def _attention_core(ops, name):
    return next(o for o in ops if o.name == name)


def test_dsa_decode_attention_is_bounded_by_top_k_and_the_indexer_is_linear():
    m = load_model("glm-5")
    par, prec = Parallel.build(m, tp=8), Precision.of("fp8", kv_cache="fp8")
    group = m.layer_groups[1]
    at = {c: attention_ops(m, group, par, prec, StepShape.make(n_decode=4, context=c)) for c in (2048, 32768)}
    core = {c: _attention_core(v, "attention_decode") for c, v in at.items()}
    assert float(core[32768].flops) == pytest.approx(float(core[2048].flops))   # top-k = 2048
    idx = {c: _attention_core(v, "indexer_decode") for c, v in at.items()}
    assert float(idx[32768].flops) == pytest.approx(16 * float(idx[2048].flops))
    # indexer by hand: 4 sequences x 2 x 32 heads x 128 x 2048 tokens; fp8 keys: 4 x 2048 x 128 B
    assert float(idx[2048].flops) == 4 * 2 * 32 * 128 * 2048
    assert float(idx[2048].bytes) == 4 * 2048 * 128
    # prefill of 8192 tokens: each query attends min(position, 2048) tokens
    pre = attention_ops(m, group, par, prec, StepShape.make(n_prefill=1, chunk=8192))
    pairs = 2048 * 2049 / 2 + (8192 - 2048) * 2048
    assert float(_attention_core(pre, "attention_prefill").flops) == pytest.approx(2 * 8 * (256 + 256) * pairs)  # d_qk = 192 + 64, d_v = 256
    assert float(_attention_core(pre, "indexer_prefill").flops) == pytest.approx(2 * 32 * 128 * 8192 * 8193 / 2)


def test_gated_deltanet_decode_is_constant_in_the_context():
    m = load_model("qwen3.5-397b-a17b")
    par, prec = Parallel.build(m, tp=8, ep=1), Precision.of("fp8", kv_cache="fp8")
    ops = {c: recurrent_ops(m, par, prec, StepShape.make(n_decode=1, context=c)) for c in (1000, 100_000)}
    dec = {c: _attention_core(v, "recurrent_decode") for c, v in ops.items()}
    assert float(dec[1000].flops) == float(dec[100_000].flops) == 6 * 8 * 128 * 128
    # 8 local heads: state read + written in fp32, q/k/v/out vectors in bf16
    assert float(dec[1000].bytes) == 8 * (2 * 128 * 128 * 4 + 2 * 256 * 2)
    sm = StepModel(m, "b200", tp=8, weights="fp8", kv_cache="fp8")
    t = [float(sm.step_time(n_decode=16, mean_context=c)) for c in (1000, 64000)]
    a = [float(sm.decode_attention_time(16, c)) for c in (1000, 64000)]
    assert t[1] - t[0] == pytest.approx(a[1] - a[0], rel=1e-9)      # only the 15 attention layers grow
    assert t[1] > t[0]


def test_recurrent_state_is_counted_per_sequence_on_the_device():
    m = load_model("qwen3.5-397b-a17b")
    par, prec = Parallel.build(m, tp=8, ep=1), Precision.of("fp8", kv_cache="fp8")
    state = state_bytes_per_sequence_device(m, par)
    assert state == 192_061_440 / 8
    per_seq = kv_bytes_per_token_device(m, par, prec, np.array([0.0, 1.0, 1000.0]))
    kv_tok = float(kv_bytes_per_token_device(m, par, prec, 1.0, state=False))
    assert kv_tok == 15 * 1 * 2 * 256                   # 2 KV heads on 8 ranks: one replicated head, fp8
    np.testing.assert_allclose(per_seq, [0.0, kv_tok + state, 1000 * kv_tok + state])
    sm = StepModel(m, "b200", tp=8, weights="fp8", kv_cache="fp8")
    assert sm.state_bytes_per_sequence == pytest.approx(192_061_440)


def test_attention_layout_for_heads_the_tp_does_not_divide():
    r1, llama = load_model("deepseek-r1"), load_model("llama-3.1-70b")
    assert attention_layout(r1, 36) == (1, 36) and attention_layout(r1, 8) == (8, 1)
    assert attention_layout(r1, 72, 2) == (72, 2)        # recorded attention DP is kept as given
    assert attention_layout(llama, 48) == (48, 1)        # dense: no attention DP to fall back on
    par = Parallel.build(r1, *attention_layout(r1, 36)[:1], dp_attention=36, moe_tp=36)
    assert (par.tp, par.dp_attention, par.group, par.moe_tp_eff) == (1, 36, 36, 36)


def test_qwen3_next_80b_params_kv_and_bf16_state_by_hand():
    m = load_model("Qwen/Qwen3-Next-80B-A3B-Instruct")       # same architecture as the shipped Thinking
    assert m.id == "qwen3-next-80b-a3b" and m.recurrent.state_dtype == "bf16"   # no mamba_ssm_dtype
    h, V = 2048, 151936
    attn = h * 16 * 256 * 2 + h * 2 * 512 + 16 * 256 * h
    gdn = h * (2 * 2048 + 2 * 4096 + 2 * 32) + 4096 * h + (2 * 2048 + 4096) * 4 + 32 * 2 + 128
    moe = 512 * 3 * h * 512 + 3 * h * 512 + 512 * h + h
    total = 12 * (attn + moe + 2 * h + 2 * 256) + 36 * (gdn + moe + 2 * h) + h + 2 * V * h
    assert params_total(m) == total and 79e9 < total < 81e9
    assert kv_bytes_per_token(m, "bf16") == 12 * 2 * 512 * 2
    assert state_bytes_per_sequence(m) == 36 * (32 * 128 * 128 * 2 + 3 * (2 * 2048 + 4096) * 2)


def test_minimax_m2_is_a_family_of_its_own():
    m = load_model("MiniMaxAI/MiniMax-M2.5")
    assert (m.family, m.qk_norm, m.qk_norm_per_layer, m.moe.router_bias) == ("minimax_m2", True, True, True)
    h, V = 3072, 200064
    attn = h * 48 * 128 + h * 8 * 256 + 48 * 128 * h
    norms = 2 * h + (48 + 8) * 128                                   # Q/K norms over all heads
    moe = 256 * 3 * h * 1536 + 256 * h + 256
    assert params_total(m) == 62 * (attn + moe + norms) + h + 2 * V * h
    assert 225e9 < params_total(m) < 232e9                           # "230B"
    assert kv_bytes_per_token(m, "bf16") == 62 * 2 * 8 * 128 * 2 == 253_952


def test_nemotron_h_56b_blocks_params_kv_and_state_by_hand():
    m = load_model("nvidia/Nemotron-H-56B-Base-8K")
    assert m.id == "nemotron-h-56b" and m.recurrent.kind == "mamba2" and m.norms_per_layer == 1
    # hybrid_override_pattern: 54 Mamba-2 blocks, 54 MLP blocks, 10 attention blocks
    assert {(g.mixer, g.ffn, g.count) for g in m.layer_groups} == {
        ("recurrent", "none", 54), ("none", "dense", 54), ("attention", "none", 10)}
    h, V = 8192, 131072
    d_inner, bc = 256 * 64, 2 * 8 * 256
    mamba = h * (2 * d_inner + bc + 256) + d_inner * h + (d_inner + bc) * (4 + 1) + 256 * 3 + d_inner
    attn = h * 64 * 128 + h * 8 * 256 + 64 * 128 * h
    mlp = 2 * h * 32768                                              # squared ReLU: up and down only
    total = 54 * (mamba + h) + 54 * (mlp + h) + 10 * (attn + h) + h + 2 * V * h
    assert params_total(m) == total and 56.0e9 < total < 56.6e9
    assert kv_bytes_per_token(m, "bf16") == 10 * 2 * 8 * 128 * 2      # attention blocks only
    assert state_bytes_per_sequence(m) == 54 * (256 * 256 * 64 * 2 + 3 * (d_inner + bc) * 2)


def test_nemotron_3_nano_moe_blocks_and_fp32_state():
    m = load_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8")
    assert m.id == "nemotron-3-nano-30b-a3b" and m.recurrent.state_dtype == "fp32"
    h, V = 2688, 131072
    d_inner, bc = 64 * 64, 2 * 8 * 128
    mamba = h * (2 * d_inner + bc + 64) + d_inner * h + (d_inner + bc) * 5 + 64 * 3 + d_inner
    attn = h * 32 * 128 + h * 2 * 256 + 32 * 128 * h
    moe = 128 * 2 * h * 1856 + 2 * h * 3712 + 128 * h + 128
    active_moe = 6 * 2 * h * 1856 + 2 * h * 3712 + 128 * h + 128
    rest = 23 * (mamba + h) + 6 * (attn + h) + h + 2 * V * h
    assert params_total(m) == rest + 23 * (moe + h)                 # 31.6e9
    assert params_active(m) == rest + 23 * (active_moe + h)         # 3.6e9 with embeddings
    assert state_bytes_per_sequence(m) == 23 * (64 * 128 * 64 * 4 + 3 * (d_inner + bc) * 2)


def test_single_sublayer_blocks_have_only_their_own_ops_and_messages():
    m = load_model("nemotron-h-56b")
    sm = StepModel(m, "h100-sxm", tp=4, weights="fp8", kv_cache="fp8")
    b = sm.breakdown(StepShape.make(n_decode=8, context=2048))
    # one all-reduce per block: 64 mixer blocks (attention + Mamba) and 54 MLP blocks
    msg = {name: float(v) for name, v in b.comm.items()}
    one = float(sm._message_time(Message("x", "all_reduce", np.asarray(8 * 8192 * 2.0), 4)))
    assert msg["attn_allreduce"] == pytest.approx(64 * one) and msg["ffn_allreduce"] == pytest.approx(54 * one)
    with pytest.raises(SpecError, match="moe_latent_size"):      # Nemotron-3 Super / Ultra
        from_hf_config({"model_type": "nemotron_h", "moe_latent_size": 1024}, "x")


def test_uneven_heads_error_suggests_attention_dp_for_moe_models():
    with pytest.raises(Exception, match=r"tp=1, dp_attention=36"):
        Parallel.build(load_model("deepseek-r1"), tp=36)
