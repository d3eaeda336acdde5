"""Memory per device: weights, KV cache and activation workspace, and whether they fit.

.. math::
    M_{used} = W_{device} + KV_{device}(B, L) + A_{workspace} \\le (1 - r)\\,C

with C the main-memory capacity and r the reserved fraction (``reserve``; serving engines leave about
10 %: vLLM's default ``gpu_memory_utilization`` is 0.9). Not fitting is a flagged result, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..modelspec.derived import indexer_params, recurrent_params, state_bytes_per_sequence
from ..modelspec.schema import LayerGroup, ModelSpec
from ..precision import Precision
from .ops import kv_elems_per_token_layer, local_kv_heads
from .parallel import Parallel

#: Fraction of device memory left unused by default (vLLM ``gpu_memory_utilization=0.9``).
DEFAULT_RESERVE = 0.10


def attention_weight_elems(model: ModelSpec, tp: int) -> float:
    """Attention weights of one layer on one device [elements] (a DSA indexer is replicated)."""
    h = model.hidden_size
    nq = model.num_attention_heads / tp
    index = float(indexer_params(model))
    if model.attention == "mla":
        m = model.mla
        assert m is not None
        d_qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = (h * m.q_lora_rank + m.q_lora_rank * nq * d_qk) if m.q_lora_rank else h * nq * d_qk
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * nq * (
            m.qk_nope_head_dim + m.v_head_dim)
        return q + kv + nq * m.v_head_dim * h + index
    d = model.head_dim
    q_width = nq * (2 if model.attention_output_gate else 1)
    return h * (q_width + 2 * local_kv_heads(model, tp)) * d + nq * model.v_head_dim * h + index


def mixer_weight_elems(model: ModelSpec, group: LayerGroup, tp: int) -> float:
    """Token-mixer weights of one layer of ``group`` on one device [elements]: attention, or the
    recurrent mixer with its heads split over tp."""
    if group.mixer == "none":
        return 0.0
    if group.mixer == "recurrent":
        return recurrent_params(model) / tp
    return attention_weight_elems(model, tp)


def ffn_weight_elems(model: ModelSpec, group: LayerGroup, par: Parallel) -> float:
    """FFN or MoE weights of one layer on one device [elements] (all local experts, router)."""
    h, mats = model.hidden_size, model.ffn_matrices
    if group.ffn == "none":
        return 0.0
    if group.ffn == "dense":
        return mats * h * model.intermediate_size / par.group
    moe = model.moe
    assert moe is not None
    routed = moe.num_experts / par.experts_ep(moe.num_experts) * mats * h * moe.expert_intermediate_size / par.moe_tp_eff
    shared = mats * h * moe.shared_intermediate_size / par.group
    return routed + shared + h * moe.num_experts


def weights_per_device(model: ModelSpec, par: Parallel, prec: Precision) -> float:
    """Weight bytes on the most loaded device [B].

    Layers are split evenly over ``pp`` stages; the embedding and LM head (bf16, vocabulary split over
    tp) are counted on the same device, which over-counts by one table for pp > 1 (conservative).
    """
    wb = prec.weights.bytes
    layers = 0.0
    for g in model.layer_groups:
        layers += g.count * (mixer_weight_elems(model, g, par.tp) + ffn_weight_elems(model, g, par))
    tables = (1 if model.tie_word_embeddings else 2) * model.vocab_size * model.hidden_size / par.tp
    return layers / par.pp * wb + tables * 2.0


def state_bytes_per_sequence_device(model: ModelSpec, par: Parallel) -> float:
    """Recurrent state of one sequence on one device [B]: the recurrent layers' states with their
    heads split over tp (see :func:`perfmodel.modelspec.derived.state_bytes_per_sequence`), per stage."""
    return state_bytes_per_sequence(model) / par.tp / par.pp


def kv_bytes_per_token_device(model: ModelSpec, par: Parallel, prec: Precision,
                              context: np.ndarray | float, state: bool = True) -> np.ndarray:
    """KV-cache bytes per sequence of ``context`` tokens on one device, summed over its layers [B].

    Sliding-window layers hold at most ``window`` tokens. With attention-DP a sequence lives on one
    attention rank; with GQA its heads are split over tp, with MLA the latent is replicated, and a
    DSA indexer key (replicated) is cached besides. Recurrent layers cache nothing per token; with
    ``state`` (default) their fixed state per sequence (:func:`state_bytes_per_sequence_device`) is
    added, so the figure is what one sequence holds; ``state=False`` gives the per-token part alone.
    """
    ctx = np.asarray(context, dtype=float)
    index = model.sparse_attention.index_head_dim if model.sparse_attention is not None else 0
    per_layer = (kv_elems_per_token_layer(model, par.tp) + index) * prec.kv_cache.bytes
    total = None  # the first group's bytes start the sum (0 + x is x)
    for g in model.layer_groups:
        if g.mixer != "attention":
            continue
        held = np.minimum(ctx, g.window) if g.window else ctx
        term = g.count * held * per_layer
        total = term if total is None else total + term
    total = np.zeros(ctx.shape) if total is None else total
    if par.pp > 1:
        total = total / par.pp
    if state and model.recurrent is not None:
        total = total + np.where(ctx > 0, state_bytes_per_sequence_device(model, par), 0.0)
    return total


def workspace_bytes(model: ModelSpec, par: Parallel, prec: Precision, tokens: np.ndarray) -> np.ndarray:
    """Activation workspace for a step of ``tokens`` tokens on one device [B].

    Largest live activations: hidden states and residual (2h), QKV and attention output, the FFN
    intermediate (gate and up) and the logits of one token per sequence are neglected:
    :math:`A = b_a\\,T_a\\,(4h + 2 I_{local})`.
    """
    inter = model.intermediate_size
    if model.moe is not None:
        inter = max(inter, model.moe.expert_intermediate_size * model.moe.top_k)
    t_a = np.asarray(tokens, dtype=float) / par.dp_attention
    return prec.act_bytes * t_a * (4.0 * model.hidden_size + 2.0 * inter / par.group)


#: Tokens a serving engine processes per prefill step at most, for the workspace estimate.
WORKSPACE_TOKENS = 16384.0
FIT_REASONS = np.array(["", "weights alone exceed usable memory",
                        "weights + KV cache + workspace exceed usable memory"])


@dataclass(frozen=True)
class MemoryBudget:
    """Memory use of one device [B] for static batches, and whether it fits (arrays over points).

    ``max_batch`` is the largest batch that fits with the same accounting (:func:`max_static_batch`).
    """

    capacity: float
    reserve_fraction: float
    weights: float
    kv_cache: np.ndarray
    workspace: np.ndarray
    max_batch: np.ndarray

    @property
    def usable(self) -> float:
        return self.capacity * (1.0 - self.reserve_fraction)

    @cached_property
    def used(self) -> np.ndarray:
        return self.weights + self.kv_cache + self.workspace

    @cached_property
    def fits(self) -> np.ndarray:
        return self.used <= self.usable

    def reason(self) -> np.ndarray:
        """Why an operating point does not fit ('' where it fits)."""
        return FIT_REASONS[np.where(self.fits, 0, 1 if self.weights > self.usable else 2)]


def static_batch_budget(model: ModelSpec, par: Parallel, prec: Precision, capacity: float, batch, isl,
                        context, reserve: float = DEFAULT_RESERVE, kv_on_device: float = 1.0,
                        step_tokens: float = WORKSPACE_TOKENS, extra_weights: float = 0.0,
                        extra_kv_per_token: float = 0.0, model_weights: float | None = None
                        ) -> MemoryBudget:
    """Device memory of a static batch of ``batch`` sequences of ``isl`` prompt tokens holding
    ``context`` tokens each; the prefill workspace covers min(batch·isl, ``step_tokens``) tokens and
    ``kv_on_device`` is the share of the KV cache kept on the device (the rest in host memory).

    ``extra_weights`` [B] and ``extra_kv_per_token`` [B per token of context] are added per device
    (a speculative-decoding draft: :func:`perfmodel.engine.speculative_draft.draft_memory`); they
    count in ``weights``, ``kv_cache`` and ``max_batch``. ``model_weights`` is
    :func:`weights_per_device` where the caller has it already (a step model keeps it)."""
    b, isl = np.asarray(batch, dtype=float), np.asarray(isl, dtype=float)
    per_tok = kv_bytes_per_token_device(model, par, prec, context)
    if extra_kv_per_token:
        per_tok = per_tok + extra_kv_per_token * np.asarray(context, float)
    kv = kv_on_device * (b / par.dp_attention) * per_tok
    work = workspace_bytes(model, par, prec, np.minimum(b * isl, step_tokens))
    weights = (weights_per_device(model, par, prec) if model_weights is None else model_weights) + extra_weights
    mx = _batch_limit(capacity * (1.0 - reserve) - weights, kv_on_device * per_tok / par.dp_attention,
                      float(workspace_bytes(model, par, prec, 1.0)), isl, step_tokens)
    return MemoryBudget(capacity, reserve, weights, kv, work, np.floor(mx))


def max_sequences(model: ModelSpec, par: Parallel, prec: Precision, capacity: float, context,
                  reserve: float = DEFAULT_RESERVE, step_tokens: float = 8192.0,
                  state: bool = True) -> np.ndarray:
    """Maximum concurrent sequences per replica at ``context`` tokens each (``state``: each holds its
    recurrent state too, see :func:`kv_bytes_per_token_device`).

    .. math:: B_{max} = \\left\\lfloor \\frac{(1-r)C - W - A(T_{step})}{KV(L)} \\right\\rfloor
              \\cdot n_{attention\\,DP}

    Returns 0 where the weights and workspace alone do not fit.
    """
    free = capacity * (1.0 - reserve) - weights_per_device(model, par, prec) - workspace_bytes(
        model, par, prec, step_tokens)
    per_seq = kv_bytes_per_token_device(model, par, prec, context, state)
    with np.errstate(divide="ignore"):
        n = np.floor(np.maximum(free, 0.0) / per_seq)
    return n * par.dp_attention


def max_static_batch(model: ModelSpec, par: Parallel, prec: Precision, capacity: float, isl, context,
                     reserve: float = DEFAULT_RESERVE, kv_on_device: float = 1.0,
                     step_tokens: float = WORKSPACE_TOKENS, extra_weights: float = 0.0,
                     extra_kv_per_token: float = 0.0) -> np.ndarray:
    r"""Largest static batch B that fits with the same accounting as ``predict``'s ``fits``.

    The prefill workspace covers min(B·isl, step_tokens) tokens, so the bound has two regimes:

    .. math::
        W + B\,(k + a\,s) \le U \;\; (B s \le T), \qquad W + B\,k + a\,T \le U \;\; (B s > T)

    with U the usable memory, W the weights, k the device KV bytes of one sequence at ``context``,
    a the workspace bytes per token, s = isl and T = ``step_tokens``. A draft's weights
    (``extra_weights``) count in W and its KV bytes per token of context (``extra_kv_per_token``) in k.
    """
    usable = capacity * (1.0 - reserve) - (weights_per_device(model, par, prec) + extra_weights)
    per_seq = kv_on_device * (kv_bytes_per_token_device(model, par, prec, context)
                              + extra_kv_per_token * np.asarray(context, dtype=float)) / par.dp_attention
    return _batch_limit(usable, per_seq, float(workspace_bytes(model, par, prec, 1.0)),
                        np.asarray(isl, dtype=float), step_tokens)


def _batch_limit(usable: float, per_seq: np.ndarray, per_tok: float, isl: np.ndarray,
                 step_tokens: float) -> np.ndarray:
    """:func:`max_static_batch` from usable bytes U − W, KV bytes per sequence k and workspace bytes
    per token a."""
    with np.errstate(divide="ignore", invalid="ignore"):
        small = np.minimum(np.floor(usable / (per_seq + per_tok * isl)), np.floor(step_tokens / isl))
        large = np.floor((usable - per_tok * step_tokens) / per_seq)
    large = np.where(large * isl > step_tokens, large, 0.0)
    return np.maximum(np.maximum(small, large), 0.0)
