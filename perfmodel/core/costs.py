"""Per-op cost on a device: roofline with achievable efficiencies, kept as separate parts.

An op is described by its FLOPs F, bytes D moved at the device's main memory and, for GEMMs, the
token dimension M that sets its compute efficiency. The time is

.. math:: t = \\max\\left(\\frac{F}{P\\,\\eta_c(M)}, \\frac{D}{B\\,\\eta_m}\\right) + t_{kernel}

and the compute part ``F / (P η_c)`` and memory part ``D / (B η_m)`` are returned separately so that
breakdowns can show which bound dominates. Attention is costed in :mod:`perfmodel.core.attention_costs`,
communication in :mod:`perfmodel.core.comm`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .efficiency import Efficiency
from .frozen import frozen


@frozen
class OpTime:
    """Time parts of one op [s], arrays of the operating-point shape.

    ``overlap`` is the exponent p of the smooth roofline :math:`(t_c^p + t_m^p)^{1/p} + t_{kernel}`
    (optional, fitted per op family in calibration profiles); the default ``inf`` is the hard ``max``
    (perfect overlap of compute and memory) and p = 1 is no overlap (sum). ``serial`` is work done by
    separate kernels that overlaps neither part (MoE routing, permutation and finalize, and the MoE
    block's fixed time per hit expert); it is not a per-launch time, so engines do not scale it with
    ``overhead``.
    """

    compute: np.ndarray
    memory: np.ndarray
    overhead: np.ndarray
    overlap: float = math.inf
    serial: np.ndarray | float = 0.0

    @property
    def total(self) -> np.ndarray:
        """:math:`(t_c^p + t_m^p)^{1/p} + t_{serial} + t_{kernel}` [s]."""
        if math.isinf(self.overlap):
            out = np.maximum(self.compute, self.memory)
        else:
            out = smooth_max(self.compute, self.memory, self.overlap)
        return out + self.serial + self.overhead


#: Output tile edge [rows and columns] of the wave-quantisation term (128 x 128 tiles).
TILE = 128.0


def smooth_max(a: ArrayLike, b: ArrayLike, p: ArrayLike = math.inf) -> np.ndarray:
    """:math:`(a^p + b^p)^{1/p}` for a, b >= 0: ``max(a, b)`` for p = inf, ``a + b`` for p = 1."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    hi = np.maximum(a, b)
    if type(p) in (int, float) and math.isinf(p):  # p may also be an array (one exponent per row)
        return hi
    # hi * (1 + (lo/hi)^p)^(1/p), in place on one temporary (this is the hot loop of big sweeps)
    r = np.minimum(a, b, out=np.empty(np.shape(hi)))
    np.divide(r, hi, out=r, where=hi > 0)
    np.power(r, p, out=r)
    r += 1.0
    np.power(r, 1.0 / p, out=r)
    r *= hi
    return r


def gemm_compute_eta(m_tokens: ArrayLike, eta_max: float, m_half: float) -> np.ndarray:
    """Compute efficiency of a GEMM with M rows: :math:`\\eta_{c,max} M / (M + M_{1/2})`."""
    m = np.asarray(m_tokens, dtype=float)
    if m_half <= 0:
        return np.full(m.shape, eta_max)
    return eta_max * m / (m + m_half)


def _wave_eta(m: np.ndarray, n_tiles: np.ndarray, eta_max: float, m_half: float, wave: float,
              slots: float) -> np.ndarray:
    """η_c(M) / (1 + w (q - 1)) with wave quantisation q over ceil(M/128) x N-tiles output tiles (M ≥ 1)."""
    tiles = np.ceil(m / TILE) * n_tiles
    return gemm_compute_eta(m, eta_max, m_half) / (1.0 + wave * (np.ceil(tiles / slots) * slots / tiles - 1.0))


def wave_monotone_eta(m: ArrayLike, n: ArrayLike, eta_max: float, m_half: float, wave: float,
                      slots: float) -> np.ndarray:
    """GEMM compute efficiency with wave quantisation, made monotone: more rows never take less time.

    The wave term (see :func:`gemm_time`) divides the work F = 2MNK over :math:`T = \\lceil M/128
    \\rceil \\lceil N/128 \\rceil` tiles; crossing a tile boundary (M = 128 r to 128 r + 1) doubles T
    at nearly the same F, so the raw compute time :math:`u(M) = M / \\eta(M)` (per unit of N K) can
    fall as M grows (e.g. gb200 fp4, N = 8192, K = 4096: 17.0 µs at M = 128, 12.9 µs at M = 129). Time cannot
    fall as work grows on the same hardware, so the time is the running maximum over smaller M:

    .. math:: \\eta_{mono}(M) = \\frac{M}{\\max\\bigl(u(M),\\ \\max_{r' < \\lceil M/128 \\rceil} u(128 r')\\bigr)}

    Within one row count u increases with M, so only the row boundaries below M are candidates, and
    since :math:`q < 1 + S/T` only the last :math:`J = \\lceil w S (128 + M_{1/2}) / (128 N_t)
    \\rceil + 1` of them can exceed u(M) (:math:`N_t = \\lceil N/128 \\rceil`, S slots, w the wave
    weight); points already on their running maximum are unchanged.

    Returns
    -------
    numpy.ndarray
        η_c for each M (broadcast with ``n``).
    """
    m = np.maximum(np.asarray(m, dtype=float), 1.0)
    n_tiles = np.ceil(np.asarray(n, dtype=float) / TILE)
    if m.shape != n_tiles.shape:  # m over the full shape (the tiles broadcast where they are used)
        shape = np.broadcast_shapes(m.shape, n_tiles.shape)
        m = m if m.shape == shape else np.broadcast_to(m, shape)
    if m.size == 0:
        return _wave_eta(m, n_tiles, eta_max, m_half, wave, slots)
    window = int(min(math.ceil(wave * slots * (TILE + m_half) / (TILE * float(n_tiles.min()))) + 1, 4096))
    rows = np.ceil(m / TILE)
    top = float(rows.max())
    # boundaries 128 (r - back) >= 128, r = ceil(M/128) (a NaN or inf row count: the whole window)
    depth = min(window, int(top) - 1) if math.isfinite(top) else window
    block = max(1, _WAVE_BLOCK // m.size)  # boundaries taken together: one pass for a few points
    if depth < block:  # one pass: M itself (column 0) with its boundaries
        edge = (rows[..., None] - np.arange(0.0, depth + 1.0)) * TILE
        edge[..., 0] = m
        ok = edge >= TILE
        ok[..., 0] = True
        edge = np.where(ok, edge, TILE)
        u = edge / _wave_eta(edge, n_tiles[..., None], eta_max, m_half, wave, slots)
        return m / np.where(ok, u, -np.inf).max(axis=-1)
    worst = m / _wave_eta(m, n_tiles, eta_max, m_half, wave, slots)
    for first in range(1, depth + 1, block):
        back = np.arange(first, min(first + block, depth + 1), dtype=float)
        edge = (rows[..., None] - back) * TILE
        ok = edge >= TILE
        edge = np.where(ok, edge, TILE)
        u = edge / _wave_eta(edge, n_tiles[..., None], eta_max, m_half, wave, slots)
        u = np.where(ok, u, -np.inf)
        worst = np.maximum(worst, u[..., 0] if back.size == 1 else u.max(axis=-1))
    return m / worst


#: Points x boundaries evaluated in one pass by :func:`wave_monotone_eta`.
_WAVE_BLOCK = 4096


def op_time(flops: ArrayLike, bytes_moved: ArrayLike, peak_flops: float, bandwidth: float,
            eta_compute: ArrayLike, eta_memory: float, kernel_overhead: float,
            kernels: ArrayLike = 1.0, overlap: float = math.inf) -> OpTime:
    """Roofline time of an op with efficiencies and a fixed per-kernel overhead.

    Parameters
    ----------
    flops : array_like
        F [FLOP].
    bytes_moved : array_like
        D [B] at the memory level of bandwidth ``bandwidth``.
    peak_flops : float
        Dense peak P [FLOP/s] for the op's compute format.
    bandwidth : float
        Memory bandwidth B [B/s].
    eta_compute : array_like
        Achieved fraction of P (may depend on M).
    eta_memory : float
        Achieved fraction of B.
    kernel_overhead : float
        t_kernel [s] per kernel.
    kernels : array_like
        Number of kernels the op launches (0 where the op is absent).
    overlap : float
        Exponent p of the smooth roofline (see :class:`OpTime`); ``inf`` (default) is ``max``.

    Returns
    -------
    OpTime
        Compute, memory and overhead parts [s].
    """
    # eta_compute > 0 everywhere (M >= 1), so no guard against 0/0 is needed
    compute = np.asarray(flops, dtype=float) / (peak_flops * np.asarray(eta_compute, dtype=float))
    memory = np.asarray(bytes_moved, dtype=float) * (1.0 / (bandwidth * eta_memory))
    overhead = np.asarray(kernels, dtype=float) * kernel_overhead
    return OpTime(compute, memory, overhead, overlap)


def gemm_flops_bytes(m: ArrayLike, n: ArrayLike, k: ArrayLike, weight_bytes: float,
                     act_bytes: float) -> tuple[np.ndarray, np.ndarray]:
    """FLOPs and bytes of :math:`Y_{[M,N]} = X_{[M,K]} W_{[N,K]}^T`.

    .. math:: F = 2MNK, \\qquad D = NK\\,b_w + (MK + MN)\\,b_a

    Parameters
    ----------
    m, n, k : array_like
        GEMM dimensions (M = tokens).
    weight_bytes, act_bytes : float
        Bytes per weight and per activation element [B].
    """
    m = np.asarray(m, dtype=float)
    flops = 2.0 * m * n * k
    data = np.asarray(n, dtype=float) * k * weight_bytes + (m * k + m * np.asarray(n)) * act_bytes
    return flops, data


def gemm_time(m: ArrayLike, n: ArrayLike, k: ArrayLike, peak_flops: float, bandwidth: float,
              eff: Efficiency, compute: str, weight_bytes: float, act_bytes: float = 2.0) -> OpTime:
    """Time of one GEMM on a device with an efficiency profile (see :func:`op_time`).

    Without ``eff.op_params["gemm.<compute>"]`` this is the plain roofline with η_c(M), ``memory``
    and ``kernel_overhead``. With it (fitted per weight format: ``gemm.bf16``, ``gemm.fp8``,
    ``gemm.fp8_block``, ``gemm.fp4``) the terms below replace or extend the scalar fields:

    .. math::
        t = \\left(t_c^p + t_m^p\\right)^{1/p} + t_k, \\quad
        t_c = \\frac{2MNK}{P\\,\\eta_c(M)}\\,\\bigl(1 + w\\,(q - 1)\\bigr), \\quad
        t_m = \\frac{NK b_w + MK (b_a + b_q) + MN b_a}{B\\,\\eta_m}

    with wave quantisation :math:`q = \\lceil T/S \\rceil S / T` over :math:`T = \\lceil M/128 \\rceil
    \\lceil N/128 \\rceil` output tiles on S slots (SMs). Keys: ``m_half`` (M½), ``memory`` (η_m),
    ``kernel_overhead`` (t_k [s]), ``quant_bytes`` (b_q: extra bytes per activation input element for
    on-the-fly quantisation), ``wave`` (w in [0, 1]), ``slots`` (S), ``overlap`` (p; absent = max),
    ``compute`` (η_c,max of this form; absent = ``gemm_compute``).
    """
    flops, data = gemm_flops_bytes(m, n, k, weight_bytes, act_bytes)
    return gemm_cost(flops, data, m, n, k, peak_flops, bandwidth, eff, compute)


def gemm_cost(flops: ArrayLike, data: ArrayLike, m: ArrayLike, n: ArrayLike | None, k: ArrayLike,
              peak_flops: float, bandwidth: float, eff: Efficiency, compute: str,
              kernels: ArrayLike = 1.0, fused_quantization: bool = False) -> OpTime:
    """:func:`gemm_time` for FLOPs and bytes already counted (e.g. grouped expert GEMMs).

    ``n`` may be None when the output tiling is unknown (no wave-quantisation term then).

    ``fused_quantization``: the fp8/fp4 GEMM tables were measured on a Linear module that quantises
    its bf16 input in a separate kernel, so their fitted per-call overhead (13–14 µs on Hopper and
    B200 fp8, against 2–3 µs for bf16) includes that launch. Serving engines fuse the quantisation
    into the preceding norm; with this flag the per-call overhead is capped at the bf16 GEMM's.
    """
    terms = eff.op(f"gemm.{compute}")
    if not terms:
        eta = gemm_compute_eta(m, eff.gemm_eta(compute), eff.gemm_m_half)
        return op_time(flops, data, peak_flops, bandwidth, eta, eff.memory, eff.kernel_overhead, kernels)
    m_arr = np.asarray(m, dtype=float)
    if terms.get("quant_bytes", 0.0):
        data = np.asarray(data, dtype=float) + m_arr * np.asarray(k, dtype=float) * terms["quant_bytes"]
    eta = gemm_compute_eta(m_arr, terms.get("compute", eff.gemm_eta(compute)),
                           terms.get("m_half", eff.gemm_m_half))
    wave, slots = terms.get("wave", 0.0), terms.get("slots", 0.0)
    if wave > 0 and slots > 0 and n is not None:
        eta = wave_monotone_eta(m_arr, n, terms.get("compute", eff.gemm_eta(compute)),
                                terms.get("m_half", eff.gemm_m_half), wave, slots)
    overhead = terms.get("kernel_overhead", eff.kernel_overhead)
    if fused_quantization and compute != "bf16":
        overhead = min(overhead, eff.op("gemm.bf16").get("kernel_overhead", eff.kernel_overhead))
    return op_time(flops, data, peak_flops, bandwidth, eta, terms.get("memory", eff.memory),
                   overhead, kernels, overlap=terms.get("overlap", math.inf))


def moe_time(tokens: ArrayLike, routed: ArrayLike, experts_hit: ArrayLike, hidden: ArrayLike,
             inter: ArrayLike, matrices: ArrayLike, peak_flops: float, bandwidth: float, eff: Efficiency,
             compute: str, weight_bytes: float, act_bytes: float = 2.0, graph_replayed: ArrayLike = False
             ) -> OpTime:
    """Time of one fused MoE block (routed experts) on a device.

    The routed (token, expert) pairs R of the device run through the E_hit local experts it holds
    that receive tokens, each an up/gate and a down GEMM over the per-device intermediate size I
    (``matrices`` = 3 for gated, 2 for non-gated FFNs), on :math:`M_e = R / E_{hit}` tokens each:

    .. math::
        F = 2 R\\,m H I, \\qquad D = E_{hit}\\,m H I\\,b_w + R\\,(2H + m I)\\,b_a

    Without ``eff.op_params["moe.<compute>"]`` the group is costed as one GEMM of M_e rows with the
    format's GEMM terms (:func:`gemm_cost`, two launches). With those terms (fitted on the fused MoE
    tables of each accelerator):

    .. math::
        t = \\left(t_c^p + t_m^p\\right)^{1/p} + \\frac{H\\,(T\\,\\beta_T + R\\,\\beta_R)}{B\\,\\eta_m}
            + E_{hit}\\,t_e + t_k, \\quad
        t_c = \\frac{F}{P\\,\\eta_c M_e/(M_e + M_{1/2})}, \\quad t_m = \\frac{D}{B\\,\\eta_m}

    where T is every token entering the block on the device (routing, input quantisation and the
    output of all T tokens, whatever the EP degree; with attention DP the step model passes the
    tokens of all ranks, as an all-gather dispatch delivers them) and R the routed pairs (permute
    and un-permute).
    Keys: ``compute`` (η_c), ``m_half`` (M½), ``memory`` (η_m), ``overlap`` (p), ``token_bytes``
    (β_T [B per hidden element]), ``pair_bytes`` (β_R), ``expert_overhead`` (t_e [s]),
    ``kernel_overhead`` (t_k [s] per block).

    Parameters
    ----------
    tokens, routed, experts_hit : array_like
        T, R and E_hit on the device (R = T k / EP under uniform routing).
    hidden, inter : array_like
        H and the per-device expert intermediate size I (full size / MoE-TP).
    matrices : array_like
        Weight matrices per expert m (3 gated, 2 non-gated).
    peak_flops, bandwidth : float
        Dense peak P [FLOP/s] of the compute format and memory bandwidth B [B/s].
    eff : Efficiency
        Profile.
    compute : str
        Compute format (``bf16``, ``fp8``, ``fp8_block``, ``fp4``): selects the terms.
    weight_bytes, act_bytes : float
        Bytes per weight and per activation element [B].
    graph_replayed : array_like of bool
        Where true the block runs in a CUDA-graph replay (serving engines' decode-only steps): t_k is
        capped at two bf16 GEMM launches. The tables time the block's routing, permute, GEMM and
        finalize kernels launched one by one from Python (≈ 25–31 µs on every accelerator), which is
        also how engines launch steps that carry prompt tokens.
    """
    t, r, e, h, i, mats = (np.asarray(x, dtype=float) for x in (tokens, routed, experts_hit, hidden, inter,
                                                               matrices))
    present = (r > 0).astype(float)
    terms = eff.op(f"moe.{compute}")
    if terms:  # the slowest EP rank sets the time: one that receives tokens holds a hit expert
        e = np.maximum(e, present)
    flops = 2.0 * r * mats * h * i
    data = present * (e * mats * h * i * weight_bytes + r * (2.0 * h + mats * i) * act_bytes)
    m_e = np.maximum(r / np.maximum(e, 1e-9), 1.0)
    if not terms:
        return gemm_cost(flops, data, m_e, None, h, peak_flops, bandwidth, eff, compute, 2.0 * present,
                         fused_quantization=True)
    eta_m = terms.get("memory", eff.memory)
    eta_c = gemm_compute_eta(m_e, terms.get("compute", eff.gemm_eta(compute)), terms.get("m_half", 0.0))
    fixed = terms.get("kernel_overhead", 0.0)
    replayed = min(fixed, 2.0 * eff.op("gemm.bf16").get("kernel_overhead", eff.kernel_overhead))
    part = op_time(flops, data, peak_flops, bandwidth, eta_c, eta_m, 1.0, present,
                   terms.get("overlap", math.inf))
    overhead = part.overhead * np.where(graph_replayed, replayed, fixed)
    shuffle = h * (t * terms.get("token_bytes", 0.0) + r * terms.get("pair_bytes", 0.0)) / (bandwidth * eta_m)
    serial = present * shuffle + e * present * terms.get("expert_overhead", 0.0)
    return OpTime(part.compute, part.memory, overhead, part.overlap, serial)
