"""The prefix-cache hit rate a workload's reuse description implies at steady state: one rule, one place.

The simulator finds its hit rate by keeping the cache (:mod:`perfmodel.serving.prefixcache`); the
closed forms (steady state, ``estimate``) take the rate :func:`expected_hit_rate` derives here.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError


def _mean(d: Any) -> float:
    m = getattr(d, "mean", None)
    if m is None:
        raise ConfigError(f"expected_hit_rate: the length distribution {d!r} has no mean")
    return float(m)


def expected_hit_rate(workload: Any, kv_capacity: float | None = None) -> float:
    """Token-weighted share of prompt tokens found in the prefix cache at steady state (after warm-up).

    Rules (S prefix tokens, P prefixes, I mean prompt, O mean answer, U mean new user tokens per turn,
    T turns; block rounding, at most one block per prompt, is ignored):

    * explicit ``prefix_hit_rate``: that rate;
    * shared prefixes over a pool: every request finds its prefix if the cache keeps all P prefixes,
      ``h = S / I``. With ``kv_capacity`` K tokens for cached prefixes and P·S > K, an LRU cache of
      K / S prefixes under uniform draws holds the requested one with probability K / (P·S)
      (independent-reference model), so ``h = min(1, K / (P·S)) · S / I``;
    * sessions: turn t >= 2 finds the previous turn's prompt and answer, turn 1 only a shared prefix
      (if any): prompts ``I_t = I + (t−1)(O + U)``, reusable ``H_t = I_t − U`` (``I_{t−1}`` after a
      reasoning turn, whose thinking is not resent), ``h = Σ_t H_t / Σ_t I_t``.

    Optimistic where the cache is short of room or cold: the first request of each prefix computes it,
    prompts arriving together miss together, running sequences and the prompts' own (unshared) blocks,
    cached too and evicted LRU alongside, take capacity from the prefixes, and a session's history can be
    evicted while its user thinks (``kv_capacity`` is not applied to sessions).

    Parameters
    ----------
    workload : Workload
        Its ``prefix_hit_rate``, ``prefix`` and ``sessions``.
    kv_capacity : float | None
        KV tokens the cache can devote to idle prefixes (None: ample).

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
        kept = 1.0 if kv_capacity is None else min(1.0, kv_capacity / (P * S))
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
