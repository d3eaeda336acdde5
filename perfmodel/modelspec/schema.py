"""The model description the cost model reads: shapes of attention, FFN / MoE and layer types.

Built from a Hugging Face ``config.json`` by :mod:`perfmodel.modelspec.hf_config`. All sizes are
element counts (ints); byte figures are derived with a :class:`perfmodel.precision.DType`
(see :mod:`perfmodel.modelspec.derived`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ..precision import DType

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
    router_bias : bool
        The router carries a per-expert bias (gpt-oss router bias, DeepSeek's
        ``e_score_correction_bias``): E extra parameters per MoE layer.
    expert_bias : bool
        Every expert matrix carries a bias vector (gpt-oss).
    """

    num_experts: int
    top_k: int
    expert_intermediate_size: int
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0
    router_bias: bool = False
    expert_bias: bool = False


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
        For MLA, ``head_dim = qk_nope_head_dim + qk_rope_head_dim`` and ``num_kv_heads`` is the
        config's value (the decompressed view); the cache width is given by ``mla``.
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
        Q, K and V projections carry biases (Qwen2, gpt-oss). Counted in parameters.
    attention_out_bias : bool
        The output projection carries a bias too (gpt-oss, Llama with ``attention_bias``).
    attention_sinks : bool
        One learned sink logit per head and layer (gpt-oss); ``num_attention_heads`` parameters.
    qk_norm : bool
        RMSNorm with weights over ``head_dim`` on Q and K (Qwen3): ``2 * head_dim`` parameters.
    ffn_bias : bool
        Dense FFN matrices carry biases (GPT-J).
    norms_per_layer : int
        Normalisation layers per block over the hidden size (2 for pre-norm attention + FFN,
        1 for GPT-J's parallel block).
    norm_bias : bool
        LayerNorm with bias (GPT-J) rather than RMSNorm (weight only).
    lm_head_bias : bool
        The LM head carries a bias of ``vocab_size`` (GPT-J).
    max_position_embeddings : int or None
        Longest context the config declares [token].
    mtp_layers : int
        Multi-token-prediction modules shipped with the checkpoint (``num_nextn_predict_layers``:
        1 for DeepSeek-V3/R1, 0 when absent); not counted in ``num_layers`` or the parameters.
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
    attention_out_bias: bool = False
    attention_sinks: bool = False
    qk_norm: bool = False
    ffn_bias: bool = False
    norms_per_layer: int = 2
    norm_bias: bool = False
    lm_head_bias: bool = False
    max_position_embeddings: int | None = None
    mtp_layers: int = 0

    def __post_init__(self) -> None:
        if self.layer_groups and sum(g.count for g in self.layer_groups) != self.num_layers:
            total = sum(g.count for g in self.layer_groups)
            raise SpecError(f"model {self.id!r}: layer_groups sum to {total} layers, "
                            f"num_layers is {self.num_layers}")
        if self.attention == "mla" and self.mla is None:
            raise SpecError(f"model {self.id!r}: attention 'mla' needs an MLAShape")
        if any(g.ffn == "moe" for g in self.layer_groups) and self.moe is None:
            raise SpecError(f"model {self.id!r}: a layer group has ffn 'moe' but moe is None")

    # -- thin conveniences; the formulas live in perfmodel.modelspec.derived ------------------
    @property
    def groups(self) -> tuple[LayerGroup, ...]:
        """``layer_groups``, or one group of all layers when none were given."""
        if self.layer_groups:
            return self.layer_groups
        return (LayerGroup(self.num_layers, "moe" if self.moe else "dense", None),)

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    def _repr_html_(self) -> str:
        from ..reprs import model_html

        return model_html(self)

    def params_total(self) -> int:
        """Total parameters, embeddings included (see :func:`derived.params_total`)."""
        from .derived import params_total
        return params_total(self)

    def params_active(self) -> int:
        """Parameters used per token, embeddings included (see :func:`derived.params_active`)."""
        from .derived import params_active
        return params_active(self)

    def kv_bytes_per_token(self, kv_dtype: str | DType = "bf16") -> float:
        """KV-cache bytes per token over all layers [B] (see :func:`derived.kv_bytes_per_token`)."""
        from .derived import kv_bytes_per_token
        return float(kv_bytes_per_token(self, kv_dtype))

    def kv_cache_bytes(self, kv_dtype: str | DType, context: float | np.ndarray) -> float | np.ndarray:
        """KV-cache bytes of one sequence [B] (see :func:`derived.kv_cache_bytes`)."""
        from .derived import kv_cache_bytes
        return kv_cache_bytes(self, kv_dtype, context)
