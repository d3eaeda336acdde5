"""Costs of a speculative step: the k draft forwards and the target's verification forward.

Both are built from the existing step model (:class:`perfmodel.core.step.StepModel`) and its ops
(:mod:`perfmodel.core.ops`), so calibration and profiles apply unchanged.

**Verification.** One target forward over :math:`k+1` tokens of each of n sequences: every GEMM,
MoE, norm, collective and the LM head (logits for every verified token) run at
:math:`M = n(k+1)` tokens, which is the decode step of :math:`n(k+1)` sequences; only the attention
core differs, since the :math:`k+1` query tokens of a sequence read its KV cache once. It is costed
as a decode attention with :math:`(k+1)H` query heads over the same cache (how FlashMLA and
FlashInfer fold the query length into the head dimension):

.. math:: t_{verify} = t_{step}\\big(n(k+1), \\bar c\\big) - t_{attn}\\big(n(k+1), \\bar c\\big)
    + t_{attn}^{(k+1)H}(n, \\bar c), \\qquad \\bar c = c + k/2

with :math:`\\bar c` the mean context of the verified tokens. Rejected tokens' KV entries are
written and discarded; the write is inside the projections' activation traffic.

**Drafts.** k sequential forwards at batch n (mean context :math:`c + (k-1)/2`), each:

- ``mtp``: one decoder layer of the target (its own attention and FFN kind: MoE for DeepSeek-V3/R1)
  costed by a StepModel of the same hardware, layout, precision and profile whose spec counts one
  layer, plus the embedding, the shared LM head and sampling that StepModel includes, plus the MTP
  projection of [embedding; hidden] (2h -> h, replicated on every device). The model's
  ``num_nextn_predict_layers`` module(s) are applied recursively for k above their number (the cost
  per draft token is the same).
- ``eagle``: the same single layer with a dense FFN of the target's dense intermediate size and the
  same 2h -> h projection (EAGLE-1/2's fc; EAGLE-3's 3h fusion of the first step is not separated),
  LM head of the target's vocabulary or ``draft_vocab``.
- ``draft``: a separate model's full forward on the target's hardware, tp and precision.
- ``ngram``: no device forward; :data:`NGRAM_LOOKUP_TIME` per step.

The framework's per-step overhead is charged once, with the verification (drafts run in the same
engine step). Not modelled: tree drafts (only chains), the draft's catch-up forward over the
accepted tokens, pipeline parallelism (pp > 1) and a host-resident KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..core.memory import attention_weight_elems, ffn_weight_elems, kv_bytes_per_token_device
from ..core.ops import StepShape, _gemm, attention_dims, decode_attention_op
from ..core.step import StepModel
from ..errors import ConfigError
from ..modelspec import ModelSpec, load_model
from ..modelspec.schema import LayerGroup

if TYPE_CHECKING:  # pragma: no cover
    from .speculative import SpecDecode

#: Time of one n-gram / suffix lookup per step [s]. Assumption: 0. TensorRT-LLM runs the lookup as one
#: batched GPU kernel captured in the step's CUDA graph (its N-gram blog, tech_blog7), vLLM's proposer is
#: a CPU numba search; both are small beside a forward, but no per-step figure is published.
NGRAM_LOOKUP_TIME = 0.0


def _check_target(target: StepModel) -> None:
    if target.parallel.pp > 1:
        raise ConfigError(f"speculative decoding with pp={target.parallel.pp} is not modelled; use pp=1")
    if target.kv_host_fraction > 0:
        raise ConfigError("speculative decoding with kv_host_fraction > 0 is not modelled; use 0")


def _sibling(target: StepModel, model: ModelSpec, weights: str | None = None) -> StepModel:
    """A StepModel of ``model`` on the target's accelerator, layout, formats and efficiency profile.

    A dense ``model`` keeps the target's tp and attention-DP and drops expert parallelism. A scale-up
    link override given to the target is not carried over (the accelerator's own link is used).
    """
    par, prec = target.parallel, target.precision
    moe = model.moe is not None
    return StepModel(model, target.hardware, tp=par.tp, ep=par.ep if moe else 1,
                     dp_attention=par.dp_attention, moe_tp=par.moe_tp if moe else None,
                     weights=weights or prec.weights.name,
                     activations=None if weights else prec.activations.name, kv_cache=prec.kv_cache.name,
                     efficiency=target.efficiency, reserve=target.reserve,
                     expert_imbalance=target.expert_imbalance)


def one_layer_spec(model: ModelSpec, kind: str, vocab: int | None = None) -> ModelSpec:
    """``model`` reduced to one decoder layer: ``kind`` ``"mtp"`` keeps its last layer's FFN kind,
    ``"eagle"`` uses a dense FFN (the target's dense intermediate size)."""
    ffn = model.groups[-1].ffn if kind == "mtp" else "dense"
    return replace(model, id=f"{model.id}-{kind}-layer", num_layers=1,
                   layer_groups=(LayerGroup(1, ffn, None),), vocab_size=vocab or model.vocab_size)


def draft_step_model(target: StepModel, spec: SpecDecode, weights: str | None = None,
                     draft_vocab: int | None = None) -> StepModel | None:
    """The cost model of one draft forward for ``spec`` (None for ``ngram``).

    Parameters
    ----------
    target : StepModel
        The served model.
    spec : SpecDecode
        Method (and draft model id for ``draft``).
    weights : str, optional
        Weight format of the draft (e.g. ``"bf16"``: TensorRT-LLM's DeepSeek-R1 min-latency recipe keeps
        the MTP layers in bf16); default the target's.
    draft_vocab : int, optional
        LM-head vocabulary of an EAGLE head (EAGLE-3 heads may use a reduced one); default the target's.

    Raises
    ------
    ConfigError
        ``mtp`` on a model without MTP layers, pp > 1, a host-resident KV cache, or a draft model that
        does not fit the target's tp.
    """
    _check_target(target)
    model = target.model
    if spec.method == "ngram":
        return None
    if spec.method == "mtp":
        if model.mtp_layers < 1:
            raise ConfigError(f"spec_decode mtp: {model.id} has no MTP layers "
                              f"(num_nextn_predict_layers = 0); use eagle, draft or ngram")
        return _sibling(target, one_layer_spec(model, "mtp"), weights)
    if spec.method == "eagle":
        return _sibling(target, one_layer_spec(model, "eagle", draft_vocab), weights)
    draft = load_model(spec.draft_model)
    try:
        return _sibling(target, draft, weights)
    except ConfigError as exc:
        raise ConfigError(f"spec_decode draft model {draft.id!r} at the target's tp={target.parallel.tp}: "
                          f"{exc}; pass draft=StepModel(...) with a layout that fits") from None


def _projection_time(draft: StepModel, n) -> np.ndarray:
    """The 2h -> h draft projection at M = n tokens, full weights on every device [s]."""
    h = draft.model.hidden_size
    prec = draft.precision
    op = _gemm("draft_proj", "attention_proj", np.asarray(n, dtype=float), float(h), 2.0 * h,
               prec.weights.bytes, prec.act_bytes)
    return draft._op_parts(op).total


def draft_time(spec: SpecDecode, draft: StepModel | None, n, context, ngram_time: float | None = None):
    """Time of the k draft forwards of one step [s] (see module docstring)."""
    n = np.asarray(n, dtype=float)
    if spec.method == "ngram":
        t = NGRAM_LOOKUP_TIME if ngram_time is None else float(ngram_time)
        return np.broadcast_to(np.where(n > 0, t, 0.0), np.broadcast_shapes(n.shape, np.shape(context)))
    if draft is None:
        raise ConfigError(f"spec_decode {spec.method}: a draft StepModel is needed (draft_step_model)")
    ctx = np.asarray(context, dtype=float) + (spec.k - 1) / 2.0
    one = draft.breakdown(StepShape.make(n_decode=n, context=ctx)).total - draft.efficiency.step_overhead
    if spec.method in ("mtp", "eagle"):
        one = one + _projection_time(draft, n)
    return spec.k * one


def verify_attention_time(target: StepModel, n, queries: int, context) -> np.ndarray:
    """Decode attention cores of all layers with ``queries`` tokens per sequence reading one KV cache [s].

    Each layer's decode-attention op at n sequences, with ``queries`` times the query heads, FLOPs and
    query/output bytes; the KV read is once per sequence. Costed by the target's own op cost (so the
    calibrated decode-attention forms apply).
    """
    par, prec, model = target.parallel, target.precision, target.model
    dims = attention_dims(model, par.tp)
    shape = StepShape.make(n_decode=n, context=context)
    windows: dict[int | None, int] = {}
    for g in model.groups:
        windows[g.window] = windows.get(g.window, 0) + g.count
    total = 0.0
    for window, count in windows.items():
        op = decode_attention_op(model, LayerGroup(count, "dense", window), par, prec, shape)
        extra_qo = (queries - 1) * shape.n_decode / par.dp_attention * dims.q_o_elems * prec.act_bytes
        op = replace(op, flops=op.flops * queries, bytes=op.bytes + extra_qo,
                     attention=replace(op.attention, heads=dims.heads * queries))
        total = total + count * target._op_parts(op).total
    return np.asarray(total)


def verify_time(target: StepModel, k: int, n, context) -> np.ndarray:
    """Target forward verifying k + 1 tokens for each of n sequences [s] (see module docstring)."""
    _check_target(target)
    q = k + 1
    nq = np.asarray(n, dtype=float) * q
    ctx = np.asarray(context, dtype=float) + k / 2.0
    full = target.breakdown(StepShape.make(n_decode=nq, context=ctx)).total
    return full - target.decode_attention_time(nq, ctx) + verify_attention_time(target, n, q, ctx)


@dataclass(frozen=True)
class DraftMemory:
    """Device memory the draft adds to the target's, on the most loaded device [B]."""

    weights: float
    kv_per_token: float


def draft_memory(spec: SpecDecode, draft: StepModel | None) -> DraftMemory:
    """Weights and KV cache per token of context that the draft adds per device [B].

    ``mtp``: one layer (attention + FFN or MoE, split as the target's) and the 2h x h projection,
    embedding and LM head shared with the target; ``eagle``: the same with a dense FFN plus its own LM
    head (bf16, vocabulary split over tp); ``draft``: the draft model's weights and KV cache; ``ngram``:
    nothing. The draft layer's KV cache holds one layer's entries per token.
    """
    if spec.method == "ngram" or draft is None:
        return DraftMemory(0.0, 0.0)
    kv = float(kv_bytes_per_token_device(draft.model, draft.parallel, draft.precision, 1.0))
    if spec.method == "draft":
        return DraftMemory(draft.weights_per_device, kv)
    model, par = draft.model, draft.parallel
    h = model.hidden_size
    layer = attention_weight_elems(model, par.tp) + ffn_weight_elems(model, model.groups[0], par)
    weights = (layer + 2.0 * h * h) * draft.precision.weights.bytes
    if spec.method == "eagle":
        weights += model.vocab_size * h / par.tp * 2.0
    return DraftMemory(weights, kv)


def kv_capacity_with_draft(target: StepModel, spec: SpecDecode, draft: StepModel | None) -> int:
    """KV tokens that fit per replica once the draft's weights and KV cache are on the devices.

    With :math:`F` the free bytes per device the target leaves for its KV cache, :math:`k` its KV
    bytes per token per device, :math:`W_d` and :math:`k_d` the draft's (:func:`draft_memory`) and
    :math:`D` the attention-DP ranks,

    .. math:: N = \\left\\lfloor \\frac{\\max(F - W_d, 0)}{k + k_d} \\right\\rfloor D,
        \\qquad F = k\\,N_0 / D

    with :math:`N_0` the target's own :attr:`~perfmodel.core.step.StepModel.kv_capacity_tokens`
    (so :math:`N = N_0` for ``ngram``, which adds nothing).
    """
    mem = draft_memory(spec, draft)
    n0 = int(target.kv_capacity_tokens)
    if mem.weights == 0.0 and mem.kv_per_token == 0.0:
        return n0
    dp = target.parallel.dp_attention
    k = float(kv_bytes_per_token_device(target.model, target.parallel, target.precision, 1.0, state=False))
    free = k * n0 / dp
    return int(np.floor(max(free - mem.weights, 0.0) / (k + mem.kv_per_token)) * dp)
