"""The reference article's worked examples (concepts.md §2, §4, §5, §7), computed with perfmodel."""

from __future__ import annotations

import numpy as np
import pytest

import perfmodel as pm


def test_70_gb_at_2_tb_per_s_takes_at_least_35_ms():
    # §4: a decode step reading exactly 70 GB at an effective 2 TB/s; extra FLOP/s do not help
    t = pm.roofline_time(flops=1e12, bytes_moved=pm.to_si("70 GB", "bytes"), peak_flops=1e18,
                         bandwidth=pm.to_si("2 TB/s", "bandwidth"))
    assert t == pytest.approx(0.035, rel=1e-12)
    assert pm.roofline_time(1e12, 70e9, 1e21, 2e12) == pytest.approx(0.035, rel=1e-12)


def test_crossover_at_31_tokens_both_finish_at_1_4_s():
    # §2: A (0.2 s, 40 ms) and B (0.5 s, 30 ms)
    n = pm.crossover_tokens(0.2, 0.040, 0.5, 0.030)
    assert n == 31.0 and str(float(n)) == "31.0"  # not 30.999999999999993 (float noise of 0.04 - 0.03)
    assert pm.e2e_latency(0.2, 0.040, 31) == pytest.approx(1.4, rel=1e-12)
    assert pm.e2e_latency(0.5, 0.030, 31) == pytest.approx(1.4, rel=1e-12)
    # beyond the crossover B finishes first, before it A does
    assert pm.e2e_latency(0.5, 0.030, 100) < pm.e2e_latency(0.2, 0.040, 100)
    assert pm.e2e_latency(0.2, 0.040, 10) < pm.e2e_latency(0.5, 0.030, 10)


def test_crossover_broadcasts_and_parallel_lines_never_cross():
    n = pm.crossover_tokens(np.array([0.2, 0.2]), np.array([0.04, 0.03]), 0.5, 0.03)
    assert n[0] == pytest.approx(31.0)
    assert np.isinf(n[1])


@pytest.mark.parametrize("round_trip_cost, expected", [(10e-6, 0.8e-3), (50e-6, 4e-3)])
def test_80_dependent_round_trips(round_trip_cost, expected):
    # §7: 80 round trips per token at 10 µs (50 µs) fixed cost each: one round trip is two messages
    t = pm.round_trips_time(80, size=0.0, bandwidth=1e12, alpha=round_trip_cost / 2)
    assert t == pytest.approx(expected, rel=1e-12)


def test_message_time_is_alpha_plus_size_over_bandwidth_not_max():
    assert pm.message_time(1e6, 1e9, 5e-6) == pytest.approx(5e-6 + 1e-3, rel=1e-12)


def test_offload_condition():
    assert pm.offload_pays(t_local=10e-3, t_remote=4e-3, t_comm=5e-3)
    assert not pm.offload_pays(t_local=10e-3, t_remote=4e-3, t_comm=7e-3)
    assert pm.offload_pays(t_local=10e-3, t_remote=4e-3, t_comm=7e-3, overlap=0.5)
    with pytest.raises(pm.ConfigError, match="overlap"):
        pm.offload_pays(1, 1, 1, overlap=1.5)


def test_batching_trades_per_user_speed_for_total_throughput():
    # §5 reproduced on a real pair: Llama-3.1-8B on one H100, batch 8 vs 64
    p = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=256, batch=[8, 64])
    assert p.decode_tokens_per_s[1] > 1.5 * p.decode_tokens_per_s[0]  # more total tokens/s
    assert p.per_user_tokens_per_s[1] < p.per_user_tokens_per_s[0]  # each user slower
    assert p.tpot_s[1] > p.tpot_s[0]


def test_four_cards_are_not_four_times_faster_per_user():
    # §7: TP on 4 GPUs frees memory but costs coordination
    one = pm.predict("llama-3.1-8b", "h100-sxm", tp=1, isl=1024, osl=256, batch=1)
    four = pm.predict("llama-3.1-8b", "h100-sxm", tp=4, isl=1024, osl=256, batch=1)
    speedup = float(one.tpot_s / four.tpot_s)
    assert 1.0 < speedup < 4.0
    comm = four.breakdown().query("phase == 'decode' and op_class.str.startswith('comm:')")["time_s"].sum()
    assert comm > 0


def test_collectives_hand_values():
    # ring AR over 8 ranks of 1 MB at 450 GB/s with alpha 2 us: 14 steps; two-shot: 2 steps
    size, bw, a = 1e6, 450e9, 2e-6
    vol = 2 * 7 / 8 * size / bw
    assert pm.all_reduce_time(size, 8, bw, a, "ring") == pytest.approx(14 * a + vol, rel=1e-12)
    assert pm.all_reduce_time(size, 8, bw, a, "two-shot") == pytest.approx(2 * a + vol, rel=1e-12)
    assert pm.all_reduce_time(size, 8, bw, a, "halving-doubling") == pytest.approx(6 * a + vol, rel=1e-12)
    assert pm.all_reduce_time(size, 8, bw, a) == pytest.approx(2 * a + vol, rel=1e-12)  # auto picks two-shot
    assert pm.all_reduce_time(size, 1, bw, a) == 0.0
    # all-gather over 2304 ranks: recursive doubling's 12 steps, not the ring's 2303
    assert pm.all_gather_time(0.0, 2304, bw, 1e-6) == pytest.approx(12e-6, rel=1e-12)
    assert pm.all_gather_time(0.0, 3, bw, 1e-6) == pytest.approx(2e-6, rel=1e-12)
    assert pm.all_to_all_time(8e6, 8, bw, a) == pytest.approx(a + 7 / 8 * 8e6 / bw, rel=1e-12)
