"""Repeats, per-group rescaling, load slopes (research.attainable), on hand-built rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from research.attainable import (
    concurrency_slopes,
    group_ids,
    offset_bound,
    repeat_agreement,
    variance_explained,
)

POINT = ("model", "concurrency")


def _rows(ttft, tpot, release, concurrency, model="m"):
    n = len(ttft)
    return pd.DataFrame({"model": [model] * n, "concurrency": concurrency, "backend_version": release,
                         "measured_ttft_mean_s": ttft, "measured_tpot_mean_s": tpot})


def _entry(table, metric, kind):
    return next(e for e in table if e["metric"] == metric and e["pairs"] == kind)


def test_pairs_are_split_by_release_and_measure_the_larger_over_the_smaller():
    # C=1: same release, TTFT 1.0 vs 1.5 (50 %), TPOT 0.010 vs 0.011 (10 %);
    # C=2: releases differ, TTFT 2.0 vs 1.0 (100 %), TPOT equal; C=3 appears once (no pair).
    rows = _rows([1.0, 1.5, 2.0, 1.0, 9.0], [0.010, 0.011, 0.02, 0.02, 0.5],
                 ["1.0", "1.0", "1.0", "2.0", "1.0"], [1, 1, 2, 2, 3])
    table = repeat_agreement(rows, columns=POINT)
    same, diff = _entry(table, "TTFT", "same release"), _entry(table, "TTFT", "different releases")
    assert (same["n pairs"], same["points"], diff["n pairs"], diff["points"]) == (1, 1, 1, 1)
    assert same["median disagreement %"] == pytest.approx(50.0)
    assert diff["median disagreement %"] == pytest.approx(100.0)
    assert _entry(table, "TPOT", "same release")["median disagreement %"] == pytest.approx(10.0)
    assert _entry(table, "TPOT", "different releases")["median disagreement %"] == pytest.approx(0.0)


def test_three_repeats_give_three_pairs_on_one_point():
    table = repeat_agreement(_rows([1.0, 2.0, 4.0], [1.0, 1.0, 1.0], ["a"] * 3, [1, 1, 1]), columns=POINT)
    same = _entry(table, "TTFT", "same release")
    assert (same["n pairs"], same["points"]) == (3, 1)
    assert same["median disagreement %"] == pytest.approx(100.0)   # pairs: 100, 300, 100 %


def test_pairs_with_an_unrecorded_release_are_kept_apart():
    rows = _rows([1.0, 1.2, 1.0, 1.1], [0.01] * 4, [np.nan, np.nan, "1", np.nan], [1, 1, 2, 2])
    table = repeat_agreement(rows, columns=POINT)
    assert {e["pairs"] for e in table} == {"release not recorded"}
    assert _entry(table, "TTFT", "release not recorded")["n pairs"] == 2


def test_breakdown_by_a_column():
    rows = pd.concat([_rows([1.0, 2.0], [1.0, 1.0], ["1", "1"], [1, 1], model="a"),
                      _rows([1.0, 1.1], [1.0, 1.0], ["1", "2"], [1, 1], model="b")])
    table = repeat_agreement(rows, columns=POINT, by="model")
    got = {(e["model"], e["metric"], e["pairs"]): e["median disagreement %"] for e in table}
    assert got[("a", "TTFT", "same release")] == pytest.approx(100.0)
    assert got[("b", "TTFT", "different releases")] == pytest.approx(10.0)
    assert ("a", "TTFT", "different releases") not in got


def test_no_pairs_gives_an_empty_table():
    assert repeat_agreement(_rows([1.0, 2.0], [0.01, 0.02], ["1", "1"], [1, 2]), columns=POINT) == []


def test_missing_columns_are_an_error_naming_them():
    with pytest.raises(ValueError, match="isl"):
        repeat_agreement(_rows([1.0], [0.01], ["1"], [1]), columns=("model", "isl"))


def test_group_ids_treat_nan_as_one_value():
    frame = pd.DataFrame({"a": [1.0, np.nan, np.nan, 1.0], "b": ["x", "x", "x", "y"]})
    ids = group_ids(frame, ["a", "b"])
    assert ids[1] == ids[2] and len({ids[0], ids[1], ids[3]}) == 3
    assert (group_ids(frame, []) == 0).all()


def _pred(groups, predicted_ttft, measured_ttft):
    n = len(groups)
    return pd.DataFrame({"g": groups, "predicted_ttft_mean_s": predicted_ttft, "measured_ttft_mean_s": measured_ttft,
                         "predicted_tpot_mean_s": np.ones(n), "measured_tpot_mean_s": np.full(n, 1.5)})


def test_offset_bound_removes_a_constant_factor_per_group_but_not_the_spread_within():
    pred = _pred(["a", "a", "b", "b"], [2.0, 4.0, 1.0, 1.0], [1.0, 2.0, 1.0, 3.0])
    none, by_g = offset_bound(pred, {"none": (), "by g": ("g",)}, min_rows=2)
    # no factor: TTFT errors 100, 100, 0, 66.7 %; TPOT 33.3 % everywhere
    assert none["TTFT median abs %"] == pytest.approx(np.median([100, 100, 0, 200 / 3]))
    assert none["TPOT median abs %"] == pytest.approx(100 / 3)
    assert (none["groups with a factor"], none["rows rescaled"]) == (0, 0)
    # group a: ratio 0.5 on both rows -> exact; group b: ratios 1 and 3, median factor sqrt(3)
    assert (by_g["groups with a factor"], by_g["rows rescaled"]) == (2, 4)
    assert by_g["TPOT median abs %"] == pytest.approx(0.0, abs=1e-9)
    errors = np.array([0.0, 0.0, 100 * (np.sqrt(3) - 1), 100 * (1 - np.sqrt(3) / 3)])
    assert by_g["TTFT median abs %"] == pytest.approx(np.median(errors))
    assert by_g["TTFT p90 abs %"] == pytest.approx(np.percentile(errors, 90))


def test_offset_bound_leaves_small_groups_alone_and_survives_a_zero_prediction():
    pred = _pred(["a", "a", "a", "b"], [2.0, 2.0, 0.0, 4.0], [1.0, 1.0, 1.0, 1.0])
    (entry,) = offset_bound(pred, {"by g": ("g",)}, min_rows=3)
    # group a (3 rows) gets factor 0.5 from its two finite ratios: errors 0, 0 and -100 % (0 predicted);
    # group b (1 row) keeps its prediction: +300 %
    assert (entry["groups with a factor"], entry["rows rescaled"]) == (1, 3)
    assert entry["TTFT median abs %"] == pytest.approx(50.0)


def test_concurrency_slope_and_its_standard_error_within_each_sweep():
    c = np.array([1.0, 4.0, 16.0, 64.0])
    # sweep x: measured/predicted = C^0.25 exactly (slope 0.25, se 0); sweep y: constant factor 2;
    # sweep z: 3 points but C spans only 1..2 (ln 2 < 1: skipped); sweep w: 2 points (skipped).
    pred = pd.DataFrame({"g": ["x"] * 4 + ["y"] * 4 + ["z"] * 3 + ["w"] * 2,
                         "concurrency": np.r_[c, c, [1.0, 1.5, 2.0], c[:2]],
                         "predicted_ttft_mean_s": np.ones(13),
                         "measured_ttft_mean_s": np.r_[c ** 0.25, np.full(4, 2.0), [1.0, 5.0, 1.0], [1.0, 3.0]]})
    slopes = concurrency_slopes(pred, "ttft", columns=["g"]).set_index("g")
    assert list(slopes.index) == ["x", "y"]
    assert slopes.loc["x", "slope"] == pytest.approx(0.25)
    assert slopes.loc["x", "slope_se"] == pytest.approx(0.0, abs=1e-12)
    assert slopes.loc["y", "slope"] == pytest.approx(0.0, abs=1e-12)


def test_slope_standard_error_by_hand():
    # x = ln C = 0, 1, 2 ; r = 0, 1, 0 -> slope 0, residuals -1/3, 2/3, -1/3, se = sqrt((2/3)/1/2)
    pred = pd.DataFrame({"g": ["s"] * 3, "concurrency": np.exp([0.0, 1.0, 2.0]), "predicted_tpot_mean_s": 1.0,
                         "measured_tpot_mean_s": np.exp([0.0, 1.0, 0.0])})
    row = concurrency_slopes(pred, "tpot", columns=["g"]).iloc[0]
    assert row["slope"] == pytest.approx(0.0, abs=1e-12)
    assert row["slope_se"] == pytest.approx(np.sqrt(1 / 3))


def test_concurrency_slope_rejects_bad_arguments():
    frame = pd.DataFrame({"concurrency": [1.0]})
    with pytest.raises(ValueError, match="metric"):
        concurrency_slopes(frame, "latency", columns=["concurrency"])
    with pytest.raises(ValueError, match="min_points"):
        concurrency_slopes(frame, "ttft", columns=["concurrency"], min_points=2)


def test_variance_explained_by_hand():
    # values 1, 3 | 5, 7: mean 4, SS_T = 20, group means 2 and 6 -> SS_B = 16, SS_W = 4 (n 4, k 2)
    frame = pd.DataFrame({"a": ["p", "p", "q", "q"], "b": ["u", "v", "w", "z"], "c": ["k"] * 4})
    (entry,) = variance_explained(pd.Series([1.0, 3.0, 5.0, 7.0]), frame, ["a", "b", "c"])
    assert (entry["column"], entry["groups"]) == ("a", 2)
    assert entry["share %"] == pytest.approx(80.0)
    assert entry["share beyond chance %"] == pytest.approx(100 * (16 - 2) / (20 + 2))
