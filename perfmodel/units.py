"""The package's single pint registry and conversion of quantity strings to float64 SI.

Specs accept quantity strings (``"4.8 TB/s"``, ``"141 GB"``, ``"989 TFLOP/s"``, ``"700 W"``,
``"2.5 us"``) or :class:`pint.Quantity` objects. They are converted once, at load time, to float64 in
SI base units: bytes [B], seconds [s], FLOP, bytes per second [B/s], FLOP per second [FLOP/s],
watts [W]. Decimal prefixes (k, M, G, T, P, E = 10^3n) and binary prefixes (Ki, Mi, Gi, Ti = 2^10n)
are both understood; ``GB`` is 10^9 B and ``GiB`` is 2^30 B. Bits are understood too:
``"400 Gb/s"`` is 50e9 B/s.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import pint

from .errors import UnitError, unknown_name

# A small registry built from scratch: pint's default one makes ``bit`` dimensionless (so "4.8 TB"
# would pass where a plain number is expected, and B/s would equal Hz) and reads "Gb" as gilbert.
# Information, FLOP, power and currency each get a dimension of their own here.
_DEFINITIONS = """
yotta- = 1e24 = Y-
zetta- = 1e21 = Z-
exa- = 1e18 = E-
peta- = 1e15 = P-
tera- = 1e12 = T-
giga- = 1e9 = G-
mega- = 1e6 = M-
kilo- = 1e3 = k- = K-
milli- = 1e-3 = m-
micro- = 1e-6 = µ- = μ- = u-
nano- = 1e-9 = n-
pico- = 1e-12 = p-
kibi- = 2**10 = Ki-
mebi- = 2**20 = Mi-
gibi- = 2**30 = Gi-
tebi- = 2**40 = Ti-
pebi- = 2**50 = Pi-
exbi- = 2**60 = Ei-
second = [time] = s = sec
minute = 60 * second = min
hour = 60 * minute = h = hr
day = 24 * hour
year = 365.25 * day = yr
hertz = 1 / second = Hz
bit = [information] = b
byte = 8 * bit = B = octet
FLOP = [flop] = flop = FLOPs
OP = FLOP = op = OPs
watt = [power] = W
joule = watt * second = J
watt_hour = watt * hour = Wh
dollar = [currency] = USD = usd
percent = 0.01 = %
"""
ureg = pint.UnitRegistry(None, autoconvert_offset_to_baseunit=True)
for _line in _DEFINITIONS.strip().splitlines():
    ureg.define(_line)
Q_ = ureg.Quantity

#: Named dimensions used by spec fields: name -> (pint dimensionality, SI unit string, description)
DIMENSIONS: dict[str, tuple[str, str]] = {
    "bytes": ("B", "bytes [B]"),
    "bandwidth": ("B/s", "bandwidth [bytes/time]"),
    "flops": ("FLOP/s", "compute rate [FLOP/time]"),
    "flop": ("FLOP", "operations [FLOP]"),
    "time": ("s", "time [s]"),
    "power": ("W", "power [W]"),
    "frequency": ("1/s", "rate [1/time]"),
    "energy": ("J", "energy [J]"),
    "dimensionless": ("", "dimensionless number"),
    "money_rate": ("1/hour", "rate [1/hour]"),
}


#: An example unit per dimension, for "write the unit" messages.
_EXAMPLE_UNIT = {"bytes": "GB", "bandwidth": "TB/s", "flops": "TFLOP/s", "flop": "GFLOP", "time": "ms",
                 "power": "W", "frequency": "/s", "energy": "J", "money_rate": "/hour"}

# Set while a file is validated: there a bare number for a dimensioned field is an error (is
# 'capacity: 80' 80 bytes or 80 GB?), while Python callers may pass floats already in SI units.
_UNITS_REQUIRED: ContextVar[bool] = ContextVar("perfmodel_units_required", default=False)


@contextmanager
def units_required() -> Iterator[None]:
    """Within this block :func:`to_si` refuses a non-zero bare number for a dimensioned quantity.

    File loaders wrap validation in it: a file must write ``80 GB``, not ``80``.
    """
    token = _UNITS_REQUIRED.set(True)
    try:
        yield
    finally:
        _UNITS_REQUIRED.reset(token)


def _unitless(value: Any, number: float, dimension: str, field: str) -> UnitError:
    si, desc = DIMENSIONS[dimension]
    # a big number is most likely already in SI units (80e9 bytes), a small one in a prefixed unit (80 GB)
    unit = si.replace("1/", "/") if abs(number) >= 1e4 else _EXAMPLE_UNIT.get(dimension, si)
    return UnitError(f"{field}: {value!r} has no unit; write it with one ({desc}), e.g. '{number:g} {unit}'")


# pint reads "Gb" as gilbert; networking writes Gb/s for gigabits. "Gbps"/"GBps" are common too.
_BITS = re.compile(r"(?<![A-Za-z])([kKMGTPE]i?)b(?=/|ps\b|\b)")
_PS = re.compile(r"(?<=[A-Za-z])ps\b")
# Upper-case "TFLOPS"/"TOPS" is a rate; "FLOPs" (lower-case s) is a count.
_RATE = re.compile(r"\b([kMGTPE]?)(FL)?OPS\b")


def _normalise(text: str) -> str:
    text = _BITS.sub(lambda m: m.group(1) + "bit", text)
    text = _RATE.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}OP/s", text)
    return _PS.sub("/s", text)


def _describe_dim(q: pint.Quantity) -> str:
    dims = str(q.dimensionality)
    names = {
        str(Q_(1, "B").dimensionality): "bytes",
        str(Q_(1, "B/s").dimensionality): "bytes/time",
        str(Q_(1, "FLOP/s").dimensionality): "FLOP/time",
        str(Q_(1, "FLOP").dimensionality): "FLOP",
        str(Q_(1, "s").dimensionality): "time",
        str(Q_(1, "W").dimensionality): "power",
        str(Q_(1, "").dimensionality): "dimensionless",
    }
    return names.get(dims, dims)


def to_si(value: Any, dimension: str, field: str = "value") -> float:
    """Convert a quantity string, pint Quantity or plain number to a float in SI units.

    Parameters
    ----------
    value : str | pint.Quantity | float
        ``"4.8 TB/s"``, ``Q_(4.8, "TB/s")`` or a plain number already in SI units.
    dimension : str
        One of :data:`DIMENSIONS` (``"bandwidth"``, ``"bytes"``, ``"flops"``, ``"time"``, ...).
    field : str
        Name of the field, used in error messages (``"hbm.bandwidth"``).

    Returns
    -------
    float
        The value in SI base units (B, B/s, FLOP/s, s, W).

    Raises
    ------
    UnitError
        Unparseable text, wrong dimension, or a non-finite or negative value; inside
        :func:`units_required`, a non-zero bare number for a dimensioned quantity.
    """
    if dimension not in DIMENSIONS:
        raise unknown_name("dimension", str(dimension), DIMENSIONS)
    unit, desc = DIMENSIONS[dimension]
    if isinstance(value, bool):
        raise UnitError(f"{field}: expected {desc}, got boolean {value!r}")
    bare = False
    if isinstance(value, (int, float)):
        out, bare = float(value), True
    else:
        if isinstance(value, str):
            text = value.strip()
            if not text:
                raise UnitError(f"{field}: expected {desc}, got an empty string")
            try:
                q = Q_(_normalise(text))
            except Exception as exc:  # pint raises several types for bad text
                raise UnitError(
                    f"{field}: cannot parse {value!r} as a quantity ({type(exc).__name__}); "
                    f"write e.g. '3.35 TB/s', '80 GB', '989 TFLOP/s', '700 W', '5 us'"
                ) from None
        elif isinstance(value, pint.Quantity):
            q = value
        else:
            raise UnitError(f"{field}: expected {desc} as a string like '1 {unit or '1'}', got {value!r}")
        if not isinstance(q, pint.Quantity):  # a bare number in a string: "3.5"
            q = Q_(float(q), "")
        if isinstance(value, str) and q.unitless and unit:
            raise _unitless(value, float(q.magnitude), dimension, field)
        try:
            out = float(q.to(unit or "dimensionless").magnitude)
        except pint.DimensionalityError:
            raise UnitError(
                f"{field}: expected {desc}, got {value!r} [{_describe_dim(q)}]"
            ) from None
    if not math.isfinite(out):
        raise UnitError(f"{field}: must be finite, got {value!r}")
    if bare and out != 0 and dimension != "dimensionless" and _UNITS_REQUIRED.get():
        raise _unitless(value, out, dimension, field)
    if out < 0:
        raise UnitError(f"{field}: must be >= 0, got {value!r}")
    return out


def fmt(value: float, unit: str, digits: int = 4) -> str:
    """Format an SI float with a compact prefix, e.g. ``fmt(3.35e12, 'B/s') -> '3.35 TB/s'``."""
    if value == 0 or not math.isfinite(value):
        return f"{value} {unit}"
    prefixes = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""),
                (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]
    for scale, p in prefixes:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {p}{unit}"
    return f"{value:.{digits}g} {unit}"
