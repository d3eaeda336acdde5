"""Hybrid families whose linear-attention or state-space layers keep a fixed recurrent state per
sequence instead of a KV cache: Qwen3-Next / Qwen3.5 (Gated DeltaNet) and Nemotron-H (Mamba-2).
Dispatched by :func:`perfmodel.modelspec.hf_config.from_hf_config`.
"""

from __future__ import annotations

from .hf_reader import _attention_heads, _base, _check_top_k, _merge, _Reader
from .schema import MoEShape, RecurrentShape


def _gated_deltanet(r: _Reader) -> RecurrentShape:
    """Gated DeltaNet mixer of Qwen3-Next / Qwen3.5 linear-attention layers.

    Input projections q, k (``n_k·d_k`` each), v and the output gate z (``n_v·d_v`` each), and the
    per-value-head ``b`` (β) and ``a`` (decay) scalars; the conv runs over q, k and v.
    """
    nk, nv = r.int("linear_num_key_heads"), r.int("linear_num_value_heads")
    dk, dv = r.int("linear_key_head_dim"), r.int("linear_value_head_dim")
    if nv % nk:
        raise r.fail(f"{r.name('linear_num_value_heads')} ({nv}) is not divisible by "
                     f"{r.name('linear_num_key_heads')} ({nk})")
    key_dim, value_dim = nk * dk, nv * dv
    state = str(r.get("mamba_ssm_dtype", "bfloat16"))
    return RecurrentShape("gated_deltanet", nv, dk, dv, in_proj=2 * key_dim + 2 * value_dim + 2 * nv,
                          out_proj=value_dim, conv_channels=2 * key_dim + value_dim,
                          conv_kernel=r.int("linear_conv_kernel_dim"), head_params=2, norm_width=dv,
                          state_dtype={"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(state, state))


def _linear_layers(r: _Reader, n: int) -> list[str]:
    """Per-layer mixer of a Qwen3-Next / Qwen3.5 hybrid: ``layer_types`` or every
    ``full_attention_interval``-th layer full attention, the others linear (Gated DeltaNet)."""
    types = r.get("layer_types")
    if types is None:
        interval = r.int("full_attention_interval")
        return ["attention" if (i + 1) % interval == 0 else "recurrent" for i in range(n)]
    if not isinstance(types, list) or len(types) != n:
        got = len(types) if isinstance(types, list) else repr(types)
        raise r.fail(f"{r.name('layer_types')} must list one type per layer ({n}), got {got}")
    kinds = {"full_attention": "attention", "linear_attention": "recurrent"}
    bad = [f"[{i}] {t!r}" for i, t in enumerate(types) if t not in kinds]
    if bad:
        raise r.fail(f"{r.name('layer_types')}{bad[0]}; supported: {', '.join(kinds)}")
    return [kinds[t] for t in types]


def _qwen3_next(r: _Reader) -> dict:
    """Qwen3-Next / Qwen3.5 hybrids: Gated DeltaNet layers and every 4th a gated full-attention layer
    (Q/K norm, output gate); MoE with a gated shared expert (``*_moe``) or a dense FFN."""
    f = _base(r)
    f.update(_attention_heads(r, f["hidden_size"]))
    n = f["num_layers"]
    mixers = _linear_layers(r, n)
    f.update(qk_norm=True, attention_output_gate=r.flag("attn_output_gate", True),
             attention_bias=r.flag("attention_bias", False), attention_out_bias=False,
             recurrent=_gated_deltanet(r),
             notes=("Gated DeltaNet layers keep a fixed recurrent state per sequence instead of a KV cache",
                    "multi-token-prediction (MTP) layers are not counted"))
    if r.has("num_experts"):
        experts, top_k = r.int("num_experts"), r.int("num_experts_per_tok")
        _check_top_k(r, top_k, "num_experts_per_tok", experts, "num_experts")
        shared = r.int("shared_expert_intermediate_size", 0, minimum=0)
        step = r.int("decoder_sparse_step", 1)
        dense_only = set(r.int_list("mlp_only_layers") or [])
        ffn = ["moe" if i not in dense_only and (i + 1) % step == 0 else "dense" for i in range(n)]
        f["moe"] = MoEShape(experts, top_k, r.int("moe_intermediate_size"), 1 if shared else 0, shared,
                            shared_expert_gate=bool(shared))
        f["intermediate_size"] = r.int("intermediate_size", r.int("moe_intermediate_size"))
    else:
        ffn = ["dense"] * n
        f["intermediate_size"] = r.int("intermediate_size")
    f["layer_groups"] = _merge([(x, None, m) for x, m in zip(ffn, mixers, strict=True)])
    return f


#: Nemotron-H ``hybrid_override_pattern`` characters -> (mixer, ffn) of the block.
NEMOTRON_H_BLOCKS = {"M": ("recurrent", "none"), "*": ("attention", "none"), "-": ("none", "dense"),
                     "E": ("none", "moe")}


def _mamba2(r: _Reader) -> RecurrentShape:
    """Mamba-2 mixer of Nemotron-H: input projection to z, x (``d_inner`` each), B, C (``n_groups ·
    ssm_state_size`` each) and dt (one per head); conv over x, B, C; per head A, D, dt bias; gated
    norm over ``d_inner``; state per head ``ssm_state_size × mamba_head_dim``."""
    heads, head_dim = r.int("mamba_num_heads"), r.int("mamba_head_dim")
    d_state, groups = r.int("ssm_state_size"), r.int("n_groups", 1)
    if heads % groups:
        raise r.fail(f"{r.name('mamba_num_heads')} ({heads}) is not divisible by {r.name('n_groups')} ({groups})")
    if r.flag("mamba_proj_bias", False):
        raise r.fail(f"{r.name('mamba_proj_bias')} true is not supported")
    d_inner, bc = heads * head_dim, 2 * groups * d_state
    state = str(r.get("mamba_ssm_cache_dtype", "bfloat16"))
    return RecurrentShape("mamba2", heads, d_state, head_dim, in_proj=2 * d_inner + bc + heads, out_proj=d_inner,
                          conv_channels=d_inner + bc, conv_kernel=r.int("conv_kernel"), head_params=3,
                          norm_width=d_inner, conv_bias=r.flag("use_conv_bias", True),
                          state_dtype={"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(state, state),
                          chunk=r.int("chunk_size", 128))


def _nemotron_h(r: _Reader) -> dict:
    """Nemotron-H / Nemotron-3 hybrids: a ``hybrid_override_pattern`` of single-sublayer blocks, each a
    Mamba-2 mixer (``M``), a GQA attention layer (``*``), a squared-ReLU MLP (``-``, two matrices) or a
    MoE (``E``: routed and shared experts of the same two-matrix kind), with one norm per block."""
    cfg = dict(r.cfg)
    if "head_dim" not in cfg and "attention_head_dim" in cfg:
        cfg["head_dim"] = cfg["attention_head_dim"]
    types = cfg.get("layers_block_type")
    if isinstance(types, list) and "hybrid_override_pattern" not in cfg:  # newer spelling, one word per block
        names = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}
        cfg["hybrid_override_pattern"] = "".join(names.get(str(t), "?") for t in types)
        cfg.setdefault("num_hidden_layers", len(types))
    r = _Reader(cfg, r.origin, r.prefix)
    if r.has("moe_latent_size"):
        raise r.fail(f"{r.name('moe_latent_size')} (LatentMoE: experts in a projected latent space) is not "
                     "supported")
    f = _base(r)
    f.update(_attention_heads(r, f["hidden_size"]))
    n = f["num_layers"]
    pattern = r.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or len(pattern) != n:
        got = len(pattern) if isinstance(pattern, str) else repr(pattern)
        raise r.fail(f"{r.name('hybrid_override_pattern')} must have one character per layer ({n}), got {got}")
    bad = sorted(set(pattern) - set(NEMOTRON_H_BLOCKS))
    if bad:
        raise r.fail(f"{r.name('hybrid_override_pattern')} has {bad}; supported: {', '.join(NEMOTRON_H_BLOCKS)}")
    blocks = [NEMOTRON_H_BLOCKS[c] for c in pattern]
    act = r.get("mlp_hidden_act", "relu2")
    f.update(ffn_matrices=2 if act == "relu2" else 3, norms_per_layer=1,
             attention_bias=r.flag("attention_bias", False), attention_out_bias=r.flag("attention_bias", False),
             ffn_bias=r.flag("mlp_bias", False), intermediate_size=r.int("intermediate_size"),
             layer_groups=_merge([(ffn, None, mixer) for mixer, ffn in blocks]),
             notes=("one norm per block; each block is a Mamba-2 mixer, an attention layer, an MLP or a MoE",))
    if "M" in pattern:
        f["recurrent"] = _mamba2(r)
    if "E" in pattern:
        experts, top_k = r.int("n_routed_experts"), r.int("num_experts_per_tok")
        _check_top_k(r, top_k, "num_experts_per_tok", experts, "n_routed_experts")
        shared = r.int("moe_shared_expert_intermediate_size", 0, minimum=0) if r.int(
            "n_shared_experts", 0, minimum=0) else 0
        f["moe"] = MoEShape(experts, top_k, r.int("moe_intermediate_size"), r.int("n_shared_experts", 0, minimum=0),
                            shared, router_bias=True)
    return f
