"""Machine-readable summaries of the generated report pages, so that prose elsewhere quotes their numbers.

``scripts/make_validation_report.py`` and ``scripts/plan_vs_measured.py`` write ``docs/validation.md``
and ``docs/plan-vs-measured.md``; next to them they write ``docs/data/validation_summary.json`` and
``docs/data/plan_vs_measured_summary.json`` with the headline tables of the page, and
``scripts/readme_figures.py`` prints the README's sentences and tables from those files
(``scripts/gen_doc_blocks.py`` puts them between ``<!-- generated-md: ... -->`` markers).

A value in a summary is the cell *as the page prints it*: the row dicts the page's tables are made of go
through :func:`perfmodel.validation.report.fmt` and back through :func:`cell_value`, so ``11.83`` becomes
``11.8`` and ``"56 %"`` becomes ``56``. Reading the tables back from a page (:func:`parse_tables`,
:func:`validation_summary_from_page`, :func:`plan_summary_from_page`) therefore gives the same JSON as
writing it from the row dicts; the tests check both ways on small tables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .report import fmt, markdown_table

#: What :func:`~perfmodel.validation.report.markdown_table` prints for a table without rows.
EMPTY_TABLE = markdown_table([])

#: Keys of the validation summary's tables -> (page heading, index of the table under it).
VALIDATION_TABLES = {
    "headline": ("## Headline errors", 0), "by_system": ("### By system", 0), "by_engine": ("### By engine", 0),
    "by_model": ("### By model", 0), "by_mode": ("### By mode", 0), "repeats": ("## How low the error can go", 0),
    "rescaling": ("## How low the error can go", 1),
    "published": ("## Published static-batch figures", 0),
    "open_loop_headline": ("## Open-loop runs", 0), "open_loop_groups": ("## Open-loop runs", 1),
    "open_loop_runs": ("## Open-loop runs", 2), "skipped": ("## Skipped rows", 0),
}
#: Keys of the plan-vs-measured summary's tables -> (page heading, index of the table under it).
PLAN_TABLES = {"summary": ("## Summary", 0), "breakdown": ("## Summary", 1)}
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?\d+\.\d+")
_PERCENT = re.compile(r"(-?\d+(?:\.\d+)?) %")


def cell_value(text: str) -> int | float | str | None:
    """The value of a table cell as printed: ``"—"`` → None, ``"12"`` → 12, ``"11.8"`` → 11.8,
    ``"56 %"`` → 56; any other text is kept as it is."""
    text = text.strip()
    if text in ("—", "–", ""):
        return None
    m = _PERCENT.fullmatch(text)
    if m:
        text = m.group(1)
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


def records(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Table rows as the page prints them (cells through :func:`~perfmodel.validation.report.fmt`)."""
    if not rows:
        return []
    cols = list(columns or rows[0].keys())
    return [{c: cell_value(fmt(r.get(c))) for c in cols} for r in rows]


