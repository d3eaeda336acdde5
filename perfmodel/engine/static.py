r"""A static batch run by an engine: b requests reach an idle replica together (``predict(engine=...)``).

The same engine-aware step (:class:`perfmodel.engine.EngineStep`) and request terms as the serving
paths, so that at one request :func:`perfmodel.predict` with an engine, the simulator, the steady state
and ``estimate`` give one answer (pinned by the tests).

*Prefill.* With B the engine's token budget per step and I the prompt: when the batch fits one step
(b·I ≤ B) or b = 1, the prompts are prefilled side by side in prefill-only steps
(:func:`perfmodel.engine.prefill.prefill_batch_time`: ⌈I/B⌉ chunk steps, attention-equivalent
prefixes). A larger batch is packed FCFS into full steps of B tokens, each taking
:math:`t_B`; prompt j (0-based) gets its first token at the end of step ⌈(j + 1)I/B⌉, so the mean over
the batch is approximated by :math:`t_B\,(\lceil I/B \rceil + \lceil bI/B \rceil)/2`.

*Decode.* TPOT is the mean engine decode step of the b sequences over the contexts I + 1 … I + O − 1
(Simpson's rule on the three nodes, the step being close to linear in context) plus the profile's host
overheads :math:`t_{step} + b\,t_{seq}`.

*Client.* :math:`\mathrm{TTFT} = t_{req} + t_{prefill} + k_1\,\mathrm{TPOT}` (:meth:`Engine.ttft_added`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .prefill import prefill_batch_time, prefix_step_time


def static_batch_times(engine: Any, step_model: Any, batch, isl, osl,
                       prefix_hit_rate: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Mean client TTFT and TPOT [s] of a static batch under ``engine`` (see the module docstring).

    Parameters
    ----------
    engine : Engine
        The serving engine.
    step_model : StepModelLike
        The replica's bare step model (the engine's step terms are applied here).
    batch, isl, osl : array_like
        Requests b, prompt tokens I and output tokens O (broadcast together).
    prefix_hit_rate : float
        Share h of each prompt in the prefix cache: (1 − h)·I tokens are computed after h·I cached ones.
    """
    model = engine.step(step_model)
    prof = engine.profile
    b, i_all, o = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (batch, isl, osl)))
    cached = np.floor(float(prefix_hit_rate) * i_all)
    i = i_all - cached                       # prompt tokens computed
    budget = float(prof.max_num_batched_tokens)
    one_step = (b * i <= budget) | (b <= 1)
    ttft = prefill_batch_time(model, prof, i, np.where(one_step, b, 1.0), cached)
    if not one_step.all():
        per_step = np.minimum(np.maximum(budget / i, 1.0), b)          # prompts (or a chunk) per step
        q = cached + np.where(i <= budget, -(per_step - 1.0) * i / 2.0, (i - budget) / 2.0)
        t_full = prefix_step_time(model, 0.0, 0.0, np.full_like(i, budget), q) \
            + prof.step_overhead + prof.seq_overhead * per_step
        packed = t_full * (np.ceil(i / budget) + np.ceil(b * i / budget)) / 2.0
        ttft = np.where(one_step, ttft, packed)
    c_lo = i_all + 1.0
    c_hi = np.maximum(i_all + o - 1.0, c_lo)
    nodes = np.stack([c_lo, 0.5 * (c_lo + c_hi), c_hi])
    steps = np.asarray(model.step_time(b, nodes, 0.0, 0.0), dtype=float)
    tpot = (steps[0] + 4.0 * steps[1] + steps[2]) / 6.0 + prof.step_overhead + prof.seq_overhead * b
    return ttft + engine.ttft_added(tpot), tpot
