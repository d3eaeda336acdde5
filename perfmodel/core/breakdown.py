"""What a step's time is made of: per-op time parts grouped by op class, and the dominant term.

:class:`StepBreakdown` holds the costed ops of one step (:meth:`perfmodel.core.step.StepModel.breakdown`)
and forms its sums lazily; :class:`StackedRow` is one op's row of ops costed together in one pass.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from .costs import OpTime, smooth_max
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
    if not c.shape == m.shape == k.shape and not (c.shape == m.shape and k.ndim == 0):  # (a scalar k broadcasts)
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
        stack = self._stack()
        weighted = stack.weighted_totals if stack is not None else None
        tot = 0.0
        for j in self.context_ops:
            _, parts, w = self.ops[j]
            tot = tot + (w * parts.total if weighted is None else weighted[j])
        return np.asarray(tot)

    def add_op(self, op_class: str, parts, weight: float) -> None:
        self.ops.append((op_class, parts, weight))

    def _stack(self) -> _Stack | None:
        """The ops as matrices (:class:`_Stack`), formed once while no op is added."""
        cached = self.__dict__.get("_stacked")
        if cached is None or cached[0] is not self.ops or cached[1] != len(self.ops):
            cached = (self.ops, len(self.ops), _Stack.of(self.ops))
            self.__dict__["_stacked"] = cached
        return cached[2]

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
        stack = self._stack()
        if stack is not None:
            return stack.total_sum()
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
        stack = self._stack()
        if stack is not None:
            compute, memory = stack.part_sums()
        else:
            compute, memory = sum(self.compute.values()), sum(self.memory.values())
        return dominant_term(compute, memory, self.comm_total)

    def select(self, k: int) -> StepBreakdown:
        """Row ``k`` of a breakdown computed over stacked shapes (leading axis)."""
        def row(v):
            return np.asarray(v)[k] if np.ndim(v) else v

        ops = [(c, OpTime(row(p.compute), row(p.memory), row(p.overhead), p.overlap, row(p.serial)), w)
               for c, p, w in self.ops]
        return StepBreakdown(ops, {n: row(v) for n, v in self.comm.items()}, self.step_overhead)


@frozen
class StackedRow(OpTime):
    """One op's row of an :class:`OpTime` evaluated for several ops at once (the same element-wise
    arithmetic, done in one pass); its total is formed from its parts as any op's."""