def parse_table(lines: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of one GitHub-flavoured Markdown table (header, ``|---|`` line, rows), cells as values."""
    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    header = cells(lines[0])
    out = []
    for line in lines[2:]:
        row = cells(line)
        if len(row) != len(header):
            raise ValueError(f"table row has {len(row)} cells, header {len(header)}: {line!r}")
        out.append({h: cell_value(c) for h, c in zip(header, row, strict=True)})
    return out


def parse_tables(text: str, heading: str) -> list[list[dict[str, Any]]]:
    """Every table of the section whose heading line begins with ``heading`` as whole words (``### By
    mode`` is not ``### By model``), up to the next heading of the same or a higher level, in page order
    (a table without rows, printed as :data:`EMPTY_TABLE`, is ``[]``)."""
    lines = text.splitlines()
    level = len(heading) - len(heading.lstrip("#"))
    start = next((i for i, line in enumerate(lines) if re.match(re.escape(heading) + r"(?!\w)", line)), None)
    if start is None:
        raise ValueError(f"no section {heading!r} in the page")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")
                and len(lines[i]) - len(lines[i].lstrip("#")) <= level), len(lines))
    tables, block = [], []
    for line in [*lines[start + 1:end], ""]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            tables.append(parse_table(block))
            block = []
        elif line.strip() == EMPTY_TABLE:
            tables.append([])
    return tables


def _table(text: str, where: tuple[str, int]) -> list[dict[str, Any]]:
    heading, index = where
    tables = parse_tables(text, heading)
    if len(tables) <= index:
        raise ValueError(f"section {heading!r} has {len(tables)} table(s), table {index} asked for")
    return tables[index]


def _number(text: str, pattern: str, what: str) -> int:
    m = re.search(pattern, text, re.S)
    if not m:
        raise ValueError(f"{what}: the page has no text matching {pattern!r}")
    return int(m.group(1).replace(",", ""))


def validation_summary(tables: dict[str, Sequence[dict[str, Any]]], counts: dict[str, int],
                       targets: dict[str, Sequence[float]], open_loop_file: str, request_cap: int) -> dict:
    """The summary of ``docs/validation.md`` from the row dicts its tables are printed from.

    Parameters
    ----------
    tables
        Row dicts of each table named in :data:`VALIDATION_TABLES` (as given to ``markdown_table``).
    counts
        ``read``, ``predicted``, ``skipped``, ``flagged``: rows of the measured file.
    targets
        ``tpot`` and ``ttft``: (median, p90) targets of the held-out absolute error [%].
    open_loop_file
        The open-loop file the page scores (repository-relative path).
    request_cap
        The most requests one open-loop simulation runs
        (:data:`perfmodel.validation.predict_openloop.MAX_STEADY_REQUESTS`).
    """
    missing = sorted(set(VALIDATION_TABLES) - set(tables))
    if missing:
        raise ValueError(f"validation summary: tables {missing} missing; expected {sorted(VALIDATION_TABLES)}")
    return {"page": "docs/validation.md", "written_by": "scripts/make_validation_report.py",
            "rows": {k: int(counts[k]) for k in ("read", "predicted", "skipped", "flagged")},
            "targets_pct": {m: [cell_value(fmt(float(v))) for v in targets[m]] for m in ("tpot", "ttft")},
            "open_loop": {"file": open_loop_file, "request_cap": int(request_cap)},
            "tables": {k: records(tables[k]) for k in VALIDATION_TABLES}}


def validation_summary_from_page(text: str) -> dict:
    """The summary of ``docs/validation.md`` read back from the page's text (same values as
    :func:`validation_summary` on the rows the page was printed from)."""
    m = re.search(r"Rows: (\d+) read, (\d+) predicted, (\d+) skipped .*?, (\d+) predicted but flagged", text)
    if not m:
        raise ValueError("docs/validation.md: no 'Rows: N read, N predicted, N skipped ...' line")
    counts = dict(zip(("read", "predicted", "skipped", "flagged"), map(int, m.groups()), strict=True))
    t = re.search(r"TPOT median ≤ ([\d.]+) %, p90 ≤ ([\d.]+) %; TTFT median ≤ ([\d.]+) %, p90 ≤ ([\d.]+) %", text)
    if not t:
        raise ValueError("docs/validation.md: no 'Targets (cross-validated): ...' line")
    targets = {"tpot": [float(t.group(1)), float(t.group(2))], "ttft": [float(t.group(3)), float(t.group(4))]}
    f = re.search(r"Scored with `perfmodel validate --data (\S+)`", text)
    if not f:
        raise ValueError("docs/validation.md: the open-loop section names no 'perfmodel validate --data' file")
    cap = _number(text, r"\(doubled, at most (\d+)\s+requests\)", "open-loop request cap")
    return validation_summary({k: _table(text, w) for k, w in VALIDATION_TABLES.items()}, counts, targets,
                              f.group(1), cap)


def plan_summary(tables: dict[str, Sequence[dict[str, Any]]], csv_rows: int, used_rows: int,
                 same_picks: int, groups: int) -> dict:
    """The summary of ``docs/plan-vs-measured.md`` from the row dicts of its two summary tables.

    Parameters
    ----------
    tables
        ``summary`` (one row per speed measure, engine profile and floor) and ``breakdown`` (calibrated,
        median floor, by engine and sweep density), as given to ``markdown_table``.
    csv_rows, used_rows
        Rows of the measured file, and rows used (calibrated run).
    same_picks, groups
        Groups in which the calibrated and the preset predictions pick the same configuration, of all
        groups scored (median floor, 1/TPOT).
    """
    return {"page": "docs/plan-vs-measured.md", "written_by": "scripts/plan_vs_measured.py",
            "rows": {"csv": int(csv_rows), "used": int(used_rows)},
            "same_picks": {"groups": int(same_picks), "of": int(groups)},
            "tables": {k: records(tables[k]) for k in PLAN_TABLES}}


def plan_summary_from_page(text: str) -> dict:
    """The summary of ``docs/plan-vs-measured.md`` read back from the page's text."""
    same = re.search(r"pick the same\s+configuration in (\d+) of (\d+) groups", text)
    if not same:
        raise ValueError("docs/plan-vs-measured.md: no 'pick the same configuration in N of M groups'")
    return plan_summary({k: _table(text, w) for k, w in PLAN_TABLES.items()},
                        _number(text, r"of the ([\d,]+) measured rows", "measured rows"),
                        _number(text, r"measured rows, ([\d,]+) are used", "rows used"),
                        int(same.group(1)), int(same.group(2)))


def summary_json(summary: dict) -> str:
    """A summary as the text of its file: indented JSON, non-ASCII kept, one trailing newline."""
    return json.dumps(summary, indent=1, ensure_ascii=False) + "\n"


def write_summary(path: str | Path, summary: dict) -> Path:
    """Write a summary (:func:`summary_json`, UTF-8); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(summary_json(summary), encoding="utf-8")
    return path


def read_summary(path: str | Path) -> dict:
    """A summary written by :func:`write_summary`."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
