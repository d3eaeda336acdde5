"""Prefill step times shared by the closed-form serving estimates (steady states, arrival waves).

Several prompt chunks in one step are passed to the step model as one chunk of their total size P with
an attention-equivalent cached prefix q (see :mod:`perfmodel.serving.steptable`); q < 0 (several
fresh prompts) is extrapolated linearly in q from q = 0 and q = P.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .profile import EngineProfile


def _broadcasts(model: Any) -> bool:
    """Whether ``model.step_time`` takes any extra leading axis (a :class:`~perfmodel.core.step.StepModel`,
    or an engine step over one), so that several steps can be timed in one stacked call; other step models
    (per-row tables, closed-form stand-ins) get their own shapes only."""
    return hasattr(model, "breakdown")


def prefix_step_time(model: Any, n: Any, c: Any, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Step-model time with a possibly negative attention-equivalent prefix (linear extrapolation in q)."""
    q = np.asarray(q, dtype=float)
    if np.all(q >= 0):  # nothing to extrapolate: the two ends are not needed
        t0 = t1 = tq = np.asarray(model.step_time(n, c, p, np.maximum(q, 0.0)), dtype=float)
    elif not _broadcasts(model):
        t0 = np.asarray(model.step_time(n, c, p, 0.0), dtype=float)
        t1 = np.asarray(model.step_time(n, c, p, p), dtype=float)
        tq = np.asarray(model.step_time(n, c, p, np.maximum(q, 0.0)), dtype=float)
    else:  # prefixes max(q, 0), 0 and p in one stacked call
        shape = np.broadcast_shapes(*(np.shape(x) for x in (n, c, p, q)))
        prefixes = np.stack([np.broadcast_to(np.maximum(q, 0.0), shape), np.zeros(shape),
                             np.broadcast_to(np.asarray(p, dtype=float), shape)])
        tq, t0, t1 = np.broadcast_to(np.asarray(model.step_time(n, c, p, prefixes), dtype=float), prefixes.shape)
    return np.where(q >= 0, tq, np.maximum(t0 + q * (t1 - t0) / np.maximum(p, 1.0), 0.0))


def prefill_batch_time(model: Any, eng: EngineProfile, isl: ArrayLike, m: ArrayLike,
                       cached: ArrayLike = 0.0, budget: ArrayLike | None = None) -> np.ndarray:
    """Time to prefill m prompts of ``isl`` new tokens side by side in prefill-only steps [s].

    A prompt longer than one scheduler's budget B runs in k = ⌈I/B⌉ steps: k − 1 full chunks of B
    tokens (mean cached prefix (k − 2)B/2) and a remainder r = I − (k − 1)B after (k − 1)B cached
    tokens; m prompts side by side share each step (attention-equivalent prefix, see
    :func:`prefix_step_time`). ``cached`` tokens of each prompt found in the prefix cache are not
    computed but attended: every chunk's prefix grows by them. Every step adds the engine's step
    overhead and m sequence overheads. ``budget`` [tokens], when given, is B per prompt (broadcast with
    ``isl``; a launch's own ``max_num_tokens``) instead of the engine profile's ``max_num_batched_tokens``.
    """
    B = float(eng.max_num_batched_tokens) if budget is None else budget
    isl, m, c0, B = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (isl, m, cached, B)))
    k = np.ceil(isl / B)
    r = isl - (k - 1) * B
    p_last, q_last = m * r, c0 + (k - 1) * B - (m - 1) * r / 2
    full = 0.0
    if np.any(k > 1):   # only long prompts have full chunks before the last one: both kinds in one call
        p_full, q_full = m * B, c0 + (k - 2) * B / 2 - (m - 1) * B / 2
        if _broadcasts(model):
            t_full, last = prefix_step_time(model, 0.0, 0.0, np.stack(np.broadcast_arrays(p_full, p_last)),
                                            np.stack(np.broadcast_arrays(q_full, q_last)))
        else:
            t_full, last = (prefix_step_time(model, 0.0, 0.0, pp, qq) for pp, qq in ((p_full, q_full),
                                                                                   (p_last, q_last)))
        full = np.where(k > 1, (k - 1) * t_full, 0.0)
    else:
        last = prefix_step_time(model, 0.0, 0.0, p_last, q_last)
    return full + last + k * (eng.step_overhead + eng.seq_overhead * m)
