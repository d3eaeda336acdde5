"""The ``perfmodel`` command line.

Each sub-command lives in its own module exposing ``register(subparsers)``, which adds a parser whose
``func`` attribute takes the parsed arguments and returns an exit code. Errors derived from
:class:`perfmodel.errors.PerfmodelError` are printed as one line (no traceback) with exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__
from ..errors import PerfmodelError

#: Modules (relative to this package) that register sub-commands, in help order.
COMMAND_MODULES = (
    "demo_cmd", "hardware_cmd", "models_cmd", "predict_cmd", "simulate_cmd", "estimate_cmd", "validate_cmd",
    "plan_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perfmodel",
        description="First-principles LLM inference performance model (TTFT, TPOT, throughput, goodput).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.endswith(name):
                continue  # sub-command not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
