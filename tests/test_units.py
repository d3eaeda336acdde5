"""Quantity strings to float64 SI: prefixes, bits vs bytes, rates, times, and unit-choice invariance."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel.errors import UnitError
from perfmodel.units import Q_, fmt, to_si


@pytest.mark.parametrize(("text", "dimension", "expected"), [
    # decimal vs binary prefixes
    ("1 kB", "bytes", 1e3),
    ("1 KiB", "bytes", 2**10),
    ("80 GB", "bytes", 80e9),
    ("80 GiB", "bytes", 80 * 2**30),
    ("1 TB", "bytes", 1e12),
    ("1 TiB", "bytes", 2**40),
    ("0.5 MiB", "bytes", 2**19),
    # bandwidth: bytes vs bits, '/s' vs 'ps'
    ("3.35 TB/s", "bandwidth", 3.35e12),
    ("2575 GiB/s", "bandwidth", 2575 * 2**30),
    ("400 Gb/s", "bandwidth", 50e9),
    ("400 Gbps", "bandwidth", 50e9),
    ("50 GBps", "bandwidth", 50e9),
    ("800 Gbit/s", "bandwidth", 100e9),
    ("1.6 Tb/s", "bandwidth", 200e9),
    ("21 PB/s", "bandwidth", 21e15),
    # compute rates
    ("989 TFLOP/s", "flops", 9.89e14),
    ("989 TFLOPS", "flops", 9.89e14),
    ("624 TOPS", "flops", 6.24e14),
    ("1.2 PFLOP/s", "flops", 1.2e15),
    ("3.6 EFLOPS", "flops", 3.6e18),
    # counts are not rates
    ("2 TFLOPs", "flop", 2e12),
    # time
    ("2 us", "time", 2e-6),
    ("2 µs", "time", 2e-6),  # micro sign U+00B5
    ("2 μs", "time", 2e-6),  # Greek mu U+03BC
    ("2.5 ms", "time", 2.5e-3),
    ("100 ns", "time", 1e-7),
    ("1 min", "time", 60.0),
    # power
    ("700 W", "power", 700.0),
    ("120 kW", "power", 1.2e5),
    # plain numbers are already SI
    (3.35e12, "bandwidth", 3.35e12),
    (0, "bytes", 0.0),
])
def test_to_si(text, dimension, expected):
    assert to_si(text, dimension) == pytest.approx(expected, rel=1e-12)


def test_binary_prefix_is_exact():
    assert to_si("1 GiB", "bytes") == 1073741824.0
    assert to_si("192 GiB", "bytes") == 192 * 2**30


def test_gb_and_gib_differ():
    assert to_si("192 GiB", "bytes") / to_si("192 GB", "bytes") == pytest.approx(2**30 / 1e9, rel=1e-15)


def test_bits_are_one_eighth_of_bytes():
    assert to_si("8 Gb/s", "bandwidth") == to_si("1 GB/s", "bandwidth")


def test_pint_quantity_is_accepted():
    assert to_si(Q_(4.8, "TB/s"), "bandwidth") == pytest.approx(4.8e12)


@pytest.mark.parametrize(("text", "dimension", "needle"), [
    ("4.8 TB", "bandwidth", "bandwidth"),
    ("3.35 TB/s", "bytes", "bytes"),
    ("989 TB/s", "flops", "FLOP"),
    ("700 J", "power", "power"),
    ("2 GB", "time", "time"),
    ("3.5", "bytes", "bytes"),
    ("-1 GB", "bytes", ">= 0"),
    ("nan GB", "bytes", "finite"),
    ("inf TB/s", "bandwidth", "finite"),
    (float("inf"), "bandwidth", "finite"),
    ("", "bytes", "empty"),
    ("3 parsecs per fortnight", "bandwidth", "cannot parse"),
    (True, "bytes", "boolean"),
    ([1, 2], "bytes", "expected"),
])
def test_bad_quantities(text, dimension, needle):
    with pytest.raises(UnitError, match="my.field") as info:
        to_si(text, dimension, field="my.field")
    assert needle in str(info.value)


def test_fmt_round_trip():
    assert fmt(3.35e12, "B/s") == "3.35 TB/s"
    assert fmt(9.89e14, "FLOP/s") == "989 TFLOP/s"
    assert fmt(2e-6, "s") == "2 µs"


# --------------------------------------------------------------------------------------------------
# properties: the unit a figure is written in never changes it beyond the conversion
# --------------------------------------------------------------------------------------------------
finite = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
byte_counts = st.integers(min_value=1, max_value=2**50)


@given(finite)
def test_gib_is_exactly_two_to_the_thirty(x):
    assert to_si(f"{x!r} GiB", "bytes") == x * 2**30
    assert to_si(f"{x!r} GiB/s", "bandwidth") == x * 2**30


@given(finite)
def test_gb_is_ten_to_the_nine(x):
    assert math.isclose(to_si(f"{x!r} GB", "bytes"), x * 1e9, rel_tol=1e-15)


@given(byte_counts)
def test_same_bytes_in_gb_or_gib(n):
    decimal = to_si(f"{n / 1e9!r} GB", "bytes")
    binary = to_si(f"{n / 2**30!r} GiB", "bytes")
    assert math.isclose(decimal, binary, rel_tol=1e-12)
    assert math.isclose(decimal, n, rel_tol=1e-12)


@given(byte_counts)
def test_same_rate_in_bits_or_bytes(n):
    assert math.isclose(to_si(f"{n / 1e9!r} GB/s", "bandwidth"),
                        to_si(f"{8 * n / 1e9!r} Gb/s", "bandwidth"), rel_tol=1e-12)


@given(finite)
def test_tflops_spellings_agree(x):
    a = to_si(f"{x!r} TFLOP/s", "flops")
    assert a == to_si(f"{x!r} TFLOPS", "flops")
    assert math.isclose(a, to_si(f"{x / 1000!r} PFLOP/s", "flops"), rel_tol=1e-12)


@given(finite)
def test_microseconds_spellings_agree(x):
    us = to_si(f"{x!r} us", "time")
    assert us == to_si(f"{x!r} µs", "time") == to_si(f"{x!r} μs", "time")
    assert math.isclose(us, to_si(f"{x / 1000!r} ms", "time"), rel_tol=1e-12)
