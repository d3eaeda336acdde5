"""One replica's iteration-level scheduler: which work goes into the next forward step.

At every step boundary the replica composes a step from its running sequences and its FCFS waiting
queue, following its :class:`~perfmodel.engine.profile.EngineProfile`:

``decode_first`` (vLLM V1, TensorRT-LLM)
    1. one token for every decoding sequence (if the KV cache cannot grow, the newest running request is
       preempted and will recompute its prompt and the tokens it already generated);
    2. prompt chunks of running (partially prefilled) requests, then newly admitted requests, until the
       token budget ``max_num_batched_tokens``, ``max_num_seqs`` or the free KV blocks run out (no new
       admissions in a step that preempted).
``prefill_first`` (SGLang)
    if any prompt work can be scheduled, the step is prefill-only (decodes wait); otherwise a decode step.

Without chunked prefill a prompt is scheduled whole; one larger than the budget is allowed when it is
the only prompt of the step (otherwise it could never run). Decode-only stretches are planned as runs of
K steps at once (until the next completion or KV-block exhaustion) and cut short when an arrival could
change the composition, so the loop costs O(events), not O(tokens).

Prefix cache (workloads with ``prefix`` or ``sessions``; :mod:`perfmodel.serving.prefixcache`): an
admitted prompt pins its leading cached blocks and computes the rest (its attention still reads them);
when its prompt is computed, its whole keyed blocks join the cache, shared by later prompts; a finished
or preempted sequence unpins them (a finished session turn also leaves its answer's blocks), so a
preempted request recomputes only what was evicted meanwhile. Idle cached blocks count as used KV and
are evicted LRU when a step needs room. Without reuse no cache exists and nothing changes. An explicit
``prefix_hit_rate`` instead treats a fresh prompt's first ``floor(h·isl / bs)·bs`` tokens as cached.

Roles: ``both`` (aggregated serving), ``prefill`` (P/D prefill pool: requests leave after their first
token, to be transferred) and ``decode`` (P/D decode pool: requests arrive with their KV cache).
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

from .kvcache import DecodeSet, SharedDecodeSet
from .prefixcache import INDEX_BITS, PrefixCache
from .state import CANCELLED, COMPLETED, DECODE, DONE, IN_FLIGHT, PREFILL, WAITING

if TYPE_CHECKING:
    from .simulator import _Sim

#: Longest run of decode steps planned at once (longer stretches are simply re-planned).
MAX_RUN = 4096


class Replica:
    """Scheduler state of one replica (see the module docstring)."""

    def __init__(self, idx: int, sim: _Sim, timer, engine, kv_tokens: int, role: str = "both") -> None:
        self.idx = idx
        self.sim = sim
        self.R = sim.req
        self.timer = timer
        self.role = role
        self.bs = engine.kv_block_size
        self.hit = float(sim.w.prefix_hit_rate)   # share of a fresh prompt in the prefix cache
        self.total_blocks = int(kv_tokens // self.bs)
        self.reserve = engine.kv_admission == "reserve_full"
        self.prefill_first = role == "prefill" or (role == "both" and engine.policy == "prefill_first")
        self.chunked = engine.chunked_prefill
        self.budget = engine.max_num_batched_tokens
        self.max_seqs = engine.max_num_seqs
        self.waiting: deque[int] = deque()
        self.n_wait = 0
        self.running: list[int] = []
        self.prefilling: list[int] = []
        self.cache = PrefixCache() if sim.w.has_reuse and role != "decode" else None
        if self.cache is None:
            self.dec = DecodeSet(self.bs, self.R.kv0, self.R.end_g)
        else:
            self.dec = SharedDecodeSet(self.bs, self.R.kv0, self.R.end_g, self.R.cblk)
            self.free_blocks = self._free_blocks_cached   # type: ignore[method-assign]
        self.pf_blocks = 0
        self.reserved = 0
        self.hold = 0             # blocks the decodes of the step being composed will take
        # current plan
        self.busy = False
        self.plan_end = float("inf")
        self.t0 = 0.0
        self.run = False          # the plan is a run of decode steps (else one step)
        self.alpha = 0.0          # run: first step time [s]
        self.beta = 0.0           # run: step time increase per step [s]
        self.K = 0
        self.chunks: list[tuple[int, int]] = []
        self.step_dec = 0
        self.interruptible = False
        # statistics
        self.steps = 0
        self.busy_time = 0.0
        self.last_dec_end = float("nan")
        self.itl: list[tuple[float, float, int, int, float]] = []
        self.itl_single: list[tuple[float, int]] = []

    # -- bookkeeping ------------------------------------------------------------------------
    def load(self) -> int:
        """Requests on this replica (running + waiting), the least-loaded router's key."""
        return len(self.running) + self.n_wait

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.bs)

    def free_blocks(self) -> int:
        """KV blocks not held by any request, less those kept for this step's decode tokens."""
        if self.reserve:
            return self.total_blocks - self.reserved
        return self.total_blocks - self.dec.nblocks - self.pf_blocks - self.hold

    def _free_blocks_cached(self) -> int:
        """:meth:`free_blocks` of a replica with a prefix cache: less the pinned cached blocks (idle ones
        count as free; they are evicted when taken, :meth:`_trim`)."""
        if self.reserve:
            free = self.total_blocks - self.reserved
        else:
            free = self.total_blocks - self.dec.nblocks - self.pf_blocks - self.hold
        return free - self.cache.pinned

    def fits_ever(self, rid: int) -> bool:
        """Whether the request's full KV (prompt + output) fits this replica's cache at all."""
        return self.blocks_for(self.R.isl[rid] + self.R.out[rid]) <= self.total_blocks

    def enqueue(self, rid: int, now: float) -> None:
        """Put an arrived (or transferred) request at the back of the waiting queue."""
        self.R.where[rid] = WAITING
        self.R.replica[rid] = self.idx
        self.waiting.append(rid)
        self.n_wait += 1
        if not self.busy:
            self.start(now)
        elif self.interruptible:
            self._cut(now)

    def cancel_waiting(self) -> None:
        """A waiting request was cancelled (it is dropped lazily from the queue)."""
        self.n_wait -= 1

    def _end(self, m: int) -> float:
        """End time of step ``m`` (1-based) of the current decode run [s]."""
        return self.t0 + m * self.alpha + 0.5 * self.beta * m * (m - 1)

    def _steps_at(self, t: float, first_after: bool) -> int:
        """Run steps ending by ``t`` (``first_after=False``) or up to the first ending at/after ``t``."""
        a, b, K = self.alpha, self.beta, self.K
        x = t - self.t0
        if b == 0.0:
            m = x / a
        else:
            A = a - 0.5 * b
            disc = A * A + 2.0 * b * x
            m = (-A + math.sqrt(disc)) / b if disc >= 0 else K
        m = min(max(int(m), 0), K)
        end = self._end
        if first_after:
            while m < K and end(m) < t:
                m += 1
            while m > 1 and end(m - 1) >= t:
                m -= 1
            return max(m, 1)
        while m < K and end(m + 1) <= t:
            m += 1
        while m > 0 and end(m) > t:
            m -= 1
        return m

    def _cut(self, t: float) -> None:
        """End the planned decode run at the first step boundary at or after ``t``."""
        self.interruptible = False
        if not self.run or self.K <= 1:
            return
        m = self._steps_at(t, True)
        if m < self.K:
            self.K = m
            self.plan_end = self._end(m)

    # -- preemption ------------------------------------------------------------------------------
    def _preempt_one(self) -> bool:
        R = self.R
        while self.running:
            rid = self.running.pop()
            if R.where[rid] == DECODE:
                R.gen[rid] = R.out[rid] - (R.end_g[rid] - self.dec.g)
                self.dec.remove(rid)
                if self.reserve:
                    self.reserved -= R.blocks[rid]
            elif R.where[rid] == PREFILL:
                self.pf_blocks -= R.blocks[rid]
                self.prefilling.remove(rid)
            else:
                continue
            R.blocks[rid] = 0
            if self.cache is not None:
                self._uncache(rid, False)
            if R.status[rid] != IN_FLIGHT:  # cancelled while prefilling: just drop it
                R.where[rid] = DONE
                self.sim.pending_cancels -= 1
                return True
            R.where[rid] = WAITING
            R.pf_done[rid] = 0
            R.direct[rid] = False
            R.preempt[rid] += 1
            self.waiting.appendleft(rid)
            self.n_wait += 1
            return True
        return False

    # -- prefix cache ------------------------------------------------------------------------------
    def _keys(self, rid: int, a: int, b: int) -> list[int]:
        """Cache keys of the request's blocks ``a..b-1`` that have one: the shared prefix's, then those
        of the rest (its session's history, or its own)."""
        R = self.R
        po, so = R.pown[rid], R.sown[rid]
        pb = R.plen[rid] // self.bs if po >= 0 else 0
        keys = list(range((po << INDEX_BITS) + a, (po << INDEX_BITS) + min(b, pb))) if a < pb else []
        if so >= 0 and b > pb:
            keys += range((so << INDEX_BITS) + max(a, pb), (so << INDEX_BITS) + b)
        return keys

    def _reusable(self, rid: int, target: int) -> int:
        """Leading blocks of a prompt of ``target`` tokens that may be cached (one token is computed):
        the shared prefix, the session's history, and after a preemption the request's own blocks."""
        R = self.R
        n = R.plen[rid] if R.pown[rid] >= 0 else 0
        if R.sown[rid] >= 0:
            n = max(n, R.slen[rid], target if R.gen[rid] else 0)
        return min(n, target - 1) // self.bs

    def _trim(self) -> None:
        """Evict idle cached blocks (LRU) until the blocks in use and cached fit the capacity."""
        over = len(self.cache.idle) - self.free_blocks()
        if over > 0:
            self.cache.evict(over)

    def _register(self, rid: int) -> None:
        """The request's prompt is computed: its whole keyed blocks join the cache (pinned by it).
        Thinking recomputed after a preemption is not registered: it is no part of any later prompt."""
        R = self.R
        cb = R.cblk[rid]
        end = R.pf_target[rid] if R.reason[rid] == 0 else min(R.pf_target[rid], R.isl[rid])
        keys = self._keys(rid, cb, end // self.bs)
        if not keys:
            return
        self.cache.pin(keys)
        n = len(keys)
        R.cblk[rid] = cb + n
        R.blocks[rid] -= n
        if self.reserve:
            self.reserved -= n
        else:
            self.pf_blocks -= n

    def _uncache(self, rid: int, finished: bool) -> None:
        """The request leaves (or is preempted): unpin its cached blocks; a finished turn leaves its
        history's blocks for the session's next turn. Blocks go idle last one first, so that a prompt's
        tail is evicted before its head (a head without its tail still hits, not the reverse)."""
        R, c = self.R, self.cache
        cb = R.cblk[rid]
        if finished and R.keep[rid]:
            kb = R.keep[rid] // self.bs
            if kb > cb:
                c.keep(self._keys(rid, cb, kb)[::-1])
        if cb:
            c.unpin(self._keys(rid, 0, cb)[::-1])
            R.cblk[rid] = 0
        if finished and R.keep[rid]:
            self._trim()

    # -- composing a step ---------------------------------------------------------------------
    def _admit_direct(self, now: float) -> None:
        """Admit waiting requests that arrive with their KV cache (P/D decode pool) into the decode set."""
        R, w = self.R, self.waiting
        while w and len(self.running) < self.max_seqs:
            rid = w[0]
            if R.status[rid] != IN_FLIGHT:
                w.popleft()
                continue
            if not R.direct[rid]:
                return
            kv = R.isl[rid] + R.gen[rid] - 1
            need = self.blocks_for(R.isl[rid] + R.out[rid]) if self.reserve else self.blocks_for(kv + 1)
            if need > self.free_blocks():
                return
            w.popleft()
            self.n_wait -= 1
            if self.reserve:
                R.blocks[rid] = need
                self.reserved += need
            if R.sched[rid] != R.sched[rid]:
                R.sched[rid] = now
            R.where[rid] = DECODE
            self.running.append(rid)
            self.dec.add(rid, kv, R.out[rid] - R.gen[rid])

    def _prefill_chunks(self, budget: int, now: float, admit: bool) -> list[tuple[int, int]]:
        """Prompt chunks for this step: running partial prefills first, then FCFS admissions."""
        R, bs = self.R, self.bs
        chunks: list[tuple[int, int]] = []
        for rid in self.prefilling:
            if budget <= 0:
                return chunks
            if R.status[rid] != IN_FLIGHT:
                continue
            done = R.pf_done[rid]
            take = R.pf_target[rid] - done
            if self.chunked and take > budget:
                take = budget
            if not self.reserve:
                held = R.blocks[rid] + R.cblk[rid]
                room = (held + self.free_blocks()) * bs - done
                if take > room:
                    if not self.chunked or room <= 0:
                        return chunks
                    take = room
                new = -(-(done + take) // bs) - held
                R.blocks[rid] += new
                self.pf_blocks += new
                if self.cache is not None:
                    self._trim()
            chunks.append((rid, take))
            budget -= take
        if not admit:
            return chunks
        w = self.waiting
        while w and budget > 0 and len(self.running) < self.max_seqs:
            rid = w[0]
            if R.status[rid] != IN_FLIGHT:
                w.popleft()
                continue
            if R.direct[rid]:
                break
            target = R.isl[rid] + R.gen[rid]
            c = self.cache
            if c is None:
                # a fresh prompt's cached prefix (whole KV blocks) is attended, not computed
                cached = (int(self.hit * R.isl[rid]) // bs) * bs if R.gen[rid] == 0 else 0
                hb = pin_cost = 0
            else:
                keys = self._keys(rid, 0, self._reusable(rid, target))
                hb, pin_cost = c.match(keys)
                cached = hb * bs
            take = target - cached
            if take > budget:
                if self.chunked:
                    take = budget
                elif chunks:
                    break
            if self.reserve:
                need = self.blocks_for(R.isl[rid] + R.out[rid]) - hb
            else:
                need = -(-(cached + take) // bs) - hb
            if need + pin_cost > self.free_blocks():
                break
            w.popleft()
            self.n_wait -= 1
            R.where[rid] = PREFILL
            R.pf_done[rid] = cached
            R.pf_target[rid] = target
            R.blocks[rid] = need
            if self.reserve:
                self.reserved += need
            else:
                self.pf_blocks += need
            if c is not None:
                c.pin(keys[:hb])
                R.cblk[rid] = hb
                self._trim()
            if R.sched[rid] != R.sched[rid]:
                R.sched[rid] = now
                R.hit[rid] = cached
            self.running.append(rid)
            self.prefilling.append(rid)
            chunks.append((rid, take))
            budget -= take
        return chunks

    def _make_room_for_decode(self) -> bool:
        """Preempt newest requests until one more decode step fits in the KV cache; True if any."""
        if self.reserve:
            return False
        pre = False
        while self.dec.n and self.dec.need(1) > self.free_blocks():
            if not self._preempt_one():
                break
            pre = True
        return pre

    def start(self, now: float) -> None:
        """Compose and start the next step (or run of decode steps) at time ``now``; idle if none."""
        self.busy = False
        self.plan_end = float("inf")
        if self.role == "decode":
            self._admit_direct(now)
        dec = self.dec
        if self.prefill_first:
            chunks = self._prefill_chunks(self.budget, now, True) if self.role != "decode" else []
            if chunks:
                self._start_mixed(now, chunks, 0)
                return
            if dec.n == 0:
                return
            preempted = self._make_room_for_decode()
            if dec.n:
                self._start_decode_run(now, 1 if preempted else MAX_RUN)
            return
        preempted = self._make_room_for_decode()
        n = dec.n
        self.hold = dec.need(1) if (n and not self.reserve) else 0
        chunks = self._prefill_chunks(self.budget - n, now, not preempted)
        self.hold = 0
        if chunks:
            self._start_mixed(now, chunks, n)
        elif n:
            self._start_decode_run(now, 1 if preempted else MAX_RUN)

    def _start_mixed(self, now: float, chunks: list[tuple[int, int]], n_dec: int) -> None:
        R = self.R
        p_tot = 0
        pairs = 0.0
        for rid, take in chunks:
            p_tot += take
            pairs += take * (R.pf_done[rid] + 0.5 * take)
        q_eq = pairs / p_tot - 0.5 * p_tot
        ctx = self.dec.mean_context() if n_dec else 0.0
        dt = self.timer.step(n_dec, ctx, p_tot, q_eq, n_dec + len(chunks))
        self.chunks = chunks
        self.step_dec = n_dec
        self.run = False
        self.K = 1
        self.t0 = now
        self.plan_end = now + dt
        self.busy = True
        self.interruptible = False

    def _start_decode_run(self, now: float, limit: int) -> None:
        dec = self.dec
        k = min(limit, dec.steps_to_next_finish())
        if not self.reserve:
            k = dec.steps_that_fit(self.free_blocks(), k)
        alpha, beta, k_lin = self.timer.decode_segment(dec.n, dec.mean_context())
        k = max(min(k, k_lin), 1)
        self.chunks = []
        self.step_dec = dec.n
        self.run = True
        self.alpha, self.beta, self.K = alpha, beta, k
        self.t0 = now
        self.plan_end = self._end(k)
        self.busy = True
        self.interruptible = self.n_wait == 0 and self.role != "prefill"

    # -- finishing a step -----------------------------------------------------------------------
    def commit(self, upto: float | None = None) -> None:
        """Apply the planned step(s) ending at ``plan_end`` (or only those ending by ``upto``).

        With ``upto`` (the horizon) nothing new is started afterwards.
        """
        R, dec, sim = self.R, self.dec, self.sim
        t = self.plan_end
        m = self.K
        if upto is not None and t > upto:
            if not self.run:
                return
            m = self._steps_at(upto, False)
            if m == 0:
                return
            t = self._end(m)
        self.steps += m
        self.busy_time += t - self.t0
        if self.step_dec:
            prev = self.last_dec_end if self.last_dec_end == self.last_dec_end else self.t0
            if self.run:
                self.itl.append((self.alpha, self.beta, m, self.step_dec, self.t0 - prev))
            else:
                self.itl_single.append((t - prev, self.step_dec))
            self.last_dec_end = t
            dec.advance(m)
            if self.cache is not None:
                self._trim()
            for rid in dec.pop_finished():
                R.gen[rid] = R.out[rid]
                self._finish(rid, t, True)
        for rid, take in self.chunks:
            if R.status[rid] != IN_FLIGHT or R.where[rid] != PREFILL:
                continue
            R.pf_done[rid] += take
            if R.pf_done[rid] < R.pf_target[rid]:
                continue
            R.gen[rid] += 1
            self.prefilling.remove(rid)
            if self.cache is not None:
                self._register(rid)
            if self.role == "prefill":
                self._release(rid)
                sim.prefilled(rid, t)
                continue
            if R.first[rid] != R.first[rid]:
                R.first[rid] = t
            if R.gen[rid] >= R.out[rid]:
                self._finish(rid, t, False)
                continue
            if not self.reserve:
                self.pf_blocks -= R.blocks[rid]
                R.blocks[rid] = 0
            R.where[rid] = DECODE
            dec.add(rid, R.pf_target[rid], R.out[rid] - R.gen[rid])
        if sim.pending_cancels and self.prefilling:
            self._drop_cancelled()
        if dec.n == 0:
            self.last_dec_end = float("nan")
        self.busy = False
        self.plan_end = float("inf")
        if upto is None:
            self.start(t)

    def _release(self, rid: int, finished: bool = False) -> None:
        """Free the KV blocks of a request leaving the replica (prefilling or decoding)."""
        R = self.R
        if R.where[rid] == DECODE:
            self.dec.remove(rid)
        if self.reserve:
            self.reserved -= R.blocks[rid]
        elif R.where[rid] == PREFILL:
            self.pf_blocks -= R.blocks[rid]
        R.blocks[rid] = 0
        if self.cache is not None:
            self._uncache(rid, finished)
        R.where[rid] = DONE
        self.running.remove(rid)

    def _finish(self, rid: int, t: float, decoded: bool) -> None:
        R = self.R
        if decoded:  # already out of the decode set (pop_finished)
            if self.reserve:
                self.reserved -= R.blocks[rid]
                R.blocks[rid] = 0
            if self.cache is not None:
                self._uncache(rid, True)
            R.where[rid] = DONE
            self.running.remove(rid)
        else:
            self._release(rid, True)
        self.sim.finished(rid, t, COMPLETED)

    def _drop_cancelled(self) -> None:
        """Remove prefilling requests cancelled by their first-token timeout."""
        R = self.R
        for rid in [r for r in self.prefilling if R.status[r] == CANCELLED]:
            self.prefilling.remove(rid)
            self._release(rid)
            self.sim.pending_cancels -= 1
