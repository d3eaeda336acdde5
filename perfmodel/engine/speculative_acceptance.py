"""Acceptance of speculative decoding: expected tokens per step and the sourced acceptance table.

With per-position acceptance rates :math:`a_1 \\dots a_k` (the probability that draft token i is
accepted given that the ones before it were) a step emits on average

.. math:: E = \\sum_{i=0}^{k} \\prod_{j=1}^{i} a_j \\qquad (= (1 - a^{k+1})/(1 - a) \\text{ for one rate } a)

tokens, the i = 0 term being the target's own verified token. Published figures are accepted lengths
:math:`E_k` at a draft length k; ``perfmodel/data/speculative/acceptance.csv`` stores them with their
model, data set and source, and :class:`AcceptanceProfile` turns them into per-position rates.
"""

from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass
from importlib import resources
from typing import Literal, get_args

import numpy as np

from ..errors import SpecError

#: Speculative decoding methods (see :mod:`perfmodel.engine.speculative`).
Method = Literal["mtp", "eagle", "draft", "ngram"]
METHODS: tuple[str, ...] = get_args(Method)


def expected_tokens(rates) -> float:
    """Expected tokens emitted per speculative step, :math:`E = \\sum_{i=0}^{k}\\prod_{j\\le i} a_j`.

    Parameters
    ----------
    rates : sequence of float
        Per-position conditional acceptance rates :math:`a_1 \\dots a_k`, each in [0, 1].

    Returns
    -------
    float
        E in [1, k + 1] [token/step]: 1 when nothing is accepted (the verified token), k + 1 when
        everything is.
    """
    a = np.asarray(rates, dtype=float)
    return float(1.0 + np.sum(np.cumprod(a)))


def uniform_expected_tokens(rate: float, k: int) -> float:
    """:math:`E = (1 - a^{k+1}) / (1 - a)` for one acceptance rate a at every position (k + 1 at a = 1)."""
    if rate == 1.0:
        return float(k + 1)
    return (1.0 - rate ** (k + 1)) / (1.0 - rate)


def rates_from_lengths(lengths) -> tuple[float, ...]:
    """Per-position rates from accepted lengths :math:`E_1 \\dots E_K` measured at k = 1..K.

    :math:`a_i = (E_i - E_{i-1}) / (E_{i-1} - E_{i-2})` with :math:`E_0 = 1, E_{-1} = 0`, i.e.
    :math:`a_1 = E_1 - 1`; a position after one with zero increment gets 0. Exact when the
    acceptance of position i does not depend on how many tokens are drafted after it (chain drafting).
    """
    e = [0.0, 1.0, *(float(x) for x in lengths)]
    steps = np.diff(e)  # Π_{j≤i} a_j for i = 0..K
    rates = [s / p if p > 0 else 0.0 for p, s in zip(steps[:-1], steps[1:], strict=True)]
    return tuple(rates)


def uniform_rate_for_length(length: float, k: int) -> float:
    """The one rate a with :math:`(1 - a^{k+1})/(1 - a)` equal to ``length`` (bisection, 1e-12)."""
    if not 1.0 <= length <= k + 1:
        raise SpecError(f"accepted length {length} at k={k}: must be within [1, {k + 1}]")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if uniform_expected_tokens(mid, k) < length else (lo, mid)
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class AcceptanceProfile:
    """Published accepted lengths of one method, model and data set (one id of the table).

    ``lengths`` maps draft length k -> accepted tokens per step E measured there. Rates for a draft
    length (:meth:`rates`): positional from k = 1..K when the source gives them all
    (:func:`rates_from_lengths`), else one uniform rate solved from the single published length;
    positions beyond the last published one repeat its rate (an extrapolation, said in the label).
    """

    id: str
    method: str
    default: bool
    lengths: tuple[tuple[int, float], ...]
    target: str
    dataset: str
    source: str
    note: str

    def base_rates(self) -> tuple[float, ...]:
        ks = [k for k, _ in self.lengths]
        if ks == list(range(1, len(ks) + 1)):
            rates = rates_from_lengths([e for _, e in self.lengths])
            if max(rates) > 1.0 + 1e-9:
                raise SpecError(f"acceptance profile {self.id!r}: lengths {self.lengths} imply a rate "
                                f"above 1 ({max(rates):.3f}); each gain must not exceed the one before it")
            return rates
        if len(ks) == 1:
            return (uniform_rate_for_length(self.lengths[0][1], ks[0]),)
        raise SpecError(f"acceptance profile {self.id!r}: draft lengths {ks} must be 1..K or a single one")

    def rates(self, k: int) -> tuple[float, ...]:
        base = self.base_rates()
        return tuple(base[min(i, len(base) - 1)] for i in range(k))

    def label(self, k: int) -> str:
        top = max(kk for kk, _ in self.lengths)
        extra = f"; positions above k={top} repeat the last rate" if k > top and len(self.lengths) > 1 else ""
        return f"{self.id}: {self.target}, {self.dataset} ({self.source}){extra}"


@functools.lru_cache(maxsize=1)
def acceptance_profiles() -> dict[str, AcceptanceProfile]:
    """The shipped acceptance table by id (``perfmodel/data/speculative/acceptance.csv``; read once).

    Raises
    ------
    SpecError
        A row with an unknown method, a non-numeric or out-of-range length, or two defaults for one
        method.
    """
    text = resources.files("perfmodel").joinpath("data", "speculative", "acceptance.csv").read_text("utf-8")
    rows: dict[str, list[dict]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        rows.setdefault(row["id"], []).append(row)
    out: dict[str, AcceptanceProfile] = {}
    for pid, group in rows.items():
        head = group[0]
        if head["method"] not in METHODS:
            raise SpecError(f"acceptance.csv {pid!r}: method {head['method']!r} not in {METHODS}")
        try:
            lengths = tuple(sorted((int(r["k"]), float(r["accepted_length"])) for r in group))
        except ValueError as exc:
            raise SpecError(f"acceptance.csv {pid!r}: k and accepted_length must be numbers ({exc})") \
                from None
        out[pid] = AcceptanceProfile(pid, head["method"], head["default"] == "yes", lengths, head["target"],
                                     head["dataset"], head["source"], head["note"])
        for k, e in lengths:
            if not 1.0 <= e <= k + 1:
                raise SpecError(f"acceptance.csv {pid!r}: accepted length {e} at k={k} "
                                f"not within [1, {k + 1}]")
    for method in METHODS:
        defaults = [p.id for p in out.values() if p.method == method and p.default]
        if len(defaults) > 1:
            raise SpecError(f"acceptance.csv: method {method!r} has several defaults: {defaults}")
    return out


def default_profile(method: str) -> AcceptanceProfile | None:
    """The sourced default acceptance of a method, or None where none is shipped (``draft``)."""
    return next((p for p in acceptance_profiles().values() if p.method == method and p.default), None)
