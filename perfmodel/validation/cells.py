"""Cells of a measured-runs CSV read as numbers (shared by the row mapping and the source rules)."""

from __future__ import annotations

import math


def degree(value) -> int:
    """Parallel degree from a CSV cell: empty, NaN or 0 mean 1."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return 1
    return int(v) if math.isfinite(v) and v >= 1 else 1


def number(value) -> float:
    """A CSV cell as a float (NaN when empty or not a number)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def blank(value) -> bool:
    """An empty cell: None, NaN or whitespace."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip()
