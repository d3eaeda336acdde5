r"""The closed loop's ``ramp_up: "auto"``: clients started over one mean request duration.

A closed loop whose C clients all send their first request at t = 0 with fixed lengths runs in
synchronised waves for ever (prompts that share a step also finish together, see
:mod:`perfmodel.serving.waves`), so its TTFT is that of a wave of C prompts, not the steady state's.
Starting client k at

.. math::
    t_k = k\,D / C, \qquad k = 0, \dots, C - 1,

with D the mean request duration (E2E, client side) at that load spreads the first requests over one
request cycle, as they are in steady state. D is taken from the engine-aware closed-form steady state
(:func:`perfmodel.serving.steady_state`, or :func:`perfmodel.serving.steady_disagg.steady_state_disagg`
for a prefill/decode pair) with the same step model(s), engine(s), think time and the means of the
workload's length distributions (output = answer + reasoning tokens, at least 2), arrivals spread
(``sync_fraction = 0``) and the workload's explicit ``prefix_hit_rate``. Shared prefixes and sessions
are left out of D (a session's later turns are longer, its hits larger): D depends only on lengths and
load, so a prefix that can never hit leaves the run bit for bit unchanged. With R replicas behind the
router each serves C/R clients (at least one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .workload import Workload

#: Fixed-point tolerance of the steady state behind an "auto" ramp: D to about 1e-4 (measured 4e-6 at
#: C = 8, 4e-5 at C = 256 on Llama-3.1-8B/H100), in a third of the time of all 60 iterations.
RTOL = 1e-4
#: How an "auto" ramp was resolved, for results and tables.
AUTO_BASIS = "auto: one mean request duration D at this load (closed-form steady state), client k starts at k·D/C"


@dataclass(frozen=True)
class Ramp:
    """A closed loop's resolved ramp-up.

    Attributes
    ----------
    seconds : float
        Client k of C starts at k·seconds/C [s].
    basis : str
        ``"given"`` or how ``"auto"`` was resolved (:data:`AUTO_BASIS`).
    """

    seconds: float
    basis: str

    def as_dict(self) -> dict[str, Any]:
        return {"ramp_up_s": self.seconds, "basis": self.basis}


def _lengths(w: Workload) -> tuple[float, float]:
    """Mean prompt and output (answer + reasoning, at least 2) tokens of ``w``."""
    isl = max(float(w.isl.mean), 1.0)  # type: ignore[union-attr]
    osl = float(w.osl.mean) + float(w.reasoning_tokens.mean)  # type: ignore[union-attr]
    return isl, max(osl, 2.0)


def mean_request_duration(w: Workload, model: Any, engine: Any, replicas: int = 1) -> float:
    """Mean E2E of one request [s] at the closed loop's load: the steady state of one replica at C/R clients.

    Parameters
    ----------
    w : Workload
        Closed-loop workload (concurrency C, think time, lengths).
    model, engine
        Step model and :class:`perfmodel.engine.Engine` of one replica.
    replicas : int
        Replicas R behind the router.
    """
    from .steady_state import steady_state

    isl, osl = _lengths(w)
    c = max(w.arrival.concurrency / replicas, 1.0)   # fewer clients than replicas: one client per busy replica
    ss = steady_state(model, c, isl, osl, engine=engine, think_time=w.arrival.think_time, sync_fraction=0.0,
                      prefix_hit_rate=w.prefix_hit_rate, rtol=RTOL)
    return float(ss.e2e_mean_s)


def mean_request_duration_disagg(w: Workload, prefill: Any, decode: Any, prefill_engine: Any,
                                 decode_engine: Any, prefill_replicas: int, decode_replicas: int,
                                 kv_seconds_per_token: float, kv_alpha: float) -> float:
    """Mean E2E of one request [s] of a P/D pair at the closed loop's load (whole system, C clients).

    The KV transfer of the mean prompt takes ``kv_alpha + isl · kv_seconds_per_token`` [s], as in the
    simulator.
    """
    from .steady_disagg import steady_state_disagg

    isl, osl = _lengths(w)
    ss = steady_state_disagg(prefill, decode, w.arrival.concurrency, isl, osl,
                             prefill_replicas=prefill_replicas, decode_replicas=decode_replicas,
                             prefill_engine=prefill_engine, decode_engine=decode_engine,
                             kv_transfer_s=kv_alpha + isl * kv_seconds_per_token,
                             think_time=w.arrival.think_time, sync_fraction=0.0)
    return float(ss.e2e_mean_s)


def resolve(w: Workload, duration: Any) -> tuple[Workload, Ramp | None]:
    """``w`` with an ``"auto"`` ramp-up replaced by ``duration()`` seconds, and the ramp used.

    Parameters
    ----------
    w : Workload
        Any workload; only a closed loop has a ramp (open loop: returned unchanged with None).
    duration : callable
        ``duration() -> float``, the mean request duration D [s]; called only for ``"auto"``.
    """
    a = w.arrival
    if not a.closed:
        return w, None
    if not a.auto_ramp:
        return w, Ramp(float(a.ramp_up), "given")
    try:
        d = float(duration())
    except ConfigError as e:
        raise ConfigError(f"arrival.ramp_up 'auto' takes one mean request duration from the steady state, which "
                          f"failed: {e}; give ramp_up in seconds (0 starts all clients together)") from e
    if not math.isfinite(d) or d < 0:
        raise ConfigError(f"arrival.ramp_up 'auto': the steady state gives no finite request duration ({d!r} s) "
                          "for this load; give ramp_up in seconds (0 starts all clients together)")
    return w.replace(arrival={**a.model_dump(), "ramp_up": d}), Ramp(d, AUTO_BASIS)
