"""Flag checks: argparse ``type=`` converters (ranges via :mod:`perfmodel.checks`) and combinations.

A bad flag is refused while parsing: argparse prints the usage and ``argument --FLAG: must be ...,
got VALUE`` and exits with status 2. Contradictory flags raise :class:`perfmodel.errors.ConfigError`
(one line, status 2); a run where no point asked for is feasible exits with status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .. import checks
from ..errors import ConfigError, PerfmodelError

#: Largest random seed accepted (numpy takes any non-negative integer; 2^63 - 1 keeps it an int64).
MAX_SEED = 2**63 - 1


def _parse(text: str, convert: Callable[[str], object], what: str) -> object:
    try:
        return convert(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def count(lo: int = 1, hi: int = checks.MAX_COUNT) -> Callable[[str], int]:
    """A whole number in ``[lo, hi]``."""
    def convert(text: str) -> int:
        try:
            return checks.count(_parse(text, int, "a whole number"), "value", lo, hi)
        except PerfmodelError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("value: ")) from None
    convert.__name__ = "whole number"
    return convert


def real(lo: float | None = None, hi: float | None = None, lo_open: bool = False,
         hi_open: bool = False) -> Callable[[str], float]:
    """A finite number within the bounds."""
    def convert(text: str) -> float:
        try:
            return checks.real(_parse(text, float, "a number"), "value", lo, hi, lo_open, hi_open)
        except PerfmodelError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("value: ")) from None
    convert.__name__ = "number"
    return convert


def count_list(lo: int = 1, hi: int = checks.MAX_COUNT) -> Callable[[str], list[int]]:
    """Comma-separated whole numbers in ``[lo, hi]``, e.g. ``1,8,64``."""
    return _listed(count(lo, hi), "whole number")


def real_list(lo: float | None = None, lo_open: bool = False) -> Callable[[str], list[float]]:
    """Comma-separated finite numbers above ``lo``, e.g. ``0.5,1,2``."""
    return _listed(real(lo, lo_open=lo_open), "number")


def _listed(one: Callable[[str], object], what: str) -> Callable[[str], list]:
    def convert(text: str) -> list:
        try:
            values = [one(v) for v in text.split(",") if v.strip()]
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{exc} (in {text!r})") from None
        if not values:
            raise argparse.ArgumentTypeError(f"expected at least one {what}")
        return values
    convert.__name__ = f"list of {what}s"
    return convert


POSITIVE = count()
NON_NEGATIVE = count(0)
SEED = count(0, MAX_SEED)
FRACTION = real(0, 1, lo_open=True)  # (0, 1]: an attainment target or a utilisation
POSITIVE_REAL = real(0, lo_open=True)


def name_list(text: str) -> list[str]:
    """Comma-separated names, e.g. ``h100-sxm,my-gpu.yaml``."""
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return values


#: Where a comparison of several models or hardware in one call is done, by flag.
COMPARE = {"hardware": "compare several in one call with `perfmodel sweep --hardware A,B ...` (static batches) "
                       "or `perfmodel plan --hardware A,B ...` (the cheapest deployment under load and an SLO)",
           "model": "compare several in one call with `perfmodel sweep --model A,B ...`"}


def single_name(flag: str) -> Callable[[str], str]:
    """One id or file for ``--FLAG`` (``model`` or ``hardware``): a comma-separated list is refused
    with the command that compares several (instead of an unknown-name error, or silently the first)."""
    def convert(text: str) -> str:
        if "," in text:
            raise argparse.ArgumentTypeError(f"one {flag} id or file per call, got {text!r}; {COMPARE[flag]}")
        return text
    convert.__name__ = f"{flag} id or file"
    return convert


def prices_by_hardware(items: list[str] | None) -> dict[str, str]:
    """``["h100-sxm=2.5/h", "b200=4/h,h200-sxm=3.2/h"]`` -> ``{hardware id: price}``."""
    from ..hardware import load_hardware

    out: dict[str, str] = {}
    for item in items or []:
        for part in name_list(item):
            if "=" not in part:
                raise ConfigError(f"--price: expected HARDWARE=USD_PER_DEVICE_HOUR (e.g. h100-sxm=2.5/h), "
                                  f"got {part!r}")
            hw, price = part.split("=", 1)
            out[load_hardware(hw.strip()).id] = price.strip()
    return out


#: Flags a deployment file fixes itself, with their parser defaults.
_LAYOUT_FLAGS = {"model": None, "hardware": None, "tp": 1, "pp": 1, "ep": 1, "dp_attention": 1,
                 "weights": None, "activations": None, "kv_cache": None}


def refuse_with_deployment(args: argparse.Namespace, ignored: dict | None = None, why: str = "") -> None:
    """``--deployment FILE`` fixes model, hardware, layout and formats: refuse flags that would be ignored.

    Parameters
    ----------
    args
        The parsed command line.
    ignored
        Further flags (dest -> default) that this command does not apply to a deployment file.
    why
        What the message adds about those flags (where their setting goes instead).

    Raises
    ------
    ConfigError
        Names the contradictory flags and their values.
    """
    given = [f"--{k.replace('_', '-')} {getattr(args, k)}" for k, default in _LAYOUT_FLAGS.items()
             if hasattr(args, k) and getattr(args, k) != default]
    if given:
        raise ConfigError(f"--deployment {args.deployment}: the file sets model, hardware, layout and formats; "
                          f"drop {', '.join(given)} (or drop --deployment)")
    extra = [f"--{k.replace('_', '-')} {getattr(args, k)}" for k, default in (ignored or {}).items()
             if hasattr(args, k) and getattr(args, k) != default]
    if extra:
        raise ConfigError(f"--deployment {args.deployment}: {', '.join(extra)} would be ignored with a deployment "
                          f"file{why}; drop {'it' if len(extra) == 1 else 'them'} (or drop --deployment)")


def no_feasible_point(command: str, unfit: Sequence[dict], total: int, why: str = "fit_reason") -> int:
    """Exit status of a command whose points may not fit: 1 (with one line why) when none fits, else 0.

    ``why`` is the key of each unfit record that holds its reason.
    """
    if total and len(unfit) == total:
        reasons = sorted({str(r.get(why) or "does not fit") for r in unfit})
        print(f"perfmodel {command}: no operating point asked for is feasible: {'; '.join(reasons)}",
              file=sys.stderr)
        return 1
    return 0
