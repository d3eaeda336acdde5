"""Speculative-decoding acceptance as a workload property (issue #17): it replaces the method's default."""

from __future__ import annotations

import pytest

import perfmodel as pm
from perfmodel.engine.speculative import expected_tokens, with_workload_acceptance
from perfmodel.errors import ConfigError, SpecError

CLOSED = {"arrival": {"process": "closed", "concurrency": 4}, "isl": 512, "osl": 64, "requests": 24}


@pytest.fixture(scope="module")
def step_model():
    return pm.StepModel("llama-3.1-8b", "h100-sxm")


def test_workload_rate_replaces_the_default_but_not_a_users_rate():
    eng = pm.Engine.load("vllm", spec_decode="eagle:k=3")
    got = with_workload_acceptance(eng, 0.5).spec
    assert got.acceptance == (0.5, 0.5, 0.5) and got.acceptance_source == "workload"
    assert got.expected_tokens == pytest.approx(1 + 0.5 + 0.25 + 0.125)       # (1 - a^4) / (1 - a)
    per_position = with_workload_acceptance(eng, [0.8, 0.6, 0.4]).spec
    assert per_position.expected_tokens == pytest.approx(expected_tokens((0.8, 0.6, 0.4)))
    user = pm.Engine.load("vllm", spec_decode="eagle:k=3,accept=0.9")
    assert with_workload_acceptance(user, 0.5).spec.acceptance == (0.9, 0.9, 0.9)
    plain = pm.Engine.load("vllm")
    assert with_workload_acceptance(plain, 0.5) is plain
    with pytest.raises(ConfigError, match="spec_acceptance: 2 per-position rates.*k = 3"):
        with_workload_acceptance(eng, [0.5, 0.5])


def test_simulator_and_steady_state_use_the_workload_rate(step_model):
    eng = pm.Engine.load("vllm", spec_decode="eagle:k=3")
    tpot = {}
    for a in (0.2, 0.9):
        res = pm.simulate(step_model, {**CLOSED, "spec_acceptance": a}, engine=eng)
        assert res.meta["engine"]["both"]["spec_decode"]["acceptance_source"] == "workload"
        tpot[a] = res.summary()["tpot_mean_s"]
        steady = pm.steady_state(step_model, [4], isl=pm.load_workload({**CLOSED, "spec_acceptance": a}),
                                 engine=eng)
        assert steady.tpot_mean_s[0] == pytest.approx(
            pm.steady_state(step_model, [4], isl=512, osl=64, engine=with_workload_acceptance(eng, a)).tpot_mean_s[0],
            rel=1e-12)
    assert tpot[0.9] < tpot[0.2]   # more accepted tokens per step, same step cost


def test_unused_rate_is_said_and_bad_rates_are_refused(step_model):
    res = pm.simulate(step_model, {**CLOSED, "spec_acceptance": 0.5})
    assert "does not speculate" in res.meta["spec_acceptance"]
    for bad in (1.5, -0.1, [], [0.5, 2.0]):
        with pytest.raises(SpecError, match="spec_acceptance"):
            pm.load_workload({**CLOSED, "spec_acceptance": bad})
