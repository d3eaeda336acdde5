"""Shared output helpers for CLI commands: JSON and plain-text tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any


def print_json(obj: Any) -> None:
    """Print ``obj`` as JSON (numpy types converted, non-finite floats as null)."""
    from ..plain import plain  # numpy: imported here, keeps `perfmodel --help` light

    print(json.dumps(plain(obj), indent=2))


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Format dict rows as an aligned plain-text table."""
    if not rows:
        return "(no rows)"
    cols = list(columns or rows[0].keys())

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return "" if v is None else str(v)

    body = [[cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(b, widths, strict=True)) for b in body]
    return "\n".join(lines)


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
    parser.add_argument("--format", choices=("table", "json"), default="table",
                        help="output format (default: table)")


def engine_note(engine) -> str:
    """Which engine a serving result used and where its fitted terms came from (one line)."""
    from ..engine.engine import Engine  # imported here: keeps `perfmodel --help` light

    return f"engine {Engine.load(engine).label}"


def checkpoint_note(model: str | None, weights: str | None) -> str | None:
    """A note when ``weights`` asks a checkpoint's model for kernels other than its own: ``fp8`` of a
    block-scaled FP8 checkpoint (DeepSeek-V3/R1, MiniMax-M2, Qwen ``-FP8``) or an NVFP4 format of
    gpt-oss's MXFP4 experts (None otherwise, also for models that do not resolve).

    The checkpoint is the resolved model spec's (its id, not a substring of a path), unless the repo
    id or folder name ends in a format suffix: then :func:`checkpoint_default_format` of that
    ``org/name`` decides, as for measured rows (Qwen ``-FP8`` block-scaled, ``-BF16`` re-exports).
    """
    if not model or not weights:
        return None
    from ..errors import PerfmodelError
    from ..modelspec import load_model  # imported here: keeps `perfmodel --help` light
    from ..validation.models import SUFFIXES, checkpoint_default_format

    try:
        spec_id = load_model(model).id
    except PerfmodelError:
        return None
    parts = [p for p in str(model).replace("\\", "/").lower().split("/") if p and not p.endswith(".json")]
    repo = "/".join(parts[-2:])
    own = checkpoint_default_format(repo if repo.endswith(SUFFIXES) else spec_id)
    asked = str(weights).strip().lower()
    if own == "fp8_block" and asked in ("fp8", "fp8_e4m3", "e4m3", "float8"):
        return (f"note: {model} ships block-scaled FP8 weights (128 x 128 blocks); --weights fp8 costs "
                "per-tensor FP8 kernels, --weights fp8_block the checkpoint's own (slower on Hopper)")
    if own == "mxfp4" and asked in ("nvfp4", "fp4"):
        return (f"note: {model} ships MXFP4 experts; --weights {asked} costs NVFP4 kernels, --weights mxfp4 "
                "the checkpoint's own MoE kernels (MXFP8 activations on Blackwell, bf16 on Hopper)")
    return None


def print_notes(*notes: str | None) -> None:
    """Print the non-empty notes to stderr (stdout stays a table or JSON)."""
    for note in notes:
        if note:
            print(note, file=sys.stderr)
