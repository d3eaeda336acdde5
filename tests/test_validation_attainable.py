"""Repeat agreement and per-group offset bound (perfmodel.validation.attainable), on hand-built rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.validation.attainable import concurrency_slopes, offset_bound, repeat_agreement


def _rows(ttft, tpot, release, concurrency):
    n = len(ttft)
    return pd.DataFrame({"model": ["m"] * n, "system": ["s"] * n, "backend": ["b"] * n,
                         "concurrency": concurrency, "backend_version": release,
                         "measured_ttft_s": ttft, "measured_tpot_s": tpot})


def _entry(table, metric, kind):
    return next(e for e in table if e["metric"] == metric and e["pairs"] == kind)


def test_pairs_are_split_by_release_and_measure_the_larger_over_the_smaller():
    # point C=1: same release, TTFT 1.0 vs 1.5 (50 %), TPOT 0.010 vs 0.011 (10 %);
    # point C=2: releases differ, TTFT 2.0 vs 1.0 (100 %), TPOT equal; C=3 appears once (no pair).
    rows = _rows([1.0, 1.5, 2.0, 1.0, 9.0], [0.010, 0.011, 0.02, 0.02, 0.5],
                 ["1.0", "1.0", "1.0", "2.0", "1.0"], [1, 1, 2, 2, 3])
    table = repeat_agreement(rows, columns=("model", "system", "backend", "concurrency"))
    same, diff = _entry(table, "TTFT", "same release"), _entry(table, "TTFT", "different releases")
    assert (same["n pairs"], same["points"]) == (1, 1)
    assert same["median disagreement %"] == pytest.approx(50.0)
    assert diff["median disagreement %"] == pytest.approx(100.0)
    assert _entry(table, "TPOT", "same release")["median disagreement %"] == pytest.approx(10.0)
    assert _entry(table, "TPOT", "different releases")["median disagreement %"] == pytest.approx(0.0)


def test_no_pairs_gives_none_not_nan():
    rows = _rows([1.0, 2.0], [0.01, 0.02], ["1", "1"], [1, 2])
    table = repeat_agreement(rows, columns=("model", "concurrency"))
    assert all(e["n pairs"] == 0 and e["median disagreement %"] is None for e in table)


def test_missing_release_counts_as_one_unknown_release():
    rows = _rows([1.0, 1.2], [0.01, 0.01], [np.nan, np.nan], [1, 1])
    assert _entry(repeat_agreement(rows, columns=("model", "concurrency")), "TTFT", "same release")["n pairs"] == 1


def test_unknown_columns_are_an_error():
    with pytest.raises(ValueError, match="columns"):
        repeat_agreement(_rows([1.0], [0.01], ["1"], [1]), columns=("nope",))


def test_offset_bound_removes_a_constant_factor_per_group_but_not_the_spread_within():
    pred = pd.DataFrame({"g": ["a", "a", "b", "b"],
                         "predicted_ttft_s": [2.0, 4.0, 1.0, 1.0], "measured_ttft_s": [1.0, 2.0, 1.0, 3.0],
                         "predicted_tpot_s": [1.0, 1.0, 1.0, 1.0], "measured_tpot_s": [1.5, 1.5, 1.5, 1.5]})
    (whole,) = offset_bound(pred, {"by g": ["g"]})
    # group a: measured/predicted = 0.5 for both rows -> exact after the factor;
    # group b: ratios 1 and 3, median factor sqrt(3): errors |sqrt3 - 1| = 73.2 % and |sqrt3/3 - 1| = 42.3 %
    assert whole["n groups"] == 2
    assert whole["TPOT median abs %"] == pytest.approx(0.0, abs=1e-9)
    errors = np.array([0.0, 0.0, 100 * (np.sqrt(3) - 1), 100 * (1 - np.sqrt(3) / 3)])
    assert whole["TTFT median abs %"] == pytest.approx(np.median(errors))
    assert whole["TTFT p90 abs %"] == pytest.approx(np.percentile(errors, 90))


def test_concurrency_slope_is_the_log_log_slope_of_the_residual_within_each_sweep():
    c = np.array([1.0, 4.0, 16.0, 64.0])
    # sweep x: measured/predicted = C^0.25 (slope 0.25); sweep y: constant factor 2 (slope 0);
    # sweep z: two points only (skipped).
    pred = pd.DataFrame({"g": ["x"] * 4 + ["y"] * 4 + ["z"] * 2,
                         "concurrency": np.r_[c, c, c[:2]],
                         "predicted_ttft_s": np.ones(10),
                         "measured_ttft_s": np.r_[c ** 0.25, np.full(4, 2.0), [1.0, 3.0]]})
    slopes = concurrency_slopes(pred, "ttft", columns=["g"]).set_index("g")["slope"]
    assert list(slopes.index) == ["x", "y"]
    assert slopes["x"] == pytest.approx(0.25)
    assert slopes["y"] == pytest.approx(0.0, abs=1e-12)


def test_concurrency_slope_rejects_an_unknown_metric():
    with pytest.raises(ValueError, match="metric"):
        concurrency_slopes(pd.DataFrame({"concurrency": [1.0]}), "latency", columns=["concurrency"])
