"""Plain numpy building blocks of the article's algebra (SI floats in, SI floats out, broadcasting).

These are layer 1 of perfmodel: no specs, no state. Everything else calls them.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ConfigError


def roofline_time(flops: ArrayLike, bytes_moved: ArrayLike, peak_flops: ArrayLike,
                  bandwidth: ArrayLike) -> np.ndarray:
    """Lower bound on an operation's time when compute and data movement overlap.

    .. math:: t = \\max\\left(\\frac{F}{P}, \\frac{D}{B}\\right)

    Parameters
    ----------
    flops : array_like
        Operations F [FLOP].
    bytes_moved : array_like
        Bytes D moved at the memory level [B].
    peak_flops : array_like
        Compute rate P [FLOP/s] (peak, or peak × efficiency).
    bandwidth : array_like
        Bandwidth B of that memory level [B/s].

    Returns
    -------
    numpy.ndarray
        Time [s]. Example: 70 GB read at 2 TB/s takes at least 0.035 s, whatever P is.
    """
    _non_negative(flops=flops, bytes_moved=bytes_moved)
    _positive(peak_flops=peak_flops, bandwidth=bandwidth)
    return np.maximum(np.divide(flops, peak_flops), np.divide(bytes_moved, bandwidth))


def message_time(size: ArrayLike, bandwidth: ArrayLike, alpha: ArrayLike) -> np.ndarray:
    """Time of one message on a link: fixed latency plus serialisation.

    .. math:: t = \\alpha + \\frac{S}{B}

    Parameters
    ----------
    size : array_like
        Message size S [B].
    bandwidth : array_like
        Effective per-direction bandwidth B [B/s].
    alpha : array_like
        Fixed start/delivery latency α [s].

    Returns
    -------
    numpy.ndarray
        Time [s]. Note it is a sum, never ``max(alpha, S/B)``: 80 dependent round trips at 10 µs
        add 0.8 ms before any data volume.
    """
    _non_negative(size=size, alpha=alpha)
    _positive(bandwidth=bandwidth)
    return np.add(alpha, np.divide(size, bandwidth))


def _positive(**values: ArrayLike) -> None:
    """Refuse rates (bandwidth, peak) that are NaN or not > 0 (infinity is allowed: a free link)."""
    for name, value in values.items():
        arr = np.asarray(value, dtype=float)
        if np.any(np.isnan(arr)) or np.any(arr <= 0):
            raise ConfigError(f"{name}: must be > 0 (and not NaN), got {value!r}")


def _non_negative(**values: ArrayLike) -> None:
    """Refuse negative or NaN arguments (a negative size or time has no meaning here)."""
    for name, value in values.items():
        arr = np.asarray(value, dtype=float)
        if np.any(np.isnan(arr)) or np.any(arr < 0):
            raise ConfigError(f"{name}: must be >= 0 (and not NaN), got {value!r}")


def crossover_tokens(ttft_a: ArrayLike, tpot_a: ArrayLike, ttft_b: ArrayLike,
                     tpot_b: ArrayLike) -> np.ndarray:
    """Output length at which two configurations finish an answer at the same time.

    With :math:`E2E = TTFT + (N-1)\\,TPOT`, equal completion gives

    .. math:: N^* = 1 + \\frac{TTFT_B - TTFT_A}{TPOT_A - TPOT_B}

    Parameters
    ----------
    ttft_a, tpot_a, ttft_b, tpot_b : array_like
        Time to first token and time per output token of configurations A and B [s].

    Returns
    -------
    numpy.ndarray
        N* [tokens] (float), rounded to 1e-9 token: the differences of the inputs carry their float
        rounding (0.04 - 0.03 is 0.010000000000000002 in binary), which would otherwise show as
        30.999999999999993 for 31. ``inf`` where the TPOTs are equal (parallel lines never cross).
        Values below 1 mean one configuration finishes first for every answer length. Example: A
        (0.2 s, 40 ms) and B (0.5 s, 30 ms) cross at 31 tokens, both finishing at 1.4 s.
    """
    _non_negative(ttft_a=ttft_a, tpot_a=tpot_a, ttft_b=ttft_b, tpot_b=tpot_b)
    num = np.subtract(ttft_b, ttft_a, dtype=float)
    den = np.subtract(tpot_a, tpot_b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 + num / den
    return np.where(den == 0, np.inf, np.round(out, 9))


def e2e_latency(ttft: ArrayLike, tpot: ArrayLike, output_tokens: ArrayLike) -> np.ndarray:
    """End-to-end latency :math:`E2E = TTFT + (N-1)\\,TPOT` [s] for N output tokens."""
    return np.add(ttft, np.multiply(np.subtract(output_tokens, 1), tpot))


def offload_pays(t_local: ArrayLike, t_remote: ArrayLike, t_comm: ArrayLike,
                 overlap: ArrayLike = 0.0) -> np.ndarray:
    """Whether moving work to another device shortens the critical path.

    Without overlap, delegating pays when :math:`T_{local} > T_{remote} + T_{comm}`. With a fraction
    ``overlap`` of the communication hidden behind other work, only the exposed part counts:
    :math:`T_{local} > T_{remote} + (1-\\text{overlap})\\,T_{comm}`.

    Parameters
    ----------
    t_local, t_remote, t_comm : array_like
        Times [s] of the work done locally, of the same work remotely, and of the communication.
    overlap : array_like
        Fraction of the communication hidden (0 = none, 1 = all), in [0, 1].
    """
    overlap = np.asarray(overlap, dtype=float)
    if np.any((overlap < 0) | (overlap > 1)):
        from ..errors import ConfigError

        raise ConfigError(f"overlap: must be within [0, 1], got {overlap}")
    return np.asarray(t_local) > np.add(t_remote, (1.0 - overlap) * np.asarray(t_comm))
