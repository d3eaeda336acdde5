"""The plan-vs-measured selection (perfmodel.validation.plan_regret) on a hand-computed fixture.

Fixture: one workload, OSL = 11 (so E2E = TTFT + 10 TPOT), three configurations:

=====  ======  ===  ====  =================  =====  =================  ========  ======
row    config  C    GPUs  measured TTFT/TPOT  1/TPOT  tok/s/GPU (meas.)  predicted  tok/s/GPU (pred.)
=====  ======  ===  ====  =================  =====  =================  ========  ======
a1     A       4    1     0.10 / 0.010       100    44/0.20 = 220      same      220 (speed 100)
a2     A       16   1     0.20 / 0.020       50     176/0.40 = 440     same      440 (speed 50)
b1     B       16   2     0.12 / 0.010       100    176/0.22/2 = 400   same      400 (speed 100)
b2     B       64   2     0.20 / 0.030       33.3   704/0.50/2 = 704   0.2/0.02  880 (speed 50)
c1     C       8    1     0.10 / 0.015       66.7   88/0.25 = 352      missing   —
=====  ======  ===  ====  =================  =====  =================  ========  ======
"""

import numpy as np
import pandas as pd
import pytest

from perfmodel.errors import ConfigError
from perfmodel.validation.plan_regret import (
    add_rates,
    choose,
    deployment_rows,
    layout_label,
    score_groups,
    summarize,
    throughput_per_gpu,
)

NAN = float("nan")


def fixture() -> pd.DataFrame:
    rows = [("a1", "A", 4, 1, 0.10, 0.010, 0.10, 0.010), ("a2", "A", 16, 1, 0.20, 0.020, 0.20, 0.020),
            ("b1", "B", 16, 2, 0.12, 0.010, 0.12, 0.010), ("b2", "B", 64, 2, 0.20, 0.030, 0.20, 0.020),
            ("c1", "C", 8, 1, 0.10, 0.015, NAN, NAN)]
    df = pd.DataFrame(rows, columns=["id", "config", "clients", "gpus", "measured_ttft_mean_s", "measured_tpot_mean_s",
                                     "predicted_ttft_mean_s", "predicted_tpot_mean_s"])
    return df.assign(osl=11, model_path="m", system="s", backend="e", isl=100)


def test_throughput_per_gpu_by_hand():
    assert throughput_per_gpu(0.12, 0.01, 16, 11, 2) == pytest.approx(400.0)
    assert throughput_per_gpu(0.2, 0.03, 64, 11, 2) == pytest.approx(704.0)


def test_pick_with_regret_under_ten_percent():
    # floor 40: measured best A (a2, 440); predictions rank B first (b2, 880), B's best run at the
    # floor measures 400 (b2 itself measures 33 tok/s/user): regret 1 - 400/440 = 9.09 %
    c = choose(fixture(), 40.0)
    assert (c.best_config, c.best_output_tokens_per_s_per_gpu) == ("A", pytest.approx(440.0))
    assert (c.pick_config, c.pick_predicted_output_tokens_per_s_per_gpu, c.pick_output_tokens_per_s_per_gpu) == (
        "B", pytest.approx(880.0), pytest.approx(400.0))
    assert c.regret_pct == pytest.approx(100.0 / 11.0)
    assert (c.configs, c.configs_at_floor, c.pick_rank) == (3, 3, 2)
    assert c.best_speed == c.best_predicted_speed == pytest.approx(50.0)   # a2, predicted as measured


def test_pick_is_measured_best_at_a_higher_floor():
    # floor 60: a2 and b2 are predicted too slow; the pick is B (b1, 400), also the measured best
    c = choose(fixture(), 60.0)
    assert (c.best_config, c.pick_config, c.pick_rank, c.regret_pct) == ("B", "B", 1, pytest.approx(0.0))


def test_pick_without_a_measured_run_at_the_floor_has_full_regret():
    # C predicted at 100 tok/s/user and 88/0.2 = 440 tok/s/GPU: picked at floor 70, where its only
    # run measures 66.7 tok/s/user: nothing of C keeps the floor
    df = fixture()
    df.loc[df["id"] == "c1", ["predicted_ttft_mean_s", "predicted_tpot_mean_s"]] = [0.10, 0.010]
    c = choose(df, 70.0)
    assert (c.pick_config, c.pick_output_tokens_per_s_per_gpu, c.pick_rank) == ("C", 0.0, 0)
    assert c.pick_max_speed == pytest.approx(1 / 0.015)
    assert (c.best_config, c.regret_pct) == ("B", pytest.approx(100.0))


