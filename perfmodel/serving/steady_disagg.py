r"""Closed-form steady state of a prefill/decode-disaggregated closed loop (no simulation).

The counterpart of :func:`perfmodel.serving.steady_state` for two pools, as simulated by
:class:`perfmodel.serving.Disaggregated`: P prefill replicas run prompts only, D decode replicas run
decode-only steps, and a request's KV cache crosses from one to the other in :math:`t_{kv}` before its
first token reaches the client. Notation: C clients over the whole system, I prompt and O output
tokens, Z think time, X requests per second (whole system), :math:`T_p`, :math:`T_d` the step models
of one replica of each pool plus their engines' overheads, B the prefill engine's token budget.

*Decode pool.* Each decode replica holds n sequences, decoded at mean context
:math:`\bar c = I + O/2`:

.. math:: \mathrm{TPOT} = T_d(n, \bar c, 0, 0), \qquad n = \frac{X\,(O-1)\,\mathrm{TPOT}}{D}

*Prefill pool.* Prompts reach a prefill replica at :math:`\lambda = X/P`, spread out in time (the
closed loop's completions pace them). A prefill-only step takes the prompts that arrived while the
previous one ran, up to the budget: :math:`m = \mathrm{clip}(\lambda\, t(m), 1, m_{max})` per step,
:math:`m_{max} = \max(1, \lfloor B/I \rfloor)`, or one prompt in :math:`k = \lceil I/B \rceil` chunk
steps when I > B; t(m) is the time to prefill such a batch. While prompts come slower than one per
t(1) each runs alone on arrival; once batches form, a prompt arrives at a uniform point of the step
collecting its batch:

.. math:: \mathrm{TTFT} = \left(1 - \frac{1}{m}\right)\frac{t(m)}{2} + t(m) + t_{kv}

With S attention-DP ranks per prefill replica, a step of m < S prompts is costed
:math:`t(m) + \phi\,(t(S) - t(m))` (:func:`lockstep_prefill_time`): φ = 0 splits the m prompts' work
evenly over the ranks (the step model's mean), φ = 1 makes the step as long as one with a prompt on
every rank (the ranks step together). φ is the prefill engine's fitted ``prefill_dp_lockstep``.

*Closed loop.* :math:`C = X\,(\mathrm{TTFT} + (O-1)\,\mathrm{TPOT} + Z)`, solved for n by bisection
on g(n) − n, g being the decode batch the loop sustains around a batch n (positive as n → 0, at
most min(C/D, caps) above), with n capped by the decode replica's ``max_num_seqs`` and KV capacity, and X by the prefill
pool's capacity :math:`P\,m_{max}/t(m_{max})`. When a cap binds, the clients that do not fit queue:
TTFT = C/X − (O − 1) TPOT − Z.

Assumptions: arrivals at the prefill pool are spread out, not random (a Poisson stream would queue
before capacity) nor in synchronised waves (see ``steady_state``); KV transfers do not contend with each other; the prefill pool's requests are spread
evenly over its replicas, as are the decode pool's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..engine.engine import Engine
from ..engine.prefill import prefill_batch_time
from ..engine.step import tokens_per_step
from ..errors import ConfigError
from .protocol import resolve_step_model
from .steady_state import SteadyState
from .waves import wave_wait


def lockstep_prefill_time(model: Any, engine: Any, isl: ArrayLike, m: ArrayLike, schedulers: ArrayLike,
                          lockstep: ArrayLike) -> np.ndarray:
    r"""Time to prefill m prompts on a replica of S attention-DP ranks that step together [s].

    .. math:: t_\phi(m) = t(m) + \phi\,\bigl(t(\max(m, S)) - t(m)\bigr)

    with t = :func:`perfmodel.engine.prefill.prefill_batch_time`. The step model spreads the work of m
    prompts evenly over the S ranks; with fewer prompts than ranks, a prompt (its attention and every
    per-rank layer) sits on one rank and the ranks that have none wait for it at each layer's
    expert exchange. φ = 0 keeps the even split, φ = 1 costs the step as one with a prompt on every
    rank. Unchanged for m ≥ S and for S = 1.

    Parameters
    ----------
    model : StepModelLike
        Step model of one prefill replica.
    engine : EngineProfile
        Its engine (token budget, step and sequence overheads).
    isl, m : array_like
        Prompt tokens I and prompts per step m.
    schedulers : array_like
        Attention-DP ranks S of the replica.
    lockstep : array_like
        φ, 0 to 1 [-].
    """
    t = prefill_batch_time(model, engine, isl, m)
    phi = np.asarray(lockstep, dtype=float)
    if not np.any(phi > 0):
        return t
    full = np.maximum(np.asarray(m, dtype=float), np.asarray(schedulers, dtype=float))
    return t + phi * (prefill_batch_time(model, engine, isl, full) - t)


#: Newton steps of the prompts-per-step m inside the bisection on the decode batch, and bisection
#: steps of m for the reported TTFT. Newton warm-started from the previous bisection step cycled on
#: some P/D rows with thousands of clients, so the answer depended on the outer step count
#: (a DeepSeek-R1 H200 SGLang row moved 5 % between 40 and 60 steps).
_BATCH_NEWTON_STEPS = 3
_BATCH_BISECTIONS = 30


def steady_state_disagg(prefill_model: Any, decode_model: Any, concurrency: ArrayLike, isl: ArrayLike,
                        osl: ArrayLike, *, prefill_replicas: ArrayLike = 1, decode_replicas: ArrayLike = 1,
                        prefill_engine: Any = "vllm", decode_engine: Any = None, kv_transfer_s: ArrayLike = 0.0,
                        think_time: ArrayLike = 0.0, iterations: int = 60, prefill_schedulers: ArrayLike = 1,
                        decode_schedulers: ArrayLike = 1, sync_fraction: ArrayLike | None = None) -> SteadyState:
    """Mean TTFT, TPOT and throughput of a P/D-disaggregated system at closed-loop concurrency C.

    Parameters
    ----------
    prefill_model, decode_model : StepModelLike | Mapping
        Step models of one prefill and one decode replica (or ``StepModel`` keyword arguments).
    concurrency : array_like
        Clients C of the whole system.
    isl, osl : array_like
        Prompt and output tokens (fixed).
    prefill_replicas, decode_replicas : array_like
        Replicas P and D per pool (≥ 1).
    prefill_engine, decode_engine : Engine | EngineProfile | str
        Engines of the pools (the decode pool defaults to the prefill pool's), loaded with
        :meth:`perfmodel.engine.Engine.load`: each pool's step terms enter its step times; the prefill
        engine's request terms (request overhead as think time, ``first_token_steps`` decode steps)
        are added to the TTFT.
    kv_transfer_s : array_like
        Time to move one request's KV cache between the pools [s].
    think_time : array_like
        Client think time Z [s].
    iterations : int
        Bisection steps on the decode batch n (60 resolve it to 2^-60 of its range).
    prefill_schedulers, decode_schedulers : array_like
        Independent schedulers per replica (attention-DP ranks), each with its engine's token budget
        and sequence limit (see ``steady_state``).
    sync_fraction : array_like, optional
        Weight s, 0 to 1, of the synchronised-wave wait (:mod:`perfmodel.serving.waves`) of the C/P
        clients of one prefill replica: added to the think time and to the TTFT (default: the prefill
        engine's fitted value).

    Returns
    -------
    SteadyState
        Throughputs are the whole system's; ``n_decode`` is per decode replica; ``limited_by`` is
        ``clients``, ``max_num_seqs``, ``kv_cache`` or ``prefill_pool``.
    """
    p_engine = Engine.load(prefill_engine)
    d_engine = Engine.load(decode_engine) if decode_engine is not None else p_engine
    pm, dm = p_engine.step(resolve_step_model(prefill_model)), d_engine.step(resolve_step_model(decode_model))
    pe, de = p_engine.profile, d_engine.profile
    if sync_fraction is None:
        sync_fraction = p_engine.terms.sync_fraction
    C, Isl, Osl, P, D, Tkv, Z, Sp, Sd, sync = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (
        concurrency, isl, osl, prefill_replicas, decode_replicas, kv_transfer_s, think_time, prefill_schedulers,
        decode_schedulers, sync_fraction)))
    for name, v, low in (("concurrency", C, 0.0), ("isl", Isl, 1.0), ("osl", Osl, 1.0),
                         ("prefill_replicas", P, 1.0), ("decode_replicas", D, 1.0), ("kv_transfer_s", Tkv, 0.0),
                         ("think_time", Z, 0.0), ("prefill_schedulers", Sp, 1.0), ("decode_schedulers", Sd, 1.0),
                         ("sync_fraction", sync, 0.0)):
        bad = ~(np.isfinite(v) & (v >= low))
        if name.endswith(("_replicas", "_schedulers")):
            bad |= v != np.round(v)
        if np.any(bad):
            allowed = "an integer" if name.endswith(("_replicas", "_schedulers")) else "a number"
            raise ConfigError(f"{name}: must be {allowed} >= {low:g}, got {float(v[bad].ravel()[0])!r}")
    if np.any(sync > 1):
        raise ConfigError(f"sync_fraction: must be within [0, 1], got {float(sync[sync > 1].ravel()[0])!r}")
    Osl = np.maximum(Osl, 2.0)
    phi = p_engine.terms.prefill_dp_lockstep
    Z = Z + p_engine.request_overhead   # the request's time outside the engines' steps
    # the client sees its tokens k decode steps late; a step lasts E TPOTs (E tokens per step)
    E = tokens_per_step(dm)
    late = p_engine.terms.first_token_steps * E
    others = np.maximum(C / D - 1.0, 0.0) / np.maximum(C / D, 1.0)   # other clients of a decode replica
    cbar = Isl + Osl / 2.0
    bs = float(de.kv_block_size)   # whole blocks, as in steady_state
    per_seq_kv = np.ceil((Isl + Osl) / bs) * bs if de.kv_admission == "reserve_full" else cbar + (bs - 1) / 2
    caps = {"max_num_seqs": float(de.max_num_seqs) * Sd,
            "kv_cache": np.asarray(dm.kv_capacity_tokens, dtype=float) * de.kv_capacity_fraction / per_seq_kv}
    n_cap = np.minimum(*caps.values())
    B = float(pe.max_num_batched_tokens)
    wave = sync * wave_wait(pm, C / P, Isl, pe, Sp) if np.any(sync > 0) else np.zeros_like(C)
    Z = Z + wave   # waiting for its wave, a client is outside the decode pool
    m_max = np.maximum(np.floor(B / Isl), 1.0) * Sp
    x_prefill = P * m_max / prefill_batch_time(pm, pe, Isl, m_max)   # prefill pool capacity [1/s]

    def tpot_of(n: np.ndarray) -> np.ndarray:
        seen = np.minimum(1.0 + n * others, np.maximum(n_cap, n))   # a decoding sequence's own batch
        return dm.step_time(seen, cbar, 0.0, 0.0) + de.step_overhead + de.seq_overhead * seen

    def prompts_per_step(lam: np.ndarray, exact: bool) -> np.ndarray:
        """m solving m = λ t(m) on [1, m_max] (t increases with m; m_max where the pool saturates).
        Inside the bisection on n: Newton steps from m = 1 with t linearised (t is close to affine in
        m), the same steps for the same n whatever came before; for the answer: bisection on m."""
        if exact:
            lo_m, hi_m = np.ones_like(lam), np.broadcast_to(m_max, lam.shape).astype(float)
            for _ in range(_BATCH_BISECTIONS):
                mid = 0.5 * (lo_m + hi_m)
                up = lam * lockstep_prefill_time(pm, pe, Isl, mid, Sp, phi) > mid
                lo_m, hi_m = np.where(up, mid, lo_m), np.where(up, hi_m, mid)
            return 0.5 * (lo_m + hi_m)
        m = np.ones_like(lam)
        for _ in range(_BATCH_NEWTON_STEPS):
            t0 = lockstep_prefill_time(pm, pe, Isl, m, Sp, phi)
            slope = lockstep_prefill_time(pm, pe, Isl, m + 1.0, Sp, phi) - t0
            denom = 1.0 - lam * slope
            with np.errstate(divide="ignore", invalid="ignore"):
                m = np.clip(np.where(denom > 0, lam * (t0 - slope * m) / denom, m_max), 1.0, m_max)
        return m

    def ttft_of(x: np.ndarray, exact: bool = False) -> np.ndarray:
        m = prompts_per_step(x / P, exact)
        t = lockstep_prefill_time(pm, pe, Isl, m, Sp, phi)
        return (1.0 - 1.0 / m) * t / 2.0 + t + Tkv

    def excess(n: np.ndarray) -> np.ndarray:
        """g(n) − n, where g is the decode batch the loop sustains around a batch n."""
        tpot = tpot_of(n)
        dec = (Osl - 1) * tpot
        x = np.minimum(D * n / dec, x_prefill)
        return np.minimum.reduce([C / D * dec / (ttft_of(x) + dec + Z + late * tpot), n_cap,
                                  x_prefill * dec / D]) - n

    # bisection on g(n) = n: g > 0 near n = 0 and g <= min(C/D, n_cap), so the root is bracketed
    # (damped substitution took hundreds of steps where the loop is short, e.g. OSL = 2)
    lo, hi = np.full_like(C, 1e-6), np.maximum(np.minimum(C / D, n_cap), 1e-6)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        up = excess(mid) > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    n = np.maximum(0.5 * (lo + hi), 1e-6)
    tpot = tpot_of(n)
    X = D * n / ((Osl - 1) * tpot)
    ttft = np.maximum(ttft_of(X, exact=True), C / X - (Osl - 1) * tpot - Z - late * tpot) + wave + p_engine.ttft_added(tpot, E)
    names = np.array(["clients", "max_num_seqs", "kv_cache", "prefill_pool"])
    n_at_prefill_cap = x_prefill * (Osl - 1) * tpot / D
    limits = np.stack([caps["max_num_seqs"], np.broadcast_to(caps["kv_cache"], C.shape), n_at_prefill_cap])
    bound = np.where(n >= 0.999 * np.min(limits, axis=0), np.argmin(limits, axis=0) + 1, 0)
    return SteadyState(ttft_mean_s=ttft, tpot_mean_s=tpot, e2e_mean_s=ttft + (Osl - 1) * tpot, requests_per_s=X,
                       output_tokens_per_s=X * Osl, decode_batch_mean=n, limited_by=names[bound])
