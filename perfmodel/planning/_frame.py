"""Column-wise assembly of large result tables (internal).

A sweep produces blocks of rows that share their configuration (model, hardware, layout...). Strings
are stored as :class:`pandas.Categorical` codes, so a million-row table costs a few numpy
concatenations rather than a million Python objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


def string_codes(values: np.ndarray, categories: list[str], max_scan: int = 16) -> np.ndarray:
    """Codes of ``values`` (a numpy string array) in ``categories``, extending it with new values.

    Each category is matched with one vectorised comparison over the values not matched yet (so the
    dominant value costs one pass); unseen values are added one at a time, and past ``max_scan`` new
    values the rest goes through :func:`numpy.unique`.
    """
    flat = np.asarray(values).ravel()
    codes = np.full(flat.shape, -1, dtype=np.int32)
    rest_idx, rest = np.arange(flat.size), flat

    def take(k: int, hit: np.ndarray) -> None:
        nonlocal rest_idx, rest
        codes[rest_idx[hit]] = k
        keep = ~hit
        rest_idx, rest = rest_idx[keep], rest[keep]

    for k, cat in enumerate(list(categories)):
        if rest.size == 0:
            return codes
        hit = rest == cat
        if hit.any():
            take(k, hit)
    for _ in range(max_scan):
        if rest.size == 0:
            return codes
        categories.append(str(rest[0]))
        take(len(categories) - 1, rest == rest[0])
    if rest.size:
        new, inverse = np.unique(rest, return_inverse=True)
        base = len(categories)
        categories.extend(str(v) for v in new)
        codes[rest_idx] = base + inverse
    return codes


class FrameBuilder:
    """Accumulate blocks of rows, then build one DataFrame with a fixed column order.

    Parameters
    ----------
    columns : list[str]
        Column order of the result; every block must provide every column (as an array of the block
        length, a scalar broadcast to it, or a string / string array stored as categorical).
    """

    def __init__(self, columns: list[str]) -> None:
        self.columns = list(columns)
        self._numeric: dict[str, list[np.ndarray]] = {c: [] for c in columns}
        self._cats: dict[str, list[str]] = {}
        self._is_str: dict[str, bool] = {}
        self.rows = 0

    def add(self, n: int, values: dict[str, Any]) -> None:
        """Add a block of ``n`` rows; ``values`` maps every column to a scalar or a length-n array."""
        missing = set(self.columns) - set(values)
        if missing:
            raise KeyError(f"block lacks columns {sorted(missing)}")
        for col in self.columns:
            v = values[col]
            arr = np.asarray(v)
            is_str = arr.dtype.kind in "UO" or isinstance(v, str) or v is None
            if col not in self._is_str:
                self._is_str[col] = is_str
            if self._is_str[col]:
                cats = self._cats.setdefault(col, [])
                if arr.ndim == 0:
                    text = "" if v is None else str(v)
                    if text not in cats:
                        cats.append(text)
                    codes = np.full(n, cats.index(text), dtype=np.int32)
                else:
                    codes = string_codes(arr if arr.dtype.kind == "U" else arr.astype(str), cats)
                self._numeric[col].append(codes)
            else:
                self._numeric[col].append(np.broadcast_to(arr, (n,)) if arr.ndim == 0 else arr.ravel())
        self.rows += n

    def build(self) -> pd.DataFrame:
        """The accumulated rows as a DataFrame (string columns categorical)."""
        import pandas as pd

        data: dict[str, Any] = {}
        for col in self.columns:
            parts = self._numeric[col]
            if not parts:
                data[col] = np.array([])
                continue
            arr = np.concatenate(parts) if len(parts) > 1 else np.array(parts[0])
            if self._is_str[col]:
                data[col] = pd.Categorical.from_codes(arr, categories=self._cats[col])
            else:
                data[col] = arr
        return pd.DataFrame(data, copy=False)  # one block per column: no consolidation copy
