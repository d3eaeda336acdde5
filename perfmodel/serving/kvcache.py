"""The decoding set of a replica and its paged KV-cache blocks, advanced many steps at a time.

While a set of n sequences decodes, every step adds one token to each. Instead of touching every
sequence every step, the set keeps a step counter ``g`` and stores, per sequence, ``kv0 = kv − g``
(its KV length minus the counter) and the counter value at which it finishes. Advancing m steps is then
``g += m``; the first completion is the top of a heap.

Paged allocation: a sequence holding k tokens occupies ``ceil(k / bs)`` blocks. With
``kv0 = Q·bs + r`` this is ``Q + ceil((r + g) / bs)``, so the blocks of the whole set at any ``g`` follow
from a histogram of the residues r (``bs`` bins): :meth:`DecodeSet.blocks`. The number of steps that fit
in ``free`` blocks is found from the same histogram (:meth:`DecodeSet.steps_that_fit`).
"""

from __future__ import annotations

import heapq


class DecodeSet:
    """Sequences in the decode phase on one replica.

    Parameters
    ----------
    block_size : int
        Tokens per KV block (bs).
    kv0, end_g : list
        Shared per-request arrays (indexed by request id) this set writes into.
    """

    __slots__ = ("bs", "g", "n", "sum_kv0", "cnt", "qsum", "heap", "kv0", "end_g", "nblocks")

    def __init__(self, block_size: int, kv0: list, end_g: list) -> None:
        self.bs = int(block_size)
        self.g = 0                # decode steps executed by this replica
        self.n = 0                # sequences decoding
        self.sum_kv0 = 0          # sum of kv0 over the set
        self.cnt = [0] * self.bs  # histogram of kv0 mod bs
        self.qsum = 0             # sum of kv0 // bs
        self.heap: list[tuple[int, int]] = []
        self.nblocks = 0          # blocks held now (kept in step with g)
        self.kv0 = kv0
        self.end_g = end_g

    # -- membership -----------------------------------------------------------------------
    def add(self, rid: int, kv: int, steps_left: int) -> None:
        """Add request ``rid`` holding ``kv`` tokens that needs ``steps_left`` more decode steps."""
        k0 = kv - self.g
        self.kv0[rid] = k0
        end = self.g + steps_left
        self.end_g[rid] = end
        heapq.heappush(self.heap, (end, rid))
        self.n += 1
        self.sum_kv0 += k0
        self.cnt[k0 % self.bs] += 1
        self.qsum += k0 // self.bs
        self.nblocks += -(-kv // self.bs)

    def remove(self, rid: int) -> None:
        """Remove ``rid`` (completion or preemption); its heap entry goes stale."""
        k0 = self.kv0[rid]
        self.nblocks -= -(-(k0 + self.g) // self.bs)
        self.n -= 1
        self.sum_kv0 -= k0
        self.cnt[k0 % self.bs] -= 1
        self.qsum -= k0 // self.bs
        self.end_g[rid] = -1

    def advance(self, m: int) -> None:
        """Run ``m`` decode steps: every sequence gains ``m`` tokens."""
        if m:
            self.nblocks += self.need(m)
            self.g += m

    def pop_finished(self) -> list[int]:
        """Requests whose last decode step has been executed (``end_g <= g``), removed from the set."""
        out = []
        heap, g, end_g = self.heap, self.g, self.end_g
        while heap and heap[0][0] <= g:
            end, rid = heapq.heappop(heap)
            if end_g[rid] == end:
                self.remove(rid)
                out.append(rid)
        return out

    def steps_to_next_finish(self) -> int:
        """Decode steps until the earliest completion (>= 1), or a large number if none."""
        heap, end_g = self.heap, self.end_g
        while heap and end_g[heap[0][1]] != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] - self.g if heap else 1 << 40

    def kv_of(self, rid: int) -> int:
        """Tokens in the KV cache of ``rid`` now."""
        return self.kv0[rid] + self.g

    def mean_context(self) -> float:
        """Mean KV length attended by the next decode step [tokens] (stored tokens + the new one)."""
        return (self.sum_kv0 + self.n * self.g) / self.n + 1.0

    # -- blocks ---------------------------------------------------------------------------
    def blocks(self, g: int | None = None) -> int:
        """KV blocks held by the set when the counter is ``g`` (default: now)."""
        if g is None:
            return self.nblocks
        bs = self.bs
        if bs == 1:
            return self.sum_kv0 + self.n * g
        tot = self.qsum
        for r, c in enumerate(self.cnt):
            if c:
                tot += c * ((r + g + bs - 1) // bs)
        return tot

    def need(self, m: int) -> int:
        """Extra blocks needed to run ``m`` more steps.

        Every ``bs`` steps each sequence needs one block; in the remaining ``m mod bs`` steps, the
        sequences whose length is a multiple of ``bs`` or close enough to the next multiple.
        """
        bs = self.bs
        if bs == 1:
            return self.n * m
        a, rem = divmod(m, bs)
        out = self.n * a
        if rem:
            # a sequence whose length is r' (mod bs) needs one more block in the last partial
            # stretch of rem steps if r' == 0 or r' + rem > bs
            cnt, g = self.cnt, self.g
            out += cnt[(-g) % bs]
            for r in range(bs - rem + 1, bs):
                out += cnt[(r - g) % bs]
        return out

    def steps_that_fit(self, free: int, limit: int) -> int:
        """Largest m <= ``limit`` such that ``m`` more steps need at most ``free`` blocks."""
        n, bs = self.n, self.bs
        if n == 0 or n * (-(-limit // bs)) <= free:
            return limit
        lo, hi = 0, limit  # need(lo) <= free < need(hi)  (need is non-decreasing)
        if self.need(hi) <= free:
            return hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.need(mid) <= free:
                lo = mid
            else:
                hi = mid
        return lo


class SharedDecodeSet(DecodeSet):
    """A :class:`DecodeSet` whose sequences may use whole blocks held by the replica's prefix cache.

    ``shared`` (per request id, read; constant while the request decodes) is subtracted from the
    sequence's own blocks: ``blocks = ceil(kv / bs) − shared``. Growth per step is unchanged, so
    :meth:`~DecodeSet.need` and :meth:`~DecodeSet.steps_that_fit` are inherited. A separate class, so
    that the set of a replica without a prefix cache runs the plain (faster) methods.
    """

    __slots__ = ("shared", "sum_shared")

    def __init__(self, block_size: int, kv0: list, end_g: list, shared: list) -> None:
        super().__init__(block_size, kv0, end_g)
        self.shared = shared
        self.sum_shared = 0       # sum of shared over the set

    def add(self, rid: int, kv: int, steps_left: int) -> None:
        super().add(rid, kv, steps_left)
        sh = self.shared[rid]
        self.sum_shared += sh
        self.nblocks -= sh

    def remove(self, rid: int) -> None:
        super().remove(rid)
        sh = self.shared[rid]
        self.sum_shared -= sh
        self.nblocks += sh

    def blocks(self, g: int | None = None) -> int:
        return super().blocks(g) if g is None else super().blocks(g) - self.sum_shared
