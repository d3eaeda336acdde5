"""Reading user files (YAML, JSON, CSV) with one clear error per problem, naming the file.

Every reader of a user-supplied file goes through here, so each file kind (hardware, link and system
specs; deployments; workloads; engine profiles; claims; ``config.json``; measurement and trace tables)
answers the same way to the same problem: a missing file, a directory, a path through a regular file,
a symbolic-link loop, an unreadable, binary or non-UTF-8 file, malformed syntax, a duplicated YAML key
(an error, never "last one wins"), a table without rows, a missing column or text in a numeric
column. Errors are :class:`perfmodel.errors.SpecError` whose message starts with the file name.

YAML is loaded with the safe loader (no Python object is ever constructed from a tag).
"""

from __future__ import annotations

import errno
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from .errors import SpecError

#: Files larger than this are refused before reading [bytes] (every shipped input is far smaller).
MAX_TEXT_BYTES = 256 * 2**20
#: YAML specs larger than this are refused before parsing [bytes]: the largest shipped one is 13 kB,
#: and parsing takes seconds per MB, so a runaway file answers at once instead of after minutes.
MAX_YAML_BYTES = 256 * 2**10

_OS_REASONS = {
    errno.ENOENT: "file not found",
    errno.EISDIR: "is a directory, expected a file",
    errno.ENOTDIR: "a component of the path is a regular file, not a directory",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop)",
    errno.EACCES: "permission denied",
    errno.ENAMETOOLONG: "file name too long",
}


def os_error(path: str | Path, exc: OSError, what: str = "file") -> SpecError:
    """A :class:`SpecError` for an OS error on ``path`` (``what`` names the expected file kind)."""
    reason = _OS_REASONS.get(exc.errno or -1, exc.strerror or type(exc).__name__)
    if exc.errno == errno.EISDIR:
        reason = f"is a directory, expected a {what}"
    return SpecError(f"{path}: {reason}")


def check_readable(path: str | Path, what: str = "file") -> Path:
    """Return ``path`` as a :class:`Path` if it names a readable regular file, else raise.

    Raises
    ------
    SpecError
        Not found, a directory, a path through a regular file, a symlink loop, no permission.
    """
    p = Path(path)
    try:
        with p.open("rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise os_error(path, exc, what) from None
    return p


def read_text(path: str | Path, what: str = "text file", limit: int = MAX_TEXT_BYTES) -> str:
    """Read a UTF-8 text file (a leading byte-order mark is dropped).

    Raises
    ------
    SpecError
        Every OS-level problem (see :func:`check_readable`), a file over ``limit`` bytes, a
        binary file (NUL bytes) or one that is not UTF-8 (the byte offset is named).
    """
    p = check_readable(path, what)
    try:
        size = p.stat().st_size
        if size > limit:
            raise SpecError(f"{path}: {size / 2**10:,.0f} KiB is too large for a {what} "
                            f"(at most {limit // 2**10:,} KiB)")
        raw = p.read_bytes()
    except OSError as exc:
        raise os_error(path, exc, what) from None
    if b"\x00" in raw[:65536]:
        raise SpecError(f"{path}: a binary file, expected a {what}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not a UTF-8 {what} (undecodable byte at offset {exc.start})") from None


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loader (C parser where available) that refuses a key repeated in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # keys merged in with '<<' may legitimately be overridden
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark)
            except TypeError:  # an unhashable key: the base constructor reports it
                continue
            if first is not key_node.start_mark:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {first.line + 1}); each key may "
                    f"appear once in a mapping", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path, text: str | None = None, what: str = "YAML file") -> Any:
    """Parse YAML safely; ``text`` given means ``path`` only names it in messages.

    Returns
    -------
    Any
        The document (``None`` for an empty one: callers say what they expected).

    Raises
    ------
    SpecError
        File problems (see :func:`read_text`), a file over :data:`MAX_YAML_BYTES`, malformed YAML or
        a duplicated key, with line and column.
    """
    if text is None:
        text = read_text(path, what, MAX_YAML_BYTES)
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{path}: malformed YAML{where}: {problem}") from None
    except RecursionError:
        raise SpecError(f"{path}: YAML nested too deeply") from None


