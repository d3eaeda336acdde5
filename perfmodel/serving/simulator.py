"""Discrete-event simulation of LLM serving under load: :func:`simulate`.

The event loop advances, in time order, (a) external events from a heap — arrivals, first-token
timeouts, KV transfers between P/D pools — and (b) each replica's planned step or run of decode steps
(:mod:`perfmodel.serving.scheduler`). Its cost is O(events + prefill steps), not O(tokens).

Clock and definitions (all per request, seconds): arrival t0; ``sched`` = start of the first step that
computes any of its prompt (queueing delay = sched − t0); first token t1 = end of the step that computes
its last prompt chunk (TTFT = t1 − t0 includes queueing; P/D adds the KV transfer); last token tN;
TPOT = (tN − t1)/(N − 1) for N output tokens (reasoning + answer); E2E = tN − t0. Network and
tokenisation time are not modelled.

Prefix reuse (a workload's ``prefix`` / ``sessions``): each request is tagged with the shared prefix it
starts with and its session's reusable history; the replicas' prefix caches find what they hold.
Under P/D disaggregation only the prefill pool caches (prompts), and a request's whole prompt KV is
transferred to the decode pool, cached part included.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import checks
from ..engine.engine import Engine
from ..engine.profile import EngineProfile
from ..engine.speculative import with_workload_acceptance
from ..engine.step import tokens_per_step
from ..errors import ConfigError
from ..progress import Bar
from ..units import to_si
from .protocol import StepModelLike, resolve_step_model
from .ramp import mean_request_duration, mean_request_duration_disagg
from .ramp import resolve as resolve_ramp
from .result import SimulationResult
from .scheduler import Replica
from .state import CANCELLED, COMPLETED, DONE, IN_FLIGHT, PREFILL, REJECTED, TRANSFER, WAITING, RequestTable
from .steptable import StepTimer
from .workload import SLO, Workload, check_context, interarrivals, load_workload, read_trace, sample_lengths

ARRIVAL, TIMEOUT, XFER, ENTER = 0, 1, 2, 3
ROUTERS = ("least_loaded", "round_robin", "random", "session")
#: Requests simulated when neither ``requests`` nor ``horizon`` is given (here or in the workload).
DEFAULT_REQUESTS = 1000


@dataclass(frozen=True)
class Disaggregated:
    """Prefill/decode disaggregation: two pools with their own step models and engines.

    Prefill replicas run prompts only (prefill-only steps); a request's KV cache then travels to a
    decode replica in ``alpha + isl · kv_bytes_per_token / bandwidth`` seconds (prefill pool's bytes per
    token; transfers do not contend with each other). The first token reaches the client when the
    transfer completes. Without an explicit link the time is
    :func:`perfmodel.deployment.disagg.request_kv_transfer_time` of the prefill step model (its
    accelerator's scale-up or scale-out port), the one used by ``estimate`` and ``validate``.

    Attributes
    ----------
    prefill, decode : StepModelLike | Mapping
        Step models (or ``StepModel`` keyword arguments) of one replica of each pool.
    prefill_replicas, decode_replicas : int
        Replicas per pool.
    link_bandwidth : float | str, optional
        Bandwidth of one transfer [B/s]; default: the prefill accelerator's port × the sending devices
        (:func:`perfmodel.deployment.disagg.kv_transfer_link`).
    link_alpha : float | str, optional
        Fixed latency of one transfer [s]; default: that link's α.
    prefill_engine, decode_engine : EngineProfile | str | None
        Engines of the pools (default: the ``engine`` given to :func:`simulate`).
    """

    prefill: Any
    decode: Any
    prefill_replicas: int = 1
    decode_replicas: int = 1
    link_bandwidth: Any = None
    link_alpha: Any = None
    prefill_engine: Any = None
    decode_engine: Any = None


def timer_identity(model: Any) -> tuple[int, ...]:
    """What a step table depends on: the model, or for an engine-aware wrapper
    (:class:`perfmodel.engine.step.EngineStep`, made anew by each ``Engine.step`` call) the device model,
    the engine's fitted terms and its speculative decoding, which determine the wrapper's step times.

    Identities, not values: the cached timer holds the wrapper and so keeps all three alive.
    """
    inner = getattr(model, "device_model", None)
    terms = getattr(model, "engine_terms", None)
    if inner is None or terms is None:
        return (id(model),)
    return (id(inner), id(terms), id(getattr(model, "spec", None)))


def make_timer(model: StepModelLike, engine: EngineProfile, max_context: int, max_prefill: int,
               mode: str, cache: dict | None) -> StepTimer:
    """A :class:`StepTimer`, reused from ``cache`` for the same step model, engine, mode and table extent
    (one cache can serve every simulation of a step model under an engine).

    Only a timer with the same extent (largest context and prefill, which place the grid points) is
    reused, so a simulation gives the same figures whether its tables are new or cached.
    """
    max_context, max_prefill = max(int(max_context), 16), max(int(max_prefill), 1)
    key = (*timer_identity(model), id(engine), mode, max_context, max_prefill)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    timer = StepTimer(model, engine, max_context, mode=mode, max_prefill=max_prefill)
    if cache is not None:
        cache[key] = timer
    return timer


class _Sim:
    """State and event loop of one simulation run (internal)."""

    def __init__(self, workload: Workload, n_requests: int | None, horizon: float, seed: int,
                 router: str) -> None:
        self.w = workload
        self.req = RequestTable()
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.pending_cancels = 0
        self.horizon = horizon
        self.n_limit = n_requests
        self.closed = workload.is_closed_loop
        self.think = workload.arrival.think_time
        self.timeout = workload.timeout
        self.max_queue = workload.max_queue
        seeds = np.random.SeedSequence(seed).spawn(3)
        self.rng_len = np.random.default_rng(seeds[0])
        self.rng_arr = np.random.default_rng(seeds[1])
        self.rng_route = np.random.default_rng(seeds[2])
        self.router = router
        self.rr = 0
        self.issued = 0
        self.n_arrived = 0
        self.front: list[Replica] = []
        self.back: list[Replica] = []
        self.replicas: list[Replica] = []
        self.kv_bytes_prefill = 0.0
        self.link_bw = math.inf
        self.link_alpha = 0.0
        self.front_delay = 0.0       # engine request overhead: client send -> engine queue [s]
        self.first_token_steps = 0.0  # engine's late tokens: the client sees each k·E of its TPOTs late
        self.prefix = workload.prefix
        self.sessions = workload.sessions
        self.n_sessions = 0
        self.home: dict[int, Replica] = {}   # session -> front replica of its first turn (router "session")
        # an own stream, so that a workload without reuse draws exactly what it always drew
        self.rng_reuse = (np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[3])
                          if workload.has_reuse else None)

    # -- events -----------------------------------------------------------------------------
    def push(self, t: float, kind: int, rid: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, rid))

    def _route(self, pool: list[Replica]) -> Replica:
        n = len(pool)
        if n == 1:
            return pool[0]
        if self.router == "round_robin":
            self.rr += 1
            return pool[(self.rr - 1) % n]
        if self.router == "random":
            return pool[int(self.rng_route.integers(n))]
        start = self.rr % n
        self.rr += 1
        best, key = pool[start], pool[start].load()
        for i in range(1, n):
            r = pool[(start + i) % n]
            k = r.load()
            if k < key:
                best, key = r, k
        return best

    def _arrive(self, rid: int, t: float) -> None:
        """The client sends request ``rid`` at ``t``; it reaches the engine after the request overhead."""
        R = self.req
        R.arrival[rid] = t
        self.n_arrived = max(self.n_arrived, rid + 1)
        if self.timeout is not None:
            R.deadline[rid] = t + self.timeout
            self.push(t + self.timeout, TIMEOUT, rid)
        if self.front_delay > 0.0:
            self.push(t + self.front_delay, ENTER, rid)
        else:
            self._enter(rid, t)

    def _enter(self, rid: int, t: float) -> None:
        """Request ``rid`` reaches the engine's front replica pool at ``t``."""
        R = self.req
        if R.status[rid] != IN_FLIGHT:   # cancelled on its way in
            return
        if self.router == "session" and R.sess[rid] >= 0:
            rep = self.home.get(R.sess[rid]) or self._route(self.front)
            self.home[R.sess[rid]] = rep
        else:
            rep = self._route(self.front)
        R.replica[rid] = rep.idx
        if not rep.fits_ever(rid) or (self.back and not self.back[0].fits_ever(rid)):
            self.finished(rid, t, REJECTED)
            return
        if self.max_queue is not None and rep.n_wait >= self.max_queue:
            self.finished(rid, t, REJECTED)
            return
        rep.enqueue(rid, t)

    def _timeout(self, rid: int, t: float) -> None:
        R = self.req
        if R.status[rid] != IN_FLIGHT or (R.first[rid] == R.first[rid] and R.first[rid] <= t):
            return
        where = R.where[rid]
        if R.replica[rid] < 0:   # still on its way in (request overhead)
            R.where[rid] = DONE
        elif where == WAITING:
            self.replicas[R.replica[rid]].cancel_waiting()
            R.where[rid] = DONE
        elif where == PREFILL:
            self.pending_cancels += 1
        R.first[rid] = math.nan
        self.finished(rid, t, CANCELLED)

    def _transfer_done(self, rid: int, t: float) -> None:
        R = self.req
        if R.status[rid] != IN_FLIGHT:
            return
        rep = self._route(self.back)
        R.direct[rid] = True
        rep.enqueue(rid, t)

    # -- callbacks from replicas --------------------------------------------------------------
    def finished(self, rid: int, t: float, status: int) -> None:
        R = self.req
        R.status[rid] = status
        if status == COMPLETED and self.first_token_steps:
            # the client sees every token first_token_steps (k · E) of the request's TPOTs late
            n1 = R.gen[rid] - 1
            late = self.first_token_steps * ((t - R.first[rid]) / n1 if n1 > 0 else 0.0)
            R.first[rid] += late
            t += late
        R.finish[rid] = t
        if self.sessions is not None:
            more = status == COMPLETED and R.turn[rid] < self.sessions.turns - 1
            if self.closed:
                self._issue(t + self.think, rid if more else -1)
            elif more:
                self._issue(t + self.sessions.think_time, rid)
        elif self.closed:
            self._issue(t + self.think)

    def prefilled(self, rid: int, t: float) -> None:
        """A prefill-pool replica produced the first token of ``rid`` at ``t``; start the KV transfer."""
        R = self.req
        if R.gen[rid] >= R.out[rid]:
            R.first[rid] = t
            self.finished(rid, t, 0)
            return
        dt = self.link_alpha + R.pf_target[rid] * self.kv_bytes_prefill / self.link_bw
        R.first[rid] = t + dt
        R.where[rid] = TRANSFER
        self.push(t + dt, XFER, rid)

    # -- load generation --------------------------------------------------------------------------
    def _ensure(self, n: int) -> None:
        R = self.req
        if R.n >= n:
            return
        k = max(n - R.n, min(max(R.n, 256), 1 << 16))
        isl, osl, rea = sample_lengths(self.w, k, self.rng_len)
        R.extend(isl, osl, rea)
        self._tag_prefixes(R.n - k)

    def _tag_prefixes(self, lo: int, ids: np.ndarray | None = None) -> None:
        """Give requests ``lo..`` (not in sessions) their shared prefix, drawn or ``ids`` of a trace, and
        an owner of their own for the rest of the prompt (cached too, reused only by the request itself
        after a preemption)."""
        if self.prefix is None or self.sessions is not None:
            return
        R = self.req
        if ids is None:
            ids = self.rng_reuse.integers(self.prefix.pool, size=R.n - lo)
        S = self.prefix.tokens
        R.pown[lo:] = [2 * int(p) for p in ids]
        R.plen[lo:] = [min(S, x) for x in R.isl[lo:]]
        R.sown[lo:] = [2 * r + 1 for r in range(lo, R.n)]

    def _new_turn(self, rid: int, prev: int) -> None:
        """Make request ``rid`` the next turn of ``prev``'s session (or the first of a new one, prev < 0).

        Turn t + 1's prompt = turn t's prompt + answer + new user tokens; its reusable history is that
        prompt and answer (only the prompt after a reasoning turn, whose thinking is not resent).
        """
        R, ss = self.req, self.sessions
        if prev < 0:
            sid = self.n_sessions
            self.n_sessions += 1
            R.sess[rid], R.turn[rid], R.sown[rid] = sid, 0, 2 * sid + 1
            if self.prefix is not None:
                R.pown[rid] = 2 * int(self.rng_reuse.integers(self.prefix.pool))
                R.plen[rid] = min(self.prefix.tokens, R.isl[rid])
        else:
            user = int(ss.user_tokens.sample(1, self.rng_reuse)[0])
            R.sess[rid], R.turn[rid], R.sown[rid] = R.sess[prev], R.turn[prev] + 1, R.sown[prev]
            R.pown[rid], R.plen[rid] = R.pown[prev], R.plen[prev]
            R.slen[rid] = R.isl[prev] + (R.osl[prev] if R.reason[prev] == 0 else 0)
            R.isl[rid] = R.isl[prev] + R.osl[prev] + user
        if R.turn[rid] < ss.turns - 1 and R.reason[rid] == 0:
            R.keep[rid] = R.isl[rid] + R.osl[rid] - 1

    def _issue(self, t: float, prev: int = -1) -> None:
        if (self.n_limit is not None and self.issued >= self.n_limit) or t > self.horizon:
            return
        rid = self.issued
        self.issued += 1
        self._ensure(rid + 1)
        if self.sessions is not None:
            self._new_turn(rid, prev)
        self.push(t, ARRIVAL, rid)

    def _open_times(self, a: Any, n: int | None) -> np.ndarray:
        """Open-loop arrival times [s]: ``n`` of them, or all up to the horizon (n None)."""
        if n is not None:
            gaps = interarrivals(a, n, self.rng_arr)
            t = np.concatenate(([0.0], np.cumsum(gaps[:-1])))
        else:
            chunks, end = [], 0.0
            while end <= self.horizon:
                g = interarrivals(a, max(1024, int(a.rate * self.horizon * 0.2)), self.rng_arr)
                c = end + np.concatenate(([0.0], np.cumsum(g[:-1])))
                chunks.append(c)
                end = c[-1] + g[-1]
            t = np.concatenate(chunks)
        return t[: int(np.searchsorted(t, self.horizon, side="right"))]

    def generate_load(self) -> None:
        w, R = self.w, self.req
        a = w.arrival
        if self.sessions is not None and not self.closed:
            # sessions start at rate / turns; their later turns are issued as earlier ones end
            T = self.sessions.turns
            starts = a.model_copy(update={"rate": a.rate / T})
            n = None if self.n_limit is None else -(-self.n_limit // T)
            for t in self._open_times(starts, n):
                self._issue(float(t))
            return
        if a.process == "closed":
            n0 = a.concurrency if self.n_limit is None else min(a.concurrency, self.n_limit)
            for k in range(n0):
                self._issue(k * a.ramp_up / n0)
            return
        if a.process == "trace":
            tr = read_trace(w)
            t = tr["arrival_s"]
            n = len(t) if self.n_limit is None else min(len(t), self.n_limit)
            t = t[:n]
            n = int(np.searchsorted(t, self.horizon, side="right"))
            isl, osl, rea = sample_lengths(w, n, self.rng_len)
            isl = tr["isl"][:n] if "isl" in tr else isl
            osl = tr["osl"][:n] if "osl" in tr else osl
            rea = tr["reasoning_tokens"][:n] if "reasoning_tokens" in tr else rea
            osl = np.where(osl + rea < 1, 1, osl)
            R.extend(np.maximum(isl, 1), osl, rea, t[:n])
            self._tag_prefixes(0, tr["prefix_id"][:n] if "prefix_id" in tr else None)
        else:
            t = self._open_times(a, self.n_limit)
            isl, osl, rea = sample_lengths(w, len(t), self.rng_len)
            R.extend(isl, osl, rea, t)
            self._tag_prefixes(0)
        self.issued = R.n
        for rid in range(R.n):
            self.heap.append((R.arrival[rid], rid, ARRIVAL, rid))
        self.seq = R.n
        heapq.heapify(self.heap)

    # -- main loop ---------------------------------------------------------------------------------
    def run(self, progress: Callable[[float], None] | None = None) -> int:
        heap, reps = self.heap, self.replicas
        horizon = self.horizon
        inf = math.inf
        it = 0
        while True:
            te = heap[0][0] if heap else inf
            best, tr = None, inf
            for rep in reps:
                if rep.plan_end < tr:
                    best, tr = rep, rep.plan_end
            if te <= tr:
                if te > horizon or te == inf:
                    break
                t, _, kind, rid = heapq.heappop(heap)
                if kind == ARRIVAL:
                    self._arrive(rid, t)
                elif kind == ENTER:
                    self._enter(rid, t)
                elif kind == TIMEOUT:
                    self._timeout(rid, t)
                else:
                    self._transfer_done(rid, t)
            else:
                if tr > horizon:
                    break
                best.commit()
            it += 1
            if progress is not None and it % 4096 == 0:
                progress(self._fraction(min(te, tr)))
        if math.isfinite(horizon):
            for rep in reps:
                if rep.busy:
                    rep.commit(upto=horizon)
        return it

    def _fraction(self, t: float) -> float:
        if math.isfinite(self.horizon):
            return min(t / self.horizon, 1.0)
        done = sum(1 for s in self.req.status if s != IN_FLIGHT)
        return done / max(self.n_limit or 1, 1)


def simulate(step_model: StepModelLike | Mapping | Disaggregated, workload: Workload | str | dict,
             *, engine: Any = "vllm", replicas: int = 1,
             router: str = "least_loaded", seed: int = 0, requests: int | None = None,
             horizon: float | str | None = None, slo: SLO | dict | None = None,
             step_table: str = "table", timer_cache: dict | None = None,
             progress: bool | Callable[[float], None] | None = False) -> SimulationResult:
    """Simulate serving ``workload`` on ``replicas`` replicas with continuous batching.

    Parameters
    ----------
    step_model : StepModelLike | Mapping | Disaggregated
        Per-replica step model, ``StepModel`` keyword arguments (``{"model": "llama-3.1-8b",
        "hardware": "h100-sxm", "tp": 1}``) or a :class:`Disaggregated` pair of pools.
    workload : Workload | str | dict
        Load, lengths, timeout and SLO (a YAML path or mapping is loaded).
    engine : Engine | EngineProfile | str | dict
        Serving engine, loaded with :meth:`perfmodel.engine.Engine.load` (``"vllm"``, ``"sglang"``,
        ``"trtllm"`` carry the terms fitted on measured runs; ``"vllm-preset"``... do not; a YAML
        path, a profile). Its step terms enter every step time (:class:`perfmodel.engine.EngineStep`);
        its request overhead delays each request between the client and the engine, and the client
        sees every token ``first_token_steps`` engine steps late (k · E of the request's TPOTs, E the tokens
        a speculative step emits; both in the TTFT and E2E).
    replicas : int
        Identical replicas behind the router (aggregated serving; a :class:`Disaggregated` pair
        sets its own pool sizes).
    router : {"least_loaded", "round_robin", "random", "session"}
        Where each arrival goes; least-loaded = fewest running + waiting requests; ``session`` sends a
        session's later turns to the replica of its first (where its history is cached) and everything
        else least-loaded.
    seed : int
        Seed of the numpy Generators (lengths, arrivals and routing use independent streams, so two
        loads with the same seed see the same request lengths).
    requests : int | None
        Requests to send (open loop: arrivals; closed loop: total issued). Default: the workload's,
        else 1000 when no horizon is set.
    horizon : float | str | None
        Stop at this simulated time [s]; unfinished requests are reported ``in_flight``.
    slo : SLO | dict | None
        Objective used by ``summary()`` (default: the workload's).
    step_table : {"table", "exact"}
        Tabulate the step model (fast) or call it at every step.
    timer_cache : dict | None
        Reuse step tables between calls (pass the same dict).
    progress : bool | callable | None
        A progress bar of the share of the run done (:mod:`perfmodel.progress`: True always, None only
        when stderr is a terminal, False never), or a callable called with that share (0..1) now and then.

    Returns
    -------
    SimulationResult
        Per-request arrays, ``summary()``, ``to_dataframe()``.
    """
    wall0 = time.perf_counter()
    w = load_workload(workload)
    if slo is not None:
        w = w.replace(slo=slo)
    if router not in ROUTERS:
        raise ConfigError(f"router: expected one of {', '.join(ROUTERS)}, got {router!r}")
    replicas, seed = checks.count(replicas, "replicas"), checks.count(seed, "seed", 0, 2**63 - 1)
    check_context(w, getattr(step_model, "model", None))
    hz = w.horizon if horizon is None else to_si(horizon, "time", "horizon")
    n_req = checks.optional_count(requests if requests is not None else w.requests, "requests")
    if n_req is None and hz is None:
        n_req = DEFAULT_REQUESTS
    sim = _Sim(w, None if n_req is None else int(n_req), math.inf if hz is None else float(hz),
               int(seed), router)
    eng = with_workload_acceptance(Engine.load(engine), w.spec_acceptance)
    if isinstance(step_model, Disaggregated):
        d = step_model
        pe = Engine.load(d.prefill_engine) if d.prefill_engine is not None else eng
        de = Engine.load(d.decode_engine) if d.decode_engine is not None else eng
        pm, dm = pe.step(resolve_step_model(d.prefill)), de.step(resolve_step_model(d.decode))
        sim.kv_bytes_prefill = float(pm.kv_bytes_per_token)
        if d.link_bandwidth is None or d.link_alpha is None:
            if not hasattr(pm, "hardware"):
                raise ConfigError("Disaggregated: give link_bandwidth and link_alpha for a step model without "
                                  "hardware (the KV link is derived from the prefill accelerator's ports)")
            from ..deployment.disagg import kv_transfer_link

            total = int(d.prefill_replicas) * pm.devices + int(d.decode_replicas) * dm.devices
            link, senders = kv_transfer_link(pm, total)
        sim.link_bw = (link.bandwidth * senders if d.link_bandwidth is None
                       else to_si(d.link_bandwidth, "bandwidth", "link_bandwidth"))
        sim.link_alpha = link.alpha if d.link_alpha is None else to_si(d.link_alpha, "time", "link_alpha")
        if sim.link_bw <= 0:
            raise ConfigError(f"link_bandwidth: must be > 0, got {d.link_bandwidth!r}")
        pools = [(pm, pe, int(d.prefill_replicas), "prefill"), (dm, de, int(d.decode_replicas), "decode")]
        models = {"prefill": pm, "decode": dm}
        engines = {"prefill": pe, "decode": de}
        w, ramp = resolve_ramp(w, lambda: mean_request_duration_disagg(
            w, pm, dm, pe, de, int(d.prefill_replicas), int(d.decode_replicas),
            sim.kv_bytes_prefill / sim.link_bw, sim.link_alpha))
    else:
        m = eng.step(resolve_step_model(step_model))
        pools = [(m, eng, int(replicas), "both")]
        models, engines = {"both": m}, {"both": eng}
        w, ramp = resolve_ramp(w, lambda: mean_request_duration(w, m, eng, int(replicas)))
    sim.w = w
    sim.generate_load()
    R = sim.req
    max_ctx = max((a + b for a, b in zip(R.isl, R.out, strict=True)), default=16)
    max_ctx = max(max_ctx, int(_dist_max(w)), _session_max(w, R))
    front = pools[0][1]
    sim.front_delay = front.request_overhead
    # k engine steps late; one simulated decode step stands for 1/E of a speculative step
    sim.first_token_steps = front.terms.first_token_steps * float(tokens_per_step(models.get("decode", models.get("both"))))
    for model, served, count, role in pools:
        e = served.profile
        if count < 1:
            raise ConfigError(f"{role}_replicas: must be >= 1, got {count}")
        max_pf = e.max_num_batched_tokens if e.chunked_prefill else max(e.max_num_batched_tokens, max_ctx)
        timer = make_timer(model, e, max_ctx, max_pf, step_table, timer_cache)
        kv_tokens = int(float(model.kv_capacity_tokens) * e.kv_capacity_fraction)
        for _ in range(count):
            rep = Replica(len(sim.replicas), sim, timer, e, kv_tokens, role)
            sim.replicas.append(rep)
            (sim.back if role == "decode" else sim.front).append(rep)
    if callable(progress):
        iterations = sim.run(progress)
    else:
        with Bar(100, "simulate", progress, unit="%") as bar:
            iterations = sim.run((lambda share: bar.to(round(100 * share, 1))) if bar.shown else None)
    wall = time.perf_counter() - wall0
    res = SimulationResult.from_sim(sim, workload=w, engines=engines, models=models,
                                    router=router, seed=int(seed), wall_s=wall, iterations=iterations)
    if ramp is not None:
        res.meta["ramp_up"] = ramp.as_dict()
    return res


def _session_max(w: Workload, R: RequestTable) -> int:
    """Context of a session's last turn, from the longest drawn first prompt, answer and output and a
    generous user message (unbounded distributions: the largest of 4096 draws) [tokens]; 0 without
    sessions. Sizes the step tables, whose look-ups beyond their grid would clamp."""
    if w.sessions is None or R.n == 0:
        return 0
    user = int(w.sessions.user_tokens.sample(4096, np.random.default_rng(0)).max())
    return max(R.isl) + (w.sessions.turns - 1) * (max(R.osl) + user) + max(R.out)


def _dist_max(w: Workload) -> float:
    """Upper bound of prompt + output lengths where the distributions have one, else 0."""
    def top(d: Any) -> float:
        for attr in ("value", "high", "max"):
            v = getattr(d, attr, None)
            if v is not None:
                return float(v)
        return float(max(d.values)) if hasattr(d, "values") else 0.0
    out = top(w.osl) + top(w.reasoning_tokens)
    if w.sessions is None:
        return top(w.isl) + out
    # the last turn's prompt holds every earlier answer and user message
    return top(w.isl) + (w.sessions.turns - 1) * (top(w.osl) + top(w.sessions.user_tokens)) + out
