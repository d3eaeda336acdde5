"""Per-op cost on a device: roofline with achievable efficiencies, kept as separate parts.

An op is described by its FLOPs F, bytes D moved at the device's main memory and, for GEMMs, the
token dimension M that sets its compute efficiency. The time is

.. math:: t = \\max\\left(\\frac{F}{P\\,\\eta_c(M)}, \\frac{D}{B\\,\\eta_m}\\right) + t_{kernel}

and the compute part ``F / (P η_c)`` and memory part ``D / (B η_m)`` are returned separately so that
breakdowns can show which bound dominates. Communication is costed in :mod:`perfmodel.core.comm`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .efficiency import Efficiency


@dataclass(frozen=True)
class OpTime:
    """Time parts of one op [s], arrays of the operating-point shape."""

    compute: np.ndarray
    memory: np.ndarray
    overhead: np.ndarray

    @property
    def total(self) -> np.ndarray:
        out = np.maximum(self.compute, self.memory)
        out += self.overhead
        return out


def gemm_compute_eta(m_tokens: ArrayLike, eta_max: float, m_half: float) -> np.ndarray:
    """Compute efficiency of a GEMM with M rows: :math:`\\eta_{c,max} M / (M + M_{1/2})`."""
    m = np.asarray(m_tokens, dtype=float)
    if m_half <= 0:
        return np.full_like(m, eta_max)
    return eta_max * m / (m + m_half)


def op_time(flops: ArrayLike, bytes_moved: ArrayLike, peak_flops: float, bandwidth: float,
            eta_compute: ArrayLike, eta_memory: float, kernel_overhead: float,
            kernels: ArrayLike = 1.0) -> OpTime:
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

    Returns
    -------
    OpTime
        Compute, memory and overhead parts [s].
    """
    # eta_compute > 0 everywhere (M >= 1), so no guard against 0/0 is needed
    compute = np.asarray(flops, dtype=float) / (peak_flops * np.asarray(eta_compute, dtype=float))
    memory = np.asarray(bytes_moved, dtype=float) * (1.0 / (bandwidth * eta_memory))
    overhead = np.asarray(kernels, dtype=float) * kernel_overhead
    return OpTime(compute, memory, overhead)


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
    """Time of one GEMM on a device with an efficiency profile (see :func:`op_time`)."""
    flops, data = gemm_flops_bytes(m, n, k, weight_bytes, act_bytes)
    eta = gemm_compute_eta(m, eff.gemm_eta(compute), eff.gemm_m_half)
    return op_time(flops, data, peak_flops, bandwidth, eta, eff.memory, eff.kernel_overhead)