class _Stack:
    """The ops of a breakdown over a few points as (ops, part, points) matrices, summed in the loops' order.

    Sums over ops are formed in one pass each (``np.add.accumulate`` adds strictly in sequence, as the
    op-by-op loops of :class:`StepBreakdown` do), and each op's total as :attr:`OpTime.total` forms it
    (the smooth maximum of the ops with a finite overlap in one call, an exponent per row), so the
    values are the loops' bit for bit.
    """

    def __init__(self, parts: np.ndarray, serial: list[tuple[int, np.ndarray]],
                 slots: tuple[np.ndarray, np.ndarray, int, int], weights: np.ndarray,
                 smooth: tuple[np.ndarray, np.ndarray] | None) -> None:
        self.parts, self.serial, self.slots = parts, serial, slots  # serial: (op index, its serial part)
        self.weights, self.smooth = weights, smooth  # smooth: (rows, their exponents) of finite overlap
        self.weighted_totals: np.ndarray | None = None  # weight x total of each op, once summed

    @classmethod
    def of(cls, ops: list) -> _Stack | None:
        """The stack of ``ops`` when every op's parts are arrays of one shape (at most ``MAX_POINTS``
        points) and its total is :attr:`OpTime.total`, else None (the loops then do the sums)."""
        if not ops:
            return None
        shape = getattr(ops[0][1].compute, "shape", None)
        if shape is None or math.prod(shape) > MAX_POINTS:
            return None
        rows, serial = [], []
        for j, (_, p, _) in enumerate(ops):
            if not (type(p) is OpTime or type(p) is StackedRow):
                return None
            compute, memory, overhead = p.compute, p.memory, p.overhead
            if not (getattr(compute, "shape", None) == getattr(memory, "shape", None)
                    == getattr(overhead, "shape", None) == shape):
                return None
            rows += (compute, memory, overhead)
            if not (type(p.serial) is float and p.serial == 0.0):
                serial.append((j, p.serial))
        # one copy into (ops, part, points): concatenating the 1-d rows is the cheaper way for a few points
        parts = (np.concatenate(rows) if shape else np.array(rows)).reshape((len(ops), 3) + shape)
        return cls(parts, serial, *stack_layout(tuple((c, w, p.overlap) for c, p, w in ops), len(shape)))

    def part_sums(self, parts: int = 2) -> tuple[np.ndarray, ...]:
        """Σ over op classes of each class's weighted sum of compute parts, and of memory parts [s]:
        ``sum(StepBreakdown.compute.values())`` and the same for memory (``parts=3``: and overhead)."""
        position, column, depth, width = self.slots
        weighted = self.parts[:, :parts] * self.weights[:, None]
        # the j-th op of each class in row j of its class's column; the zeros below add exactly
        padded = np.zeros((depth, width) + weighted.shape[1:])
        padded[position, column] = weighted
        per_class = np.add.accumulate(padded, axis=0)[-1]
        return tuple(np.add.accumulate(per_class, axis=0)[-1])

    def total_sum(self) -> np.ndarray:
        """Σ weight × op total over the ops, in op order [s]."""
        compute, memory = self.parts[:, 0], self.parts[:, 1]
        totals = np.maximum(compute, memory)
        if self.smooth is not None:
            smooth, exponents = self.smooth
            totals[smooth] = smooth_max(compute[smooth], memory[smooth], exponents)
        for j, serial in self.serial:
            totals[j] += serial
        totals += self.parts[:, 2]
        totals *= self.weights
        self.weighted_totals = totals
        return np.add.accumulate(totals, axis=0)[-1]


#: Most points per op for which :class:`StepBreakdown` sums the ops as matrices.
MAX_POINTS = 64


def stack_layout(ops: tuple[tuple[str, float, float], ...], ndim: int) -> tuple:
    """:func:`_layout` of ops of these (class, weight, overlap), formed once per sequence where the weights
    are numbers (hashable), else for this call alone."""
    try:
        return _layout(ops, ndim)
    except TypeError:  # a weight that is not a number (unhashable): formed for this breakdown alone
        return _layout.__wrapped__(ops, ndim)


@functools.lru_cache(maxsize=256)
def _layout(ops: tuple[tuple[str, float, float], ...], ndim: int
            ) -> tuple[tuple[np.ndarray, np.ndarray, int, int], np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """The fixed layout of a :class:`_Stack` of ops of these (class, weight, overlap) over ``ndim`` point
    axes: where each op goes in :meth:`_Stack.part_sums`'s (depth, classes) matrix (its position within
    its class, its class's column, the most ops of one class, the number of classes); the weights as a
    column; the rows with a smooth roofline (finite overlap) and their exponents as a column, or None.
    A step model's ops come in the same classes, layer counts and overlaps on every call, so the layout
    is formed once per sequence (read-only arrays: shared between calls)."""
    position, column = [], []
    counts: dict[str, list[int]] = {}  # op class -> [its column, ops of it so far]
    for c, _, _ in ops:
        slot = counts.setdefault(c, [len(counts), 0])
        column.append(slot[0])
        position.append(slot[1])
        slot[1] += 1
    weights = np.array([w for _, w, _ in ops], dtype=float).reshape((len(ops),) + (1,) * ndim)
    rows = [j for j, (_, _, p) in enumerate(ops) if p != math.inf]
    exponents = np.array([ops[j][2] for j in rows], dtype=float).reshape((len(rows),) + (1,) * ndim)
    arrays = (np.array(position), np.array(column), weights, np.array(rows, dtype=np.intp), exponents)
    for a in arrays:
        a.flags.writeable = False
    smooth = (arrays[3], exponents) if rows else None
    return (arrays[0], arrays[1], max(n for _, n in counts.values()), len(counts)), weights, smooth
