"""A summary never holds NaN: statistics that do not exist are None with the reason (issue #22)."""

from __future__ import annotations

import math

import pytest

import perfmodel as pm
from perfmodel.errors import ConfigError


@pytest.fixture(scope="module")
def step_model():
    return pm.StepModel(pm.load_model("llama-3.1-8b"), pm.load_hardware("h100-sxm"))


def _nan_keys(summary: dict) -> list[str]:
    return [k for k, v in summary.items() if isinstance(v, float) and math.isnan(v)]


def test_prefill_only_run_has_no_tpot_and_says_why(step_model):
    s = pm.simulate(step_model, {"arrival": {"rate": "2/s"}, "isl": 512, "osl": 1, "requests": 40}).summary()
    assert s["completed"] == 40 and not _nan_keys(s)
    assert s["tpot_p50_s"] is None and s["itl_p99_s"] is None and s["per_user_mean_tokens_per_s"] is None
    assert "2 or more output tokens" in s["undefined"]["tpot_mean_s"]
    assert s["ttft_p50_s"] > 0 and "ttft_p50_s" not in s["undefined"]


@pytest.mark.parametrize("osl", [2, {"dist": "uniform", "low": 1, "high": 64}])
def test_runs_that_complete_requests_have_no_nan(step_model, osl):
    for seed in range(3):
        s = pm.simulate(step_model, {"arrival": {"rate": "20/s"}, "isl": 256, "osl": osl, "requests": 60},
                        seed=seed).summary(slo={"ttft": "1 s", "tpot": "50 ms"})
        assert s["completed"] > 0 and not _nan_keys(s), _nan_keys(s)


def test_steady_state_refuses_prefill_only_load(step_model):
    with pytest.raises(ConfigError, match="osl.*at least 2 output tokens"):
        pm.steady_state(step_model, [4], isl=512, osl=1)
