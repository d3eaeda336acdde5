"""Prefix caching (an explicit hit rate): cached prompt tokens are attended, not computed, in every path."""

from __future__ import annotations

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.errors import ConfigError
from perfmodel.serving import Workload, simulate, steady_state

SM = StepModel("llama-3.1-8b", "h100-sxm")


def test_hit_rate_zero_changes_nothing():
    a = steady_state(SM, [1, 32], 4096, 256, engine="vllm")
    b = steady_state(SM, [1, 32], 4096, 256, engine="vllm", prefix_hit_rate=0.0)
    assert np.array_equal(a.ttft_mean_s, b.ttft_mean_s) and np.array_equal(a.tpot_mean_s, b.tpot_mean_s)


def test_full_hit_leaves_the_request_terms_and_the_uncached_prefill():
    """h -> 1: TTFT -> request overhead + the remaining tokens' prefill (over the whole cached context)
    + late first tokens; TPOT (decode of the whole context) is unchanged at one client."""
    e = Engine.load("vllm")
    p0 = pm.predict("llama-3.1-8b", "h100-sxm", isl=4096, osl=256, step_model=SM, engine=e)
    p = pm.predict("llama-3.1-8b", "h100-sxm", isl=4096, osl=256, step_model=SM, engine=e, prefix_hit_rate=0.999)
    step = e.step(SM)
    rest = 4096 - np.floor(0.999 * 4096)
    prefill = float(step.step_time(0, 0, rest, 4096 - rest))
    # ttft_added = request overhead + first_token_steps x TPOT
    assert float(p.ttft_s) == pytest.approx(prefill + float(e.ttft_added(p.tpot_s)), rel=1e-6)
    assert float(p.tpot_s) == pytest.approx(float(p0.tpot_s))
    assert float(p.ttft_s) < 0.5 * float(p0.ttft_s)


@pytest.mark.parametrize("hit", [0.5, 0.9])
def test_simulator_and_closed_form_agree_with_hits(hit):
    ss = steady_state(SM, 1, 4096, 256, engine="vllm", prefix_hit_rate=hit)
    sim = simulate(SM, Workload.fixed(4096, 256, concurrency=1, prefix_hit_rate=hit), engine="vllm",
                   requests=4, step_table="exact").summary()
    assert float(ss.ttft_mean_s) == pytest.approx(sim["ttft_mean_s"], rel=0.02)
    assert float(ss.tpot_mean_s) == pytest.approx(sim["tpot_mean_s"], rel=0.02)


def test_ttft_falls_with_the_hit_rate_under_load():
    ttft = [float(steady_state(SM, 32, 4096, 256, engine="vllm", prefix_hit_rate=h).ttft_mean_s)
            for h in (0.0, 0.5, 0.9)]
    assert ttft[0] > ttft[1] > ttft[2]


def test_bad_hit_rates_are_refused():
    with pytest.raises(ConfigError, match="prefix_hit_rate"):
        steady_state(SM, 1, 1024, 128, prefix_hit_rate=1.0)
    with pytest.raises(ConfigError, match="prefix_hit_rate"):
        pm.predict("llama-3.1-8b", "h100-sxm", prefix_hit_rate=0.5)   # no engine
    with pytest.raises(Exception, match="prefix_hit_rate"):
        Workload.fixed(1024, 128, rate=1.0, prefix_hit_rate=-0.1)
