"""Closed-form P/D-disaggregated steady state: hand-computed cases and agreement with the simulator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from perfmodel.engine.calibration import PARAMETERS, EngineCalibration
from perfmodel.engine.engine import Engine
from perfmodel.engine.prefill import prefill_batch_time
from perfmodel.errors import ConfigError
from perfmodel.serving import Disaggregated, Workload, load_engine, simulate, steady_state_disagg
from perfmodel.serving.stand_in import ConstantStepModel, LinearStepModel, RooflineStepModel
from perfmodel.serving.steady_disagg import lockstep_prefill_time

NO_OVERHEAD = load_engine("vllm", backend=None, step_overhead=0.0, seq_overhead=0.0)
H100_8B = RooflineStepModel.llama_8b_h100()


def test_light_load_by_hand():
    # 10 ms per step in both pools, 5 ms KV transfer: TTFT = 10 + 5 ms, TPOT = 10 ms,
    # X = C / (TTFT + (O - 1) TPOT) = 2 / 1.015 s, n = X (O - 1) TPOT / D
    s = ConstantStepModel(0.01)
    r = steady_state_disagg(s, s, 2, 1024, 101, prefill_engine=NO_OVERHEAD, kv_transfer_s=0.005)
    assert float(r.ttft_mean_s) == pytest.approx(0.015)
    assert float(r.tpot_mean_s) == pytest.approx(0.01)
    assert float(r.requests_per_s) == pytest.approx(2 / 1.015, rel=1e-6)
    assert float(r.decode_batch_mean) == pytest.approx(2 / 1.015, rel=1e-6)
    assert str(r.limited_by) == "clients"


def test_prefill_pool_capacity_by_hand():
    # 8192-token prompts fill the budget: one prompt per 10 ms step, 100 requests/s per prefill replica;
    # 1000 clients queue for it: TTFT = C / X - (O - 1) TPOT = 10 - 0.1 s
    s = ConstantStepModel(0.01)
    r = steady_state_disagg(s, s, 1000, 8192, 11, prefill_engine=NO_OVERHEAD)
    assert float(r.requests_per_s) == pytest.approx(100.0, rel=1e-3)
    assert float(r.ttft_mean_s) == pytest.approx(9.9, rel=1e-3)
    assert str(r.limited_by) == "prefill_pool"
    two = steady_state_disagg(s, s, 1000, 8192, 11, prefill_replicas=2, prefill_engine=NO_OVERHEAD)
    assert float(two.requests_per_s) == pytest.approx(200.0, rel=1e-3)


def test_attention_dp_schedulers_multiply_budgets():
    s = ConstantStepModel(0.01)
    # two ranks each prefill one 8192-token prompt per 10 ms step: 200 requests/s
    r = steady_state_disagg(s, s, 1000, 8192, 11, prefill_engine=NO_OVERHEAD, prefill_schedulers=2)
    assert float(r.requests_per_s) == pytest.approx(200.0, rel=1e-3)
    few = load_engine("vllm", backend=None, step_overhead=0.0, seq_overhead=0.0, max_num_seqs=4)
    one = steady_state_disagg(s, s, 100, 128, 1001, prefill_engine=few)
    two = steady_state_disagg(s, s, 100, 128, 1001, prefill_engine=few, decode_schedulers=2)
    assert (float(one.decode_batch_mean), float(two.decode_batch_mean)) == pytest.approx((4.0, 8.0), rel=1e-3)
    assert str(two.limited_by) == "max_num_seqs"
    with pytest.raises(ConfigError, match="decode_schedulers"):
        steady_state_disagg(s, s, 8, 1024, 256, decode_schedulers=0.5)


def test_sync_fraction_in_the_prefill_pool():
    s = ConstantStepModel(0.01)
    # 16 clients per prefill replica, one 8192-token prompt per step: the wave waits (16 - 1)/2 steps
    base = steady_state_disagg(s, s, 32, 8192, 101, prefill_replicas=2, prefill_engine=NO_OVERHEAD)
    sync = steady_state_disagg(s, s, 32, 8192, 101, prefill_replicas=2, prefill_engine=NO_OVERHEAD,
                               sync_fraction=1.0)
    assert float(sync.ttft_mean_s - base.ttft_mean_s) == pytest.approx(7.5 * 0.01, rel=1e-6)


def test_decode_pool_caps_bind():
    s = ConstantStepModel(0.01, kv_capacity_tokens=20_000)
    eng = load_engine("vllm", backend=None, step_overhead=0.0, seq_overhead=0.0)
    r = steady_state_disagg(s, s, 500, 1000, 1001, prefill_engine=eng, decode_replicas=2)
    # on-demand KV: I + O/2 = 1500.5 tokens per sequence and half a 16-token block of its last block,
    # the engine's usable fraction of the pool
    assert float(r.decode_batch_mean) == pytest.approx(20_000 * eng.kv_capacity_fraction / (1500.5 + 7.5),
                                                       rel=1e-3)
    assert str(r.limited_by) == "kv_cache"


def test_vectorised_and_validated():
    c = np.array([1.0, 16.0, 256.0])
    r = steady_state_disagg(H100_8B, H100_8B, c, 1024, 256, decode_replicas=2)
    for i in range(3):
        one = steady_state_disagg(H100_8B, H100_8B, c[i], 1024, 256, decode_replicas=2)
        assert float(r.ttft_mean_s[i]) == pytest.approx(float(one.ttft_mean_s))
    assert np.all(np.diff(r.requests_per_s) > 0) and np.all(np.diff(r.tpot_mean_s) > 0)
    for kw, field in (({"prefill_replicas": 0}, "prefill_replicas"), ({"kv_transfer_s": -1.0}, "kv_transfer_s"),
                      ({"think_time": -0.1}, "think_time")):
        with pytest.raises(ConfigError, match=field):
            steady_state_disagg(H100_8B, H100_8B, 8, 1024, 256, **kw)


# (engine, isl, osl, C, prefill replicas, decode replicas). Measured here against the simulator: while
# clients bind, TPOT within 2 %, TTFT within 4 %, throughput within 7 %; where the prefill pool binds the
# steady state's throughput is 10-14 % higher (so its queue, TTFT, is shorter) and its TPOT up to 9 %
# higher.
CLIENT_BOUND = [("vllm", 1024, 256, 8, 1, 1), ("sglang", 2048, 128, 64, 2, 1), ("trtllm", 8192, 512, 32, 1, 1),
                ("vllm", 1024, 256, 256, 2, 1)]
PREFILL_BOUND = [("vllm", 4096, 256, 64, 1, 2), ("vllm", 2048, 256, 256, 1, 1)]


def _both(engine, isl, osl, c, p, d):
    engine = f"{engine}-preset"   # closed-form mechanics: no fitted engine terms
    ss = steady_state_disagg(H100_8B, H100_8B, c, isl, osl, prefill_replicas=p, decode_replicas=d,
                             prefill_engine=engine)
    w = Workload.fixed(isl, osl, concurrency=c, ramp_up=float(ss.e2e_mean_s))
    pools = Disaggregated(prefill=H100_8B, decode=H100_8B, prefill_replicas=p, decode_replicas=d,
                          link_bandwidth="1e6 GB/s", link_alpha="0 s")
    return ss, simulate(pools, w, engine=engine, requests=max(20 * c, 400), seed=1).summary(warmup=0.3)


@pytest.mark.parametrize("case", CLIENT_BOUND)
def test_agrees_with_the_simulator_while_clients_bind(case):
    ss, s = _both(*case)
    assert str(ss.limited_by) == "clients"
    assert float(ss.tpot_mean_s) == pytest.approx(s["tpot_mean_s"], rel=0.05)
    assert float(ss.ttft_mean_s) == pytest.approx(s["ttft_mean_s"], rel=0.1)
    assert float(ss.requests_per_s) == pytest.approx(s["requests_per_s"], rel=0.1)


@pytest.mark.parametrize("case", PREFILL_BOUND)
def test_prefill_bound_throughput_near_the_simulator(case):
    ss, s = _both(*case)
    assert str(ss.limited_by) == "prefill_pool"
    assert float(ss.requests_per_s) == pytest.approx(s["requests_per_s"], rel=0.2)
    assert float(ss.tpot_mean_s) == pytest.approx(s["tpot_mean_s"], rel=0.1)


def test_prefill_batch_time_charges_the_last_chunk_for_its_own_tokens():
    lin = LinearStepModel(base=0.005, per_token=2e-5, per_attention=0.0)
    eng = NO_OVERHEAD   # budget 8192
    # one token past the budget: a full 8192-token step and a 1-token step, not two full steps
    assert float(prefill_batch_time(lin, eng, 8193.0, 1.0)) == pytest.approx(2 * 0.005 + 8193 * 2e-5)
    assert float(prefill_batch_time(lin, eng, 1000.0, 4.0)) == pytest.approx(0.005 + 4000 * 2e-5)
    # two prompts of 10000 tokens side by side: steps of 2 x 8192 and 2 x 1808 tokens
    assert float(prefill_batch_time(lin, eng, 10000.0, 2.0)) == pytest.approx(2 * 0.005 + 20000 * 2e-5)


@settings(max_examples=40, deadline=None)
@example(c=624.0, isl=17, osl=2, p=1, d=1, z=0.0, sync=0.0)   # prompts per prefill step near capacity
@given(c=st.floats(1, 2000), isl=st.integers(16, 20000), osl=st.integers(2, 4000), p=st.integers(1, 4),
       d=st.integers(1, 8), z=st.floats(0, 2), sync=st.floats(0, 1))
def test_closed_loop_identity_and_bounds(c, isl, osl, p, d, z, sync):
    lin = LinearStepModel(base=0.004, per_token=3e-5, per_attention=1e-9, kv_capacity_tokens=2_000_000)
    r = steady_state_disagg(lin, lin, c, isl, osl, prefill_replicas=p, decode_replicas=d, think_time=z,
                            prefill_engine=NO_OVERHEAD, sync_fraction=sync)
    ttft, tpot, x = float(r.ttft_mean_s), float(r.tpot_mean_s), float(r.requests_per_s)
    assert np.isfinite([ttft, tpot, x]).all() and ttft > 0 and tpot > 0 and x > 0
    # Little's law over the whole loop: every client is thinking, waiting for its first token or decoding
    assert c == pytest.approx(x * (ttft + (osl - 1) * tpot + z), rel=2e-3)
    # a prompt never gets its first token faster than prefilling it alone
    alone = prefill_batch_time(lin, NO_OVERHEAD, float(isl), 1.0)
    assert ttft >= 0.999 * float(alone)


def _lockstep_engine(phi: float) -> Engine:
    """The overhead-free vLLM scheduler with the attention-DP prefill lock-step share φ."""
    return Engine(NO_OVERHEAD, EngineCalibration("vllm", 0.0, 0.0, prefill_dp_lockstep=phi), True, "test")


def test_lockstep_prefill_time_by_hand():
    # t(m) = 5 ms + 20 us per token; 1024-token prompts on 4 ranks: t(1) = 25.48 ms, t(4) = 86.92 ms
    s = LinearStepModel(base=0.005, per_token=2e-5)
    t1, t4 = 0.005 + 2e-5 * 1024, 0.005 + 2e-5 * 4096
    assert float(lockstep_prefill_time(s, NO_OVERHEAD, 1024, 1, 4, 0.0)) == pytest.approx(t1)
    assert float(lockstep_prefill_time(s, NO_OVERHEAD, 1024, 1, 4, 1.0)) == pytest.approx(t4)
    assert float(lockstep_prefill_time(s, NO_OVERHEAD, 1024, 1, 4, 0.5)) == pytest.approx((t1 + t4) / 2)
    # as many prompts as ranks, or one rank: the step model's time whatever φ
    assert float(lockstep_prefill_time(s, NO_OVERHEAD, 1024, 6, 4, 1.0)) == pytest.approx(0.005 + 2e-5 * 6144)
    assert float(lockstep_prefill_time(s, NO_OVERHEAD, 1024, 1, 1, 1.0)) == pytest.approx(t1)


def test_lockstep_share_lengthens_the_light_load_ttft_on_dp_prefill():
    # one client: one prompt per step on a 4-rank prefill replica; φ = 1 costs the step as 4 prompts,
    # 3 x 1024 tokens x 20 us = 61.44 ms more TTFT; φ = 0.5 half of it; one rank: no change
    s = LinearStepModel(base=0.005, per_token=2e-5)

    def ttft(phi, ranks):
        return float(steady_state_disagg(s, s, 1, 1024, 64, prefill_engine=_lockstep_engine(phi),
                                         prefill_schedulers=ranks).ttft_mean_s)

    assert ttft(1.0, 4) - ttft(0.0, 4) == pytest.approx(3 * 1024 * 2e-5, rel=1e-6)
    assert ttft(0.5, 4) - ttft(0.0, 4) == pytest.approx(1.5 * 1024 * 2e-5, rel=1e-6)
    assert ttft(1.0, 1) == pytest.approx(ttft(0.0, 1), rel=1e-12)
    # the pool's capacity (full steps of m_max >= S prompts) does not change: same throughput at saturation
    full = [steady_state_disagg(s, s, 5000, 1024, 64, prefill_engine=_lockstep_engine(p), prefill_schedulers=4)
            for p in (0.0, 1.0)]
    assert float(full[1].requests_per_s) == pytest.approx(float(full[0].requests_per_s), rel=1e-6)
    assert str(full[0].limited_by) == "prefill_pool"


def test_lockstep_preset_is_zero():
    # profiles without the parameter (the shipped calibrated.yaml before it was fitted) keep today's TTFT
    assert EngineCalibration.preset("trtllm").prefill_dp_lockstep == 0.0
    assert PARAMETERS["prefill_dp_lockstep"][:2] == (0.0, 1.0)
