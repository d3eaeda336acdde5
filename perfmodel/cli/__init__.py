"""The ``perfmodel`` command line.

Each sub-command lives in its own module exposing ``register(subparsers)``, which adds a parser whose
``func`` attribute takes the parsed arguments and returns an exit code. Errors derived from
:class:`perfmodel.errors.PerfmodelError` are printed as one line (no traceback) with exit code 2; so
are operating-system errors (a file that cannot be read or written). Any other exception is a bug: it
is printed as one line saying what failed and where to report it, with exit code 3; the global
``--debug`` flag shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from pathlib import Path

from .. import __version__
from ..errors import PerfmodelError

#: Where unexpected errors should be reported.
ISSUES = "the perfmodel issue tracker"

#: Modules (relative to this package) that register sub-commands, in help order.
COMMAND_MODULES = (
    "demo_cmd", "hardware_cmd", "models_cmd", "predict_cmd", "sweep_cmd", "simulate_cmd", "estimate_cmd",
    "validate_cmd", "plan_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perfmodel",
        description="First-principles LLM inference performance model (TTFT, TPOT, throughput, goodput).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an unexpected error (for bug reports)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f".{name}", __name__).register(sub)
    _no_abbreviations(parser)
    return parser


def _no_abbreviations(parser: argparse.ArgumentParser) -> None:
    """Refuse abbreviated flags in every (sub)command: argparse would read ``--mode`` as ``--model``
    and answer "unknown model 'concurrency'" instead of naming the flag that does not exist."""
    parser.allow_abbrev = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _no_abbreviations(child)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    for token in argv:  # argparse drops a value of '--' (``--batch=--``) and stores an empty list
        if token.startswith("--") and token.endswith("=--"):
            parser.error(f"argument {token[:-3]}: expected a value, got '--'")
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        return int(args.func(args) or 0)
    except PerfmodelError as exc:
        print(f"perfmodel {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # the environment, not a bug: name the file and the reason
        if args.debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"perfmodel {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: one line, and how to get the detail
        if args.debug:
            raise
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        what = (str(exc).splitlines() or [""])[0][:300]
        print(f"perfmodel {args.command}: internal error: {type(exc).__name__}: {what} "
              f"(in {Path(frame.filename).name}:{frame.lineno}). This is a bug: please report it at "
              f"{ISSUES} with the command line; rerun with --debug for the traceback.", file=sys.stderr)
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
