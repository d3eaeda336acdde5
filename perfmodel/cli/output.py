"""Shared output of every result command: ``--format table|json|csv``, ``--quiet`` and the table layout.

- ``table``: for people: aligned columns, numbers to 4 significant figures without exponents between
  1e-3 and 1e7, and "—" where a value does not exist (NaN, infinite, None) with a footnote saying why;
- ``json``: SI units, keys with unit suffixes (``ttft_s``, ``power_w``), non-finite numbers as null;
- ``csv``: one header row and one row per record, the JSON's SI values and column names (nested fields
  as ``parent.child``, lists as JSON text, missing values as empty cells).
"""

from __future__ import annotations

import csv
import json
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..tables import (  # noqa: F401 (the table layout, re-exported for the commands)
    DIGITS,
    MISSING,
    UNFIT_WHY,
    UNFIT_WHY_PY,
    blank_unfit,
    format_table,
    missing,
    number,
    points_table,
    shown_name,
)

#: The output formats every result command accepts (``--format``), the first is the default.
FORMATS = ("table", "json", "csv")


def print_json(obj: Any) -> None:
    """Print ``obj`` as JSON (numpy types converted, non-finite floats as null)."""
    from ..plain import plain  # numpy: imported here, keeps `perfmodel --help` light

    print(json.dumps(plain(obj), indent=2))


def _flat(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            out[name] = json.dumps(value)
        else:
            out[name] = value
    return out


def print_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None,
              stream: Any = None) -> None:
    """Print ``rows`` as CSV: one header row (``columns``, default: every key in first-seen order) and one
    line per row, in SI units; nested mappings become ``parent.child`` columns, lists JSON text, and
    NaN, infinite and None empty cells."""
    from ..plain import plain  # numpy: imported here, keeps `perfmodel --help` light

    flat = [_flat(plain(dict(r))) for r in rows]
    cols = list(columns) if columns is not None else list(dict.fromkeys(k for r in flat for k in r))
    writer = csv.DictWriter(stream or sys.stdout, fieldnames=cols, restval="", extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(flat)


def emit(fmt: str, *, table: Callable[[], None], rows: Sequence[Mapping[str, Any]] | Callable[[], Any],
         document: Any = None, columns: Sequence[str] | None = None) -> None:
    """Print a command's result in the format asked for.

    Parameters
    ----------
    fmt : {"table", "json", "csv"}
        ``--format``.
    table : callable
        Prints the human-readable view.
    rows : sequence of mappings, or a callable returning one
        The records of the CSV (and of the JSON when ``document`` is None).
    document : optional
        What the JSON prints when it is more than the rows (inputs, notes...).
    columns : sequence of str, optional
        CSV columns (default: every key).
    """
    if fmt == "table":
        table()
        return
    records = rows() if callable(rows) else rows
    if fmt == "json":
        print_json(records if document is None else document)
    else:
        print_csv(records, columns)


def add_list_show(subparsers: Any, name: str, help: str, description: str, list_help: str,
                  show_help: str, show_arg: str, show_arg_help: str, list_func, show_func):
    """Add ``perfmodel NAME list`` and ``perfmodel NAME show ID_OR_PATH`` (both with ``--format``).

    Returns the ``list`` sub-parser so callers can add filters to it.
    """
    parser = subparsers.add_parser(name, help=help, description=description)
    sub = parser.add_subparsers(dest=f"{name}_command", metavar="ACTION")
    p_list = sub.add_parser("list", help=list_help)
    add_format_arg(p_list)
    p_list.set_defaults(func=list_func)
    p_show = sub.add_parser("show", help=show_help)
    p_show.add_argument(show_arg, metavar="ID_OR_PATH", help=show_arg_help)
    add_format_arg(p_show)
    p_show.set_defaults(func=show_func)

    def _help(_: Any) -> int:
        parser.print_help()
        return 1

    parser.set_defaults(func=_help)
    return p_list


def add_format_arg(parser: Any) -> None:
    """``--format table|json|csv`` (the same choices on every result command)."""
    parser.add_argument("--format", choices=FORMATS, default=FORMATS[0],
                        help="table (for people), json or csv (SI units, unit-suffixed names); default table")


def add_quiet_arg(parser: Any) -> None:
    """``--quiet``: no progress bar (bars are drawn on stderr only when it is a terminal)."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar (default: a bar on stderr when it is a terminal)")


def progress_of(args: Any) -> bool | None:
    """The ``progress`` argument of the API for these flags: False with ``--quiet``, else None (a bar
    only when stderr is a terminal)."""
    return False if getattr(args, "quiet", False) else None


def engine_note(engine) -> str:
    """Which engine a serving result used and where its fitted terms came from (one line)."""
    from ..engine.engine import Engine  # imported here: keeps `perfmodel --help` light

    return f"engine {Engine.load(engine).label}"


def checkpoint_note(model: str | None, weights: str | None) -> str | None:
    """A note when ``weights`` asks a checkpoint's model for kernels other than its own: ``fp8`` of a
    block-scaled FP8 checkpoint (DeepSeek-V3/R1, MiniMax-M2, Qwen ``-FP8``) or an NVFP4 format of
    gpt-oss's MXFP4 experts (None otherwise, also for models that do not resolve).

    The checkpoint's format is :func:`perfmodel.formats.checkpoint_format`'s: the resolved spec's,
    unless the repo id or folder name ends in a format suffix (Qwen ``-FP8`` block-scaled, ``-BF16``
    re-exports).
    """
    if not model or not weights:
        return None
    from ..errors import PerfmodelError
    from ..formats import checkpoint_format
    from ..modelspec import load_model  # imported here: keeps `perfmodel --help` light

    try:
        spec = load_model(model)
    except PerfmodelError:
        return None
    own = checkpoint_format(str(model), spec)
    asked = str(weights).strip().lower()
    if own == "fp8_block" and asked in ("fp8", "fp8_e4m3", "e4m3", "float8"):
        return (f"note: {model} ships block-scaled FP8 weights (128 x 128 blocks); --weights fp8 costs "
                "per-tensor FP8 kernels, --weights fp8_block the checkpoint's own (slower on Hopper)")
    if own == "mxfp4" and asked in ("nvfp4", "fp4"):
        return (f"note: {model} ships MXFP4 experts; --weights {asked} costs NVFP4 kernels, --weights mxfp4 "
                "the checkpoint's own MoE kernels (MXFP8 activations on Blackwell, bf16 on Hopper)")
    return None


@contextmanager
def deprecations_as_notes(command: str) -> Iterator[None]:
    """Run the block with every :class:`DeprecationWarning` it raises (an input file's old names) printed
    once each as a note on stderr, ``perfmodel COMMAND: note: ...``, where a command-line user sees it
    (Python hides DeprecationWarnings outside ``__main__``); other warnings are shown as usual."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        try:
            yield
        finally:
            seen: set[str] = set()
            for w in caught:
                if not issubclass(w.category, DeprecationWarning):
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
                elif str(w.message) not in seen:
                    seen.add(str(w.message))
                    print(f"perfmodel {command}: note: {w.message}", file=sys.stderr)


def print_notes(*notes: str | None) -> None:
    """Print the non-empty notes to stderr (stdout stays a table or JSON)."""
    for note in notes:
        if note:
            print(note, file=sys.stderr)
