"""Decomposition of one forward step into ops with FLOPs, bytes and messages, per device.

A *step* runs, on one model replica, ``n_decode`` decoding sequences (one new token each, ``context``
tokens attended including the new one) and ``n_prefill`` prompt chunks of ``chunk`` new tokens with
``past`` tokens of that prompt already cached. Every quantity is a numpy array broadcast over the
operating points, and is per device of the first pipeline stage (stages are identical).

Notation: h hidden size, T tokens in the step (T = n_decode + n_prefill·chunk), T_a = T / dp_attention
tokens on one attention rank, n_q and n_kv query / KV heads (local: divided by tp), d head dimension,
I FFN intermediate size, E experts, k experts per token, G = tp·dp_attention devices per stage.
Bytes: b_w per weight, b_a = 2 per activation, b_kv per cached element.
"""

from __future__ import annotations

import functools
from functools import cached_property
from typing import Literal

import numpy as np

from ..modelspec.schema import LayerGroup, ModelSpec
from ..precision import Precision, dtype
from .attention_costs import causal_pairs
from .frozen import frozen
from .parallel import Parallel
from .work import DecodeAttentionWork, MoEWork, PrefillAttentionWork

#: Names of the ops whose cost depends on the decode context (decode attention cores, DSA decode indexers).
CONTEXT_OPS = ("attention_decode", "indexer_decode")

OpKind = Literal["gemm", "attention_decode", "attention_prefill", "memory", "indexer", "recurrent"]
OpClass = Literal["attention_proj", "attention", "ffn", "moe", "elementwise", "embedding_head"]
CommKind = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"]


@frozen
class StepShape:
    """Work in one forward step of a replica (arrays broadcast together).

    Attributes
    ----------
    n_decode : array
        Decoding sequences (one new token each).
    context : array
        Tokens each decoding sequence attends to, the new one included.
    n_prefill : array
        Prompt chunks in the step.
    chunk : array
        New tokens per prompt chunk.
    past : array
        Tokens of each prompt already in the KV cache before this chunk.
    """

    n_decode: np.ndarray
    context: np.ndarray
    n_prefill: np.ndarray
    chunk: np.ndarray
    past: np.ndarray

    @classmethod
    def make(cls, n_decode=0.0, context=0.0, n_prefill=0.0, chunk=0.0, past=0.0) -> StepShape:
        arrs = [np.asarray(x, dtype=float) for x in (n_decode, context, n_prefill, chunk, past)]
        return cls(*arrs)

    @property
    def decode_tokens(self) -> np.ndarray:
        return self.n_decode

    @property
    def prefill_tokens(self) -> np.ndarray:
        return self.n_prefill * self.chunk

    @cached_property
    def tokens(self) -> np.ndarray:
        return self.n_decode + self.n_prefill * self.chunk


@frozen
class Op:
    """One op on a device: work per occurrence and how often it occurs per step.

    ``m`` is the GEMM token dimension (sets compute efficiency); ``n`` and ``k`` the output and
    reduction sizes where known (wave quantisation); ``kernels`` counts launches; ``weight_bytes`` is
    the part of ``bytes`` that is weights (for breakdowns). ``attention`` holds the shape of an
    attention core (:class:`~perfmodel.core.work.DecodeAttentionWork` on ``attention_decode`` ops,
    :class:`~perfmodel.core.work.PrefillAttentionWork` on ``attention_prefill`` ops) and ``moe`` that
    of a routed-experts op (:class:`~perfmodel.core.work.MoEWork`), for the calibrated attention and
    MoE cost forms of :mod:`perfmodel.core.costs`.
    """

    name: str
    op_class: OpClass
    kind: OpKind
    flops: np.ndarray
    bytes: np.ndarray
    m: np.ndarray | float = 1.0
    kernels: float = 1.0
    weight_bytes: np.ndarray | float = 0.0
    n: float | None = None
    k: float | None = None
    attention: DecodeAttentionWork | PrefillAttentionWork | None = None
    moe: MoEWork | None = None


