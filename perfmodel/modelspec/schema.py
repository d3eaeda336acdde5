"""The model description the cost model reads: shapes of attention, FFN / MoE and layer types.

Built from a Hugging Face ``config.json`` by :mod:`perfmodel.modelspec.hf_config`. All sizes are
element counts (ints); byte figures are derived with a :class:`perfmodel.precision.DType`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

AttentionKind = Literal["gqa", "mla"]
FFNKind = Literal["dense", "moe"]


@dataclass(frozen=True)
class MLAShape:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2) dimensions.

    The KV cache holds ``kv_lora_rank + qk_rope_head_dim`` elements per token per layer.
    ``q_lora_rank`` is None when queries are projected directly (no low-rank Q).
    """

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class MoEShape:
    """Mixture-of-experts shape.

    Attributes
    ----------
    num_experts : int
        Routed experts E.
    top_k : int
        Experts per token k.
    expert_intermediate_size : int
        FFN intermediate size of one routed expert.
    num_shared_experts : int
        Always-active shared experts (0 if none).
    shared_intermediate_size : int
        Total intermediate size of the shared expert(s) (num_shared × their size; 0 if none).
    """

    num_experts: int
    top_k: int
    expert_intermediate_size: int
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0


@dataclass(frozen=True)
class LayerGroup:
    """``count`` layers sharing one structure.

    ``window`` caps attended and cached tokens (sliding-window or chunked attention); None = full.
    ``ffn`` says whether the layer's FFN is dense or MoE.
    """

    count: int
    ffn: FFNKind
    window: int | None = None


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of a decoder-only transformer, as the cost model needs it.

    Attributes
    ----------
    id, family : str
        Shipped id (``llama-3.1-70b``) and HF ``model_type`` (``llama``, ``deepseek_v3``...).
    hidden_size, num_layers, vocab_size : int
    num_attention_heads, num_kv_heads, head_dim : int
        Query heads, KV heads and per-head dimension of Q/K (explicit or hidden/heads).
    v_head_dim : int
        Per-head dimension of V (= head_dim except MLA).
    attention : "gqa" | "mla"
        GQA covers MHA (kv = heads) and MQA (kv = 1).
    mla : MLAShape | None
    intermediate_size : int
        Dense FFN intermediate size (used by dense layers).
    ffn_matrices : int
        3 for gated FFNs (gate, up, down: SwiGLU), 2 for plain (up, down: GPT-J).
    moe : MoEShape | None
    layer_groups : tuple[LayerGroup, ...]
        Sums to num_layers.
    tie_word_embeddings : bool
        Embedding and LM head share weights (counted once in parameters).
    attention_bias : bool
        QKV projections carry biases (Qwen2). Counted in parameters.
    """

    id: str
    family: str
    hidden_size: int
    num_layers: int
    vocab_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    attention: AttentionKind
    intermediate_size: int
    ffn_matrices: int = 3
    mla: MLAShape | None = None
    moe: MoEShape | None = None
    layer_groups: tuple[LayerGroup, ...] = ()
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    hf_repo_id: str | None = None
    source: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
