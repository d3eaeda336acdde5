"""Error types and the 'did you mean' helper used across perfmodel.

Every user-facing error is a :class:`PerfmodelError` (a ``ValueError``) whose message names the
field, the offending value and what is allowed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class PerfmodelError(ValueError):
    """Base class of all errors perfmodel raises for bad input."""


class SpecError(PerfmodelError):
    """A hardware, model, deployment or workload specification is invalid."""


class UnitError(SpecError):
    """A quantity has the wrong dimension or cannot be parsed."""


class UnknownNameError(PerfmodelError, KeyError):
    """An id (hardware, model, dtype, ...) is not known; the message suggests the closest ones."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class ConfigError(PerfmodelError):
    """A parallel configuration or operating point is invalid (e.g. TP does not divide heads)."""


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Return up to ``n`` candidates closest to ``name`` (case-insensitive)."""
    cands = list(candidates)
    lowered = {c.lower(): c for c in cands}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    if not hits:  # fall back to substring matches, useful for short ids like 'h100'
        hits = [c for c in lowered if name.lower() in c or c in name.lower()][:n]
    return [lowered[h] for h in hits]


def unknown_name(kind: str, name: str, candidates: Iterable[str]) -> UnknownNameError:
    """Build an :class:`UnknownNameError` that lists the closest known names."""
    cands = sorted(set(candidates))
    near = closest(name, cands)
    hint = f"did you mean {', '.join(repr(c) for c in near)}? " if near else ""
    return UnknownNameError(f"unknown {kind} {name!r}; {hint}known: {', '.join(cands)}")
