"""Plain-text tables of records, as the CLI and the results' text forms show them.

Numbers to 4 significant figures without exponents between 1e-3 and 1e7, and "—" where a value does not
exist (NaN, infinite, None) with a footnote saying why. Columns whose glossary unit
(:mod:`perfmodel.metrics_vocabulary`) is seconds are shown in ms, bytes in GiB (2^30 B) and watts in kW
when a column reaches 1 kW, under the name with its unit suffix changed (``ttft_s`` → ``ttft_ms``,
``weights_bytes_per_device`` → ``weights_gib_per_device``) and a footnote saying so; ``--format json``
and ``csv`` keep SI. The CLI's ``--format table`` and the ``repr`` of
:class:`~perfmodel.core.predict.Prediction` and the deployment results use the same layout.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .metrics_vocabulary import lookup, name_suffix

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


@dataclass(frozen=True)
class TableUnit:
    """How a table shows the columns of one SI unit: ``value_shown = value_si / scale``."""

    si: tuple[str, ...]
    suffix: str
    scale: float
    label: str
    what: str
    min_abs: float = 0.0


#: Table units by glossary unit, in footnote order. Power switches to kW only in a column whose largest
#: magnitude is at least 1 kW (one unit per column for all its rows).
TABLE_UNITS = (TableUnit(("s", "s/token"), "_ms", 1e-3, "ms", "times"),
               TableUnit(("bytes",), "_gib", 2.0 ** 30, "GiB", "sizes"),
               TableUnit(("W",), "_kw", 1e3, "kW", "power", min_abs=1e3))
_SI_WORD = {"s": "seconds", "s/token": "seconds", "bytes": "bytes", "W": "watts"}


def _table_unit(column: str, values: Sequence[Any]) -> TableUnit | None:
    """The :data:`TABLE_UNITS` entry a column is shown in, from its glossary unit; None to show it as is."""
    metric = lookup(column)
    if metric is None or not name_suffix(column):
        return None
    for tu in TABLE_UNITS:
        if metric.unit in tu.si:
            finite = [abs(float(v)) for v in values if isinstance(v, numbers.Real) and not missing(v)]
            return tu if not tu.min_abs or (finite and max(finite) >= tu.min_abs) else None
    return None


def _shown_name(column: str, unit: TableUnit) -> str:
    """``column`` with its SI suffix (``_s``, ``_bytes``, ``_w``) replaced by ``unit.suffix``; a normaliser
    after it (``_per_device``) and ``_per_token`` of ``s/token`` stay."""
    suffix = name_suffix(column)
    si = "_s" if suffix == "_s_per_token" else suffix
    at = column.rindex(suffix)
    return column[:at] + unit.suffix + column[at + len(si):]


def _scaled(value: Any, scale: float) -> Any:
    """``value / scale`` for a number that exists; None, NaN and non-numbers unchanged."""
    if missing(value) or isinstance(value, (bool, str)) or not isinstance(value, numbers.Real):
        return value
    return float(value) / scale


def shown_name(name: str) -> str:
    """The name a table shows for the output ``name``: its time or size suffix in table units
    (``ttft_p95_s`` → ``ttft_p95_ms``); other names (and ``power_w``, which depends on its values)
    unchanged."""
    tu = _table_unit(name, [])
    return name if tu is None else _shown_name(name, tu)


def _footnote(used: Sequence[TableUnit]) -> str | None:
    """"times in ms, sizes in GiB (JSON/CSV/DataFrame: SI seconds, bytes)" for the units ``used``."""
    used = [tu for tu in TABLE_UNITS if any(t is tu for t in used)]
    if not used:
        return None
    si = sorted({_SI_WORD[u] for tu in used for u in tu.si}, key=list(_SI_WORD.values()).index)
    return ", ".join(f"{tu.what} in {tu.label}" for tu in used) + f" (JSON/CSV/DataFrame: SI {', '.join(si)})"


def human_units(rows: Sequence[dict[str, Any]], columns: Sequence[str], why: Mapping[str, str]
                ) -> tuple[list[dict[str, Any]], list[str], dict[str, str], str | None]:
    """Rows, columns and ``why`` with the time, size and power columns in table units (:data:`TABLE_UNITS`)
    and renamed, plus the footnote saying which units were used (None if nothing changed).

    A table with a ``metric`` column (one quantity per row, as ``simulate`` prints) is converted row by
    row instead: the row's numbers in the unit of the name in its ``metric`` cell, that cell renamed.
    """
    if "metric" in columns:
        out, used = [], []
        for r in rows:
            name = r.get("metric")
            others = [c for c in columns if c != "metric"]
            tu = _table_unit(name, [r.get(c) for c in others]) if isinstance(name, str) else None
            if tu is None:
                out.append(dict(r))
                continue
            used.append(tu)
            out.append({**r, "metric": _shown_name(name, tu), **{c: _scaled(r.get(c), tu.scale) for c in others}})
        return out, list(columns), dict(why), _footnote(used)
    renamed: dict[str, tuple[str, TableUnit]] = {}
    for c in columns:
        tu = _table_unit(c, [r.get(c) for r in rows])
        if tu is not None:
            renamed[c] = (_shown_name(c, tu), tu)
    if not renamed:
        return list(rows), list(columns), dict(why), None
    out = [{**r, **{new: _scaled(r.get(c), tu.scale) for c, (new, tu) in renamed.items()}} for r in rows]
    return (out, [renamed[c][0] if c in renamed else c for c in columns],
            {renamed[c][0] if c in renamed else c: w for c, w in why.items()},
            _footnote([tu for _, tu in renamed.values()]))


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
    rows, cols, why, units = human_units(rows, list(columns or rows[0].keys()), why or {})
    body = [[number(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(b, widths, strict=True)).rstrip() for b in body]
    return "\n".join(lines + _footnotes(rows, cols, why) + ([units] if units else []))


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
