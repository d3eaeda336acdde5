"""Collectives built from the message cost :math:`\\alpha + S/B`.

All sizes are the payload S held by each rank [B]; ``bandwidth`` is the per-direction bandwidth per
device [B/s]; ``alpha`` the fixed latency [s] of one dependent step. Dependent round trips add their α
each: a ring all-reduce over n ranks takes 2(n−1) steps.

=======================  ==============================================  ==================
collective               time                                            bytes per rank
=======================  ==============================================  ==================
ring all-reduce          2(n−1)·α + 2(n−1)/n · S/B                       2(n−1)/n · S
halving-doubling AR      2⌈log2 n⌉·α + 2(n−1)/n · S/B                    2(n−1)/n · S
two-shot all-reduce      2·α + 2(n−1)/n · S/B  (reduce-scatter+gather)   2(n−1)/n · S
one-shot all-reduce      α + (n−1) · S/B  (each rank reads all others)   (n−1) · S
all-gather               min(n−1, ⌈log2 n⌉)·α + (n−1)/n · S/B            (n−1)/n · S
reduce-scatter           min(n−1, ⌈log2 n⌉)·α + (n−1)/n · S/B            (n−1)/n · S
all-to-all (switched)    α + (n−1)/n · S/B                               (n−1)/n · S
point-to-point           α + S/B                                         S
=======================  ==============================================  ==================

All-gather and reduce-scatter take the better of the ring ((n−1) dependent steps) and recursive
doubling / halving (⌈log2 n⌉ steps, Bruck's algorithm for n not a power of two); both move the same
bytes. With thousands of ranks (an LPU pool) the ring's α term alone would be milliseconds.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ConfigError
from .roofline import message_time

AllReduceAlgo = Literal["ring", "halving-doubling", "two-shot", "one-shot", "auto"]


def _n(n: ArrayLike) -> np.ndarray:
    arr = np.asarray(n, dtype=float)
    if np.any(arr < 1):
        raise ConfigError(f"ranks: must be >= 1, got {n}")
    return arr


def all_reduce_time(size: ArrayLike, n: ArrayLike, bandwidth: float, alpha: float,
                    algorithm: AllReduceAlgo = "auto") -> np.ndarray:
    """All-reduce of ``size`` bytes across ``n`` ranks [s]; 0 when n == 1.

    ``auto`` takes the fastest algorithm for each size, as NCCL and TensorRT-LLM pick algorithms by
    message size.
    """
    if algorithm == "auto" and _one_count(n):  # the usual call: one rank count, the fastest of the four
        if n <= 1:
            return np.zeros(np.shape(size))
        # the three algorithms moving 2(n-1)/n S differ only in their α terms: the least of them wins
        # (adding the same volume term keeps the order of the sums, so this is the minimum of the table)
        moved = 2.0 * (n - 1.0) / n * np.asarray(size, dtype=float) / bandwidth
        steps = min(2.0 * (n - 1.0) * alpha, 2.0 * _log2_steps(n) * alpha, 2.0 * alpha)
        return np.minimum(steps + moved, alpha + (n - 1.0) * np.asarray(size, dtype=float) / bandwidth)
    n = _n(n)
    s = np.asarray(size, dtype=float)
    frac = 2.0 * (n - 1.0) / n
    table = {
        "ring": 2.0 * (n - 1.0) * alpha + frac * s / bandwidth,
        "halving-doubling": 2.0 * _log_steps(n) * alpha + frac * s / bandwidth,
        "two-shot": 2.0 * alpha + frac * s / bandwidth,
        "one-shot": alpha + (n - 1.0) * s / bandwidth,
    }
    if algorithm == "auto":
        t = np.minimum.reduce(list(np.broadcast_arrays(*table.values())))
    elif algorithm in table:
        t = table[algorithm]
    else:
        raise ConfigError(f"algorithm: expected one of {sorted(table)} or auto, got {algorithm!r}")
    return np.where(n > 1, t, 0.0)


def _log_steps(n: np.ndarray) -> np.ndarray:
    return np.ceil(np.log2(np.maximum(n, 1.0)))


def _one_count(n: object) -> bool:
    """Whether ``n`` is one rank count (a Python number >= 1), costed without arrays of counts."""
    return type(n) in (int, float) and n >= 1  # type: ignore[operator]


def _log2_steps(n: float) -> float:
    """:func:`_log_steps` of one count: ⌈log2 n⌉."""
    return float(math.ceil(math.log2(max(n, 1.0))))


def all_gather_time(size: ArrayLike, n: ArrayLike, bandwidth: float, alpha: float) -> np.ndarray:
    """All-gather producing ``size`` bytes on every rank [s] (ring or recursive doubling); 0 if n == 1."""
    if _one_count(n):
        if n <= 1:
            return np.zeros(np.shape(size))
        return min(n - 1.0, _log2_steps(n)) * alpha + (n - 1.0) / n * np.asarray(size, dtype=float) / bandwidth
    n = _n(n)
    steps = np.minimum(n - 1.0, _log_steps(n))
    t = steps * alpha + (n - 1.0) / n * np.asarray(size, dtype=float) / bandwidth
    return np.where(n > 1, t, 0.0)


def reduce_scatter_time(size: ArrayLike, n: ArrayLike, bandwidth: float, alpha: float) -> np.ndarray:
    """Reduce-scatter of ``size`` bytes per rank [s] (ring or recursive halving); 0 when n == 1."""
    return all_gather_time(size, n, bandwidth, alpha)


def all_to_all_time(size: ArrayLike, n: ArrayLike, bandwidth: float, alpha: float) -> np.ndarray:
    """All-to-all on a switched fabric: each rank sends (n−1)/n of its ``size`` bytes [s]."""
    if _one_count(n):
        if n <= 1:
            return np.zeros(np.shape(size))
        return alpha + (n - 1.0) / n * np.asarray(size, dtype=float) / bandwidth
    n = _n(n)
    t = alpha + (n - 1.0) / n * np.asarray(size, dtype=float) / bandwidth
    return np.where(n > 1, t, 0.0)


def p2p_time(size: ArrayLike, bandwidth: float, alpha: float) -> np.ndarray:
    """Point-to-point message (pipeline stage hand-off) [s]: :math:`\\alpha + S/B`."""
    return message_time(size, bandwidth, alpha)


def round_trips_time(round_trips: ArrayLike, size: ArrayLike, bandwidth: float,
                     alpha: float) -> np.ndarray:
    """``round_trips`` dependent exchanges, each a message out and one back [s].

    .. math:: t = N_{rt} \\cdot 2\\,(\\alpha + S/B)

    With α = 5 µs per message (10 µs per round trip) and negligible S, 80 round trips cost 0.8 ms.
    """
    return np.asarray(round_trips, dtype=float) * 2.0 * message_time(size, bandwidth, alpha)
