"""``--weights``, ``--kv-cache``, ``--activations``: one spelling, meaning and default in every command.

The default rule is :mod:`perfmodel.formats`'s (weights: the checkpoint's own format; KV cache: fp8
with FP8/FP4 weights, else bf16). Commands that search or sweep take ``--weights`` as a comma-separated
list. The old flag ``--precision`` still works for one release: hidden from ``--help``, it stores into
``--weights`` and prints one note naming the new flag on stderr.
"""

from __future__ import annotations

import argparse

from ..formats import DEFAULTS, note_renamed_flag
from .argtypes import name_list

WEIGHTS_HELP = f"weight format: bf16, fp8, fp8_block, nvfp4 (fp4), mxfp4, int4, int8... (default: {DEFAULTS['weights']})"
KV_CACHE_HELP = f"KV-cache format (default: {DEFAULTS['kv_cache']})"
ACTIVATIONS_HELP = f"activation format (default: {DEFAULTS['activations']})"


class _Renamed(argparse.Action):
    """A deprecated flag: hidden from ``--help``; stores into the new flag's destination with a note."""

    def __init__(self, option_strings, dest, new: str, **kwargs) -> None:
        self.new = new
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        note_renamed_flag(parser.prog.removeprefix("perfmodel "), str(option_string), self.new)
        setattr(namespace, self.dest, values)


def add_renamed_flag(p, old: str, new: str, dest: str, type=None) -> None:
    """``old`` as a hidden, deprecated spelling of ``new`` (same destination and converter)."""
    p.add_argument(old, dest=dest, type=type, action=_Renamed, new=new, metavar=dest.upper())


def add_dtype_args(p, *, weights_list: bool = False, kv_cache: bool = True, activations: bool = False,
                   old_precision: bool = False, weights_help: str = WEIGHTS_HELP) -> None:
    """Add the format flags to a parser (or argument group).

    Parameters
    ----------
    weights_list : bool
        ``--weights`` takes comma-separated formats (commands that search or sweep).
    kv_cache, activations : bool
        Add ``--kv-cache`` / ``--activations``.
    old_precision : bool
        Also accept the deprecated ``--precision`` (commands that used to spell it so).
    weights_help : str
        Help text of ``--weights`` (default :data:`WEIGHTS_HELP`).
    """
    kind = name_list if weights_list else None
    help_ = weights_help + ("; comma-separated to try several" if weights_list else "")
    p.add_argument("--weights", type=kind, default=None, help=help_)
    if activations:
        p.add_argument("--activations", default=None, help=ACTIVATIONS_HELP)
    if kv_cache:
        p.add_argument("--kv-cache", default=None, help=KV_CACHE_HELP)
    if old_precision:
        add_renamed_flag(p, "--precision", "--weights", "weights", type=kind)
