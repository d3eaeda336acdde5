"""Bad model configs and ids: every error names the field and the offending value."""

from __future__ import annotations

import copy
import json

import pytest

from perfmodel.errors import SpecError, UnknownNameError
from perfmodel.modelspec import SUPPORTED_FAMILIES, from_hf_config, load_model

LLAMA = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
}
MIXTRAL = {**LLAMA, "model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2}
DEEPSEEK = {
    "model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
    "num_key_value_heads": 128, "intermediate_size": 18432, "vocab_size": 129280, "q_lora_rank": 1536,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048,
    "n_shared_experts": 1, "first_k_dense_replace": 3,
}
GPT_OSS = {
    "model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 4, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "vocab_size": 201088,
    "num_local_experts": 32, "num_experts_per_tok": 4, "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 2,
}


def _with(base: dict, **changes) -> dict:
    cfg = copy.deepcopy(base)
    for key, value in changes.items():
        if value is ...:
            cfg.pop(key)
        else:
            cfg[key] = value
    return cfg


def _error(cfg) -> str:
    with pytest.raises(SpecError) as info:
        from_hf_config(cfg, "bad")
    return str(info.value)


def test_good_configs_load():  # the fixtures above are valid; each case below breaks one thing
    for cfg in (LLAMA, MIXTRAL, DEEPSEEK, GPT_OSS):
        from_hf_config(cfg, "ok")


def test_missing_hidden_size():
    assert _error(_with(LLAMA, hidden_size=...)) == "config.json: missing 'hidden_size'"


def test_missing_num_hidden_layers_and_null_counts_as_missing():
    assert "missing 'num_hidden_layers'" in _error(_with(LLAMA, num_hidden_layers=...))
    assert "missing 'vocab_size'" in _error(_with(LLAMA, vocab_size=None))


def test_heads_not_divisible_by_kv_heads():
    msg = _error(_with(LLAMA, num_key_value_heads=6))
    assert "'num_attention_heads' (32)" in msg and "'num_key_value_heads' (6)" in msg


def test_implied_head_dim_needs_divisible_hidden_size():
    msg = _error(_with(LLAMA, hidden_size=4000, num_attention_heads=48, num_key_value_heads=8))
    assert "'hidden_size' (4000)" in msg and "'num_attention_heads' (48)" in msg and "head_dim" in msg
    # an explicit head_dim makes heads*head_dim != hidden_size legitimate (Qwen3-32B: 64*128 != 5120)
    from_hf_config(_with(LLAMA, hidden_size=4000, num_attention_heads=48, num_key_value_heads=8,
                         head_dim=128), "ok")


def test_top_k_above_expert_count():
    msg = _error(_with(MIXTRAL, num_experts_per_tok=9))
    assert "'num_experts_per_tok' (9)" in msg and "'num_local_experts' (8)" in msg


def test_first_k_dense_replace_above_layer_count():
    msg = _error(_with(DEEPSEEK, first_k_dense_replace=62))
    assert "'first_k_dense_replace' (62)" in msg and "'num_hidden_layers' (61)" in msg


def test_unknown_model_type_lists_supported_families():
    msg = _error(_with(LLAMA, model_type="mamba"))
    assert "'mamba'" in msg
    for family in SUPPORTED_FAMILIES:
        assert family in msg


def test_missing_model_type():
    msg = _error(_with(LLAMA, model_type=...))
    assert "missing 'model_type'" in msg and "llama" in msg


@pytest.mark.parametrize("field, value, words", [
    ("intermediate_size", -1, "'intermediate_size' must be positive, got -1"),
    ("vocab_size", 0, "'vocab_size' must be positive, got 0"),
    ("hidden_size", "4096", "'hidden_size' must be an integer, got '4096'"),
    ("num_hidden_layers", True, "'num_hidden_layers' must be an integer, got True"),
    ("hidden_size", 4096.5, "'hidden_size' must be an integer, got 4096.5"),
])
def test_non_positive_or_non_integer_sizes(field, value, words):
    assert words in _error(_with(LLAMA, **{field: value}))


def test_negative_first_k_dense_replace():
    assert "'first_k_dense_replace' must be >= 0, got -1" in _error(_with(DEEPSEEK, first_k_dense_replace=-1))


def test_layer_types_wrong_length_and_unknown_type():
    msg = _error(_with(GPT_OSS, layer_types=["sliding_attention"] * 3))
    assert "'layer_types'" in msg and "(4)" in msg and "got 3" in msg
    msg = _error(_with(GPT_OSS, layer_types=["sliding_attention", "linear_attention"] * 2))
    assert "'layer_types'[1]" in msg and "'linear_attention'" in msg


def test_gpt_oss_contradictory_top_k_fields():
    msg = _error(_with(GPT_OSS, experts_per_token=2))
    assert "'experts_per_token' (2)" in msg and "'num_experts_per_tok' (4)" in msg


def test_qwen3_moe_mlp_only_layers_out_of_range():
    cfg = _with(LLAMA, model_type="qwen3_moe", num_experts=8, num_experts_per_tok=2,
                moe_intermediate_size=768, mlp_only_layers=[0, 40])
    assert "'mlp_only_layers'" in _error(cfg) and "[40]" in _error(cfg)


def test_llama4_nested_field_is_named_with_its_prefix():
    cfg = {"model_type": "llama4", "text_config": _with(LLAMA, model_type="llama4_text",
                                                        num_local_experts=16, num_experts_per_tok=1)}
    cfg["text_config"].pop("hidden_size")
    assert "missing 'text_config.hidden_size'" in _error(cfg)


def test_config_not_an_object():
    assert "expected a JSON object, got list" in _error([1, 2, 3])


def test_unknown_id_suggests_closest():
    with pytest.raises(UnknownNameError) as info:
        load_model("llama-3.1-7b")
    msg = str(info.value)
    assert "unknown model 'llama-3.1-7b'" in msg and "did you mean" in msg and "'llama-3.1-70b'" in msg
    with pytest.raises(UnknownNameError, match="'deepseek-v3'"):
        load_model("deepseek-ai/DeepSeek-V3.5")


def test_file_not_found(tmp_path):
    missing = tmp_path / "nope" / "config.json"
    with pytest.raises(SpecError, match="file not found"):
        load_model(str(missing))


def test_non_json_file(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("model_type: llama\n")
    with pytest.raises(SpecError) as info:
        load_model(bad)
    assert str(bad) in str(info.value) and "not valid JSON (line 1, column 1)" in str(info.value)


def test_directory_without_config(tmp_path):
    with pytest.raises(SpecError, match="file not found"):
        load_model(str(tmp_path) + "/")


def test_bad_field_in_file_names_the_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_with(LLAMA, num_key_value_heads=5)))
    with pytest.raises(SpecError) as info:
        load_model(path)
    assert str(info.value).startswith(f"{path}: ") and "'num_key_value_heads' (5)" in str(info.value)


def test_wrapper_with_non_object_config(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"model": "m", "config": "llama"}))
    with pytest.raises(SpecError, match="'config' must be a JSON object"):
        load_model(path)


def test_empty_id():
    with pytest.raises(SpecError, match="model: expected an id"):
        load_model("  ")
