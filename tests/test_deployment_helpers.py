"""Shared helpers of the deployment tests: a tiny model config on disk, tiny accelerators, hand costs."""

from __future__ import annotations

import json

import yaml

P, BW = 500e12, 2e12  # tiny accelerator: bf16 peak [FLOP/s], HBM bandwidth [B/s]
H, HD, NQ, NKV, INTER, VOCAB = 64, 16, 4, 2, 128, 256


def gpu_spec(path, name="gpu"):
    data = {"kind": "accelerator", "id": f"test-{name}", "name": name,
            "memory": {"hbm": {"capacity": "80 GB", "bandwidth": "2 TB/s"}},
            "compute": {"bf16": "500 TFLOP/s"}, "scale_up": {"link": "nvlink4", "domain": 8}}
    f = path / f"{name}.yaml"
    f.write_text(yaml.safe_dump(data))
    return str(f)


def split_dep(path, alpha=3e-6, bandwidth=100e9, micro_batches=1, layers=2):
    model = path / "tiny.json"
    if not model.exists():
        _write_tiny_config(model, layers)
    return {"model": str(model), "efficiency": "datasheet",
            "pools": {"gpu": {"hardware": gpu_spec(path, "gpu")}, "ffn": {"hardware": gpu_spec(path, "ffn"),
                                                                        "count": 1}},
            "placement": {"prefill": "gpu", "decode_attention": "gpu", "decode_ffn": "ffn"},
            "links": {"gpu-ffn": {"bandwidth": bandwidth, "alpha": alpha}},
            "options": {"micro_batches": micro_batches}}


def _write_tiny_config(path, layers):
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": H,
           "num_hidden_layers": layers, "vocab_size": VOCAB, "num_attention_heads": NQ,
           "num_key_value_heads": NKV, "head_dim": HD, "intermediate_size": INTER,
           "tie_word_embeddings": False, "max_position_embeddings": 4096}
    path.write_text(json.dumps(cfg))


def _op(flops, data):
    return max(flops / P, data / BW)


def attention_layer(t, c):
    """One layer's attention side for t tokens at context c, by hand [s] (datasheet roofline)."""
    qkv = (NQ + 2 * NKV) * HD
    return (_op(2 * t * qkv * H, qkv * H * 2 + t * (qkv + H) * 2)
            + _op(t * 2 * NQ * (HD + HD) * c, t * (c * 2 * NKV * HD * 2 + NQ * (HD + HD) * 2))
            + _op(2 * t * H * NQ * HD, H * NQ * HD * 2 + t * (H + NQ * HD) * 2)
            + 2 * 8 * H * t / BW)


def ffn_layer(t):
    """One layer's FFN side for t tokens, by hand [s]."""
    return (_op(2 * t * 2 * INTER * H, 2 * INTER * H * 2 + t * (2 * INTER + H) * 2)
            + _op(2 * t * H * INTER, H * INTER * 2 + t * (H + INTER) * 2)
            + 2 * 3 * INTER * t / BW)


def head(t):
    return t * H * 4 / BW + _op(2 * t * VOCAB * H, VOCAB * H * 2 + t * (VOCAB + H) * 2) + t * VOCAB * 8 / BW
