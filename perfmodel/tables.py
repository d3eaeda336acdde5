"""Plain-text tables of records, as the CLI and the results' text forms show them.

Numbers to 4 significant figures without exponents between 1e-3 and 1e7, and "—" where a value does not
exist (NaN, infinite, None) with a footnote saying why. The CLI's ``--format table`` and the ``repr`` of
:class:`~perfmodel.core.predict.Prediction` and the deployment results use the same layout.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

#: Shown in a table cell where a value does not exist.
MISSING = "\u2014"
#: Significant figures of numbers in tables.
DIGITS = 4


def missing(value: Any) -> bool:
    """True for a value a table shows as "—": None, NaN or an infinite number."""
    if value is None:
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) \
        and not math.isfinite(float(value))


def number(value: Any, digits: int = DIGITS) -> str:
    """A table cell: integers as they are, other numbers rounded to ``digits`` significant figures, in
    fixed notation between 1e-3 and 1e7 without trailing zeros (``0.297``, ``86570``, ``31``), else as
    ``1.234e-05``; "—" for None, NaN and infinities."""
    if missing(value):
        return MISSING
    if isinstance(value, (bool, str)) or not isinstance(value, numbers.Real):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    v = float(value)
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) < 1e7:
        return str(int(v))
    if not 1e-3 <= abs(v) < 1e7:
        return f"{v:.{digits - 1}e}"
    rounded = float(f"{v:.{digits}g}")
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    text = f"{rounded:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


#: Footnote of the metrics a table leaves out on points that do not fit.
UNFIT_WHY = "the point does not fit (why_not says why); --format json or csv has the value it would have"
#: The same footnote in a Python result's text form.
UNFIT_WHY_PY = "the point does not fit (why_not says why); to_dataframe() has the value it would have"


def blank_unfit(rows: Sequence[dict[str, Any]], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """Rows for a table in which the ``metrics`` of points that do not fit (``fits`` False) are None, so
    that no timing is shown as if the point could run (the JSON and CSV keep the computed values)."""
    return [{**r, **dict.fromkeys(metrics)} if r.get("fits") is False else dict(r) for r in rows]


def points_table(records: Sequence[dict[str, Any]], columns: Sequence[str], metrics: Sequence[str],
                 unfit_why: str = UNFIT_WHY) -> str:
    """:func:`format_table` of operating points: the ``metrics`` of a point that does not fit shown as
    "—" with the footnote ``unfit_why``, and a ``why_not`` column (its ``fit_reason``) when any point
    does not fit."""
    rows = blank_unfit(records, metrics)
    cols = list(columns)
    if any(r.get("fits") is False for r in rows):
        rows = [{**r, "why_not": r.get("fit_reason") if r.get("fits") is False else ""} for r in rows]
        cols.append("why_not")
    return format_table(rows, cols, why=dict.fromkeys(metrics, unfit_why))


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
                 why: Mapping[str, str] | None = None) -> str:
    """Format dict rows as an aligned plain-text table (cells by :func:`number`).

    Parameters
    ----------
    rows : sequence of dict
        Records.
    columns : sequence of str, optional
        Columns in order (default: the first row's keys).
    why : mapping column -> reason, optional
        Why a value of that column can be missing. A column with a NaN or infinite cell gets a footnote
        ``— in COLUMN: REASON`` (a generic one where no reason is given); None cells get one only when a
        reason is given.
    """
    if not rows:
        return "(no rows)"
    cols = list(columns or rows[0].keys())
    body = [[number(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(b, widths, strict=True)).rstrip() for b in body]
    return "\n".join(lines + _footnotes(rows, cols, why or {}))


def _footnotes(rows: Sequence[dict[str, Any]], cols: Sequence[str], why: Mapping[str, str]) -> list[str]:
    """One line per reason, naming the columns it explains."""
    by_reason: dict[str, list[str]] = {}
    for c in cols:
        values = [r.get(c) for r in rows]
        if not any(missing(v) for v in values):
            continue
        if c in why:
            by_reason.setdefault(why[c], []).append(c)
        elif any(v is not None and missing(v) for v in values):
            by_reason.setdefault("not defined for that row (null in --format json)", []).append(c)
    return [f"{MISSING} in {', '.join(names)}: {reason}" for reason, names in by_reason.items()]
