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
FFNKind = Literal["dense", "moe", "none"]
#: Token mixer of a layer: softmax attention (with a KV cache) or a recurrent mixer (linear
#: attention / state-space model, with a fixed-size state per sequence). ``"none"`` (mixer or FFN)
#: marks Nemotron-H's single-sublayer blocks: a layer is a mixer or an FFN, not both.
MixerKind = Literal["attention", "recurrent", "none"]
RecurrentKind = Literal["gated_deltanet", "mamba2"]


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
class SparseAttentionShape:
    """DeepSeek Sparse Attention (DSA: DeepSeek-V3.2, GLM-5): a lightning indexer picks ``top_k``
    cached tokens per query and the attention core reads only those.

    Attributes
    ----------
    index_heads : int
        Indexer query heads (``index_n_heads``).
    index_head_dim : int
        Indexer head size (``index_head_dim``); the indexer caches one key of this size per token
        per layer, besides the attention's own cache.
    top_k : int
        Tokens attended per query (``index_topk``).
    """

    index_heads: int
    index_head_dim: int
    top_k: int


@dataclass(frozen=True)
class RecurrentShape:
    """Recurrent token mixer of the ``recurrent`` layers (no KV cache: a fixed state per sequence).

    Gated DeltaNet (Qwen3-Next, Qwen3.5): per value head a ``key_head_dim × value_head_dim`` state;
    Mamba-2 (Nemotron-H): per head a ``state_size × head_dim`` state (``key_head_dim`` = d_state).

    Attributes
    ----------
    kind : "gated_deltanet" | "mamba2"
    num_heads : int
        Heads the state is split over (GDN value heads, Mamba-2 heads); tensor parallelism splits them.
    key_head_dim, value_head_dim : int
        State size per head is ``key_head_dim × value_head_dim`` elements.
    in_proj : int
        Output features of the input projection(s) from the hidden size (all of them together).
    out_proj : int
        Input features of the output projection (to the hidden size).
    conv_channels, conv_kernel : int
        Depthwise causal convolution before the recurrence; it keeps ``conv_kernel − 1`` inputs of
        ``conv_channels`` per sequence.
    head_params : int
        Parameters per head outside the projections (GDN: ``A_log``, ``dt_bias``; Mamba-2: + ``D``).
    norm_width : int
        Weights of the gated output norm.
    conv_bias : bool
        The convolution carries a bias per channel.
    state_dtype : str
        Format of the recurrent state (``fp32`` when the config says ``mamba_ssm_dtype: float32``).
    chunk : int
        Chunk length of the prefill scan [token] (64 in the fla / mamba_ssm kernels).
    """

    kind: RecurrentKind
    num_heads: int
    key_head_dim: int
    value_head_dim: int
    in_proj: int
    out_proj: int
    conv_channels: int
    conv_kernel: int
    head_params: int
    norm_width: int
    conv_bias: bool = False
    state_dtype: str = "bf16"
    chunk: int = 64


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
    shared_expert_gate : bool
        The shared expert's output is scaled by a learned scalar gate (Qwen2-MoE, Qwen3-Next,
        Qwen3.5): ``h`` extra parameters per MoE layer, counted with the router.
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
    shared_expert_gate: bool = False


@dataclass(frozen=True)
class LayerGroup:
    """``count`` layers sharing one structure.

    ``window`` caps attended and cached tokens (sliding-window or chunked attention); None = full.
    ``ffn`` says whether the layer's FFN is dense or MoE; ``mixer`` whether its token mixer is
    attention (KV cache) or the model's recurrent mixer (``ModelSpec.recurrent``: fixed state);
    either may be ``"none"`` for a block with only the other sublayer (Nemotron-H).
    """

    count: int
    ffn: FFNKind
    window: int | None = None
    mixer: MixerKind = "attention"


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
    qk_norm_per_layer : bool
        The Q/K norms span all heads (MiniMax-M2 ``qk_norm_type: per_layer``):
        ``(n_q + n_kv) * head_dim`` parameters instead.
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
    attention_output_gate : bool
        The attention output is gated by a second query-sized projection (Qwen3-Next, Qwen3.5):
        the Q projection is twice as wide.
    sparse_attention : SparseAttentionShape or None
        DeepSeek Sparse Attention on every attention layer (indexer + top-k).
    recurrent : RecurrentShape or None
        Shape of the recurrent mixer of the layer groups whose ``mixer`` is ``"recurrent"``.
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
    qk_norm_per_layer: bool = False
    ffn_bias: bool = False
    norms_per_layer: int = 2
    norm_bias: bool = False
    lm_head_bias: bool = False
    max_position_embeddings: int | None = None
    mtp_layers: int = 0
    attention_output_gate: bool = False
    sparse_attention: SparseAttentionShape | None = None
    recurrent: RecurrentShape | None = None

    def __post_init__(self) -> None:
        if self.layer_groups and sum(g.count for g in self.layer_groups) != self.num_layers:
            total = sum(g.count for g in self.layer_groups)
            raise SpecError(f"model {self.id!r}: layer_groups sum to {total} layers, "
                            f"num_layers is {self.num_layers}")
        if self.attention == "mla" and self.mla is None:
            raise SpecError(f"model {self.id!r}: attention 'mla' needs an MLAShape")
        if any(g.ffn == "moe" for g in self.layer_groups) and self.moe is None:
            raise SpecError(f"model {self.id!r}: a layer group has ffn 'moe' but moe is None")
        if any(g.mixer == "recurrent" for g in self.layer_groups) and self.recurrent is None:
            raise SpecError(f"model {self.id!r}: a layer group has mixer 'recurrent' but recurrent is None")

    # -- thin conveniences; the formulas live in perfmodel.modelspec.derived ------------------
    @property
    def groups(self) -> tuple[LayerGroup, ...]:
        """``layer_groups``, or one group of all layers when none were given."""
        if self.layer_groups:
            return self.layer_groups
        return (LayerGroup(self.num_layers, "moe" if self.moe else "dense", None),)

    @property
    def attention_layers(self) -> int:
        """Layers whose mixer is attention (they hold the KV cache)."""
        return sum(g.count for g in self.groups if g.mixer == "attention")

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

    def kv_bytes_per_token(self, kv_cache: str | DType = "bf16") -> float:
        """KV-cache bytes per token over all layers [B] (see :func:`derived.kv_bytes_per_token`)."""
        from .derived import kv_bytes_per_token
        return float(kv_bytes_per_token(self, kv_cache))

    def kv_cache_bytes(self, kv_cache: str | DType, context: float | np.ndarray) -> float | np.ndarray:
        """KV-cache bytes of one sequence [B] (see :func:`derived.kv_cache_bytes`)."""
        from .derived import kv_cache_bytes
        return kv_cache_bytes(self, kv_cache, context)
