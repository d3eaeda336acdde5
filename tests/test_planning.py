"""Planning: sweeps, Pareto fronts, cost and power, crossovers (hand-checkable cases)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perfmodel.errors import ConfigError, UnitError
from perfmodel.planning import (
    TotalCost,
    agent_chain,
    chain_time,
    max_concurrency_for_speed,
    output_crossover,
    pareto_front,
    pareto_mask,
    plot_fronts,
    plot_pareto,
    power_basis,
    prefill_bottleneck_isl,
    sweep,
    tokens_per_s_per_mw,
    usd,
    usd_per_hour,
    usd_per_million_tokens,
)

# ------------------------------------------------------------------------------------- sweep


def test_sweep_flags_invalid_layouts_and_keeps_rows():
    df = sweep("llama-3.1-8b", ["h100-sxm", "h200-sxm"], tp=[1, 3], ep=[1, 2], batch=[1, 16], isl=2048, osl=256)
    assert len(df) == 2 * 2 * 2 * 2  # hardware x tp x ep x batch
    bad = df[~df.valid]
    assert set(bad.tp.unique()) | set(bad.ep.unique()) >= {3, 2}
    assert bad.reason.str.contains("does not divide|dense").all()
    assert bad.ttft_s.isna().all() and (~bad.fits).all()
    good = df[df.valid]
    assert len(good) == 4 and good.fits.all() and (good.reason == "").all()
    np.testing.assert_allclose(good.per_user_tokens_per_s, 1.0 / good.tpot_s)


def test_sweep_matches_predict_and_scales_with_dp():
    import perfmodel as pm

    df = sweep("llama-3.1-8b", "h100-sxm", dp=[1, 2], batch=[1, 8], isl=[512, 2048], osl=128)
    ref = pm.predict("llama-3.1-8b", "h100-sxm", batch=8, isl=2048, osl=128)
    one = df[(df.dp == 1) & (df.batch == 8) & (df.isl == 2048)].iloc[0]
    two = df[(df.dp == 2) & (df.batch == 8) & (df.isl == 2048)].iloc[0]
    assert one.ttft_s == pytest.approx(float(ref.ttft_s))
    assert one.output_tokens_per_s == pytest.approx(float(ref.output_tokens_per_s))
    assert two.output_tokens_per_s == pytest.approx(2 * one.output_tokens_per_s)
    assert two.devices == 2 and two.sequences == 16 and two.power_w == pytest.approx(1400.0)
    assert two.output_tokens_per_s_per_device == pytest.approx(one.output_tokens_per_s_per_device)
    assert "TDP 700 W" in two.power_basis


def test_sweep_sequences_not_divisible_by_dp_are_flagged():
    df = sweep("llama-3.1-8b", "h100-sxm", dp=2, sequences=[3, 4], isl=256, osl=16)
    assert df.valid.tolist() == [False, True]
    assert "multiple of dp=2" in df.reason.iloc[0]
    assert df.batch.iloc[1] == 2 and df.sequences.tolist() == [3, 4]


def test_sweep_old_concurrency_keyword_warns_and_means_sequences():
    with pytest.warns(DeprecationWarning, match=r"sweep: concurrency= is deprecated, use sequences="):
        old = sweep("llama-3.1-8b", "h100-sxm", dp=2, concurrency=[4], isl=256, osl=16)
    new = sweep("llama-3.1-8b", "h100-sxm", dp=2, sequences=[4], isl=256, osl=16)
    assert "concurrency" not in old.columns
    assert old.equals(new)
    with pytest.raises(ConfigError, match="not both"):
        sweep("llama-3.1-8b", "h100-sxm", sequences=[4], concurrency=[4])


def test_sweep_cost_columns_by_hand():
    df = sweep("llama-3.1-8b", "h100-sxm", batch=4, isl=1024, osl=128, price="2/h")
    r = df.iloc[0]
    assert r.usd_per_hour == 2.0
    assert r.usd_per_m_output_all_in == pytest.approx(2.0 / 3600 * 1e6 / r.output_tokens_per_s)
    assert r.output_tokens_per_usd == pytest.approx(r.output_tokens_per_s * 3600 / 2.0)
    f = r.ttft_s / r.e2e_s
    assert r.usd_per_m_input == pytest.approx(2.0 / 3600 * 1e6 * f / r.input_tokens_per_s)


def test_sweep_unknown_name_raises():
    with pytest.raises(Exception, match="h100"):
        sweep("llama-3.1-8b", "h100-sxmm", batch=1)
    with pytest.raises(ConfigError, match="exactly one"):
        sweep("llama-3.1-8b", "h100-sxm")


# ------------------------------------------------------------------------------------- pareto


def test_pareto_mask_by_hand():
    x = [1, 2, 3, 2, 1, np.nan, 3]
    y = [3, 2, 1, 1, 3, 9, 1]
    # (1,3) twice: identical, both kept; (2,1) dominated by (2,2); (3,1) twice kept; NaN never
    assert pareto_mask(x, y).tolist() == [True, True, True, False, True, False, True]
    # minimise y: the lowest y for each x wins
    assert pareto_mask([1, 2, 3], [1, 2, 0], (True, False)).tolist() == [False, False, True]


def test_pareto_front_frame_groups_and_feasibility():
    df = pd.DataFrame({"hw": ["a", "a", "a", "b", "b"], "u": [10, 20, 30, 10, 20],
                       "d": [100, 50, 60, 40, 80], "fits": [True, True, False, True, True]})
    front = pareto_front(df, "u", "d")
    assert front.index.tolist() == [0, 4]  # (30, 60) does not fit; (10,100) and (20,80) dominate the rest
    per = pareto_front(df, "u", "d", by="hw")
    assert per.index.tolist() == [0, 1, 4]


def test_plot_pareto_labels_with_units():
    df = sweep("llama-3.1-8b", ["h100-sxm", "b200"], batch=[1, 4, 16, 64], isl=1024, osl=128, price="2/h")
    ax = plot_pareto(df, by="hardware")
    assert ax.get_xlabel() == "output tokens/s per user [tok/s]"
    assert "[tok/s/device]" in ax.get_ylabel()
    axes = plot_fronts(df)
    assert [a.get_ylabel() for a in axes][1:] == ["output tokens/s per MW [tok/s/MW]",
                                                  "output tokens per US dollar [tok/USD]"]
    import matplotlib.pyplot as plt

    plt.close("all")


# ------------------------------------------------------------------------------------- cost, power


def test_usd_parsing():
    assert usd("$2.5/h", "hour") == 2.5
    assert usd("60 USD/day", "hour") == pytest.approx(2.5)
    assert usd("0.1/kWh", "kWh") == pytest.approx(0.1)
    assert usd("$30000") == 30000.0 and usd(7) == 7.0
    with pytest.raises(UnitError, match="USD per hour"):
        usd("2.5 W", "hour")


def test_power_bases_by_hand():
    assert power_basis("h100-sxm").power_w(8) == pytest.approx(5600.0)
    u = power_basis("h100-sxm", "utilisation", idle="100 W", utilisation=0.5)
    assert u.power_w(8) == pytest.approx(8 * (100 + 0.5 * 600))
    s = power_basis("gb200-nvl72", "system")
    assert s.power_w(36) == pytest.approx(60_000.0) and "third-party" in s.describe()
    assert power_basis("rubin", tdp="1.8 kW").power_w(2) == pytest.approx(3600.0)
    with pytest.raises(ConfigError, match="no TDP"):
        power_basis("rubin")
    assert tokens_per_s_per_mw(1000.0, 5000.0) == pytest.approx(200_000.0)


def test_total_cost_and_per_million_tokens_by_hand():
    tco = TotalCost.of(purchase="$30000", lifetime="4 yr", energy_price="0.08/kWh", pue=1.3,
                       network_share=0.15, operations_share=0.10)
    hours = 4 * 365.25 * 24
    expect = (30000 / hours * 1.15 + 700 * 1.3 * 0.08 / 1000) * 1.10
    assert tco.usd_per_device_hour(700.0) == pytest.approx(expect)
    assert usd_per_hour(8, tco=tco, device_power_w=700.0) == pytest.approx(8 * expect)
    assert usd_per_hour(8, price="2.5/h") == pytest.approx(20.0)
    c = usd_per_million_tokens(36.0, input_tokens_per_s=10_000.0, output_tokens_per_s=1_000.0,
                               input_time_share=0.25)
    # 36 USD/h = 0.01 USD/s -> 10,000 USD per 1e6 s
    assert c["usd_per_m_input"] == pytest.approx(0.01 * 0.25 / 10_000 * 1e6)
    assert c["usd_per_m_output"] == pytest.approx(0.01 * 0.75 / 1_000 * 1e6)
    assert c["usd_per_m_output_all_in"] == pytest.approx(10.0)


# ------------------------------------------------------------------------------------- crossovers


def test_article_crossover_31_tokens():
    r = output_crossover((0.2, 0.040), (0.5, 0.030))
    assert r["crossover_tokens"] == pytest.approx(31.0)
    assert r["completion_s"] == pytest.approx(1.4)
    assert (r["faster_below"], r["faster_beyond"]) == ("a", "b")
    same = output_crossover({"ttft_s": 0.2, "tpot_s": 0.03}, {"ttft_s": 0.5, "tpot_s": 0.03})
    assert math.isinf(same["crossover_tokens"]) and same["faster_beyond"] is None


def test_chain_time_by_hand():
    # 3 calls of 101 tokens at 0.2 s + 100 x 10 ms = 1.2 s each, 2 tool gaps of 0.5 s
    assert chain_time(0.2, 0.01, [101, 101, 101], 0.5) == pytest.approx(3 * 1.2 + 1.0)


def test_prefill_bottleneck_isl_is_the_first_crossing():
    import perfmodel as pm

    r = prefill_bottleneck_isl("llama-3.1-8b", "h100-sxm", osl=128)
    n = r["isl"]
    assert n is not None and r["ttft_share"] >= 0.5
    below = pm.predict("llama-3.1-8b", "h100-sxm", isl=n - 1, osl=128)
    at = pm.predict("llama-3.1-8b", "h100-sxm", isl=n, osl=128)
    assert float(below.ttft_s) < float((128 - 1) * below.tpot_s)
    assert float(at.ttft_s) >= float((128 - 1) * at.tpot_s)


def test_max_concurrency_for_speed():
    import perfmodel as pm

    r = max_concurrency_for_speed(150.0, "llama-3.1-8b", "h100-sxm", isl=1024, osl=128, max_concurrency=256)
    c = r["concurrency"]
    assert 1 <= c < 256
    speed = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=128, batch=[c, c + 1]).per_user_tokens_per_s
    assert speed[0] >= 150.0 > speed[1]
    none = max_concurrency_for_speed(1e6, "llama-3.1-8b", "h100-sxm", max_concurrency=4)
    assert none["concurrency"] == 0


def test_agent_chain_ranks_deployments():
    df = agent_chain({"h100": {"hardware": "h100-sxm"}, "b200": {"hardware": "b200"}}, "llama-3.1-8b",
                     steps=3, isl=1000, osl=100, tool_time=0.5, tool_tokens=50)
    assert df.deployment.tolist() == ["b200", "h100"]
    assert df.last_call_isl.iloc[0] == 1000 + 2 * 150
    assert df.tool_s.tolist() == pytest.approx([1.0, 1.0])


def test_chain_time_rejects_tool_times_of_the_wrong_length():
    from perfmodel.errors import ConfigError
    from perfmodel.planning import chain_time

    assert chain_time(0.1, 0.01, [10, 20], tool_time=[1.0]) == pytest.approx(0.1 + 0.09 + 1.0 + 0.1 + 0.19)
    with pytest.raises(ConfigError, match="tool_time"):
        chain_time(0.1, 0.01, [10, 20], tool_time=[1.0, 0.0])