def read_json(path: str | Path, text: str | None = None, what: str = "JSON file", finite: bool = False) -> Any:
    """Parse JSON; a duplicated key is an error, and with ``finite`` so are ``NaN``, ``Infinity`` and
    numbers beyond float64 (HF ``config.json`` files use ``Infinity``, so it is allowed by default and
    the fields that need finite numbers check them).

    Raises
    ------
    SpecError
        File problems (see :func:`read_text`), malformed JSON (line, column) or a duplicated key.
    """
    if text is None:
        text = read_text(path, what)
    if not text.strip():
        raise SpecError(f"{path}: the file is empty, expected a {what}")

    def unique(pairs: list[tuple[str, Any]]) -> dict:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise SpecError(f"{path}: duplicate key {k!r} in a JSON object; each key may appear once")
            out[k] = v
        return out

    def constant(name: str) -> Any:
        raise SpecError(f"{path}: {name} is not a JSON number; write a finite number")

    def finite_float(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise SpecError(f"{path}: the number {literal[:40]} is out of range (not a finite float64)")
        return value

    checks = {"parse_constant": constant, "parse_float": finite_float} if finite else {}
    try:
        return json.loads(text, object_pairs_hook=unique, **checks)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from None
    except RecursionError:
        raise SpecError(f"{path}: JSON nested too deeply") from None


def read_csv(path: str | Path, what: str = "CSV table", required: Iterable[str] = (),
             numeric: Iterable[str] = (), **kwargs: Any) -> Any:
    """Read a CSV table (plain or compressed) with pandas, checked for rows, columns and numbers.

    Parameters
    ----------
    path : str | Path
        The table (``.csv``, ``.csv.gz``, ...).
    what : str
        What the table is, for messages (``"trace CSV"``).
    required : iterable of str
        Columns that must be present (the first missing one is named with those found).
    numeric : iterable of str
        Columns (where present) that must hold numbers; the first offending row and value are named.
    **kwargs
        Passed to :func:`pandas.read_csv`.

    Returns
    -------
    pandas.DataFrame
        At least one row.

    Raises
    ------
    SpecError
        File problems, a file that is not a CSV table, no rows, a missing column, text in a
        numeric column.
    """
    import pandas as pd

    p = check_readable(path, what)
    try:
        with open(p, "rb") as fh:
            head = fh.read(65536)
    except OSError as exc:
        raise os_error(path, exc, what) from None
    if b"\x00" in head and not str(p).endswith((".gz", ".bz2", ".xz", ".zip", ".zst")):
        raise SpecError(f"{path}: a binary file, expected a {what}")
    try:
        df = pd.read_csv(p, **kwargs)
    except pd.errors.EmptyDataError:
        raise SpecError(f"{path}: empty file, expected a {what} with a header row") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not a UTF-8 {what} (undecodable byte at offset {exc.start})") from None
    except OSError as exc:  # includes a corrupt compressed stream
        raise SpecError(f"{path}: cannot read the {what} ({exc})") from None
    except (pd.errors.ParserError, ValueError, EOFError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise SpecError(f"{path}: not a readable {what} ({first})") from None
    columns = [str(c) for c in df.columns]
    for col in required:
        if col not in columns:
            found = ", ".join(columns[:20]) + (", ..." if len(columns) > 20 else "")
            raise SpecError(f"{path}: missing column {col!r} in the {what}; found: {found}")
    if len(df) == 0:
        raise SpecError(f"{path}: the {what} has a header but no rows")
    return check_numeric(df, numeric, path)


def check_numeric(df: Any, columns: Iterable[str], origin: str | Path) -> Any:
    """Convert ``columns`` of ``df`` (where present) to numbers; empty cells become NaN.

    Raises
    ------
    SpecError
        A cell holds text that is not a number: the column, the row (1 = first data row) and the
        value are named.
    """
    import pandas as pd

    for col in columns:
        if col in df.columns:
            values = pd.to_numeric(df[col], errors="coerce")
            text = df[col].astype(str).str.strip()
            bad = values.isna() & df[col].notna() & (text != "") & (text.str.lower() != "nan")
            if bad.any():
                i = int(bad.to_numpy().argmax())
                raise SpecError(f"{origin}: column {col!r}, row {i + 1}: {df[col].iloc[i]!r} is not a number")
            df[col] = values
    return df
