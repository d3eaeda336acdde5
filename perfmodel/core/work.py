"""Shapes of the ops that have calibrated cost forms: decode attention, prefill attention, routed experts.

An :class:`perfmodel.core.ops.Op` carries FLOPs and bytes for the plain roofline; the ops below also
carry the shape their fitted forms in :mod:`perfmodel.core.costs` need (sequences, heads, head sizes,
routed pairs...). The step model produces them in :mod:`perfmodel.core.ops` and costs them in
:meth:`perfmodel.core.step.StepModel._op_parts`. Counts are per device (per attention rank for the
attention shapes, per EP rank for the experts) and broadcast over the operating points.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .frozen import frozen


@frozen
class DecodeAttentionWork:
    """Shape of one decode-attention call (:func:`perfmodel.core.attention_costs.attention_decode_time`).

    Attributes
    ----------
    family : "attention_decode" | "mla_decode"
        Key of the fitted terms in the efficiency profile (MLA's absorbed kernel or MHA/GQA).
    batch : array
        Decoding sequences b on the attention rank (one new token each).
    kv_len : array
        Tokens L in each sequence's KV cache, the new one included [tokens].
    window : int
        Most tokens one query attends (sliding window or DSA top-k) [tokens]; 0 = all.
    heads : float
        Query heads H on the device.
    kv_width : float
        KV-cache elements per token per layer on the device, :math:`w_{kv}` (GQA: 2 H_kv d; MLA:
        kv_lora_rank + rope dim).
    d_qk, d_v : float
        Query-key and value head sizes [elements] (MLA absorbed: 576 and 512).
    kv_bytes : float
        Bytes per cached element :math:`b_{kv}` [B].
    kv_streams : float
        Independent KV streams a sequence's kernel reads (GQA: local KV heads; MLA: 1).
    """

    family: Literal["attention_decode", "mla_decode"]
    batch: np.ndarray
    kv_len: np.ndarray
    window: int
    heads: float
    kv_width: float
    d_qk: float
    d_v: float
    kv_bytes: float
    kv_streams: float

    @property
    def grouped(self) -> bool:
        """Whether several query heads share each KV stream (H > streams) at every operating point."""
        return bool(np.all(self.heads > self.kv_streams))


@frozen
class PrefillAttentionWork:
    """Shape of one causal prefill-attention call (:func:`perfmodel.core.attention_costs.attention_prefill_time`).

    Attributes
    ----------
    family : "attention_prefill" | "mla_prefill"
        Key of the fitted terms in the efficiency profile.
    batch : array
        Prompt chunks b on the attention rank.
    isl : array
        New tokens s per chunk [tokens] (a cached prefix is not counted here; the op's FLOPs and
        bytes include it).
    heads, kv_heads : float
        Query and K/V heads on the device (MLA prefill: kv_heads = heads).
    d_qk, d_v : float
        Query-key and value head sizes [elements].
    kv_bytes : float
        Bytes per K/V element [B].
    window : int
        Most tokens one query attends (sliding window or DSA top-k) [tokens]; 0 = all.
    """

    family: Literal["attention_prefill", "mla_prefill"]
    batch: np.ndarray
    isl: np.ndarray
    heads: float
    kv_heads: float
    d_qk: float
    d_v: float
    kv_bytes: float
    window: int


@frozen
class MoEWork:
    """Shape of one routed-experts block on a device (:func:`perfmodel.core.costs.moe_time`).

    Attributes
    ----------
    tokens : array
        Tokens T entering the block on the device (all attention ranks' tokens with attention DP).
    routed : array
        Routed (token, expert) pairs R on the device, :math:`T k / EP` times the expert imbalance.
    hit : array
        Expected local experts receiving at least one token, :math:`E_{hit} / EP`.
    inter : float
        Expert intermediate size on the device, I / MoE-TP [elements].
    matrices : float
        Weight matrices per expert (3 gated, 2 non-gated).
    decode_only : array of bool
        Steps with no prompt tokens (serving engines replay them as CUDA graphs).
    """

    tokens: np.ndarray
    routed: np.ndarray
    hit: np.ndarray
    inter: float
    matrices: float
    decode_only: np.ndarray
