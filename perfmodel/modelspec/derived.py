"""Quantities derived from a :class:`ModelSpec`: parameter counts, weight bytes and KV-cache bytes.

Pure functions of the spec (no I/O, no state). Notation: h hidden size, L layers, V vocabulary,
n_q query heads, n_kv KV heads, d head_dim (Q/K), d_v V head dim, m FFN matrices (3 gated, 2 plain),
I dense intermediate size, E routed experts, k experts per token, I_e expert intermediate size,
I_s total shared-expert intermediate size.

Parameters (per layer)
    GQA attention: h·n_q·d + h·n_kv·(d + d_v) + n_q·d_v·h  (+ n_q·d + n_kv·(d + d_v) QKV biases,
    + h output bias, + n_q sinks, where the spec says so).
    MLA attention: h·r_q + r_q·n_q·(d_nope + d_rope) + h·(r_kv + d_rope) + r_kv·n_q·(d_nope + d_v)
    + n_q·d_v·h   (with r_q = 0 and ``h·n_q·(d_nope+d_rope)`` for the Q projection when there is
    no Q low-rank).
    Dense FFN: m·h·I (+ (m−1)·I + h biases for GPT-J).
    One routed expert: m·h·I_e (+ (m−1)·I_e + h with expert biases); shared experts: m·h·I_s;
    router: E·h (+ E bias, + h for a shared-expert gate).
    Norms: norms_per_layer·h (×2 with LayerNorm bias) + 2·d (Q/K norm; (n_q + n_kv)·d when the norm
    spans all heads, MiniMax-M2) + r_q + r_kv (MLA norms).
Model level: input embedding V·h, LM head V·h (+ V bias) unless tied, final norm h (×2 with bias).

    Attention output gate (Qwen3-Next / Qwen3.5): + h·n_q·d (the Q projection is twice as wide).
    DSA indexer (DeepSeek-V3.2, GLM-5): r_q·n_i·d_i (h·n_i·d_i without Q low-rank) + h·d_i + 2·d_i
    (key LayerNorm) + h·n_i (head weights), with n_i indexer heads of size d_i.
    Recurrent mixer (Gated DeltaNet, Mamba-2): h·P_in + P_out·h + c·K_c (+ c conv bias) + n_h·p_h + w_n
    with P_in / P_out the input / output projection widths, c conv channels, K_c the conv kernel,
    n_h heads with p_h vectors each and w_n the gated-norm width; no Q/K norms.

KV cache per token per attention layer (elements); recurrent layers cache nothing per token
    GQA: n_kv·(d + d_v)  (= 2·n_kv·d for the usual d_v = d).
    MLA: r_kv + d_rope  (one shared latent plus the decoupled RoPE key; no factor 2).
    DSA: + d_i (the indexer's key).

Recurrent state per sequence per recurrent layer (elements, independent of the context)
    n_h·d_k·d_v (state, in the state format) + (K_c − 1)·c (convolution inputs, in bf16).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..deprecation import DEPRECATED, renamed
from ..errors import SpecError
from ..precision import DType, dtype

if TYPE_CHECKING:  # annotations only: ModelSpec's methods call this module (imported on use there)
    from .schema import LayerGroup, ModelSpec

#: Format of embeddings, LM head and norms in :func:`weight_bytes` unless overridden.
DEFAULT_HIGH_PRECISION = "bf16"


@dataclass(frozen=True)
class LayerParams:
    """Parameters of ONE layer of a group, by component [parameters].

    ``routed_experts`` counts all E experts; ``routed_active`` the k a token uses.
    """

    attention: int
    dense_ffn: int
    routed_experts: int
    routed_active: int
    shared_experts: int
    router: int
    norms: int

    @property
    def total(self) -> int:
        return (self.attention + self.dense_ffn + self.routed_experts + self.shared_experts
                + self.router + self.norms)

    @property
    def active(self) -> int:
        return (self.attention + self.dense_ffn + self.routed_active + self.shared_experts
                + self.router + self.norms)


def indexer_params(spec: ModelSpec) -> int:
    """DSA lightning-indexer parameters of one attention layer (0 without sparse attention)."""
    dsa = spec.sparse_attention
    if dsa is None:
        return 0
    h, ni, di = spec.hidden_size, dsa.index_heads, dsa.index_head_dim
    q_rank = spec.mla.q_lora_rank if spec.mla is not None and spec.mla.q_lora_rank else None
    q = q_rank * ni * di if q_rank else h * ni * di
    return q + h * di + 2 * di + h * ni


def attention_params(spec: ModelSpec) -> int:
    """Attention projection parameters of one layer (biases, sinks, output gate and DSA indexer
    included; norms excluded)."""
    h, nq = spec.hidden_size, spec.num_attention_heads
    if spec.attention == "mla":
        m = spec.mla
        assert m is not None
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = h * m.q_lora_rank + m.q_lora_rank * nq * qk if m.q_lora_rank else h * nq * qk
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * nq * (m.qk_nope_head_dim
                                                                                + m.v_head_dim)
        return q + kv + nq * m.v_head_dim * h + indexer_params(spec)
    nkv, d, dv = spec.num_kv_heads, spec.head_dim, spec.v_head_dim
    n = h * nq * d + h * nkv * (d + dv) + nq * dv * h
    if spec.attention_output_gate:
        n += h * nq * d
    if spec.attention_bias:
        n += nq * d + nkv * (d + dv)
    if spec.attention_out_bias:
        n += h
    if spec.attention_sinks:
        n += nq
    return n + indexer_params(spec)


def recurrent_params(spec: ModelSpec) -> int:
    """Recurrent-mixer parameters of one recurrent layer (projections, conv, per-head vectors, norm)."""
    r = spec.recurrent
    if r is None:
        raise SpecError(f"model {spec.id!r} has no recurrent mixer")
    h = spec.hidden_size
    conv = r.conv_channels * r.conv_kernel + (r.conv_channels if r.conv_bias else 0)
    return h * r.in_proj + r.out_proj * h + conv + r.num_heads * r.head_params + r.norm_width


def mixer_params(spec: ModelSpec, group: LayerGroup) -> int:
    """Token-mixer parameters of one layer of ``group``: attention or the recurrent mixer."""
    if group.mixer == "none":
        return 0
    return recurrent_params(spec) if group.mixer == "recurrent" else attention_params(spec)


def ffn_params(spec: ModelSpec, intermediate: int, bias: bool) -> int:
    """One FFN of width ``intermediate``: ``m·h·I`` (+ ``(m−1)·I + h`` biases)."""
    h, m = spec.hidden_size, spec.ffn_matrices
    return m * h * intermediate + (((m - 1) * intermediate + h) if bias else 0)


def norm_params_per_layer(spec: ModelSpec, group: LayerGroup | None = None) -> int:
    """Normalisation weights of one layer (hidden-size norms, Q/K norms, MLA latent norms); a
    recurrent layer has the hidden-size norms only (its gated norm is part of the mixer)."""
    n = spec.norms_per_layer * spec.hidden_size * (2 if spec.norm_bias else 1)
    if group is not None and group.mixer != "attention":
        return n
    if spec.qk_norm:
        n += (spec.num_attention_heads + spec.num_kv_heads) * spec.head_dim if spec.qk_norm_per_layer \
            else 2 * spec.head_dim
    if spec.mla is not None:
        n += (spec.mla.q_lora_rank or 0) + spec.mla.kv_lora_rank
    return n


def layer_params(spec: ModelSpec, group: LayerGroup) -> LayerParams:
    """Parameter breakdown of one layer of ``group`` (see module docstring for the equations).

    ``attention`` holds the layer's token mixer: attention, or the recurrent mixer of a recurrent
    layer."""
    attn, norms = mixer_params(spec, group), norm_params_per_layer(spec, group)
    if group.ffn == "none":
        return LayerParams(attn, 0, 0, 0, 0, 0, norms)
    if group.ffn == "dense" or spec.moe is None:
        return LayerParams(attn, ffn_params(spec, spec.intermediate_size, spec.ffn_bias), 0, 0, 0, 0, norms)
    moe = spec.moe
    expert = ffn_params(spec, moe.expert_intermediate_size, moe.expert_bias)
    shared = ffn_params(spec, moe.shared_intermediate_size, False) if moe.shared_intermediate_size else 0
    router = (moe.num_experts * spec.hidden_size + (moe.num_experts if moe.router_bias else 0)
              + (spec.hidden_size if moe.shared_expert_gate else 0))
    return LayerParams(attn, 0, moe.num_experts * expert, moe.top_k * expert, shared, router, norms)


def embedding_params(spec: ModelSpec) -> int:
    """Input embedding table ``V·h``."""
    return spec.vocab_size * spec.hidden_size


def lm_head_params(spec: ModelSpec) -> int:
    """LM head ``V·h`` (+ ``V`` bias); 0 when tied to the embedding (counted once, there)."""
    if spec.tie_word_embeddings:
        return 0
    return spec.vocab_size * spec.hidden_size + (spec.vocab_size if spec.lm_head_bias else 0)


def final_norm_params(spec: ModelSpec) -> int:
    return spec.hidden_size * (2 if spec.norm_bias else 1)


def params_breakdown(spec: ModelSpec) -> dict[str, int]:
    """Total parameters by component over the whole model [parameters].

    Keys: attention, dense_ffn, routed_experts, routed_active, shared_experts, router, norms
    (including the final norm), embedding, lm_head. ``routed_active`` is the k-of-E share a token
    uses and is not part of the total.
    """
    out = dict.fromkeys(("attention", "dense_ffn", "routed_experts", "routed_active", "shared_experts",
                         "router", "norms"), 0)
    for g in spec.groups:
        for key, value in asdict(layer_params(spec, g)).items():
            out[key] += g.count * value
    out["norms"] += final_norm_params(spec)
    out["embedding"] = embedding_params(spec)
    out["lm_head"] = lm_head_params(spec)
    return out


def params_total(spec: ModelSpec, *, embeddings: bool = True) -> int:
    """All parameters [parameters], including all E routed experts of every MoE layer.

    ``embeddings=True`` (default) counts the input embedding and LM head (tied: once), as model
    cards do (DeepSeek-V3 671B, Llama-3.1 70.6B); MTP / vision towers are not part of the spec.
    """
    b = params_breakdown(spec)
    body = sum(v for k, v in b.items() if k not in ("routed_active", "embedding", "lm_head"))
    return body + (b["embedding"] + b["lm_head"] if embeddings else 0)


def params_active(spec: ModelSpec, *, input_embedding: bool = True, lm_head: bool = True) -> int:
    """Parameters a token passes through [parameters].

    Equals :func:`params_total` with each MoE layer's E routed experts replaced by the k it routes
    to: attention + dense FFN + k routed + shared experts + router + norms, plus by default the whole
    input-embedding table and LM head (DeepSeek-V3 "37B activated", Mixtral 12.9B, Llama-4 17B).

    ``input_embedding=False`` drops the embedding table (a token reads one row of it), which is
    OpenAI's convention for gpt-oss (5.1B active for gpt-oss-120b: unembedding counted, embedding
    not). With tied embeddings the shared matrix is counted once if either flag is set.
    """
    b = params_breakdown(spec)
    body = sum(v for k, v in b.items() if k not in ("routed_experts", "embedding", "lm_head"))
    if spec.tie_word_embeddings:
        return body + (b["embedding"] if (input_embedding or lm_head) else 0)
    return body + (b["embedding"] if input_embedding else 0) + (b["lm_head"] if lm_head else 0)


def weight_bytes(spec: ModelSpec, weights: str | DType | None = None, *,
                 expert_dtype: str | DType | None = None,
                 high_precision_dtype: str | DType = DEFAULT_HIGH_PRECISION,
                 weights_dtype: Any = DEPRECATED) -> float:
    """Bytes of all weights [B] (a float: bits per element are floats, NVFP4 = 4.5 bit).

    .. math:: W = b_w·(P_{attn} + P_{dense} + P_{shared} + P_{router}) + b_e·P_{routed}
                 + b_{hp}·(P_{norms} + P_{emb} + P_{lm\\_head})

    with b the bytes per element of ``weights`` (b_w), ``expert_dtype`` (b_e, defaults to the
    weights format; gpt-oss ships MXFP4 experts with bf16 attention) and ``high_precision_dtype``
    (b_hp, bf16 by default: quantised checkpoints keep embeddings, LM head and norms in 16 bit).
    Biases and sinks are counted with their matrices, at the weights format. ``weights_dtype`` is the
    deprecated old name of ``weights`` (warns).
    """
    if weights_dtype is not DEPRECATED:
        weights = renamed("weights", weights, "weights_dtype", weights_dtype, "weight_bytes")
    if weights is None:
        raise SpecError("weight_bytes: weights (the weight format) is required")
    w, hp = dtype(weights, "weights"), dtype(high_precision_dtype, "high_precision")
    e = dtype(expert_dtype, "expert") if expert_dtype is not None else w
    b = params_breakdown(spec)
    matrices = b["attention"] + b["dense_ffn"] + b["shared_experts"] + b["router"]
    return (matrices * w.bytes + b["routed_experts"] * e.bytes
            + (b["norms"] + b["embedding"] + b["lm_head"]) * hp.bytes)


# ---------------------------------------------------------------------------------------------
# KV cache
# ---------------------------------------------------------------------------------------------
def kv_elems_per_token_per_layer(spec: ModelSpec) -> int:
    """KV-cache elements one token adds to one attention layer.

    GQA: ``n_kv·(d + d_v)`` (K and V); MLA: ``kv_lora_rank + qk_rope_head_dim`` (no factor 2:
    K and V are both rebuilt from the one latent); DSA adds the indexer key (``index_head_dim``).
    Recurrent layers cache nothing per token (see :func:`state_bytes_per_sequence`).
    """
    index = spec.sparse_attention.index_head_dim if spec.sparse_attention is not None else 0
    if spec.attention == "mla":
        assert spec.mla is not None
        return spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim + index
    return spec.num_kv_heads * (spec.head_dim + spec.v_head_dim) + index


def cached_tokens(context: float | np.ndarray, window: int | None) -> np.ndarray:
    """Tokens a layer keeps for a sequence of ``context`` tokens: ``min(context, window)``."""
    ctx = np.asarray(context, dtype=np.float64)
    return ctx if window is None else np.minimum(ctx, float(window))


def _check_context(context: float | np.ndarray) -> np.ndarray:
    ctx = np.asarray(context, dtype=np.float64)
    if not np.all(np.isfinite(ctx)) or np.any(ctx < 0):
        raise SpecError(f"context: must be finite and >= 0 tokens, got {context!r}")
    return ctx


def kv_cache_bytes_by_group(spec: ModelSpec, kv_cache: str | DType, context: float | np.ndarray
                            ) -> list[np.ndarray]:
    """KV bytes of one sequence per layer group [B], in ``spec.groups`` order.

    ``count · kv_elems_per_token_per_layer · bytes(kv_cache) · min(context, window)``, broadcast
    over ``context`` [token]; 0 for recurrent groups.
    """
    kv, ctx = dtype(kv_cache, "kv_cache"), _check_context(context)
    per_layer = kv_elems_per_token_per_layer(spec) * kv.bytes
    return [(g.count * per_layer if g.mixer == "attention" else 0.0) * cached_tokens(ctx, g.window)
            for g in spec.groups]


def kv_cache_bytes(spec: ModelSpec, kv_cache: str | DType, context: float | np.ndarray
                   ) -> float | np.ndarray:
    """KV-cache bytes of one sequence holding ``context`` tokens [B].

    .. math:: KV(c) = b_{kv} · e · \\sum_{groups} n_g · \\min(c, w_g)

    with e = :func:`kv_elems_per_token_per_layer`, b_kv bytes per element and w_g the group's
    sliding/chunk window (∞ for full attention). Broadcasts over ``context``; a scalar in gives a
    float out.
    """
    total = sum(kv_cache_bytes_by_group(spec, kv_cache, context))
    arr = np.asarray(total, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr


def kv_bytes_per_token(spec: ModelSpec, kv_cache: str | DType = "bf16",
                       context: float | np.ndarray | None = None) -> float | np.ndarray:
    """KV-cache bytes per token summed over layers [B/token].

    ``context=None``: every attention layer caches the token, ``b_kv · e · L_attn`` (exact while the context is
    within every window; e.g. 327,680 B for Llama-3.1-70B in bf16, 70,272 B for DeepSeek-V3).
    With ``context``: the average over a sequence of that length, ``KV(c) / c`` — lower for models
    with sliding-window or chunked layers once ``c`` exceeds the window.
    """
    if context is None:
        return spec.attention_layers * kv_elems_per_token_per_layer(spec) * dtype(kv_cache, "kv_cache").bytes
    ctx = _check_context(context)
    if np.any(ctx <= 0):
        raise SpecError(f"context: must be > 0 tokens for a per-token average, got {context!r}")
    out = np.asarray(kv_cache_bytes(spec, kv_cache, ctx)) / ctx
    return float(out) if out.ndim == 0 else out


#: Format of the convolution inputs a recurrent layer keeps per sequence.
CONV_STATE_DTYPE = "bf16"


def state_bytes_per_sequence(spec: ModelSpec, state_dtype: str | DType | None = None) -> float:
    r"""Recurrent state of one sequence over all recurrent layers [B] (0 without any).

    .. math:: S = L_{rec}\,\left(n_h d_k d_v\,b_s + (K_c - 1)\,c\,b_{conv}\right)

    independent of the context length; ``state_dtype`` overrides the spec's state format (b_s).
    """
    r = spec.recurrent
    layers = sum(g.count for g in spec.groups if g.mixer == "recurrent")
    if r is None or layers == 0:
        return 0.0
    b_s = dtype(state_dtype or r.state_dtype, "state").bytes
    conv = (r.conv_kernel - 1) * r.conv_channels * dtype(CONV_STATE_DTYPE, "conv_state").bytes
    return float(layers * (r.num_heads * r.key_head_dim * r.value_head_dim * b_s + conv))
