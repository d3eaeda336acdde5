"""Synchronised arrivals of a closed-loop benchmark: the extra prefill wait of a request wave.

Benchmark clients (AIPerf, GenAI-Perf, ``benchmark_serving`` with ``--max-concurrency``) start all C
requests together, and with fixed prompt and output lengths the requests keep finishing — and being
re-sent — close together: arrivals come in waves, not spread over the decode steps as the steady state
of :func:`perfmodel.serving.steady_state` assumes. In the public measurements TTFT grows about linearly
with C at fixed lengths while the steady state stays flat until a capacity binds (see
``docs/validation.md``).

A wave of C prompts is prefilled m = S·max(1, ⌊B/I⌋) at a time (B one scheduler's token budget, S
attention-DP schedulers), so the c-th request waits for ⌈c/m⌉ − 1 earlier prefill batches; averaged
over the wave

.. math:: W = \\frac{\\lceil C/m \\rceil - 1}{2}\\; T_{pre}(m, I)

with :math:`T_{pre}(m, I)` the time to prefill m prompts side by side
(:func:`perfmodel.engine.prefill.prefill_batch_time`: chunked at B for long prompts, engine overheads
included). A fitted *synchronisation* s ∈ [0, 1] per engine mixes the
two regimes: :math:`\\mathrm{TTFT} = \\mathrm{TTFT}_{steady} + s\\,W` (0 = arrivals fully spread out,
1 = every request arrives with its whole wave).

:func:`perfmodel.serving.steady_state` and :func:`perfmodel.serving.steady_state_disagg` take s as
``sync_fraction``: the wait is time the client spends outside the decode batch, so it enters their
closed loop as think time and is added to the TTFT. The validation fits s per engine
(:mod:`perfmodel.engine.calibration`); the simulator reproduces waves directly when clients start
together (``Arrival.ramp_up`` = 0).
"""

from __future__ import annotations

import numpy as np

from ..engine.prefill import prefill_batch_time
from ..engine.profile import EngineProfile


def wave_wait(model, concurrency, isl, engine: EngineProfile, schedulers=1.0, budget=None) -> np.ndarray:
    """Mean extra prefill wait W of a synchronised wave of C requests [s] (see module docstring).

    Parameters
    ----------
    model : StepModelLike
        Step model answering ``step_time`` (prefill-only steps are asked for).
    concurrency, isl : array_like
        Clients C and prompt tokens I.
    engine : EngineProfile
        Token budget B of one scheduler and the per-step and per-sequence overheads.
    schedulers : array_like
        Schedulers S of the replica (attention-DP ranks): m = S·max(1, ⌊B/I⌋) prompts per step, each
        chunked within one rank's budget.
    budget : array_like, optional
        Token budget B of one scheduler [tokens] (default: the engine's ``max_num_batched_tokens``).
    """
    c = np.asarray(concurrency, dtype=float)
    i = np.asarray(isl, dtype=float)
    B = np.asarray(float(engine.max_num_batched_tokens) if budget is None else budget, dtype=float)
    m = np.maximum(np.floor(B / i), 1.0) * np.asarray(schedulers, dtype=float)
    return (np.ceil(c / m) - 1.0) / 2.0 * prefill_batch_time(model, engine, i, m, budget=budget)
