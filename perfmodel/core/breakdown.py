"""What a step's time is made of: per-op time parts grouped by op class, and the dominant term.

:class:`StepBreakdown` holds the costed ops of one step (:meth:`perfmodel.core.step.StepModel.breakdown`)
and forms its sums lazily; :class:`StackedRow` is one op's row of ops costed together in one pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .costs import OpTime
from .frozen import frozen

#: Names of the dominant term, by code (0 compute, 1 memory, 2 communication).
BOUNDS = np.array(["compute", "memory", "communication"])


@frozen
class PartSums:
    """Summed compute parts, memory parts and op totals of a set of ops [s]."""

    compute: np.ndarray
    memory: np.ndarray
    total: np.ndarray


def dominant_term(compute, memory, comm) -> np.ndarray:
    """'compute', 'memory' or 'communication': the largest of a step's summed parts [s]."""
    c, m, k = (np.asarray(x, float) for x in (compute, memory, comm))
    if not c.shape == m.shape == k.shape:
        c, m, k = np.broadcast_arrays(c, m, k)
    code = np.where(c >= m, 0, 1)
    code[(k > c) & (k > m)] = 2
    return BOUNDS[code]


@dataclass
class StepBreakdown:
    """Per op class time parts of a step [s] (arrays over operating points).

    ``compute``/``memory``/``overhead`` map op class -> summed parts; an op's time is the (smooth)
    maximum of compute and memory plus its serial kernels and overhead (:class:`~perfmodel.core.costs.OpTime`),
    so ``op_total`` (the sum of per-op times) is what adds up to ``total``. ``comm`` maps message name -> exposed time; ``step_overhead`` is the framework time.
    Sums are formed lazily: a million-point sweep only pays for the totals it reads.
    """

    ops: list = field(default_factory=list)  # (op class, OpTime, layer count)
    comm: dict[str, np.ndarray] = field(default_factory=dict)
    step_overhead: float = 0.0
    #: Indices in ``ops`` of the decode attention cores and DSA decode indexers (the ops that depend
    #: on the context), in the order :meth:`StepModel.decode_attention_parts` sums them.
    context_ops: list[int] = field(default_factory=list, repr=False)

    def context_total(self) -> np.ndarray:
        """Summed time of the :attr:`context_ops` [s]: :meth:`StepModel.decode_attention_time` of the
        step's decodes, read from this breakdown."""
        tot = 0.0
        for j in self.context_ops:
            _, parts, w = self.ops[j]
            tot = tot + w * parts.total
        return np.asarray(tot)

    def add_op(self, op_class: str, parts, weight: float) -> None:
        self.ops.append((op_class, parts, weight))

    def _sum(self, attr: str) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for cls, parts, w in self.ops:
            v = getattr(parts, attr)
            out[cls] = out[cls] + w * v if cls in out else w * v
        return out

    @property
    def compute(self) -> dict[str, np.ndarray]:
        return self._sum("compute")

    @property
    def memory(self) -> dict[str, np.ndarray]:
        return self._sum("memory")

    @property
    def overhead(self) -> dict[str, np.ndarray]:
        return self._sum("overhead")

    @property
    def op_total(self) -> dict[str, np.ndarray]:
        return self._sum("total")

    @property
    def compute_total(self) -> np.ndarray:
        acc = None
        for _, parts, w in self.ops:
            t = parts.total
            if w != 1.0:
                t *= w
            # in place only when shapes already agree (ops may broadcast to a larger shape)
            if acc is None:
                acc = t
            elif acc.flags.writeable and (np.shape(t) == acc.shape
                                          or acc.shape == np.broadcast_shapes(acc.shape, np.shape(t))):
                acc += t
            else:
                acc = acc + t
        return acc if acc is not None else np.zeros(())

    @property
    def comm_total(self) -> np.ndarray:
        return sum(self.comm.values()) if self.comm else np.zeros(())

    @property
    def total(self) -> np.ndarray:
        return self.compute_total + self.comm_total + self.step_overhead

    def bound(self) -> np.ndarray:
        """Dominant term of the step: 'compute', 'memory' or 'communication'."""
        return dominant_term(sum(self.compute.values()), sum(self.memory.values()), self.comm_total)

    def select(self, k: int) -> StepBreakdown:
        """Row ``k`` of a breakdown computed over stacked shapes (leading axis)."""
        def row(v):
            return np.asarray(v)[k] if np.ndim(v) else v

        ops = [(c, OpTime(row(p.compute), row(p.memory), row(p.overhead), p.overlap, row(p.serial)), w)
               for c, p, w in self.ops]
        return StepBreakdown(ops, {n: row(v) for n, v in self.comm.items()}, self.step_overhead)


@frozen
class StackedRow(OpTime):
    """One op's row of an :class:`OpTime` evaluated for several ops at once, its total taken from the
    stack's (the same element-wise arithmetic, done in one pass)."""

    stacked_total: np.ndarray | None = None

    @property
    def total(self) -> np.ndarray:
        return self.stacked_total.copy()  # a new array, as OpTime.total gives (callers scale it in place)
