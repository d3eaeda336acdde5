"""Plain Python values from numpy ones, for JSON and records (one helper for the whole package)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def plain(obj: Any) -> Any:
    """Recursively turn numpy scalars and arrays into Python values; non-finite floats become None.

    Dicts, lists and tuples are walked; ``np.str_`` becomes ``str``; anything else is returned as is.
    """
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, np.str_):
        return str(obj)
    return obj
