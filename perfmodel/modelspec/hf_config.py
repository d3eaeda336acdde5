"""Build a :class:`ModelSpec` from a Hugging Face ``config.json`` dictionary.

Each supported ``model_type`` has a reader that maps the family's field names onto the common
shape (``n_routed_experts`` vs ``num_local_experts`` vs ``num_experts``...), decides per layer
whether the FFN is dense or MoE and whether attention is windowed, and merges identical layers into
:class:`LayerGroup` s. Missing, non-positive or contradictory fields raise
:class:`perfmodel.errors.SpecError` naming the field and the value. See ``docs/models.md``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import SpecError
from .hf_hybrid import _nemotron_h, _qwen3_next
from .hf_reader import (
    _attention_heads,
    _base,
    _check_top_k,
    _merge,
    _qwen_windows,
    _Reader,
    _windows_from_layer_types,
)
from .schema import LayerGroup, MLAShape, ModelSpec, MoEShape, SparseAttentionShape

#: transformers' default: every 4th Llama-4 layer is NoPE with global (full) attention.
LLAMA4_NOPE_INTERVAL = 4


# ---------------------------------------------------------------------------------------------
# Families
# ---------------------------------------------------------------------------------------------
def _llama_like(r: _Reader, *, sliding: bool, qkv_bias: bool | None = None, qk_norm: bool = False,
                qwen_window: bool = False) -> dict:
    """Dense GQA decoders: llama, mistral, qwen2, qwen3."""
    f = _base(r)
    f.update(_attention_heads(r, f["hidden_size"]))
    n = f["num_layers"]
    if qwen_window:
        windows = _qwen_windows(r, n)
    else:
        win = r.int("sliding_window", None) if sliding else None
        windows = _windows_from_layer_types(r, n, win, None) or [win] * n
    bias = r.flag("attention_bias", False) if qkv_bias is None else qkv_bias
    f.update(intermediate_size=r.int("intermediate_size"), attention_bias=bias,
             attention_out_bias=bias and qkv_bias is None, qk_norm=qk_norm,
             ffn_bias=r.flag("mlp_bias", False), layer_groups=_merge([("dense", w) for w in windows]))
    return f


def _llama(r: _Reader) -> dict:
    return _llama_like(r, sliding=False)


def _mistral(r: _Reader) -> dict:
    return _llama_like(r, sliding=True)


def _qwen2(r: _Reader) -> dict:
    # Qwen2 has biases on q, k, v (not o) with no config switch.
    return _llama_like(r, sliding=False, qkv_bias=True, qwen_window=True)


def _qwen3(r: _Reader) -> dict:
    # Qwen3: attention_bias switches q, k, v and o biases; q/k RMSNorm over head_dim.
    return _llama_like(r, sliding=False, qk_norm=True, qwen_window=True)


def _gemma(r: _Reader, *, version: int) -> dict:
    """Gemma 2 / 3 text decoders: GQA with explicit ``head_dim``, gated-GELU MLP, four norms per layer
    (before and after attention and MLP), tied embeddings unless the config says otherwise, and
    interleaved sliding-window layers: ``layer_types`` where given, else Gemma 2 alternates (even
    layers slide) and Gemma 3 makes every ``sliding_window_pattern``-th layer (default 6) global.
    Gemma 3 adds Q/K RMSNorm. Logit soft-capping does not change the cost and is ignored."""
    f = _base(r)
    f["tie_word_embeddings"] = r.flag("tie_word_embeddings", True)
    f.update(_attention_heads(r, f["hidden_size"]))
    n = f["num_layers"]
    sliding = r.int("sliding_window", None)
    windows = _windows_from_layer_types(r, n, sliding, None)
    if windows is None:
        if sliding is None:
            windows = [None] * n
        elif version == 2:
            windows = [sliding if i % 2 == 0 else None for i in range(n)]
        else:
            every = r.int("sliding_window_pattern", 6)
            windows = [None if (i + 1) % every == 0 else sliding for i in range(n)]
    bias = r.flag("attention_bias", False)
    f.update(intermediate_size=r.int("intermediate_size"), attention_bias=bias, attention_out_bias=bias,
             qk_norm=version >= 3, norms_per_layer=4, layer_groups=_merge([("dense", w) for w in windows]),
             notes=("attention / final logit soft-capping is not a cost and is ignored",))
    return f


def _gemma2(r: _Reader) -> dict:
    return _gemma(r, version=2)


def _gemma3(r: _Reader) -> dict:
    return _gemma(r, version=3)


def _phi3(r: _Reader) -> dict:
    """Phi-3 / Phi-4 (``phi3``): GQA with fused q/k/v and gate/up projections (the same parameters as
    separate ones), no biases; a ``sliding_window`` (Phi-3-mini: 2047) applies to every layer."""
    f = _llama_like(r, sliding=True, qkv_bias=False)
    f["attention_out_bias"] = False
    return f


def _glm4(r: _Reader) -> dict:
    """GLM-4 dense (``glm4``, GLM-4-0414): GQA with q/k/v biases (``attention_bias``), fused gate/up,
    and four norms per layer (post-attention and post-MLP norms besides the usual two)."""
    f = _llama_like(r, sliding=False, qkv_bias=r.flag("attention_bias", True))
    f["norms_per_layer"] = 4
    return f


def _glm4_moe(r: _Reader) -> dict:
    """GLM-4.5 / 4.6 / 4.7 (``glm4_moe``): GQA with q/k/v biases (``attention_bias``) and optional Q/K
    norm (``use_qk_norm``); DeepSeek-style MoE: first ``first_k_dense_replace`` layers dense, then
    ``n_routed_experts`` routed (``num_experts_per_tok``, ``moe_intermediate_size``) plus
    ``n_shared_experts`` shared experts, sigmoid router with a correction bias. MTP layers are not
    counted."""
    f = _llama_like(r, sliding=False, qkv_bias=r.flag("attention_bias", False))
    n = f["num_layers"]
    experts, top_k = r.int("n_routed_experts"), r.int("num_experts_per_tok")
    _check_top_k(r, top_k, "num_experts_per_tok", experts, "n_routed_experts")
    first_dense = r.int("first_k_dense_replace", 0, minimum=0)
    if first_dense > n:
        raise r.fail(f"{r.name('first_k_dense_replace')} ({first_dense}) exceeds {r.name('num_hidden_layers')} ({n})")
    shared, size = r.int("n_shared_experts", 0, minimum=0), r.int("moe_intermediate_size")
    f.update(qk_norm=r.flag("use_qk_norm", False),
             moe=MoEShape(experts, top_k, size, shared, shared * size, router_bias=True),
             layer_groups=_merge([("moe" if i >= first_dense else "dense", None) for i in range(n)]),
             notes=("multi-token-prediction (MTP) layers are not counted",))
    return f


def _mixtral(r: _Reader) -> dict:
    f = _llama_like(r, sliding=True)
    experts, top_k = r.int("num_local_experts"), r.int("num_experts_per_tok")
    _check_top_k(r, top_k, "num_experts_per_tok", experts, "num_local_experts")
    f["moe"] = MoEShape(experts, top_k, f["intermediate_size"])
    f["layer_groups"] = tuple(LayerGroup(g.count, "moe", g.window) for g in f["layer_groups"])
    return f


def _minimax_m2(r: _Reader) -> dict:
    """MiniMax-M2: GQA with Q/K RMSNorm over all heads (``qk_norm_type: per_layer``), MoE on every
    layer (``num_local_experts`` experts of ``intermediate_size``, sigmoid router with a bias)."""
    f = _llama_like(r, sliding=False)
    experts, top_k = r.int("num_local_experts"), r.int("num_experts_per_tok")
    _check_top_k(r, top_k, "num_experts_per_tok", experts, "num_local_experts")
    if r.int("shared_intermediate_size", 0, minimum=0):
        raise r.fail(f"{r.name('shared_intermediate_size')} > 0 (a shared expert) is not supported for minimax_m2")
    per_layer = r.get("qk_norm_type", "per_layer") == "per_layer"
    f.update(qk_norm=r.flag("use_qk_norm", False), qk_norm_per_layer=per_layer,
             moe=MoEShape(experts, top_k, f["intermediate_size"], router_bias=r.flag("use_routing_bias", False)),
             layer_groups=tuple(LayerGroup(g.count, "moe", g.window) for g in f["layer_groups"]),
             notes=("multi-token-prediction (MTP) modules are not counted",))
    return f


def _qwen3_moe(r: _Reader) -> dict:
    f = _qwen3(r)
    n = f["num_layers"]
    experts, top_k = r.int("num_experts"), r.int("num_experts_per_tok")
    _check_top_k(r, top_k, "num_experts_per_tok", experts, "num_experts")
    step = r.int("decoder_sparse_step", 1)
    dense_only = set(r.int_list("mlp_only_layers") or [])
    bad = sorted(i for i in dense_only if not 0 <= i < n)
    if bad:
        raise r.fail(f"{r.name('mlp_only_layers')} has layer indices {bad} outside 0..{n - 1}")
    ffn = ["moe" if i not in dense_only and (i + 1) % step == 0 else "dense" for i in range(n)]
    windows = _qwen_windows(r, n)
    f["moe"] = MoEShape(experts, top_k, r.int("moe_intermediate_size"))
    f["layer_groups"] = _merge(list(zip(ffn, windows, strict=True)))
    return f


def _deepseek_v3(r: _Reader) -> dict:
    """DeepSeek-V3/R1 and Kimi-K2: MLA attention, shared expert, first k layers dense."""
    f = _base(r)
    heads = r.int("num_attention_heads")
    q_lora = r.int("q_lora_rank", None)
    mla = MLAShape(q_lora, r.int("kv_lora_rank"), r.int("qk_nope_head_dim"),
                   r.int("qk_rope_head_dim"), r.int("v_head_dim"))
    n = f["num_layers"]
    experts, top_k = r.int("n_routed_experts"), r.int("num_experts_per_tok")
    _check_top_k(r, top_k, "num_experts_per_tok", experts, "n_routed_experts")
    first_dense = r.int("first_k_dense_replace", 0, minimum=0)
    if first_dense > n:
        raise r.fail(f"{r.name('first_k_dense_replace')} ({first_dense}) exceeds "
                     f"{r.name('num_hidden_layers')} ({n})")
    freq = r.int("moe_layer_freq", 1)
    shared = r.int("n_shared_experts", 0, minimum=0)
    moe_size = r.int("moe_intermediate_size")
    ffn = ["moe" if i >= first_dense and i % freq == 0 else "dense" for i in range(n)]
    notes = ["MLA: KV cache holds kv_lora_rank + qk_rope_head_dim elements per token per layer"]
    mtp_layers = r.int("num_nextn_predict_layers", 0, minimum=0)
    if mtp_layers:
        notes.append("multi-token-prediction (MTP) layers are not counted (as in the 671B figure)")
    f.update(num_attention_heads=heads, num_kv_heads=r.int("num_key_value_heads", heads),
             head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim, v_head_dim=mla.v_head_dim,
             attention="mla", mla=mla, intermediate_size=r.int("intermediate_size"),
             attention_bias=r.flag("attention_bias", False),
             moe=MoEShape(experts, top_k, moe_size, shared, shared * moe_size,
                          router_bias=r.get("topk_method") == "noaux_tc"),
             layer_groups=_merge([(x, None) for x in ffn]), notes=tuple(notes), mtp_layers=mtp_layers)
    return f


def _deepseek_v32(r: _Reader) -> dict:
    """DeepSeek-V3.2 and GLM-5 (``glm_moe_dsa``): the DeepSeek-V3 layout (MLA, shared expert, first k
    layers dense) with DeepSeek Sparse Attention on every layer."""
    f = _deepseek_v3(r)
    dsa = SparseAttentionShape(r.int("index_n_heads"), r.int("index_head_dim"), r.int("index_topk"))
    f["sparse_attention"] = dsa
    f["notes"] = (*f["notes"], f"DeepSeek Sparse Attention: a {dsa.index_heads}-head indexer scores every "
                  f"cached token, attention reads the top {dsa.top_k}; the indexer caches "
                  f"{dsa.index_head_dim} more elements per token per layer")
    return f


def _gpt_oss(r: _Reader) -> dict:
    f = _base(r)
    f.update(_attention_heads(r, f["hidden_size"]))
    n = f["num_layers"]
    experts = r.int("num_local_experts")
    top_k = r.int("num_experts_per_tok", None) or r.int("experts_per_token")
    if r.has("experts_per_token") and r.int("experts_per_token") != top_k:
        raise r.fail(f"{r.name('experts_per_token')} ({r.int('experts_per_token')}) contradicts "
                     f"{r.name('num_experts_per_tok')} ({top_k})")
    _check_top_k(r, top_k, "num_experts_per_tok", experts, "num_local_experts")
    sliding = r.int("sliding_window", None)
    windows = _windows_from_layer_types(r, n, sliding, None)
    if windows is None:  # reference implementation: even layers slide, odd layers are global
        if sliding is None:
            raise r.fail(f"missing {r.name('sliding_window')} (needed without 'layer_types')")
        windows = [sliding if i % 2 == 0 else None for i in range(n)]
    size = r.int("intermediate_size")
    bias = r.flag("attention_bias", True)
    f.update(intermediate_size=size, attention_bias=bias, attention_out_bias=bias, attention_sinks=True,
             moe=MoEShape(experts, top_k, size, router_bias=True, expert_bias=True),
             layer_groups=_merge([("moe", w) for w in windows]),
             notes=("attention sinks: one learned logit per head and layer (not a config field)",
                    "checkpoint stores expert weights in MXFP4; attention, router and embeddings in bf16"))
    return f


def _gptj(r: _Reader) -> dict:
    f = _base(r, hidden_key="n_embd", layers_key="n_layer")
    hidden = f["hidden_size"]
    heads = r.int("n_head")
    if hidden % heads:
        raise r.fail(f"{r.name('n_embd')} ({hidden}) is not divisible by {r.name('n_head')} ({heads})")
    if "n_positions" in r.cfg and "max_position_embeddings" not in f:
        f["max_position_embeddings"] = r.int("n_positions")
    f.update(num_attention_heads=heads, num_kv_heads=heads, head_dim=hidden // heads,
             v_head_dim=hidden // heads, attention="gqa", intermediate_size=r.int("n_inner", 4 * hidden),
             ffn_matrices=2, ffn_bias=True, norms_per_layer=1, norm_bias=True, lm_head_bias=True,
             layer_groups=(LayerGroup(f["num_layers"], "dense", None),),
             notes=("parallel attention + MLP block with one LayerNorm; n_inner null means 4 * n_embd",))
    return f


def _llama4(r: _Reader) -> dict:
    """Llama-4 text model: MoE every ``interleave_moe_layer_step``-th layer with a shared expert,
    chunked attention on RoPE layers and global attention on NoPE layers."""
    f = _base(r)
    f.update(_attention_heads(r, f["hidden_size"]))
    n = f["num_layers"]
    experts, top_k = r.int("num_local_experts"), r.int("num_experts_per_tok")
    _check_top_k(r, top_k, "num_experts_per_tok", experts, "num_local_experts")
    expert_size = r.int("intermediate_size")
    notes = []
    moe_layers = r.int_list("moe_layers")
    if moe_layers is None:
        step = r.int("interleave_moe_layer_step", 1)
        moe_layers = list(range(step - 1, n, step))
        notes.append(f"moe_layers absent: every {step}th layer is MoE (transformers default)")
    chunk = r.int("attention_chunk_size", None)
    windows = _windows_from_layer_types(r, n, None, chunk)
    if windows is None:
        rope = r.int_list("no_rope_layers", n)  # 1 = layer uses RoPE (chunked), 0 = NoPE (global)
        if not rope:
            rope = [int((i + 1) % LLAMA4_NOPE_INTERVAL != 0) for i in range(n)]
            notes.append(f"no_rope_layers absent: every {LLAMA4_NOPE_INTERVAL}th layer is NoPE with "
                         "global attention, the others chunked (transformers default)")
        windows = [chunk if use_rope else None for use_rope in rope]
    moe_set = set(moe_layers)
    ffn = ["moe" if i in moe_set else "dense" for i in range(n)]
    dense_size = r.int("intermediate_size_mlp", None) if "dense" in ffn else None
    if "dense" in ffn and dense_size is None:
        raise r.fail(f"missing {r.name('intermediate_size_mlp')} (dense layers exist)")
    f.update(intermediate_size=dense_size or expert_size,
             attention_bias=r.flag("attention_bias", False),
             attention_out_bias=r.flag("attention_bias", False),
             moe=MoEShape(experts, top_k, expert_size, 1, expert_size),
             layer_groups=_merge(list(zip(ffn, windows, strict=True))), notes=tuple(notes))
    return f


_FAMILIES: dict[str, Callable[[_Reader], dict]] = {
    "llama": _llama, "llama4": _llama4, "llama4_text": _llama4, "mistral": _mistral,
    "mixtral": _mixtral, "qwen2": _qwen2, "qwen3": _qwen3, "qwen3_moe": _qwen3_moe,
    "deepseek_v3": _deepseek_v3, "kimi_k2": _deepseek_v3, "gpt_oss": _gpt_oss, "gptj": _gptj,
    "deepseek_v32": _deepseek_v32, "glm_moe_dsa": _deepseek_v32, "qwen3_next": _qwen3_next,
    "qwen3_5_text": _qwen3_next, "qwen3_5_moe_text": _qwen3_next, "minimax_m2": _minimax_m2,
    "nemotron_h": _nemotron_h, "gemma2": _gemma2, "gemma3_text": _gemma3, "phi3": _phi3, "glm4": _glm4,
    "glm4_moe": _glm4_moe,
}
#: Multimodal wrappers whose ``text_config`` is the decoder the spec describes.
_TEXT_WRAPPERS = {"llama4": "llama4", "qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text",
                  "gemma3": "gemma3_text"}
#: ``model_type`` values :func:`from_hf_config` understands.
SUPPORTED_FAMILIES: tuple[str, ...] = tuple(sorted(_FAMILIES))


def from_hf_config(config: dict, id: str, hf_repo_id: str | None = None, source: str | None = None,
                   *, origin: str = "config.json") -> ModelSpec:
    """Read a Hugging Face ``config.json`` (as a dict) into a :class:`ModelSpec`.

    Parameters
    ----------
    config : dict
        The parsed ``config.json``. Multimodal wrappers (Llama-4, Qwen3.5) are accepted: their
        ``text_config`` is read (errors then name ``text_config.<field>``).
    id : str
        Identifier given to the spec.
    hf_repo_id, source : str, optional
        Provenance copied onto the spec.
    origin : str
        Prefix of error messages (a file path when read from disk).

    Raises
    ------
    SpecError
        Unknown ``model_type`` (the message lists the supported families), missing or non-positive
        sizes, or contradictory fields (heads not divisible by KV heads, ``top_k`` above the expert
        count, ``first_k_dense_replace`` above the layer count...).
    """
    if not isinstance(config, dict):
        raise SpecError(f"{origin}: expected a JSON object, got {type(config).__name__}")
    supported = ", ".join(SUPPORTED_FAMILIES)
    model_type = config.get("model_type")
    if model_type is None:
        raise SpecError(f"{origin}: missing 'model_type'; supported families: {supported}")
    reader = _Reader(config, origin)
    if model_type in _TEXT_WRAPPERS and isinstance(config.get("text_config"), dict):
        text = dict(config["text_config"])
        if "tie_word_embeddings" in config and "tie_word_embeddings" not in text:
            text["tie_word_embeddings"] = config["tie_word_embeddings"]
        reader = _Reader(text, origin, "text_config.")
        model_type = _TEXT_WRAPPERS[model_type] if model_type != "llama4" else model_type
    if model_type not in _FAMILIES:
        raise SpecError(f"{origin}: unsupported 'model_type' {model_type!r}; "
                        f"supported families: {supported}")
    fields = _FAMILIES[model_type](reader)
    return ModelSpec(id=id, family=str(model_type), hf_repo_id=hf_repo_id, source=source, **fields)