@frozen
class Message:
    """One collective or point-to-point transfer per occurrence, over ``ranks`` devices."""

    name: str
    kind: CommKind
    size: np.ndarray
    ranks: int
    link: Literal["scale_up", "scale_out"] = "scale_up"


def _per_rank(x: np.ndarray, ranks: int) -> np.ndarray:
    """``x / ranks``, or ``x`` itself for one rank (the same values, one array operation fewer)."""
    return x if ranks == 1 else x / ranks


def _zeros(x) -> np.ndarray:
    """Zeros of ``x``'s shape (float64), without ``np.zeros_like``'s cost on tiny arrays."""
    return np.zeros(getattr(x, "shape", ()))


def windowed_pairs(n: np.ndarray, window: int | None) -> np.ndarray:
    """Σ_{j=1..n} min(j, W): query–key pairs of n causal tokens with a window W (None = full).

    The layer-group spelling of :func:`perfmodel.core.attention_costs.causal_pairs` (window None, not 0).
    """
    return causal_pairs(n, window or 0)


def local_kv_heads(model: ModelSpec, tp: int) -> float:
    """KV heads held per device: n_kv / tp, but at least one (heads are replicated when n_kv < tp)."""
    return max(model.num_kv_heads / tp, 1.0)


def kv_elems_per_token_layer(model: ModelSpec, tp: int) -> float:
    """Cached elements per token per layer on one device.

    GQA: 2·n_kv_local·d. MLA: kv_lora_rank + qk_rope_head_dim, replicated on every TP rank.
    """
    if model.attention == "mla":
        assert model.mla is not None
        return float(model.mla.kv_lora_rank + model.mla.qk_rope_head_dim)
    return 2.0 * local_kv_heads(model, tp) * model.head_dim


def _gemm(name: str, op_class: OpClass, m, n: float, k: float, wb: float, ab: float,
          kernels: float = 1.0) -> Op:
    m = np.asarray(m, dtype=float)
    present = (m > 0).astype(float)
    weights = present * (n * k * wb)
    return Op(name, op_class, "gemm", (2.0 * n * k) * m, weights + m * ((n + k) * ab),
              m=np.maximum(m, 1.0), kernels=kernels * present, weight_bytes=weights, n=n, k=k)


def _gemms(m, *specs: tuple[str, OpClass, float, float, float, float]) -> list[Op]:
    """:func:`_gemm` for several GEMMs ``(name, op_class, n, k, wb, ab)`` over the same M, in one
    stacked pass (the same element-wise arithmetic: the same values)."""
    m = np.asarray(m, dtype=float)
    present = (m > 0).astype(float)
    try:
        flop_coef, weight_coef, act_coef = _gemm_coefficients(specs, m.ndim)
    except TypeError:  # a size given as an array (unhashable): formed for this call
        flop_coef, weight_coef, act_coef = _gemm_coefficients.__wrapped__(specs, m.ndim)
    weights = present * weight_coef
    flops, data = flop_coef * m, weights + m * act_coef
    m_ops = np.maximum(m, 1.0)
    return [Op(name, op_class, "gemm", flops[r], data[r], m=m_ops, kernels=present, weight_bytes=weights[r],
               n=n, k=k) for r, (name, op_class, n, k, _, _) in enumerate(specs)]


