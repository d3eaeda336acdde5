"""Gemma 2 / 3, Phi-3 / 4, GLM-4 and GLM-4.5+ (glm4_moe) read from config.json.

The configs below carry the published dimensions of one model of each family (Gemma-2-9B as in
AI-Hypercomputer/maxtext ``hf_model_configs.py``; the others as their model cards list them); each test
checks the reader against parameters and KV bytes computed by hand from those fields.
"""

from __future__ import annotations

import pytest

from perfmodel.errors import SpecError
from perfmodel.modelspec import from_hf_config, kv_bytes_per_token, kv_cache_bytes, load_model, params_total

GEMMA2_9B = {"model_type": "gemma2", "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8,
             "hidden_size": 3584, "intermediate_size": 14336, "head_dim": 256, "sliding_window": 4096,
             "vocab_size": 256000, "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0}


def test_gemma2_alternates_sliding_layers_and_ties_embeddings():
    m = from_hf_config(GEMMA2_9B, "gemma-2-9b")
    assert m.tie_word_embeddings and m.norms_per_layer == 4 and not m.qk_norm
    assert [(g.count, g.window) for g in m.layer_groups] == [(21, 4096), (21, None)]   # even layers slide
    h, V = 3584, 256000
    layer = h * 16 * 256 + h * 8 * 512 + 16 * 256 * h + 3 * h * 14336 + 4 * h
    assert params_total(m) == 42 * layer + h + V * h == 9_241_705_984           # "9B" (9.24e9)
    assert kv_bytes_per_token(m, "bf16") == 42 * 8 * 512 * 2
    # at 8192 tokens the 21 sliding layers hold 4096
    assert kv_cache_bytes(m, "bf16", 8192) == 8 * 512 * 2 * (21 * 8192 + 21 * 4096)


def test_gemma3_every_sixth_layer_global_with_qk_norm_and_wrapper():
    text = {"model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
            "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "sliding_window": 512,
            "sliding_window_pattern": 6, "vocab_size": 262144}
    m = from_hf_config(text, "gemma-3-1b")
    assert [(g.count, g.window) for g in m.layer_groups] == [(22, 512), (4, None)]     # layers 5, 11, 17, 23
    h, V = 1152, 262144
    layer = h * 4 * 256 + h * 1 * 512 + 4 * 256 * h + 3 * h * 6912 + 4 * h + 2 * 256
    assert params_total(m) == 26 * layer + h + V * h
    wrapped = from_hf_config({"model_type": "gemma3", "text_config": dict(text, model_type="gemma3_text")}, "w")
    assert params_total(wrapped) == params_total(m)


def test_phi3_and_phi4():
    phi3 = from_hf_config({"model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32,
                           "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 8192,
                           "vocab_size": 32064, "sliding_window": 2047, "tie_word_embeddings": False}, "phi-3-mini")
    h = 3072
    assert params_total(phi3) == 32 * (4 * h * h + 3 * h * 8192 + 2 * h) + h + 2 * 32064 * h == 3_821_079_552
    assert phi3.layer_groups[0].window == 2047
    phi4 = from_hf_config({"model_type": "phi3", "hidden_size": 5120, "num_hidden_layers": 40,
                           "num_attention_heads": 40, "num_key_value_heads": 10, "intermediate_size": 17920,
                           "vocab_size": 100352, "sliding_window": None}, "phi-4")
    h = 5120
    assert params_total(phi4) == 40 * (h * h + h * 10 * 256 + h * h + 3 * h * 17920 + 2 * h) + h + 2 * 100352 * h
    assert kv_bytes_per_token(phi4, "bf16") == 40 * 10 * 256 * 2


def test_glm4_dense_has_four_norms_and_qkv_bias():
    m = from_hf_config({"model_type": "glm4", "hidden_size": 4096, "num_hidden_layers": 40, "num_attention_heads": 32,
                        "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 13696,
                        "attention_bias": True, "vocab_size": 151552}, "glm-4-9b")
    h = 4096
    attn = h * 32 * 128 + h * 2 * 256 + 32 * 128 * h + (32 * 128 + 2 * 256)    # q/k/v biases, o none
    assert params_total(m) == 40 * (attn + 3 * h * 13696 + 4 * h) + h + 2 * 151552 * h


def test_glm47_shipped_from_a_trimmed_config():
    m = load_model("zai-org/GLM-4.7-FP8")
    assert m.id == "glm-4.7" and m.family == "glm4_moe"
    assert [(g.count, g.ffn) for g in m.layer_groups] == [(3, "dense"), (89, "moe")]
    h, V = 5120, 151552
    attn = h * 96 * 128 + h * 8 * 256 + 96 * 128 * h               # the trimmed copy omits attention_bias
    moe = 160 * 3 * h * 1536 + 3 * h * 1536 + 160 * h + 160
    total = 3 * (attn + 3 * h * 12288 + 2 * h) + 89 * (attn + moe + 2 * h) + h + 2 * V * h
    assert params_total(m) == total and 350e9 < total < 356e9      # "355B" counts the MTP layer too
    assert kv_bytes_per_token(m, "bf16") == 92 * 8 * 256 * 2


def test_glm4_moe_checks_the_dense_prefix():
    with pytest.raises(SpecError, match="first_k_dense_replace"):
        from_hf_config({"model_type": "glm4_moe", "num_hidden_layers": 2, "hidden_size": 64,
                        "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
                        "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                        "first_k_dense_replace": 3}, "x")
