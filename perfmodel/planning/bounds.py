r"""Analytic bounds that prune a plan's search space before any simulation.

Notation: I prompt and O output tokens per request, :math:`\bar c = I + O/2` the mean decode context,
T(n, c, p, q) one replica's step time through its engine (:meth:`perfmodel.engine.Engine.step`) plus
the engine's step overhead and n sequence overheads, B the engine's token budget.

**Capacity bound of a replica** [requests/s]. A request needs O − 1 decode steps, and a step that
carries prompt tokens is never shorter than the decode-only step of the same batch, so a replica
holding at most :math:`n_{cap}` sequences (``max_num_seqs``, and the KV cache: n·(I + O) tokens
reserved, or n·c̄ on demand) completes at most

.. math:: X_{ub} = \max_{1 \le n \le n_{cap}} \frac{n}{(O-1)\,T(n, \bar c, 0, 0)}

requests per second. The steady state (:func:`perfmodel.serving.steady_state`) is at or below it,
since its TPOT is a mix of such steps at a batch no smaller than n; ``plan`` caps each replica's
capacity at the steady state, so it never sizes fewer than :math:`\lceil \lambda / X_{ub} \rceil`
replicas for a rate λ.

**Prefill pool of a P/D deployment** [requests/s per prefill replica]. Prefill-only steps of m
prompts side by side, m up to B/I (one prompt when I > B), each batch taking ``prefill_batch_time``:

.. math:: X_{p,ub} = \max_{1 \le m \le \max(1, B/I)} \frac{m}{t_{prefill}(m)}

A decode pool's bound is :math:`X_{ub}` of its replica (decode-only steps).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: Points of the prompts-per-step grid of the prefill bound.
PREFILL_GRID = 64


def _decode_grid(n_cap: float) -> np.ndarray:
    """Every whole batch 1..⌊n_cap⌋ and n_cap itself (the steady state's batch is continuous)."""
    top = max(1.0, float(n_cap))
    return np.unique(np.append(np.arange(1.0, math.floor(top) + 1.0), top))


def sequence_limit(served: Any, profile: Any, isl: float, osl: float) -> float:
    """Most sequences one replica holds: ``max_num_seqs`` and the KV cache (as in the steady state)."""
    osl = max(float(osl), 2.0)
    per_seq = (isl + osl) if profile.kv_admission == "reserve_full" else isl + osl / 2.0
    kv = float(np.ravel(served.kv_capacity_tokens)[0]) * profile.kv_capacity_fraction / per_seq
    return min(float(profile.max_num_seqs), kv)


def decode_step_times(served: Any, profile: Any, n: np.ndarray, isl: float, osl: float) -> np.ndarray:
    """Decode-only step time of n sequences at the mean context, with the engine's overheads [s]."""
    cbar = isl + max(float(osl), 2.0) / 2.0
    t = np.asarray(served.step_time(n, np.full_like(n, cbar), np.zeros_like(n), np.zeros_like(n)), dtype=float)
    return t + profile.step_overhead + profile.seq_overhead * n


def replica_capacity_bound(served: Any, profile: Any, isl: float, osl: float) -> float:
    """:math:`X_{ub}` [requests/s] of one replica (module docstring); 0 when no sequence fits.

    Parameters
    ----------
    served : StepModelLike
        The replica's step model through its engine (``Engine.step(step_model)``).
    profile : EngineProfile
        The engine's scheduler settings and overheads.
    isl, osl : float
        Prompt and output tokens per request.
    """
    n_cap = sequence_limit(served, profile, isl, osl)
    if n_cap < 1.0:
        return 0.0
    n = _decode_grid(n_cap)
    rate = n / ((max(float(osl), 2.0) - 1.0) * decode_step_times(served, profile, n, isl, osl))
    return float(np.max(rate))


def prefill_capacity_bound(served: Any, profile: Any, isl: float) -> float:
    """:math:`X_{p,ub}` [requests/s] of one prefill-only replica (module docstring)."""
    from ..engine.prefill import prefill_batch_time

    m_top = max(1.0, float(profile.max_num_batched_tokens) / float(isl))
    m = np.unique(np.append(np.linspace(1.0, m_top, PREFILL_GRID), np.arange(1.0, math.floor(m_top) + 1.0)))
    return float(np.max(m / prefill_batch_time(served, profile, isl, m)))


def decode_rate_at_tpot(served: Any, profile: Any, isl: float, osl: float, tpot: float) -> float:
    """Highest request rate [1/s] one decode replica completes with its decode step within ``tpot`` [s].

    The largest batch n ≤ n_cap whose decode-only step is at most ``tpot`` gives
    :math:`n / ((O - 1) T(n))`; 0 when even one sequence is slower. A starting point for sizing a
    decode pool, not a bound (a share of requests may exceed the TPOT limit under the target).
    """
    n = _decode_grid(sequence_limit(served, profile, isl, osl))
    t = decode_step_times(served, profile, n, isl, osl)
    ok = t <= tpot
    if not np.any(ok):
        return 0.0
    return float(np.max(n[ok] / ((max(float(osl), 2.0) - 1.0) * t[ok])))