@functools.lru_cache(maxsize=512)
def _gemm_coefficients(specs: tuple[tuple[str, OpClass, float, float, float, float], ...], ndim: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns 2NK, NK b_w and (N + K) b_a of :func:`_gemms`'s GEMMs over ``ndim`` point axes: fixed
    for a step model, so formed once per set of GEMMs (read-only: shared between calls)."""
    coef = np.array([(2.0 * n * k, n * k * wb, (n + k) * ab) for _, _, n, k, wb, ab in specs])
    cols = tuple(coef[:, j].reshape((len(specs),) + (1,) * ndim) for j in range(3))
    for c in cols:
        c.flags.writeable = False
    return cols  # type: ignore[return-value]


@frozen
class AttentionDims:
    """Per-device attention sizes of a model under a TP degree (see :func:`attention_dims`)."""

    heads: float            # query heads on the device
    kv_width: float         # cached elements per token per layer on the device
    decode: tuple[float, float]   # (d_qk, d_v) of the decode core (MLA absorbed: 576, 512)
    prefill: tuple[float, float]  # (d_qk, d_v) of the prefill core (MLA: 192, 128)
    kv_streams: float       # independent KV streams a decode kernel reads (GQA: local KV heads; MLA: 1)
    prefill_kv_heads: float  # K/V heads of the prefill core (MLA: the query heads)
    q_o_elems: float        # query + output elements per token moved by the core
    mla: bool


#: :func:`attention_dims` by (model identity, tp), with the model held so that its identity is not reused.
_DIMS: dict[tuple[int, int], tuple[ModelSpec, AttentionDims]] = {}


def attention_dims(model: ModelSpec, tp: int) -> AttentionDims:
    """Head counts and sizes of the attention core on one device (formed once per spec and tp: a step
    reads them for every attention op)."""
    hit = _DIMS.get((id(model), tp))
    if hit is not None and hit[0] is model:
        return hit[1]
    dims = _attention_dims(model, tp)
    if len(_DIMS) >= 256:
        _DIMS.clear()
    _DIMS[(id(model), tp)] = (model, dims)
    return dims


def _attention_dims(model: ModelSpec, tp: int) -> AttentionDims:
    nq = model.num_attention_heads / tp
    kv_e = kv_elems_per_token_layer(model, tp)
    if model.attention == "mla":
        mla = model.mla
        assert mla is not None
        d_qk = float(mla.qk_nope_head_dim + mla.qk_rope_head_dim)
        return AttentionDims(nq, kv_e, (kv_e, float(mla.kv_lora_rank)), (d_qk, float(mla.v_head_dim)),
                             1.0, nq, nq * (d_qk + mla.v_head_dim), True)
    d, dv = float(model.head_dim), float(model.v_head_dim)
    kv_heads = local_kv_heads(model, tp)
    return AttentionDims(nq, kv_e, (d, dv), (d, dv), kv_heads, kv_heads, nq * (d + dv), False)


def attended_limit(model: ModelSpec, group: LayerGroup) -> int | None:
    """Most cached tokens one query attends in a layer of ``group`` (None = all).

    The sliding/chunk window, or DeepSeek Sparse Attention's top-k (the smaller of the two): a
    top-k layer attends ``min(L, k)`` tokens per query, which costs what a window of k does, while it
    keeps every token cached (:func:`perfmodel.core.memory.kv_bytes_per_token_device`).
    """
    dsa = model.sparse_attention
    limits = [w for w in (group.window, dsa.top_k if dsa is not None else None) if w]
    return min(limits) if limits else None


def decode_attention_op(model: ModelSpec, group: LayerGroup, par: Parallel, prec: Precision,
                        s: StepShape) -> Op:
    r"""Decode attention core of one layer: each decoding sequence reads its cached context.

    .. math:: F = 2 b H L_w (d_{qk} + d_v), \qquad D = b\,(L_w w_{kv} b_{kv} + H (d_{qk}+d_v) b_a)

    with b sequences on the attention rank, H local heads and :math:`L_w = \min(L, W)`, W the
    window or DSA's top-k (:func:`attended_limit`).
    """
    dims = attention_dims(model, par.tp)
    dec_a = _per_rank(s.n_decode, par.dp_attention)
    limit = attended_limit(model, group)
    attended = np.minimum(s.context, limit) if limit else s.context
    kvb = prec.kv_cache.bytes
    return Op("attention_decode", "attention", "attention_decode",
              dec_a * attended * (2.0 * dims.heads * sum(dims.decode)),
              dec_a * (attended * (dims.kv_width * kvb) + dims.q_o_elems * prec.act_bytes),
              m=np.maximum(dec_a, 1.0), kernels=1.0 * (dec_a > 0),
              attention=DecodeAttentionWork(
                  family="mla_decode" if dims.mla else "attention_decode", batch=dec_a, kv_len=s.context,
                  window=limit or 0, heads=dims.heads, kv_width=dims.kv_width, d_qk=dims.decode[0],
                  d_v=dims.decode[1], kv_bytes=kvb, kv_streams=dims.kv_streams))


def prefill_attention_op(model: ModelSpec, group: LayerGroup, par: Parallel, prec: Precision,
                         s: StepShape) -> Op:
    r"""Causal prefill attention core of one layer over a chunk, with ``past`` tokens cached.

    .. math:: F = 2 b H\,P (d_{qk} + d_v), \quad P = \mathrm{pairs}(past + c) - \mathrm{pairs}(past)

    with pairs capped by the window or DSA's top-k (:func:`attended_limit`).
    """
    dims = attention_dims(model, par.tp)
    pre_a = _per_rank(s.n_prefill, par.dp_attention)
    limit = attended_limit(model, group)
    if np.count_nonzero(s.past):
        pairs = windowed_pairs(s.past + s.chunk, limit) - windowed_pairs(s.past, limit)
    else:  # no cached prefix (the pairs of an empty one are 0)
        pairs = windowed_pairs(s.chunk, limit)
    past_read = np.minimum(s.past, limit) if limit else s.past
    kvb = prec.kv_cache.bytes
    return Op("attention_prefill", "attention", "attention_prefill",
              pre_a * pairs * (2.0 * dims.heads * sum(dims.prefill)),
              pre_a * ((past_read + s.chunk) * (dims.kv_width * kvb) + s.chunk * (dims.q_o_elems * prec.act_bytes)),
              m=np.maximum(pre_a * s.chunk, 1.0), kernels=1.0 * (pre_a > 0),
              attention=PrefillAttentionWork(
                  family="mla_prefill" if dims.mla else "attention_prefill", batch=pre_a, isl=s.chunk,
                  heads=dims.heads, kv_heads=dims.prefill_kv_heads, d_qk=dims.prefill[0],
                  d_v=dims.prefill[1], kv_bytes=kvb, window=limit or 0))


def attention_projection_ops(model: ModelSpec, par: Parallel, prec: Precision, s: StepShape) -> list[Op]:
    """QKV (or MLA's low-rank) projections and the output projection of one layer."""
    h, a = model.hidden_size, par.dp_attention
    wb, ab = prec.weights.bytes, prec.act_bytes
    dims = attention_dims(model, par.tp)
    nq, t_a = dims.heads, _per_rank(s.tokens, a)
    if not dims.mla:
        q_width = nq * (2.0 if model.attention_output_gate else 1.0)  # the output gate doubles Q
        return _gemms(t_a, ("qkv_proj", "attention_proj", (q_width + 2.0 * dims.kv_streams) * model.head_dim, h,
                            wb, ab),
                      ("o_proj", "attention_proj", h, nq * model.v_head_dim, wb, ab))
    mla = model.mla
    assert mla is not None
    d_qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    if mla.q_lora_rank:
        q_specs = [("q_a_proj", "attention_proj", mla.q_lora_rank, h, wb, ab),
                   ("q_b_proj", "attention_proj", nq * d_qk, mla.q_lora_rank, wb, ab)]
    else:
        q_specs = [("q_proj", "attention_proj", nq * d_qk, h, wb, ab)]
    # the projections over all tokens: the queries, the KV latent and (last) the output
    *ops, o_proj = _gemms(t_a, *q_specs, ("kv_a_proj", "attention_proj", dims.kv_width, h, wb, ab),
                          ("o_proj", "attention_proj", h, nq * mla.v_head_dim, wb, ab))
    ops.append(kv_b_absorbed_op(model, par, prec, s))
    # prefill: up-project the latent of every new and past token of the chunk
    up_tokens = _per_rank(s.n_prefill, a) * (s.chunk + s.past)
    ops.append(_gemm("kv_b_proj", "attention_proj", up_tokens,
                     nq * (mla.qk_nope_head_dim + mla.v_head_dim), mla.kv_lora_rank, wb, ab))
    ops.append(o_proj)
    return ops


def kv_b_absorbed_op(model: ModelSpec, par: Parallel, prec: Precision, s: StepShape) -> Op:
    r"""MLA decode in the absorbed form: W_UK and W_UV applied per head to the query and the output.

    .. math:: F = 2 b H n_a, \qquad D = [b > 0]\,H n_a b_w + b H (d_{nope} + d_v + 2 r) b_a

    with b decoding sequences on the attention rank, H local heads, r the KV latent rank and
    :math:`n_a = d_{nope} r + r d_v` (two launches).
    """
    mla = model.mla
    assert mla is not None
    nq, wb, ab = attention_dims(model, par.tp).heads, prec.weights.bytes, prec.act_bytes
    dec_t = _per_rank(s.n_decode, par.dp_attention)
    absorb_n = mla.qk_nope_head_dim * mla.kv_lora_rank + mla.kv_lora_rank * mla.v_head_dim
    present = (dec_t > 0).astype(float)
    return Op("kv_b_absorbed", "attention_proj", "gemm", 2.0 * dec_t * nq * absorb_n,
              present * nq * absorb_n * wb + dec_t * nq * (mla.qk_nope_head_dim + mla.v_head_dim
                                                            + 2 * mla.kv_lora_rank) * ab,
              m=np.maximum(dec_t, 1.0), kernels=2.0 * present, weight_bytes=present * nq * absorb_n * wb)


def indexer_decode_op(model: ModelSpec, par: Parallel, prec: Precision, s: StepShape) -> Op:
    r"""DSA lightning indexer of one layer at decode: each sequence scores its whole cached context.

    .. math:: F = 2 b\,n_i d_i L, \qquad D = b\,L\,d_i\,b_{kv}

    with b sequences on the attention rank, n_i indexer heads of size d_i (not split over tp: the
    indexer is replicated on every rank) and L the context. Linear in L, unlike the top-k attention.
    """
    dsa = model.sparse_attention
    assert dsa is not None
    dec_a = _per_rank(s.n_decode, par.dp_attention)
    return Op("indexer_decode", "attention", "indexer", dec_a * 2.0 * dsa.index_heads * dsa.index_head_dim * s.context,
              dec_a * s.context * dsa.index_head_dim * prec.kv_cache.bytes,
              m=np.maximum(dec_a, 1.0), kernels=1.0 * (dec_a > 0))


def indexer_ops(model: ModelSpec, par: Parallel, prec: Precision, s: StepShape) -> list[Op]:
    r"""DSA indexer of one layer: its projections (replicated: q from the Q latent, one shared key,
    per-head weights), the decode scores (:func:`indexer_decode_op`) and the prefill scores over the
    causal pairs of each chunk, :math:`F = 2 b\,n_i d_i P` with P the full causal pairs.
    Top-k selection is not costed."""
    dsa = model.sparse_attention
    assert dsa is not None
    h, wb, ab = model.hidden_size, prec.weights.bytes, prec.act_bytes
    t_a = _per_rank(s.tokens, par.dp_attention)
    ni, di = dsa.index_heads, dsa.index_head_dim
    q_in = model.mla.q_lora_rank if model.mla is not None and model.mla.q_lora_rank else h
    pre_a = _per_rank(s.n_prefill, par.dp_attention)
    pairs = windowed_pairs(s.past + s.chunk, None) - windowed_pairs(s.past, None)
    prefill = Op("indexer_prefill", "attention", "indexer", pre_a * 2.0 * ni * di * pairs,
                 pre_a * (s.past + s.chunk) * di * prec.kv_cache.bytes,
                 m=np.maximum(pre_a * s.chunk, 1.0), kernels=1.0 * (pre_a > 0))
    return [_gemm("indexer_q", "attention_proj", t_a, ni * di, q_in, wb, ab),
            _gemm("indexer_k", "attention_proj", t_a, di + ni, h, wb, ab),
            indexer_decode_op(model, par, prec, s), prefill]


#: FLOPs per state element per token of a recurrent update: read-decay, state·key, outer-product
#: update and query·state, each a multiply-add (Gated DeltaNet; Mamba-2's update has the same count).
RECURRENT_FLOPS_PER_STATE = 6.0


def recurrent_ops(model: ModelSpec, par: Parallel, prec: Precision, s: StepShape) -> list[Op]:
    r"""Recurrent mixer of one layer (Gated DeltaNet, Mamba-2): projections, conv and the scan.

    Heads split over tp; per local head a state of :math:`S = d_k d_v` elements (b_s bytes each).

    - decode (one token per sequence, O(1) in the context):
      :math:`F = 6 b H S`, :math:`D = b H (2 S b_s + 2 (d_k + d_v) b_a)` (state read and written);
    - prefill, chunked scan with chunks of C tokens:
      :math:`F = T_p H (6 S + 2 C (d_k + d_v))`,
      :math:`D = T_p H\,2 (d_k + d_v) b_a + n_p \lceil c/C \rceil H\,2 S b_s`;
    - the causal conv over the conv channels (memory-bound, its ``K − 1`` inputs kept per sequence).
    """
    r = model.recurrent
    assert r is not None
    h, tp, a = model.hidden_size, par.tp, par.dp_attention
    wb, ab = prec.weights.bytes, prec.act_bytes
    sb = dtype(r.state_dtype, "state").bytes
    heads, state, width = r.num_heads / tp, float(r.key_head_dim * r.value_head_dim), float(
        r.key_head_dim + r.value_head_dim)
    t_a, dec_a, pre_a = _per_rank(s.tokens, a), _per_rank(s.n_decode, a), _per_rank(s.n_prefill, a)
    pre_tokens = pre_a * s.chunk
    conv_ch = r.conv_channels / tp
    conv = Op("recurrent_conv", "attention", "recurrent", 2.0 * r.conv_kernel * conv_ch * t_a,
              ab * conv_ch * (2.0 * t_a + 2.0 * (r.conv_kernel - 1) * (dec_a + pre_a)),
              kernels=1.0 * (t_a > 0))
    scan_dec = Op("recurrent_decode", "attention", "recurrent", dec_a * heads * RECURRENT_FLOPS_PER_STATE * state,
                  dec_a * heads * (2.0 * state * sb + 2.0 * width * ab), m=np.maximum(dec_a, 1.0),
                  kernels=1.0 * (dec_a > 0))
    chunks = np.ceil(s.chunk / r.chunk)
    scan_pre = Op("recurrent_prefill", "attention", "recurrent",
                  pre_tokens * heads * (RECURRENT_FLOPS_PER_STATE * state + 2.0 * r.chunk * width),
                  pre_tokens * heads * 2.0 * width * ab + pre_a * chunks * heads * 2.0 * state * sb,
                  m=np.maximum(pre_tokens, 1.0), kernels=1.0 * (pre_a > 0))
    return [_gemm("recurrent_in_proj", "attention_proj", t_a, r.in_proj / tp, h, wb, ab), conv, scan_dec,
            scan_pre, _gemm("recurrent_out_proj", "attention_proj", t_a, h, r.out_proj / tp, wb, ab)]


def attention_ops(model: ModelSpec, group: LayerGroup, par: Parallel, prec: Precision,
                  s: StepShape) -> list[Op]:
    """Token-mixer ops of one layer (see module notation): projections and attention cores (decode
    and prefill), plus the DSA indexer where the model has one; or the recurrent mixer's ops for a
    ``recurrent`` layer group."""
    if group.mixer == "none":
        return []
    if group.mixer == "recurrent":
        return recurrent_ops(model, par, prec, s)
    ops = [*attention_projection_ops(model, par, prec, s), decode_attention_op(model, group, par, prec, s),
           prefill_attention_op(model, group, par, prec, s)]
    if model.sparse_attention is not None:
        ops += indexer_ops(model, par, prec, s)
    return ops


def expected_experts_hit(num_experts: int, top_k: int, routed_tokens: np.ndarray) -> np.ndarray:
    """Expected distinct experts touched by T tokens under uniform top-k routing.

    .. math:: E_{hit} = E\\left(1 - (1 - k/E)^T\\right)

    A 256-expert top-8 model touches 8 experts at T = 1, not 256.
    """
    t = np.asarray(routed_tokens, dtype=float)
    return num_experts * (1.0 - np.power(1.0 - top_k / num_experts, t))


def ffn_ops(model: ModelSpec, group: LayerGroup, par: Parallel, prec: Precision, s: StepShape,
            expert_imbalance: float = 1.0) -> list[Op]:
    """Dense FFN, or MoE router + routed experts + shared experts, of one layer."""
    h, g = model.hidden_size, par.group
    wb, ab = prec.weights.bytes, prec.act_bytes
    t = s.tokens
    mats = model.ffn_matrices
    ops: list[Op] = []
    if group.ffn == "none":
        return ops
    if group.ffn == "dense":
        inter = model.intermediate_size / g
        return _gemms(t, ("ffn_up", "ffn", (mats - 1) * inter, h, wb, ab), ("ffn_down", "ffn", h, inter, wb, ab))
    moe = model.moe
    assert moe is not None
    t_a = _per_rank(t, par.dp_attention)
    ops.append(_gemm("router", "moe", t_a, moe.num_experts, h, 2.0, ab))
    ops.append(experts_op(model, par, prec, s, expert_imbalance))
    if moe.shared_intermediate_size:
        s_inter = moe.shared_intermediate_size / g
        ops += _gemms(t, ("shared_up", "moe", (mats - 1) * s_inter, h, wb, ab),
                      ("shared_down", "moe", h, s_inter, wb, ab))
    return ops


def experts_op(model: ModelSpec, par: Parallel, prec: Precision, s: StepShape,
               expert_imbalance: float = 1.0) -> Op:
    r"""Routed experts of one MoE layer on the busiest EP rank (a fused MoE block).

    .. math:: F = 2 R\,m H I, \qquad D = [T > 0]\,(E_{hit} m H I b_w + R (2H + m I) b_a)

    with T the step's tokens, R = T k / EP × imbalance the routed pairs on the rank, E_hit the local
    experts hit (:func:`expected_experts_hit` / EP), m weight matrices per expert and I the expert
    intermediate size per MoE-TP rank.
    """
    moe = model.moe
    assert moe is not None
    h, wb, ab, mats = model.hidden_size, prec.weights.bytes, prec.act_bytes, model.ffn_matrices
    work, e_hit = moe_work(model, par, s, expert_imbalance)
    t, inter, hit_local, routed_local = work.tokens, work.inter, work.hit, work.routed
    w_expert = mats * h * inter * wb
    flops = 2.0 * routed_local * mats * h * inter
    data = hit_local * w_expert + routed_local * (2 * h + mats * inter) * ab
    return Op("experts", "moe", "gemm", flops, np.where(t > 0, data, 0.0),
              m=np.maximum(t * moe.top_k / np.maximum(e_hit, 1e-9), 1.0), kernels=2.0 * (t > 0),
              weight_bytes=np.where(t > 0, hit_local * w_expert, 0.0), n=None, k=float(h), moe=work)


def moe_work(model: ModelSpec, par: Parallel, s: StepShape, expert_imbalance: float = 1.0
             ) -> tuple[MoEWork, np.ndarray]:
    """The shape of one MoE layer's routed-experts block on the busiest EP rank (see :func:`experts_op`),
    and the experts hit over all ranks :math:`E_{hit}`."""
    moe = model.moe
    assert moe is not None
    t = s.tokens
    e_hit = expected_experts_hit(moe.num_experts, moe.top_k, t)
    inter = moe.expert_intermediate_size / par.moe_tp_eff
    ep = par.experts_ep(moe.num_experts)   # the busiest rank's share (ceil(E/ep) experts)
    work = MoEWork(tokens=t, routed=t * moe.top_k / ep * expert_imbalance, hit=e_hit / ep, inter=inter,
                   matrices=float(model.ffn_matrices), decode_only=s.n_prefill * s.chunk <= 0)
    return work, e_hit


def elementwise_op(model: ModelSpec, group: LayerGroup, par: Parallel, prec: Precision,
                   s: StepShape, part: Literal["all", "attention", "ffn"] = "all") -> Op:
    """Norms, residual adds, rotary and activation function of one layer (memory traffic only).

    Two fused residual-add + RMSNorm kernels (h term) and the gated activation (read 2·I_local,
    write I_local): :math:`D = b_a\\,(8h\\,T_a + 3 I_{local} T_{ffn})`.

    ``part`` keeps one side of an attention–FFN split: ``"attention"`` the add + norm traffic (the
    ``h`` term, 2 kernels), ``"ffn"`` the activation function (the ``I`` term, 1 kernel); ``"all"``
    (default) is the whole op. A single-sublayer block (mixer or FFN ``"none"``, Nemotron-H) has one
    add + norm kernel (``4h``) and, without an FFN, no activation.
    """
    ab = prec.act_bytes
    t = s.tokens
    norms = 1.0 if "none" in (group.mixer, group.ffn) else 2.0
    if group.ffn == "none":
        act = 0.0
    elif group.ffn == "dense":
        act = model.intermediate_size / par.group
    else:
        moe = model.moe
        assert moe is not None
        act = (moe.top_k / par.experts_ep(moe.num_experts) * moe.expert_intermediate_size / par.moe_tp_eff
               + moe.shared_intermediate_size / par.group)
    act_kernels = 0.0 if group.ffn == "none" else 1.0
    norm = 4.0 * norms * model.hidden_size / par.dp_attention  # per token of the step, as is ``act``
    sides = {"all": ("elementwise", ab * (norm + 3.0 * act), norms + act_kernels),
             "attention": ("elementwise_attention", ab * norm, norms),
             "ffn": ("elementwise_ffn", ab * 3.0 * act, act_kernels)}
    if part in sides:
        name, per_token, kernels = sides[part]
        data = t * per_token
        return Op(name, "elementwise", "memory", _zeros(data), data, kernels=kernels * (t > 0))
    raise ValueError(f"part: expected 'all', 'attention' or 'ffn', got {part!r}")


def layer_messages(model: ModelSpec, group: LayerGroup, par: Parallel, prec: Precision,
                   s: StepShape) -> list[Message]:
    """Collectives of one layer: TP all-reduces, or EP all-to-all with attention-DP (none for the
    sublayer a Nemotron-H block does not have)."""
    h, ab = model.hidden_size, prec.act_bytes
    t = s.tokens
    msgs: list[Message] = []
    if par.tp > 1 and group.mixer != "none":
        msgs.append(Message("attn_allreduce", "all_reduce", _per_rank(t, par.dp_attention) * h * ab, par.tp))
    if par.group > 1 and group.ffn != "none":
        if par.dp_attention == 1:
            msgs.append(Message("ffn_allreduce", "all_reduce", t * h * ab, par.group))
        elif group.ffn == "moe":
            assert model.moe is not None
            size = _per_rank(t, par.dp_attention) * model.moe.top_k * h * ab
            msgs.append(Message("moe_dispatch", "all_to_all", size, par.group))
            msgs.append(Message("moe_combine", "all_to_all", size, par.group))
        else:
            msgs.append(Message("ffn_allgather", "all_gather", t * h * ab, par.group))
            msgs.append(Message("ffn_reducescatter", "reduce_scatter", t * h * ab, par.group))
    return msgs


def embedding_head_ops(model: ModelSpec, par: Parallel, prec: Precision, s: StepShape) -> list[Op]:
    """Embedding gather, LM head (vocabulary split over tp) and sampling, once per step.

    Logits are computed for every decoding sequence and for the last token of each prompt chunk.
    """
    h, v = model.hidden_size, model.vocab_size / par.tp
    ab = prec.act_bytes
    t_a = _per_rank(s.tokens, par.dp_attention)
    logits = _per_rank(s.n_decode + s.n_prefill, par.dp_attention)
    embed = Op("embedding", "embedding_head", "memory", _zeros(t_a), t_a * (h * (2.0 + ab)),
               kernels=1.0 * (t_a > 0))
    head = _gemm("lm_head", "embedding_head", logits, v, h, 2.0, ab)
    sample = Op("sampling", "embedding_head", "memory", _zeros(logits), logits * (v * 4.0 * 2),
                kernels=1.0 * (logits > 0))
    return [embed, head, sample]
