"""Attention cost on a device: decode over a KV cache and causal prefill, as :class:`~perfmodel.core.costs.OpTime`.

Both use the roofline of :func:`perfmodel.core.costs.op_time` with the attention efficiencies of the
device's :class:`~perfmodel.core.efficiency.Efficiency` profile; the equations are in each function's
docstring.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .costs import OpTime, op_time
from .efficiency import Efficiency
from .frozen import frozen


def attention_decode_time(batch: ArrayLike, kv_len: ArrayLike, heads: ArrayLike, kv_width: ArrayLike,
                          d_qk: ArrayLike, d_v: ArrayLike, kv_bytes: ArrayLike, peak_flops: float,
                          bandwidth: float, eff: Efficiency, kv_streams: ArrayLike = 1.0,
                          window: ArrayLike = 0, act_bytes: float = 2.0,
                          family: str = "attention_decode") -> OpTime:
    """Time of one decode-attention call in which each of ``batch`` sequences adds one token.

    Plain form (no ``eff.op_params[family]``), as the step model costs it:

    .. math::
        F = 2 b H L_w (d_{qk} + d_v), \\quad D = b L_w w_{kv} b_{kv} + b H (d_{qk} + d_v) b_a, \\quad
        t = \\max\\left(\\frac{F}{P \\eta_{ac}}, \\frac{D}{B \\eta_{am}}\\right) + t_k

    with :math:`L_w = \\min(L, w)` for a sliding window w. With ``op_params[family]``
    (``attention_decode`` for MHA/GQA, ``mla_decode`` for MLA): the KV is read in pages of at least
    ``min_tokens`` tokens; each (sequence, query head) moves ``head_bytes`` extra bytes per head
    dimension (query/output, softmax state); where the query heads per KV stream exceed ``max_group``
    the kernel runs one block per query head and re-reads the KV, of which a share ρ
    (``reread_fraction``, default 1) misses the L2 cache: :math:`D_{KV} \\times (1 + ρ (g - 1))`;
    ``memory``, ``compute``, ``kernel_overhead`` and ``overlap`` replace the scalar η_am, η_ac,
    t_k and the max.

    Work units (only where the profile has ``unit_cost``; fitted on Hopper and Blackwell GQA
    decode): the kernel runs one thread block per work unit and KV split, with :math:`U = b H_{kv}`
    units (:math:`b H` on the per-head path) and

    .. math::
        s = \\mathrm{clip}\\!\\left(\\frac{L_w + \\omega (L - L_w)}{C}, 1, \\max\\!\\left(1,
        \\frac{k S}{U}\\right)\\right), \\quad
        t_u = c\\,\\frac{U s}{S} + t_{s}\\,[L_w \\ge L_s], \\quad
        \\eta_m' = \\eta_m \\frac{U}{U + U_{1/2}}, \\quad
        t = t_k + \\mathrm{roofline}(t_c, D / (B \\eta_m')) + t_u

    Physical reasons: every thread block pays a fixed setup (page-table walk, Q load, softmax
    state, output write) of c SM-seconds, spread over the S SMs (``slots``); split-KV ("multi-block")
    grids add KV splits of C tokens (``split_chunk``) until about k blocks per SM (``split_fill``)
    are in flight, sized from the full history on kernels that do not clip the grid to the sliding
    window (ω = ``split_window`` in [0, 1]); calls with L_w >= L_s (``split_tokens``) take the
    kernel's multi-block path with a reduction pass, t_s = ``split_cost`` (the switch-on length is a
    kernel heuristic, fitted apart from the split count s); and a call with few independent KV
    streams cannot keep enough bytes in flight to reach the bandwidth (U½ = ``unit_half``,
    Little's law). t_u is device work, so it is returned as :attr:`OpTime.serial` (engines do not
    scale it with their per-launch factor).

    The kernel path (TensorRT-LLM's decode dispatch) sets c, t_k and η_m: the per-head kernel (MHA,
    and groups above ``max_group``) uses ``unit_cost`` and ``memory_head`` / ``memory_head_fp8``
    (bf16 / <= 1-byte KV: the fp8 per-head kernel dequantises on CUDA cores and streams slower); the
    grouped kernel uses ``unit_cost_group`` (bf16 KV) or ``unit_cost_group_fp8`` (<= 1-byte KV) and
    ``memory``; the grouped fp8 kernel with :math:`d_{qk} \\ge 128` (Hopper's tensor-core XQA path)
    has its own launch overhead ``kernel_overhead_fp8``.

    Parameters
    ----------
    batch, kv_len : array_like
        Sequences b and KV tokens L per sequence (history + the new one; a sliding window caps the
        tokens read at L_w).
    heads : array_like
        Query heads H on the device.
    kv_width : array_like
        KV-cache elements per token per sequence :math:`w_{kv}` (GQA: 2 H_kv d; MLA: 512 + 64).
    d_qk, d_v : array_like
        Query-key and value head dimensions (MLA absorbed: 576 and 512).
    kv_bytes : array_like
        Bytes per KV element :math:`b_{kv}`.
    peak_flops, bandwidth : float
        Dense peak P [FLOP/s] and memory bandwidth B [B/s].
    eff : Efficiency
        Profile.
    kv_streams : array_like
        Independent KV streams per sequence (GQA: H_kv; MLA: 1).
    window : array_like
        Sliding window [tokens], 0 = full attention.
    act_bytes : float
        Bytes per query/output element.
    family : str
        Key of the shape terms in ``eff.op_params``.
    """
    return decode_attention_form(heads, kv_width, d_qk, d_v, kv_bytes, peak_flops, bandwidth, eff, kv_streams,
                                 window, act_bytes, family).time(batch, kv_len)


@frozen
class DecodeAttentionForm:
    """What :func:`attention_decode_time` needs besides the batch and KV length: the per-call constants of
    one decode-attention shape on one device under one profile (see :func:`decode_attention_form`)."""

    window: ArrayLike        # w (0: none); a number where the caller gave one
    flops_per_token: ArrayLike  # 2 H (d_qk + d_v) per sequence and attended token
    kv_read: ArrayLike       # bytes read per sequence and KV token: w_kv b_kv (× the re-read factor)
    head_data: ArrayLike     # bytes per sequence for queries, outputs and softmax state
    min_tokens: float        # least KV tokens read per sequence
    peak_flops: float
    bandwidth: float
    compute: float           # η_ac
    memory: ArrayLike        # η_m (before the work-unit factor)
    kernel_overhead: ArrayLike
    overlap: float
    units: ArrayLike | None  # work units per sequence (None: no work-unit terms)
    unit_half: float = 0.0
    unit_cost: ArrayLike = 0.0
    slots: float = 132.0
    split_window: float = 0.0
    split_chunk: float = math.inf
    fill: float = 1.0        # k S: thread blocks the splits fill the SMs with
    split_cost: float = 0.0
    split_tokens: float = math.inf

    def time(self, batch: ArrayLike, kv_len: ArrayLike) -> OpTime:
        """Time parts of the call for ``batch`` sequences of ``kv_len`` KV tokens [s]."""
        b, L = np.asarray(batch, dtype=float), np.asarray(kv_len, dtype=float)
        w = self.window
        if type(w) in (int, float):
            lw = np.minimum(L, w) if w > 0 else L
        else:
            lw = np.where(np.asarray(w) > 0, np.minimum(L, w), L)
        flops = b * lw * self.flops_per_token
        data = b * (np.maximum(lw, self.min_tokens) if self.min_tokens else lw) * self.kv_read + b * self.head_data
        if self.units is None:
            return op_time(flops, data, self.peak_flops, self.bandwidth, self.compute, self.memory,
                           self.kernel_overhead, overlap=self.overlap)
        units = b * self.units
        busy = np.maximum(units, 1.0)  # an absent op (b = 0) moves no bytes and launches no blocks
        eta_m = self.memory * busy / (busy + self.unit_half)
        t = op_time(flops, data, self.peak_flops, self.bandwidth, self.compute, eta_m, 1.0,
                    kernels=self.kernel_overhead, overlap=self.overlap)
        l_split = lw + self.split_window * (L - lw) if self.split_window else lw
        splits = np.minimum(np.maximum(l_split / self.split_chunk, 1.0), np.maximum(1.0, self.fill / busy))
        extra = self.unit_cost * units * splits / self.slots
        if self.split_cost:
            extra = extra + self.split_cost * ((lw >= self.split_tokens) & (units > 0))
        return OpTime(t.compute, t.memory, t.overhead, t.overlap, serial=extra)


def decode_attention_form(heads: ArrayLike, kv_width: ArrayLike, d_qk: ArrayLike, d_v: ArrayLike,
                          kv_bytes: ArrayLike, peak_flops: float, bandwidth: float, eff: Efficiency,
                          kv_streams: ArrayLike = 1.0, window: ArrayLike = 0, act_bytes: float = 2.0,
                          family: str = "attention_decode") -> DecodeAttentionForm:
    """The constants of :func:`attention_decode_time` for one shape (arguments as there): formed once,
    a step model reuses them for every call of that shape."""
    H = np.asarray(heads, dtype=float)
    dqv = np.asarray(d_qk, dtype=float) + np.asarray(d_v, dtype=float)
    kv_row = np.asarray(kv_width, dtype=float) * np.asarray(kv_bytes, dtype=float)
    flops_per_token = 2.0 * H * dqv
    terms = eff.op(family)
    if not terms:
        return DecodeAttentionForm(window, flops_per_token, kv_row, H * dqv * act_bytes, 0.0, peak_flops,
                                   bandwidth, eff.attention_compute, eff.attention_memory, eff.kernel_overhead,
                                   math.inf, None)
    streams = np.maximum(np.asarray(kv_streams, dtype=float), 1.0)
    group = H / streams
    per_head = group > terms.get("max_group", np.inf)
    reread = np.where(per_head, 1.0 + terms.get("reread_fraction", 1.0) * (group - 1.0), 1.0)
    head_data = H * dqv * (act_bytes + terms.get("head_bytes", 0.0))
    eta_m = terms.get("memory", eff.attention_memory)
    t_k = terms.get("kernel_overhead", eff.kernel_overhead)
    common = (window, flops_per_token, kv_row * reread, head_data, terms.get("min_tokens", 0.0), peak_flops,
              bandwidth, terms.get("compute", eff.attention_compute))
    if "unit_cost" not in terms:
        return DecodeAttentionForm(*common, eta_m, t_k, terms.get("overlap", math.inf), None)
    grouped = (group > 1.0) & ~per_head
    fp8_kv = np.asarray(kv_bytes, dtype=float) <= 1.0
    head_eta = np.where(fp8_kv, terms.get("memory_head_fp8", eta_m), terms.get("memory_head", eta_m))
    fp8 = grouped & fp8_kv
    t_k = np.where(fp8 & (np.asarray(d_qk, dtype=float) >= 128.0), terms.get("kernel_overhead_fp8", t_k), t_k)
    cost = np.where(fp8, terms.get("unit_cost_group_fp8", terms["unit_cost"]),
                    np.where(grouped, terms.get("unit_cost_group", terms["unit_cost"]), terms["unit_cost"]))
    slots = terms.get("slots", 132.0)
    return DecodeAttentionForm(*common, np.where(grouped, eta_m, head_eta), t_k, terms.get("overlap", math.inf),
                               streams * np.where(per_head, group, 1.0), terms.get("unit_half", 0.0), cost,
                               slots, terms.get("split_window", 0.0), terms.get("split_chunk", np.inf),
                               terms.get("split_fill", 1.0) * slots, terms.get("split_cost", 0.0),
                               terms.get("split_tokens", np.inf))


def causal_pairs(isl: ArrayLike, window: ArrayLike = 0) -> np.ndarray:
    """(query, key) pairs of causal attention over s new tokens, capped by a sliding window w.

    .. math:: \\tfrac{s(s+1)}{2}, \\qquad \\text{windowed } (s > w):\\;
              \\tfrac{w(w+1)}{2} + (s - w)\\,w
    """
    s = np.asarray(isl, dtype=float)
    full = s * (s + 1.0) / 2.0
    if type(window) in (int, float) and window <= 0:  # no window (the common case): no select needed
        return full
    w = np.asarray(window, dtype=float)
    capped = w * (w + 1.0) / 2.0 + (s - w) * w
    return np.where((w > 0) & (s > w), capped, full)


def attention_prefill_time(batch: ArrayLike, isl: ArrayLike, heads: ArrayLike, kv_heads: ArrayLike,
                           d_qk: ArrayLike, d_v: ArrayLike, peak_flops: float, bandwidth: float,
                           eff: Efficiency, window: ArrayLike = 0, kv_bytes: ArrayLike = 2.0,
                           act_bytes: float = 2.0, fp8: ArrayLike = False,
                           family: str = "attention_prefill") -> OpTime:
    """Time of one causal prefill-attention call over s new tokens per sequence (no cached prefix).

    Plain form (as the step model costs it):

    .. math::
        F = 2 b H\\,\\mathrm{pairs}(s, w)\\,(d_{qk} + d_v), \\quad
        D = b s \\left[H (d_{qk} + d_v) b_a + H_{kv} (d_{qk} + d_v) b_{kv}\\right], \\quad
        t = \\max\\left(\\frac{F}{P \\eta_{ac}}, \\frac{D}{B \\eta_m}\\right) + t_k

    With ``op_params[family]`` (``attention_prefill`` or ``mla_prefill``) the compute efficiency
    grows with the head size, :math:`\\eta = \\eta_{max} \\bar d / (\\bar d + d_{1/2})`,
    :math:`\\bar d = (d_{qk} + d_v)/2` (keys ``compute``, ``compute_fp8`` for fp8 FMHA rows,
    ``head_dim_half``); each (sequence, head, 128-query tile) adds ``tile_cost`` [s] of compute time;
    ``memory``, ``kernel_overhead`` and ``overlap`` as for GEMMs.

    Parameters
    ----------
    batch, isl : array_like
        Sequences b and new tokens s per sequence.
    heads, kv_heads : array_like
        Query and KV heads on the device (MLA prefill: kv_heads = heads).
    d_qk, d_v : array_like
        Head dimensions of query/key and of value.
    peak_flops, bandwidth : float
        Dense peak P [FLOP/s] of the FMHA format and memory bandwidth B [B/s].
    eff : Efficiency
        Profile.
    window : array_like
        Sliding window [tokens], 0 = full causal attention.
    kv_bytes : array_like
        Bytes per K/V element.
    act_bytes : float
        Bytes per Q/O element.
    fp8 : array_like of bool
        Rows whose FMHA runs in fp8 (selects ``compute_fp8``).
    family : str
        Key of the shape terms in ``eff.op_params``.
    """
    t, _, tiles = prefill_attention_parts(batch, isl, heads, kv_heads, d_qk, d_v, peak_flops, bandwidth, eff,
                                          window, kv_bytes, act_bytes, fp8, family)
    return OpTime(t.compute + tiles, t.memory, t.overhead, t.overlap)


def prefill_attention_parts(batch: ArrayLike, isl: ArrayLike, heads: ArrayLike, kv_heads: ArrayLike,
                            d_qk: ArrayLike, d_v: ArrayLike, peak_flops: float, bandwidth: float,
                            eff: Efficiency, window: ArrayLike = 0, kv_bytes: ArrayLike = 2.0,
                            act_bytes: float = 2.0, fp8: ArrayLike = False,
                            family: str = "attention_prefill") -> tuple[OpTime, np.ndarray, np.ndarray]:
    """:func:`attention_prefill_time` in parts (arguments as there): its time without the per-tile
    term, its FLOPs F [FLOP] and the per-tile time :func:`prefill_tile_time` [s] (0 without terms)."""
    b, s = np.asarray(batch, dtype=float), np.asarray(isl, dtype=float)
    H, dqv = _number(heads), _number(d_qk) + _number(d_v)  # plain numbers where the caller gave numbers
    flops = 2.0 * b * H * causal_pairs(s, window) * dqv
    data = b * s * (H * dqv * act_bytes + _number(kv_heads) * dqv * _number(kv_bytes))
    terms = eff.op(family)
    if not terms:
        return (op_time(flops, data, peak_flops, bandwidth, eff.attention_compute, eff.memory, eff.kernel_overhead),
                flops, np.zeros(()))
    compute = terms.get("compute", eff.attention_compute)
    eta_max = compute if fp8 is False else np.where(np.asarray(fp8, dtype=bool),
                                                    terms.get("compute_fp8", eff.attention_compute), compute)
    eta = eta_max * (dqv / 2.0) / (dqv / 2.0 + terms.get("head_dim_half", 0.0))
    t = op_time(flops, data, peak_flops, bandwidth, eta, terms.get("memory", eff.memory),
                terms.get("kernel_overhead", eff.kernel_overhead), overlap=terms.get("overlap", math.inf))
    return t, flops, prefill_tile_time(b, s, H, eff, family)


def _number(x: ArrayLike) -> float | np.ndarray:
    """A Python number as a float (arithmetic on it stays in plain floats), anything else as an array."""
    return float(x) if type(x) in (int, float) else np.asarray(x, dtype=float)


def prefill_tile_time(batch: ArrayLike, isl: ArrayLike, heads: ArrayLike, eff: Efficiency,
                      family: str = "attention_prefill") -> np.ndarray:
    """Fixed compute time of a prefill-attention call: ``tile_cost`` [s] per (sequence, head,
    128-query tile), :math:`b H \\lceil s/128 \\rceil t_{tile}` (0 without ``op_params[family]``)."""
    tiles = np.asarray(batch, dtype=float) * np.asarray(heads, dtype=float) * np.ceil(
        np.asarray(isl, dtype=float) / 128.0)
    return tiles * eff.op(family).get("tile_cost", 0.0)


def form_parts(form: DecodeAttentionForm, batch, kv_len, kernels) -> OpTime:
    """Time parts of a decode attention core with a calibrated form, ``kernels`` launches of its
    per-launch overhead [s] (``batch`` sequences of ``kv_len`` KV tokens on the device)."""
    t = form.time(batch, kv_len)
    return OpTime(t.compute, t.memory, t.overhead * kernels, t.overlap, t.serial)
