r"""Closed-form steady state of a closed loop at concurrency C with fixed ISL/OSL (no simulation).

Notation: I prompt tokens, O output tokens (O >= 2), C clients, think time Z, n mean decoding
sequences, T(n, c, p, q) the step model plus the engine overheads, B the engine's token budget.

Token flow: a request spends O − 1 decode steps, so per decode step λ = n/(O − 1) requests finish and
as many prompts arrive: :math:`\bar p = \lambda I` prompt tokens per step on average, decoded at mean
context :math:`\bar c = I + O/2`.

*decode-first* (vLLM, TensorRT-LLM): prompts ride in the decode steps as chunks of
s = min(I, B − n) tokens (s = I without chunked prefill), k = ⌈I/s⌉ steps per prompt. A fraction
φ = min(1, p̄/s) of the steps carries a chunk (every step carries p̄ tokens if p̄ > s):

.. math::
    \mathrm{TPOT} = \varphi\,T(n, \bar c, s, q) + (1-\varphi)\,T(n, \bar c, 0, 0)

    \mathrm{TTFT} = W + \begin{cases} T(n, \bar c, mI, -(m-1)I/2) & k = 1 \\
                                       (k - 1)\,T(n, \bar c, s, (k-2)s/2) + T(n, \bar c, P_r, q_r) & k > 1 \end{cases}

q is the mean cached prefix of a chunk; a one-step prompt shares its step with the m = 1 + λ prompts
(size-biased, at most (B − n)/I) that arrived with it, whose attention pairs give the negative
equivalent prefix (see :mod:`perfmodel.serving.steptable`). A longer prompt's last step carries its
remainder r = I − (k − 1)s after (k − 1)s cached tokens, topped up to P_r = min(max(r, p̄), B − n)
tokens by the other prompts in flight; the k − 1 full steps have the prompt's mean own prefix
(k − 2)s/2. Prefixes are attention-equivalent: q_r = r((k − 1)s − (P_r − r))/P_r counts the other
prompts' P_r − r tokens as fresh.

*prefill-first* (SGLang): prompts run in prefill-only steps of up to B tokens, ν = max(λk, p̄/B) of
them per decode step with k = ⌈I/B⌉, each P = p̄/ν tokens:

.. math::
    \mathrm{TPOT} = T(n, \bar c, 0, 0) + \nu\,T(0, 0, P, q), \qquad
    \mathrm{TTFT} = W + k\,T(0, 0, P_m, q_m)

with P_m = mI (k = 1, m = 1 + λ prompts batched together) or B (k > 1).

W is the wait for the step in progress: a whole decode step T(n, c̄, 0, 0) in a closed loop without
think time (the completion that triggers the next request is the boundary where the next step
starts), TPOT/2 with think time. Closing the loop (Little's law): throughput X = n/((O − 1)·TPOT) and
C = X·(TTFT + (O − 1)·TPOT + Z), solved for n by damped fixed-point iteration; n is capped by
``max_num_seqs``, the KV capacity (n·(c̄ + (b − 1)/2) tokens on demand, n·⌈(I + O)/b⌉·b reserved, with b
the engine's ``kv_block_size`` and the capacity as the engine sizes its pool,
:mod:`perfmodel.engine.kv_memory`) and the prefill budget
(p̄ ≤ B − n). When a cap binds the clients that do not fit wait: TTFT = C/X − (O − 1)·TPOT − Z.

Assumption: arrivals are spread over the request cycle. Clients that all start at once with fixed
lengths run in synchronised waves instead (every prompt of a wave arrives together), with a much
higher TTFT; the simulator shows both (``Arrival.ramp_up``), and ``sync_fraction`` mixes in the
wave wait of :mod:`perfmodel.serving.waves`. Vectorised over ``concurrency`` (and
broadcast over ``isl`` / ``osl``). Measured agreement with the simulator: ``docs/serving.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import checks
from ..engine.engine import Engine
from ..engine.prefill import prefill_batch_time, prefix_step_time
from ..engine.speculative import with_workload_acceptance
from ..engine.step import tokens_per_step
from ..errors import ConfigError
from ..metrics_vocabulary import deprecated_property
from .protocol import resolve_step_model
from .reuse import expected_hit_rate
from .waves import wave_wait
from .workload import Workload


@dataclass(frozen=True)
class SteadyState:
    """Means in steady state (arrays shaped like the broadcast inputs), under the output names of
    :mod:`perfmodel.metrics_vocabulary`.

    Attributes
    ----------
    ttft_mean_s, tpot_mean_s, e2e_mean_s : ndarray
        Mean over requests of TTFT (with queueing), TPOT and E2E [s];
        ``e2e_mean_s = ttft_mean_s + (osl - 1) tpot_mean_s``.
    requests_per_s, output_tokens_per_s : ndarray
        Completed requests [1/s] and output tokens [tokens/s] of one replica.
    decode_batch_mean : ndarray
        Mean number of decoding sequences n [1].
    limited_by : ndarray[str]
        ``"clients"``, ``"max_num_seqs"``, ``"kv_cache"`` or ``"prefill_budget"``.

    Notes
    -----
    The old field names ``ttft_s``, ``tpot_s``, ``e2e_s`` (a bare ``ttft_s`` is one static batch on an
    idle replica in the glossary, not a mean), ``n_decode``, ``throughput_rps`` and
    ``throughput_output_tokens_per_s`` still answer with a :class:`DeprecationWarning` for one release.
    """

    ttft_mean_s: np.ndarray
    tpot_mean_s: np.ndarray
    e2e_mean_s: np.ndarray
    requests_per_s: np.ndarray
    output_tokens_per_s: np.ndarray
    decode_batch_mean: np.ndarray
    limited_by: np.ndarray

    def as_dict(self) -> dict[str, Any]:
        """The fields by name (``ttft_mean_s``, ``decode_batch_mean``...), for a DataFrame or JSON."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    # the old names, for one release (a DeprecationWarning each time)
    ttft_s = deprecated_property("SteadyState", "ttft_s")
    tpot_s = deprecated_property("SteadyState", "tpot_s")
    e2e_s = deprecated_property("SteadyState", "e2e_s")
    n_decode = deprecated_property("SteadyState", "n_decode")
    throughput_rps = deprecated_property("SteadyState", "throughput_rps")
    throughput_output_tokens_per_s = deprecated_property("SteadyState", "throughput_output_tokens_per_s")


