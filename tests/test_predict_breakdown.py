"""``Prediction.breakdown()`` covers every operating point of a vectorised prediction, not only the first;
the text form of a prediction is the CLI's table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.errors import ConfigError

BATCHES = [1, 8, 64]


@pytest.fixture(scope="module")
def grid():
    return pm.predict("llama-3.1-70b", "h100-sxm", tp=8, isl=2048, osl=256, batch=BATCHES)


def test_every_point_is_broken_down_as_its_own_prediction(grid):
    frame = grid.breakdown()
    assert list(frame.columns[:5]) == ["batch", "isl", "osl", "phase", "op_class"]
    assert sorted(frame["batch"].unique()) == BATCHES
    for k, b in enumerate(BATCHES):
        one = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, isl=2048, osl=256, batch=b).breakdown()
        mine = frame[frame["batch"] == b].reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, one, rtol=1e-12)
        pd.testing.assert_frame_equal(grid.breakdown(point=k), one, rtol=1e-12)
        # the prefill rows add up to the point's TTFT (one prefill step of the whole batch)
        prefill = mine.loc[mine["phase"] == "prefill", "time_s"].sum()
        assert prefill == pytest.approx(float(np.ravel(grid.ttft_s)[k]), rel=1e-12)
    # the points differ: a larger batch takes longer to prefill
    per_batch = frame[frame["phase"] == "prefill"].groupby("batch")["time_s"].sum()
    assert per_batch.is_monotonic_increasing and per_batch.iloc[-1] > 10 * per_batch.iloc[0]


@pytest.mark.parametrize("point", [3, -1, 1.0, "0"])
def test_a_point_outside_the_prediction_is_refused(grid, point):
    with pytest.raises(ConfigError, match=r"point: expected an index 0 to 2 of this prediction's 3 points"):
        grid.breakdown(point=point)


def test_a_large_grid_keeps_its_first_point_and_says_so():
    big = pm.predict("llama-3.1-8b", "h100-sxm", isl=np.arange(100, 164)[:, None], osl=16, batch=[1, 8])
    assert np.size(big.ttft_s) == 128
    with pytest.raises(ConfigError, match="kept the per-op parts of its first 1 only"):
        big.breakdown()
    first = big.breakdown(point=0)
    assert first.loc[first["phase"] == "prefill", "time_s"].sum() == pytest.approx(float(np.ravel(big.ttft_s)[0]),
                                                                                   rel=1e-12)


def test_text_form_is_a_table_of_whole_counts_and_4_significant_figures():
    """repr(Prediction): batch/isl/osl as whole numbers, 4 significant figures, and no timing shown for a
    point that does not fit (its reason instead), as the CLI table prints them."""
    p = pm.predict("llama-3.1-70b", "h100-sxm", tp=2, isl=2048, osl=256, batch=[1, 1024])
    lines = repr(p).splitlines()
    assert lines[1].split() == ["batch", "isl", "osl", "ttft_ms", "tpot_ms", "e2e_ms", "output_tokens_per_s",
                                "per_user_tokens_per_s", "fits", "decode_bound", "why_not"]
    fits, unfit = lines[3].split(), lines[4].split()
    assert fits[:3] == ["1", "2048", "256"] and float(fits[3]) == pytest.approx(float(p.ttft_s[0]) * 1e3, rel=5e-4)
    assert len(fits[3].replace(".", "").lstrip("0")) <= 4
    assert unfit[:3] == ["1024", "2048", "256"] and unfit[3:8] == ["—"] * 5 and unfit[8] == "False"
    assert "exceed usable memory" in lines[4] and "to_dataframe() has the value" in lines[5]


def test_deployment_text_form_uses_the_same_table():
    from perfmodel.deployment import load_deployment, predict_deployment

    path = Path(__file__).resolve().parents[1] / "deployments" / "kimi-k2-vera-rubin-lpx-split.yaml"
    d = predict_deployment(load_deployment(path), isl=2048, osl=256, batch=[1, 64])
    table = repr(d).splitlines()[3:]
    assert table[0].split()[:4] == ["batch", "isl", "osl", "ttft_ms"]
    assert table[2].split()[:3] == ["1", "2048", "256"] and table[3].split()[:3] == ["64", "2048", "256"]


def test_breakdown_point_must_be_an_index_not_a_bool():
    import perfmodel as pm
    from perfmodel.errors import ConfigError

    p = pm.predict("llama-3.1-8b", "h100-sxm", isl=128, osl=8, batch=[1, 2])
    with pytest.raises(ConfigError, match="point: expected an index 0 to 1.*got True"):
        p.breakdown(point=True)
    assert len(p.breakdown(point=1)) > 0