def test_no_prediction_at_the_floor_and_no_measurement_at_the_floor():
    df = fixture().assign(predicted_ttft_mean_s=NAN, predicted_tpot_mean_s=NAN)
    c = choose(df, 40.0)
    assert (c.pick_config, c.regret_pct, c.pick_rank) == ("", pytest.approx(100.0), 0)
    assert np.isnan(c.pick_predicted_output_tokens_per_s_per_gpu)
    assert choose(fixture(), 200.0) is None


def test_score_groups_median_floor_and_skips():
    single = fixture().iloc[:2].assign(system="t")      # one configuration: skipped, reason given
    scored, skipped = score_groups(pd.concat([fixture(), single], ignore_index=True))
    assert list(skipped["group"]) == ["m / t / e / 100 / 11"]
    assert "one configuration (A)" in skipped["reason"].iloc[0]
    (row,) = scored.to_dict("records")
    # median of 100, 50, 100, 33.3, 66.7 tok/s/user is 66.7 (c1): measured at the floor a1, b1, c1 ->
    # B 400 best; predicted at the floor a1 (220), b1 (400) -> B
    assert row["floor"] == pytest.approx(1 / 0.015)
    assert (row["rows"], row["best_config"], row["pick_config"], row["regret_pct"]) == (5, "B", "B", 0.0)
    s = summarize(pd.DataFrame([{"regret_pct": 0.0, "pick_rank": 1}, {"regret_pct": 100 / 11, "pick_rank": 2},
                                {"regret_pct": 50.0, "pick_rank": 3}]))
    assert (s["groups"], s["median_regret_pct"]) == (3, pytest.approx(100 / 11))
    assert (s["within_share"], s["best_share"]) == (pytest.approx(2 / 3), pytest.approx(1 / 3))
    with pytest.raises(ConfigError, match="quantile"):
        score_groups(fixture(), 1.5)


def test_deployment_rows_gpus_clients_and_labels():
    agg = {"mode": "agg", "weights": "fp8", "tp": 2, "pp": 1, "dp": 4, "ep": 8, "moe_tp": 1, "concurrency": 32.0}
    dis = {"mode": "disagg", "weights": "nvfp4", "tp": 8, "pp": 1, "dp": 1, "ep": 1, "moe_tp": 8,
           "concurrency": 16.0, "p_tp": 4, "p_pp": 1, "p_dp": 1, "p_ep": 1, "p_moe_tp": 4, "p_workers": 2,
           "d_workers": 3}
    out = deployment_rows(pd.DataFrame([agg, dis]))
    assert list(out["gpus"]) == [8.0, 2 * 4 + 3 * 8]
    assert list(out["clients"]) == [32.0, 16.0 * 3]
    assert list(out["config"]) == ["fp8 TP2 ADP4 EP8", "nvfp4 P/D 2x[TP4] + 3x[TP8]"]
    assert layout_label(8, 2, 1, 4, 2) == "TP8 PP2 EP4 moeTP2"


def test_e2e_speed_counts_the_wait_for_the_first_token():
    # OSL / (TTFT + 10 TPOT): a1 11/0.2 = 55, a2 11/0.4 = 27.5, b1 11/0.22 = 50, b2 11/0.5 = 22 tok/s/user
    rates = add_rates(fixture(), "e2e").set_index("id")["measured_speed"]
    assert rates[["a1", "a2", "b1", "b2"]].tolist() == pytest.approx([55.0, 27.5, 50.0, 22.0])
    # at 45 tok/s/user a2 (440 tok/s/GPU, 50 by 1/TPOT) no longer counts: the best is b1 (400)
    assert choose(fixture(), 45.0).best_config == "A"
    assert choose(fixture(), 45.0, speed="e2e").best_config == "B"
    with pytest.raises(ConfigError, match="speed"):
        add_rates(fixture(), "ttft")


def test_old_throughput_names_warn_and_give_the_same_numbers():
    """The per-GPU throughputs are named by the glossary's pattern (output_tokens_per_s_per_gpu); Choice's
    old attributes still answer, with a DeprecationWarning."""
    rates = add_rates(fixture())
    assert rates["measured_output_tokens_per_s_per_gpu"].tolist()[:2] == pytest.approx([220.0, 440.0])
    assert not {"measured_tps_gpu", "predicted_tps_gpu"} & set(rates.columns)
    c = choose(fixture(), 40.0)
    for old, new in (("best_tps_gpu", "best_output_tokens_per_s_per_gpu"),
                     ("pick_predicted_tps_gpu", "pick_predicted_output_tokens_per_s_per_gpu"),
                     ("pick_tps_gpu", "pick_output_tokens_per_s_per_gpu")):
        with pytest.warns(DeprecationWarning, match=f"Choice.{old} is deprecated, use Choice.{new}"):
            assert getattr(c, old) == getattr(c, new)
    scored, _ = score_groups(fixture())
    assert "pick_output_tokens_per_s_per_gpu" in scored.columns and "pick_tps_gpu" not in scored.columns