def steady_state(step_model: Any, concurrency: ArrayLike, isl: ArrayLike | None = None,
                 osl: ArrayLike | None = None, engine: Any = "vllm",
                 think_time: ArrayLike = 0.0, iterations: int = 60, schedulers: ArrayLike = 1,
                 sync_fraction: ArrayLike | None = None, prefix_hit_rate: ArrayLike | None = None,
                 rtol: float = 0.0, max_num_batched_tokens: ArrayLike | None = None) -> SteadyState:
    """Mean TTFT, TPOT and throughput of one replica at closed-loop concurrency C (see module doc).

    Parameters
    ----------
    step_model : StepModelLike | Mapping
        Per-replica step model (or ``StepModel`` keyword arguments).
    concurrency : array_like
        Clients C (each with one request in flight, or thinking).
    isl, osl : array_like | None
        Prompt and output tokens (fixed; osl >= 2: a prefill-only load has no decode phase to model).
        A :class:`Workload` with fixed lengths may be passed as ``isl`` instead (its think time is
        used too).
    engine : Engine | EngineProfile | str
        Serving engine (:class:`perfmodel.engine.Engine`; a name or profile is loaded with
        :meth:`~perfmodel.engine.Engine.load`, so ``"vllm"`` carries the fitted terms and
        ``"vllm-preset"`` does not). Its step terms enter every step time, its request overhead is
        time the client spends outside the engine (think time) and, with ``first_token_steps`` mean
        decode steps, is added to the TTFT.
    think_time : array_like
        Client think time Z [s] (broadcast with ``concurrency``), besides the engine's request overhead.
    iterations : int
        Fixed-point iterations (at most).
    rtol : float
        Stop once no batch n changes by more than this fraction in an iteration (default 0: run every
        iteration unless n is an exact fixed point, which more iterations would not change).
    schedulers : array_like
        Independent schedulers S in the replica (attention-DP ranks), each with the engine's token
        budget and sequence limit: the replica steps S·B tokens and holds S·``max_num_seqs``
        sequences, while one prompt's chunk stays within one rank's budget B.
    sync_fraction : array_like, optional
        How synchronised the clients' arrivals are, 0 (spread out) to 1 (every prompt arrives with its
        wave of C): weight s of the wave wait W of :mod:`perfmodel.serving.waves`, which is added to
        the think time and to the TTFT. Default: the engine's fitted value (0 for uncalibrated engines).
    prefix_hit_rate : array_like, optional
        Share h of each prompt found in the prefix cache, 0 to < 1 (default: the workload's explicit
        rate, or :func:`perfmodel.serving.reuse.expected_hit_rate` of its shared prefixes with the
        replica's whole KV capacity, else 0):
        only (1 − h)·I tokens are computed, after h·I cached ones that their attention reads; the KV
        context is unchanged.
    max_num_batched_tokens : array_like, optional
        Token budget B of one scheduler [tokens] (broadcast with ``concurrency``), where a launch sets
        its own (TensorRT-LLM ``--max_num_tokens``, vLLM ``--max-num-batched-tokens``); default: the
        engine profile's ``max_num_batched_tokens``.

    Returns
    -------
    SteadyState
    """
    w = None
    if isinstance(isl, Workload):
        w = isl
        isl, osl = w.isl.value, w.osl.value + w.reasoning_tokens.value  # type: ignore[union-attr]
        think_time = w.arrival.think_time
        if w.sessions is not None:
            raise ConfigError("sessions: the steady state takes one prompt length; a workload whose prompts "
                              "grow turn by turn is answered by simulate")
        if prefix_hit_rate is None and not w.has_reuse:
            prefix_hit_rate = w.prefix_hit_rate
    concurrency = checks.reals(concurrency, "concurrency (clients per replica)", 0, lo_open=True)
    think_time = checks.reals(think_time, "think_time [s]", 0)
    isl, osl = (None if v is None else checks.reals(v, name, 1) for v, name in ((isl, "isl"), (osl, "osl")))
    serving_engine = with_workload_acceptance(Engine.load(engine), None if w is None else w.spec_acceptance)
    model = serving_engine.step(resolve_step_model(step_model))
    eng = serving_engine.profile
    if w is not None and prefix_hit_rate is None and w.has_reuse:
        prefix_hit_rate = expected_hit_rate(w, float(model.kv_capacity_tokens) * eng.kv_capacity_fraction)
    if sync_fraction is None:
        sync_fraction = serving_engine.terms.sync_fraction
    C, Isl, Osl, Z, S, sync, hit, B_rank = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (
        concurrency, isl, osl, think_time, schedulers, sync_fraction,
        0.0 if prefix_hit_rate is None else prefix_hit_rate,
        eng.max_num_batched_tokens if max_num_batched_tokens is None else max_num_batched_tokens)))
    if not np.all(B_rank >= 1):
        raise ConfigError(f"max_num_batched_tokens: must be >= 1 token, got {max_num_batched_tokens!r}")
    if not np.all((hit >= 0) & (hit < 1)):
        raise ConfigError(f"prefix_hit_rate: must be within [0, 1), got {prefix_hit_rate!r}")
    if not np.all(S >= 1):
        raise ConfigError(f"schedulers: must be >= 1, got {schedulers!r}")
    if not np.all((sync >= 0) & (sync <= 1)):
        raise ConfigError(f"sync_fraction: must be within [0, 1], got {sync_fraction!r}")
    if not np.all(Osl >= 2):
        raise ConfigError(f"osl: the steady state needs at least 2 output tokens (a decode phase), got "
                          f"{osl!r}; a prefill-only load (osl = 1) is answered by simulate")
    if not np.all(Z >= 0):
        raise ConfigError(f"think_time: must be >= 0 s, got {think_time!r}")
    if not np.all(C >= 1):
        raise ConfigError(f"concurrency: must be >= 1 client, got {concurrency!r}")
    Z = Z + serving_engine.request_overhead   # the request's time outside the engine's steps
    # share of the clients that are *other* clients: what a request meets in the engine
    others = (C - 1.0) / C
    B = B_rank * S
    over_step, over_seq = eng.step_overhead, eng.seq_overhead
    wave = sync * wave_wait(model, C, Isl, eng, S, B_rank) if np.any(sync > 0) else np.zeros_like(C)
    Z = Z + wave   # waiting for its wave, a client is outside the engine's decode batch
    cbar = Isl + Osl / 2.0   # decode context: the whole prompt, cached part included
    Q0 = np.floor(hit * Isl)   # cached prompt tokens: attended, not computed
    Inew = Isl - Q0            # prompt tokens computed
    kv_cap = np.asarray(model.kv_capacity_tokens, dtype=float) * eng.kv_capacity_fraction
    # KV blocks of bs tokens: a reserved request holds ceil((I + O)/bs) whole blocks; a growing one
    # wastes half a block on average besides its mean context
    bs = float(eng.kv_block_size)
    per_seq_kv = np.ceil((Isl + Osl) / bs) * bs if eng.kv_admission == "reserve_full" else cbar + (bs - 1) / 2
    caps = {
        "max_num_seqs": float(eng.max_num_seqs) * S,
        "kv_cache": kv_cap / per_seq_kv,
        "prefill_budget": (B * (Osl - 1) / (Inew + Osl - 1) if eng.chunked_prefill or eng.policy == "prefill_first"
                           else np.where(Inew <= B_rank, B * (Osl - 1) / (Inew + Osl - 1), S * (Osl - 1))),
    }
    n_cap = np.minimum.reduce(list(caps.values()))
    prefill_first = eng.policy == "prefill_first"

    def times(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # what one request meets: the other clients' decodes while it prefills (n_o), a decode
        # batch that holds itself while it decodes (n_seen, size-biased), the others' prompts
        n_o = n * others
        n_seen = np.minimum(1.0 + n_o, np.maximum(n_cap, n))
        lam = n_o / (Osl - 1)                     # other prompts arriving per decode step
        pbar = lam * Inew                         # their computed prompt tokens per decode step
        t_dec = model.step_time(n_seen, cbar, 0.0, 0.0) + over_step + over_seq * n_seen
        if prefill_first:
            k = np.ceil(Inew / B_rank)
            nu = np.maximum(lam * k, pbar / B)  # prefill-only steps per decode step
            P = np.clip(np.where(nu > 0, pbar / np.maximum(nu, 1e-12), np.minimum(Inew, B_rank)), 1.0, B)
            prompts = np.maximum(P / Inew, 1.0)
            q = Q0 + np.where(P > Inew, -(prompts - 1) * Inew / 2, np.maximum(Inew - P, 0) / 2)
            t_pre = prefix_step_time(model, 0.0, 0.0, P, q) + over_step + over_seq * prompts
            tpot = t_dec + nu * t_pre
            # the prompt shares its prefill step with those that arrived in the same decode step
            m = np.minimum(1.0 + lam, np.maximum(B / Inew, 1.0))
            service = prefill_batch_time(model, eng, Inew, np.where(k > 1, 1.0, m), Q0, B_rank)
            t_wait = t_dec
        else:
            b = np.maximum(B - n_o, 1.0)
            s = np.minimum(Inew, b / S) if eng.chunked_prefill else Inew
            k = np.ceil(Inew / s)                  # steps per prompt (the last chunk may be partial)
            phi = np.minimum(pbar / s, 1.0)      # fraction of steps carrying prompt work
            chunk = np.where(pbar > s, np.minimum(pbar, b), s)
            prompts = np.maximum(chunk / Inew, 1.0)
            q = Q0 + np.where(chunk > Inew, -(prompts - 1) * Inew / 2, np.maximum(Inew - s, 0) / 2)
            def mixed(p, q, seqs, decodes):
                """A step of ``decodes`` decodes and p prompt tokens from ``seqs`` prompts, prefix q."""
                return prefix_step_time(model, decodes, cbar, p, q) + over_step + over_seq * (decodes + seqs)

            t_mix = mixed(chunk, q, prompts, n_seen)
            tpot = phi * t_mix + (1 - phi) * t_dec
            # one-step prompts share their step with the others that arrived in the same step
            # (size-biased: 1 + lam prompts); multi-step prompts take k budget-limited steps
            m = np.minimum(1.0 + lam, np.maximum(b / Inew, 1.0))
            t_one = mixed(m * Inew, Q0 - (m - 1) * Inew / 2, m, n_o)
            # multi-step prompts: k - 1 budget-limited steps (own chunks after (k - 2)s/2 cached
            # tokens on average), then the remainder r after (k - 1)s cached tokens, in a step the
            # other prompts in flight fill up to pbar tokens; prefixes are attention-equivalent
            # (the prompt's own tokens' prefix weighted by their share of the step)
            t_full = mixed(chunk, (Q0 + np.maximum(k - 2, 0) * s / 2) * s / chunk, prompts, n_o)
            r = Inew - (k - 1) * s
            last = np.minimum(np.maximum(r, pbar), b)
            t_last = mixed(last, r * (Q0 + (k - 1) * s - (last - r)) / last, np.maximum(last / Inew, 1.0), n_o)
            service = np.where(k > 1, (k - 1) * t_full + t_last, t_one)
            t_wait = t_dec
        # the arrival waits for the step in progress, if the other clients keep the engine busy
        # (each independently inside it a share n/C of the time): in a closed loop without think
        # time a whole (decode) step, since the next step starts at the completion that triggers
        # the arrival; half a mean step otherwise
        busy = 1.0 - (1.0 - np.minimum(n / C, 1.0)) ** (C - 1.0)
        ttft = service + busy * np.where(Z == 0, t_wait, tpot / 2)
        return tpot, ttft

    # the client sees its tokens k steps late; a step lasts E TPOTs (E tokens per step, speculation)
    E = tokens_per_step(model)
    late = serving_engine.terms.first_token_steps * E
    n = np.minimum(C, n_cap)
    for _ in range(iterations):
        tpot, ttft = times(np.maximum(n, 1e-6))
        dec_time = (Osl - 1) * tpot
        n_new = np.minimum(C * dec_time / (ttft + dec_time + Z + late * tpot), n_cap)
        if np.array_equal(n_new, n):   # a fixed point (e.g. a binding cap): more iterations change nothing
            break
        if rtol > 0 and np.all(np.abs(n_new - n) <= rtol * np.abs(n)):
            n = 0.5 * n + 0.5 * n_new
            break
        n = 0.5 * n + 0.5 * n_new
    n = np.maximum(n, 1e-6)
    tpot, ttft_service = times(n)
    X = n / ((Osl - 1) * tpot)
    ttft = np.maximum(ttft_service, C / X - (Osl - 1) * tpot - Z - late * tpot)
    names = np.array(["clients", *caps])
    which = np.stack([np.full_like(C, np.inf)] + [np.broadcast_to(v, C.shape) for v in caps.values()])
    bound = np.where(n >= 0.999 * n_cap, np.argmin(which[1:], axis=0) + 1, 0)
    ttft = ttft + wave + serving_engine.ttft_added(tpot, E)
    return SteadyState(ttft_mean_s=ttft, tpot_mean_s=tpot, e2e_mean_s=ttft + (Osl - 1) * tpot, requests_per_s=X,
                       output_tokens_per_s=X * Osl, decode_batch_mean=n, limited_by=names[bound])
