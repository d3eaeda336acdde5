"""Synchronised arrivals of a closed-loop benchmark: the extra prefill wait of a request wave.

Benchmark clients (AIPerf, GenAI-Perf, ``benchmark_serving`` with ``--max-concurrency``) start all C
requests together, and with fixed prompt and output lengths the requests keep finishing — and being
re-sent — close together: arrivals come in waves, not spread over the decode steps as the steady state
of :func:`perfmodel.serving.steady_state` assumes. In the public measurements TTFT grows about linearly
with C at fixed lengths while the steady state stays flat until a capacity binds (see
``docs/validation.md``).

A wave of C prompts is prefilled m = max(1, ⌊B/I⌋) at a time (B the step token budget), so the
c-th request waits for ⌈c/m⌉ − 1 earlier prefill steps; averaged over the wave

.. math:: W = \\frac{\\lceil C/m \\rceil - 1}{2}\\; T_{pre}(m I)

with :math:`T_{pre}(P)` the step time of a prefill-only step of P tokens (chunked at B for long
prompts, plus the engine's step overhead). A fitted *synchronisation* s ∈ [0, 1] per engine mixes the
two regimes: :math:`\\mathrm{TTFT} = \\mathrm{TTFT}_{steady} + s\\,W` (0 = arrivals fully spread out,
1 = every request arrives with its whole wave).

:func:`perfmodel.serving.steady_state` and :func:`perfmodel.serving.steady_state_disagg` take s as
``sync_fraction``: the wait is time the client spends outside the decode batch, so it enters their
closed loop as think time and is added to the TTFT. The validation fits s per engine
(:mod:`perfmodel.validation.engines`); the simulator reproduces waves directly when clients start
together (``Arrival.ramp_up`` = 0).
"""

from __future__ import annotations

import numpy as np


def wave_wait(tables, concurrency, isl, budget: float, step_overhead: float) -> np.ndarray:
    """Mean extra prefill wait W of a synchronised wave of C requests [s] (see module docstring).

    Parameters
    ----------
    tables : StepModelLike
        Step model answering ``step_time`` (prefill-only steps are asked for).
    concurrency, isl : ndarray
        Clients C and prompt tokens I per row.
    budget : float
        Token budget B of one step [tokens].
    step_overhead : float
        Engine time added to every step [s].
    """
    c = np.asarray(concurrency, dtype=float)
    i = np.asarray(isl, dtype=float)
    per_step = np.maximum(np.floor(budget / i), 1.0)
    tokens = np.minimum(per_step * i, np.maximum(budget, i))
    chunks = np.ceil(tokens / budget)
    chunk = tokens / chunks
    zero = np.zeros_like(c)
    t_step = chunks * (np.asarray(tables.step_time(zero, zero, chunk, (tokens - chunk) / 2.0), dtype=float)
                       + step_overhead)
    return (np.ceil(c / per_step) - 1.0) / 2.0 * t_step
