"""The prefix-cache hit rate a workload's reuse description implies at steady state: one rule, one place.

The simulator finds its hit rate by keeping the cache (:mod:`perfmodel.serving.prefixcache`); the
closed forms (steady state, ``estimate``) take the rate :func:`expected_hit_rate` derives here.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ConfigError


def lru_keep_probability(pool: float, size: float, tail: float, rate: float, capacity: float) -> float:
    """Probability that an LRU cache still holds a requested shared prefix (Che's approximation).

    P prefixes of S tokens, each drawn uniformly by requests arriving at λ per second; every request
    also leaves its own unshared tail of τ tokens, used once. An item stays cached for the
    characteristic time T after its last use, fixed by filling the capacity K [tokens]:

    ``K = P·S·(1 − exp(−λT/P)) + λ·T·τ``,  and the prefix is found with probability ``1 − exp(−λT/P)``.

    Returns 1 when the pool fits (τ = 0 and P·S <= K). Reference: H. Che, Y. Tung, Z. Wang,
    "Hierarchical Web caching systems: modeling, design and experimental results", IEEE J. Sel. Areas
    Commun. 20(7), 2002 (the characteristic-time approximation of LRU).
    """
    if pool * size <= capacity and tail <= 0:
        return 1.0
    if capacity <= 0:
        return 0.0

    def filled(t: float) -> float:
        return pool * size * -math.expm1(-rate * t / pool) + rate * t * tail

    hi = 1.0
    while filled(hi) < capacity:
        hi *= 2.0
        if hi > 1e15:   # tail 0 and a pool that almost fits: everything is kept
            return 1.0
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if filled(mid) < capacity else (lo, mid)
    return -math.expm1(-rate * hi / pool)


def _mean(d: Any) -> float:
    m = getattr(d, "mean", None)
    if m is None:
        raise ConfigError(f"expected_hit_rate: the length distribution {d!r} has no mean")
    return float(m)


def expected_hit_rate(workload: Any, kv_capacity: float | None = None, *, rate: float | None = None) -> float:
    """Token-weighted share of prompt tokens found in the prefix cache at steady state (after warm-up).

    Rules (S prefix tokens, P prefixes, I mean prompt, O mean answer, U mean new user tokens per turn,
    T turns; block rounding, at most one block per prompt, is ignored):

    * explicit ``prefix_hit_rate``: that rate;
    * shared prefixes over a pool: every request finds its prefix if the cache keeps all P prefixes,
      ``h = S / I``. With ``kv_capacity`` K tokens and a request rate λ (``rate``, default the
      workload's open-loop rate), the LRU cache also holds each prompt's own I − S tokens for a while:
      ``h = p · S / I`` with p from :func:`lru_keep_probability`. Without a rate (closed loop), K
      tokens of prefixes alone: ``p = min(1, K / (P·S))`` (uniform draws, independent references);
    * sessions: turn t >= 2 finds the previous turn's prompt and answer, turn 1 only a shared prefix
      (if any): prompts ``I_t = I + (t−1)(O + U)``, reusable ``H_t = I_t − U`` (``I_{t−1}`` after a
      reasoning turn, whose thinking is not resent), ``h = Σ_t H_t / Σ_t I_t``.

    Optimistic where the cache is short of room or cold: the first request of each prefix computes it,
    prompts arriving together miss together, the running sequences' KV takes room from the cache (pass
    the capacity less their tokens), without a rate the prompts' own blocks are not counted, and a
    session's history can be evicted while its user thinks (``kv_capacity`` is not applied to sessions).

    Parameters
    ----------
    workload : Workload
        Its ``prefix_hit_rate``, ``prefix`` and ``sessions``.
    kv_capacity : float | None
        KV tokens the cache can devote to cached blocks (None: ample).
    rate : float | None
        Request rate λ [1/s] (default: the workload's, open loop).

    Returns
    -------
    float
        Hit rate h in [0, 1).
    """
    w = workload
    if not w.has_reuse:
        return float(w.prefix_hit_rate)
    if kv_capacity is not None and not kv_capacity >= 0:
        raise ConfigError(f"kv_capacity: must be >= 0 tokens or None, got {kv_capacity!r}")
    isl = _mean(w.isl)
    shared = 0.0
    if w.prefix is not None:
        S, P = float(w.prefix.tokens), float(w.prefix.pool)
        if rate is None and w.arrival.process in ("poisson", "gamma"):
            rate = w.arrival.rate
        if kv_capacity is None:
            kept = 1.0
        elif rate is None:
            kept = min(1.0, kv_capacity / (P * S))
        else:
            kept = lru_keep_probability(P, S, max(isl - S, 0.0), float(rate), kv_capacity)
        shared = kept * min(S, isl)
    if w.sessions is None:
        return min(shared / isl, 1.0 - 1.0 / isl)
    T = w.sessions.turns
    ans, user = _mean(w.osl), _mean(w.sessions.user_tokens)
    thinks = _mean(w.reasoning_tokens) > 0
    prompts = [isl + t * (ans + user) for t in range(T)]
    reused = [shared] + [prompts[t - 1] if thinks else prompts[t] - user for t in range(1, T)]
    h = sum(reused) / sum(prompts)
    return min(h, 1.0 - 1.0 / isl)
