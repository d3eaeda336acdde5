"""Per-request state of a simulation, kept as plain Python lists indexed by request id.

Lists (not numpy arrays, not one object per request) because the event loop reads and writes single
elements, which is fastest on lists; they are turned into numpy arrays once, in the result.
"""

from __future__ import annotations

import math

import numpy as np

#: Final status codes of a request (``SimulationResult.status``).
COMPLETED, CANCELLED, REJECTED, IN_FLIGHT = 0, 1, 2, 3
STATUS_NAMES = ("completed", "cancelled", "rejected", "in_flight")

#: Where a request is on its replica.
NOWHERE, WAITING, PREFILL, DECODE, TRANSFER, DONE = 0, 1, 2, 3, 4, 5

NAN = math.nan


class RequestTable:
    """Columns of per-request state; grows when a closed loop or a horizon needs more requests."""

    def __init__(self) -> None:
        self.n = 0
        # inputs
        self.isl: list[int] = []
        self.out: list[int] = []        # total output tokens = reasoning + answer
        self.osl: list[int] = []        # answer tokens
        self.reason: list[int] = []     # reasoning tokens
        self.arrival: list[float] = []
        self.deadline: list[float] = []
        # progress
        self.status: list[int] = []
        self.where: list[int] = []
        self.gen: list[int] = []
        self.pf_done: list[int] = []
        self.pf_target: list[int] = []
        self.direct: list[bool] = []    # arrives with its KV (P/D decode pool)
        self.blocks: list[int] = []     # KV blocks held while prefilling / reserved
        self.kv0: list[int] = []
        self.end_g: list[int] = []
        self.replica: list[int] = []
        self.preempt: list[int] = []
        # prefix reuse (perfmodel.serving.prefixcache): owners are 2·pool id / 2·session + 1, -1 = none
        self.pown: list[int] = []       # owner of the shared prefix
        self.plen: list[int] = []       # its length in this prompt [tokens]
        self.sown: list[int] = []       # owner of the rest: the session history, or the request own
        self.slen: list[int] = []       # reusable history at the start of this prompt [tokens]
        self.keep: list[int] = []       # tokens left cached at completion for the next turn
        self.sess: list[int] = []       # session id (-1: none)
        self.turn: list[int] = []       # turn within the session (0-based)
        self.cblk: list[int] = []       # blocks this request uses from its replica's cache
        self.hit: list[int] = []        # prompt tokens found cached when first scheduled
        # times [s]
        self.sched: list[float] = []
        self.first: list[float] = []
        self.finish: list[float] = []

    def extend(self, isl: np.ndarray, osl: np.ndarray, reason: np.ndarray,
               arrival: np.ndarray | None = None) -> None:
        """Append requests with the given lengths (and arrival times, open loop)."""
        k = len(isl)
        isl_l = [int(x) for x in isl]
        osl_l = [int(x) for x in osl]
        rea_l = [int(x) for x in reason]
        self.isl += isl_l
        self.osl += osl_l
        self.reason += rea_l
        self.out += [a + b for a, b in zip(osl_l, rea_l, strict=True)]
        self.arrival += [float(x) for x in arrival] if arrival is not None else [NAN] * k
        self.deadline += [math.inf] * k
        self.status += [IN_FLIGHT] * k
        self.where += [NOWHERE] * k
        self.gen += [0] * k
        self.pf_done += [0] * k
        self.pf_target += [0] * k
        self.direct += [False] * k
        self.blocks += [0] * k
        self.kv0 += [0] * k
        self.end_g += [-1] * k
        self.replica += [-1] * k
        self.preempt += [0] * k
        for col in (self.pown, self.sown, self.sess):
            col += [-1] * k
        for col in (self.plen, self.slen, self.keep, self.turn, self.cblk, self.hit):
            col += [0] * k
        self.sched += [NAN] * k
        self.first += [NAN] * k
        self.finish += [NAN] * k
        self.n += k
