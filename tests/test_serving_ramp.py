"""Closed-loop ramp-up: ``ramp_up: "auto"`` (the default) starts client k of C at k·D/C, D one mean
request duration from the engine-aware steady state; ``ramp_up: 0`` keeps the synchronised start.

Llama-3.1-8B BF16 on one H100, vLLM fitted, 1024/256, 8 clients (the lead's case, 2026-12-02):
``estimate`` says mean TTFT 0.071 s; ``simulate`` started together said 0.205 s (waves), with the auto
ramp 0.068 s."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perfmodel.cli import main
from perfmodel.core.step import StepModel
from perfmodel.errors import ConfigError, SpecError
from perfmodel.metrics_vocabulary import GLOSSARY
from perfmodel.serving import Disaggregated, Workload, max_load, simulate, steady_state, steady_state_disagg
from perfmodel.serving.estimate import estimate
from perfmodel.serving.ramp import AUTO_BASIS
from perfmodel.serving.stand_in import LinearStepModel, RooflineStepModel
from perfmodel.serving.workload import Arrival, load_workload

SM = StepModel("llama-3.1-8b", "h100-sxm")
ISL, OSL, C = 1024, 256, 8


def _duration(c: float, engine: str = "vllm", model=SM) -> float:
    return float(steady_state(model, c, ISL, OSL, engine=engine, sync_fraction=0.0).e2e_mean_s)


# -- the workload spec ---------------------------------------------------------------------------------
def test_auto_is_the_closed_loop_default_everywhere():
    assert Workload.fixed(ISL, OSL, concurrency=C).arrival.ramp_up == "auto"
    assert Arrival(process="closed", concurrency=C).ramp_up == "auto"
    assert load_workload({"isl": 10, "osl": 10, "arrival": {"process": "closed", "concurrency": 2}}).arrival.auto_ramp
    assert Workload.fixed(ISL, OSL, rate=2.0).arrival.ramp_up == 0.0          # open loop: no ramp
    assert Workload.fixed(ISL, OSL, rate=2.0).with_load(concurrency=4).arrival.ramp_up == "auto"
    kept = Workload.fixed(ISL, OSL, concurrency=C, ramp_up=0).with_load(concurrency=16)
    assert kept.arrival.ramp_up == 0.0                                       # an explicit value is kept
    assert Arrival(process="closed", concurrency=2, ramp_up="AUTO").ramp_up == "auto"
    assert Arrival(process="closed", concurrency=2, ramp_up="0").ramp_up == 0.0
    assert Arrival(process="closed", concurrency=2, ramp_up="3 s").ramp_up == 3.0


@pytest.mark.parametrize("bad", ["soon", "5", "-1 s"])
def test_bad_ramp_names_the_field_and_what_is_allowed(bad):
    with pytest.raises(SpecError, match=r"ramp_up.*'auto'"):
        Workload.fixed(ISL, OSL, concurrency=C, ramp_up=bad)


def test_a_failed_resolution_says_how_to_avoid_it():
    from perfmodel.serving.ramp import resolve

    def fails() -> float:
        raise ConfigError("concurrency: must be >= 1 client")

    with pytest.raises(ConfigError, match="ramp_up 'auto'.*failed: concurrency.*give ramp_up in seconds"):
        resolve(Workload.fixed(ISL, OSL, concurrency=C), fails)
    with pytest.raises(ConfigError, match="no finite request duration"):
        resolve(Workload.fixed(ISL, OSL, concurrency=C), lambda: float("inf"))
    assert resolve(Workload.fixed(ISL, OSL, rate=1.0), fails)[1] is None       # open loop: never called


def test_open_loop_refuses_a_ramp():
    with pytest.raises(SpecError, match="ramp_up are for process 'closed'"):
        load_workload({"isl": 10, "osl": 10, "arrival": {"process": "poisson", "rate": 1, "ramp_up": "auto"}})


# -- start times ---------------------------------------------------------------------------------------
def test_given_ramp_starts_client_k_at_k_ramp_over_c():
    # 4 clients over 4 s: first requests at 0, 1, 2, 3 s (by hand)
    model = LinearStepModel(base=0.002, per_token=1e-6)
    res = simulate(model, Workload.fixed(64, 8, concurrency=4, ramp_up="4 s"), requests=8)
    assert res.arrival_s[:4] == pytest.approx([0.0, 1.0, 2.0, 3.0])   # the clients' first requests
    assert res.meta["ramp_up"] == {"ramp_up_s": 4.0, "basis": "given"}


def test_auto_ramp_starts_client_k_at_k_d_over_c_and_reports_d():
    res = simulate(SM, Workload.fixed(ISL, OSL, concurrency=C), engine="vllm", requests=3 * C)
    d = res.meta["ramp_up"]["ramp_up_s"]
    assert d == pytest.approx(_duration(C), rel=1e-4)    # the steady state's E2E (fixed point to 1e-4)
    assert res.meta["ramp_up"]["basis"] == AUTO_BASIS
    assert res.arrival_s[:C] == pytest.approx(np.arange(C) * d / C, rel=1e-12, abs=1e-15)
    # D is a physical request duration: at C = 8 the simulated mean E2E is within 5 % of it (measured 1 %)
    assert res.summary(warmup=0.3)["e2e_mean_s"] == pytest.approx(d, rel=0.05)
    assert res.workload.arrival.ramp_up == pytest.approx(d)        # the result's workload holds the value


def test_auto_ramp_at_one_client_is_one_request():
    res = simulate(SM, Workload.fixed(ISL, OSL, concurrency=1), engine="vllm", requests=4)
    assert res.meta["ramp_up"]["ramp_up_s"] == pytest.approx(float(res.request_e2e_s.mean()), rel=0.02)


def test_explicit_zero_keeps_the_synchronised_start():
    res = simulate(SM, Workload.fixed(ISL, OSL, concurrency=C, ramp_up=0), engine="vllm", requests=400)
    assert np.all(res.arrival_s[:C] == 0.0) and res.meta["ramp_up"] == {"ramp_up_s": 0.0, "basis": "given"}
    # the waves of before: 0.205 s mean TTFT, recorded 2026-12-02 (2.9x estimate's 0.071 s)
    assert res.summary(warmup=0.3)["ttft_mean_s"] == pytest.approx(0.2048, rel=0.01)


def test_replicas_each_serve_their_share_of_the_clients():
    res = simulate(SM, Workload.fixed(ISL, OSL, concurrency=16), engine="vllm", replicas=2, requests=32)
    assert res.meta["ramp_up"]["ramp_up_s"] == pytest.approx(_duration(8), rel=1e-4)
    few = simulate(SM, Workload.fixed(ISL, OSL, concurrency=1), engine="vllm", replicas=2, requests=2)
    assert few.meta["ramp_up"]["ramp_up_s"] == pytest.approx(_duration(1), rel=1e-4)   # one client, one replica


def test_prefix_hit_rate_shortens_the_duration():
    w = Workload.fixed(ISL, OSL, concurrency=C, prefix_hit_rate=0.75)
    res = simulate(SM, w, engine="vllm", requests=C)
    ss = steady_state(SM, C, ISL, OSL, engine="vllm", sync_fraction=0.0, prefix_hit_rate=0.75)
    assert res.meta["ramp_up"]["ramp_up_s"] == pytest.approx(float(ss.e2e_mean_s), rel=1e-4)
    assert float(ss.e2e_mean_s) < _duration(C)


def test_disaggregated_pools_use_the_pd_steady_state():
    # a 1e6 GB/s link with zero latency: the KV transfer of 1024 tokens takes 1024 · bytes/token / 1e15 s
    m = RooflineStepModel.llama_8b_h100()
    pools = Disaggregated(prefill=m, decode=m, prefill_replicas=1, decode_replicas=2,
                          link_bandwidth="1e6 GB/s", link_alpha="0 s")
    res = simulate(pools, Workload.fixed(ISL, OSL, concurrency=32), engine="vllm-preset", requests=64)
    kv = ISL * float(m.kv_bytes_per_token) / 1e15
    ss = steady_state_disagg(m, m, 32, ISL, OSL, decode_replicas=2, prefill_engine="vllm-preset",
                             kv_transfer_s=kv, sync_fraction=0.0)
    assert res.meta["ramp_up"]["ramp_up_s"] == pytest.approx(float(ss.e2e_mean_s), rel=1e-9)


def test_max_load_resolves_auto_at_each_load():
    model = LinearStepModel(base=0.002, per_token=1e-6)
    w = Workload.fixed(64, 8, concurrency=2, slo={"ttft": "10 s"})
    found = max_load(model, w, mode="concurrency", requests=40, start=2, max_simulations=3)
    for row in found.curve:
        ss = steady_state(model, row["load"], 64, 8, engine="vllm", sync_fraction=0.0)
        assert row["ramp_up_s"] == pytest.approx(float(ss.e2e_mean_s), rel=1e-4)
    assert len({r["ramp_up_s"] for r in found.curve}) == len(found.curve) > 1


# -- one answer: simulate and estimate -----------------------------------------------------------------
def test_simulate_and_estimate_agree_on_mean_ttft_at_eight_clients():
    """Tolerance: one decode step (TPOT, 8.7 ms here, 12 % of the TTFT). The closed form charges each
    prompt a whole decode step of waiting (W) and a mean share of chunked-prefill steps; the simulator
    resolves where in a step each request lands, so the two can differ by up to one step. Measured:
    estimate 0.0708 s, simulate 0.0682 s (2.6 ms apart); the synchronised start was 134 ms apart."""
    est = estimate("llama-3.1-8b", "h100-sxm", isl=ISL, osl=OSL, concurrency=C, engine="vllm").iloc[0]
    sim = simulate(SM, Workload.fixed(ISL, OSL, concurrency=C), engine="vllm", requests=400,
                   seed=0).summary(warmup=0.3)
    assert abs(sim["ttft_mean_s"] - est["ttft_mean_s"]) <= est["tpot_mean_s"]
    assert sim["tpot_mean_s"] == pytest.approx(est["tpot_mean_s"], rel=0.02)


# -- CLI -----------------------------------------------------------------------------------------------
ARGS = ["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--isl", "1024", "--osl", "256",
        "--concurrency", "8", "--requests", "64", "--quiet"]


def test_cli_default_prints_the_resolved_ramp(capsys):
    assert main(ARGS) == 0
    out = capsys.readouterr().out
    assert f"clients started over {_duration(C):.3g} s: --ramp-up auto, one mean request duration" in out
    assert main(ARGS + ["--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ramp_up_s"] == pytest.approx(_duration(C), rel=1e-4) and doc["ramp_up_basis"] == AUTO_BASIS
    assert GLOSSARY["ramp_up_s"].unit == "s"                     # one name per quantity (the glossary)
    assert doc["workload"]["arrival"]["ramp_up"] == "auto"


def test_cli_explicit_zero_starts_together(capsys):
    assert main(ARGS + ["--ramp-up", "0", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ramp_up_s"] == 0.0 and doc["ramp_up_basis"] == "given"
    assert main(ARGS + ["--ramp-up", "0"]) == 0
    assert "clients started together (--ramp-up 0)" in capsys.readouterr().out
