"""``perfmodel models list`` / ``show``."""

from __future__ import annotations

import json

from perfmodel.cli import main


def test_models_list_table(capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    for model_id in ("llama-3.1-70b", "deepseek-v3", "gpt-oss-120b", "kimi-k2", "llama-4-scout"):
        assert model_id in out
    assert "327,680" in out  # Llama-3.1-70B KV bytes/token in bf16


def test_models_list_json(capsys):
    assert main(["models", "list", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_id = {r["id"]: r for r in rows}
    assert len(rows) >= 21
    assert by_id["deepseek-v3"]["kv_bytes_per_token"] == 70_272
    assert by_id["deepseek-v3"]["attention"] == "mla"


def test_models_show_json_fields(capsys):
    assert main(["models", "show", "deepseek-ai/DeepSeek-V3", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["id"] == "deepseek-v3" and info["family"] == "deepseek_v3"
    assert info["attention"] == "mla" and info["kv_bytes_per_token"] == 70_272
    assert info["num_layers"] == 61 and info["hidden_size"] == 7168
    assert info["head_dim"] == 192 and info["num_kv_heads"] == 128
    assert info["moe"] == {"num_experts": 256, "top_k": 8, "expert_intermediate_size": 2048,
                           "num_shared_experts": 1, "dense_layers": 3}
    assert info["layer_groups"] == [{"count": 3, "ffn": "dense", "window": None, "mixer": "attention"},
                                    {"count": 58, "ffn": "moe", "window": None, "mixer": "attention"}]
    assert info["sparse_attention"] is None and info["recurrent"] is None
    assert info["state_bytes_per_sequence"] == 0
    assert 660e9 < info["params_total"] < 680e9 and 36e9 < info["params_active"] < 39e9


def test_models_show_dense_has_null_moe(capsys):
    assert main(["models", "show", "llama-3.1-70b", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["moe"] is None and info["attention"] == "gqa" and info["kv_bytes_per_token"] == 327_680


def test_models_show_table(capsys):
    assert main(["models", "show", "gpt-oss-120b"]) == 0
    out = capsys.readouterr().out
    assert "gpt_oss" in out and "18 x moe window 128" in out and "num_kv_heads" in out


def test_models_show_config_path(tmp_path, capsys):
    folder = tmp_path / "tiny-llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000}))
    assert main(["models", "show", str(folder / "config.json"), "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["id"] == "tiny-llama"
    assert info["kv_bytes_per_token"] == 2 * 2 * 2 * 64 * 2  # layers * (K,V) * kv heads * d * 2 B


def test_models_show_unknown_id_is_one_line_error(capsys):
    assert main(["models", "show", "llama-3.1-7b"]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'llama-3.1-7b'" in err and "did you mean" in err and "Traceback" not in err


def test_models_show_bad_file_is_error(tmp_path, capsys):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    assert main(["models", "show", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_models_without_action_prints_help(capsys):
    assert main(["models"]) == 1
    assert "list" in capsys.readouterr().out
