"""Argument checks at the public boundary: counts, reals, choices (one message format everywhere).

Each check returns the value in its working type or raises :class:`perfmodel.errors.ConfigError`
naming the field, the value and what is allowed, e.g. ``batch: must be a whole number in
[1, 2147483647], got 99999999999999999999999``. Booleans are never numbers here (``batch=True`` is a
mistake, not 1), text never silently becomes a number, NaN and infinities are refused unless asked for.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, unknown_name

if TYPE_CHECKING:  # numpy is imported where arrays are checked: the CLI parser must not load it
    import numpy as np

#: Largest count (tokens, sequences, devices, requests, replicas) accepted anywhere: 2^31 - 1, far
#: above any real deployment and safely inside int64 arithmetic of products such as batch x context.
MAX_COUNT = 2**31 - 1


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_number(value: Any) -> bool:
    """A real number (numpy scalars included) that is not a boolean (``bool`` or ``numpy.bool_``)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and type(value).__name__ != "bool_"


def count(value: Any, field: str, lo: int = 1, hi: int = MAX_COUNT) -> int:
    """A whole number in ``[lo, hi]`` (an integral float such as ``8.0`` is accepted).

    Raises
    ------
    ConfigError
        Not a number (text, bool, None), not whole, not finite or out of range.
    """
    allowed = f"a whole number in [{lo}, {hi}]"
    if not _is_number(value):
        raise ConfigError(f"{field}: must be {allowed}, got {_show(value)} ({type(value).__name__})")
    if isinstance(value, numbers.Integral):
        number = int(value)
    else:
        real_value = float(value)
        if not math.isfinite(real_value) or real_value != round(real_value):
            raise ConfigError(f"{field}: must be {allowed}, got {_show(value)}")
        number = int(real_value)
    if not lo <= number <= hi:
        raise ConfigError(f"{field}: must be {allowed}, got {_show(value)}")
    return number


def optional_count(value: Any, field: str, lo: int = 1, hi: int = MAX_COUNT) -> int | None:
    """Like :func:`count`, passing ``None`` through."""
    return None if value is None else count(value, field, lo, hi)


def counts(value: Any, field: str, lo: int = 1, hi: int = MAX_COUNT) -> np.ndarray:
    """A scalar or array of whole numbers in ``[lo, hi]`` as float64 (numpy broadcasting shapes).

    Raises
    ------
    ConfigError
        Empty, ragged, non-numeric (text, bools), non-whole, non-finite or out-of-range elements; the
        first offending element is named.
    """
    import numpy as np

    allowed = f"whole numbers in [{lo}, {hi}]"
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged nesting
        raise ConfigError(f"{field}: must be a number or a rectangular array of {allowed}, "
                          f"got {_show(value)}") from None
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        for item in arr.ravel():  # names the first element that is not a count (text, bool, 10**30)
            count(item.item() if isinstance(item, np.generic) else item, field, lo, hi)
        raise ConfigError(f"{field}: must be {allowed}, got {_show(value)}")
    if arr.size == 0:
        raise ConfigError(f"{field}: must not be empty")
    flat = arr.astype(float).ravel()
    bad = ~np.isfinite(flat) | (flat < lo) | (flat > hi) | (flat != np.round(flat))
    if arr.dtype.kind in "iu":  # exact integer bounds (floats lose precision above 2^53)
        ints = arr.ravel()
        bad |= (ints < lo) | (ints > hi)
    if bad.any():
        first = arr.ravel()[int(bad.argmax())]
        raise ConfigError(f"{field}: must be {allowed}, got {_show(first.item())}"
                          + (f" in {_show(value)}" if arr.size > 1 else ""))
    return arr.astype(float)


def real(value: Any, field: str, lo: float | None = None, hi: float | None = None,
         lo_open: bool = False, hi_open: bool = False, allow_inf: bool = False) -> float:
    """A real number, finite unless ``allow_inf``, within the given bounds.

    Raises
    ------
    ConfigError
        Not a number (text, bool, None), NaN, infinite (unless allowed) or out of bounds.
    """
    allowed = _interval(lo, hi, lo_open, hi_open)
    if not _is_number(value):
        raise ConfigError(f"{field}: must be a number{allowed}, got {_show(value)} ({type(value).__name__})")
    number = float(value)
    if math.isnan(number) or (math.isinf(number) and not allow_inf):
        raise ConfigError(f"{field}: must be a finite number{allowed}, got {_show(value)}")
    if (lo is not None and (number < lo or (lo_open and number == lo))) or (
            hi is not None and (number > hi or (hi_open and number == hi))):
        raise ConfigError(f"{field}: must be a number{allowed}, got {_show(value)}")
    return number


def reals(value: Any, field: str, lo: float | None = None, allow_inf: bool = False,
          lo_open: bool = False) -> np.ndarray:
    """A scalar or array of real numbers ``>= lo`` (``> lo`` if ``lo_open``; finite unless ``allow_inf``)."""
    import numpy as np

    allowed = _interval(lo, None, lo_open, False)
    try:
        arr = np.asarray(value)
    except ValueError:
        raise ConfigError(f"{field}: must be a number or a rectangular array, got {_show(value)}") from None
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        raise ConfigError(f"{field}: must be numbers{allowed}, got {_show(value)}")
    flat = arr.astype(float)
    bad = np.isnan(flat) | (np.isinf(flat) if not allow_inf else False)
    if lo is not None:
        bad = bad | (flat <= lo if lo_open else flat < lo)
    if np.any(bad):
        first = flat.ravel()[int(np.asarray(bad).ravel().argmax())]
        raise ConfigError(f"{field}: must be {'finite ' if not allow_inf else ''}numbers{allowed}, "
                          f"got {_show(first.item())}" + (f" in {_show(value)}" if arr.size > 1 else ""))
    return flat


def _interval(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    if lo is None and hi is None:
        return ""
    if hi is None:
        return f" {'>' if lo_open else '>='} {lo:g}"
    if lo is None:
        return f" {'<' if hi_open else '<='} {hi:g}"
    return f" in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"


def choice(value: Any, field: str, allowed: Iterable[str]) -> str:
    """One of ``allowed`` (exact); otherwise an :class:`UnknownNameError` suggesting the closest."""
    options = list(allowed)
    if not isinstance(value, str) or value not in options:
        raise unknown_name(field, str(value), options)
    return value


def broadcast(fields: str, *arrays: Any) -> list[np.ndarray]:
    """numpy-broadcast ``arrays`` (copies), or a :class:`ConfigError` naming ``fields`` and the shapes."""
    import numpy as np

    if len({np.shape(a) for a in arrays}) == 1:  # shapes agree already (e.g. scalars)
        return [np.array(a) for a in arrays]
    try:
        return [np.array(a) for a in np.broadcast_arrays(*arrays)]
    except ValueError:
        shapes = ", ".join(str(np.shape(a)) for a in arrays)
        raise ConfigError(f"{fields}: shapes {shapes} do not broadcast together") from None
