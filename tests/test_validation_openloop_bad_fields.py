"""Open-loop importers: a vLLM burstiness or GuideLLM rate that is missing or not a number > 0 is refused
naming it (vLLM burstiness 0 was read as Poisson, since `0 or 1.0` is 1.0; a string raised a bare
ValueError; a GuideLLM rate strategy without a rate raised KeyError)."""

from __future__ import annotations

import math
import re

import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.validation.openloop_import import vllm_arrival


@pytest.mark.parametrize("value", [0, 0.0, -1, "inf", "fast", [1]])
def test_bad_burstiness_is_refused(value):
    with pytest.raises(PerfmodelError, match=re.escape(f"burstiness={value!r} must be a finite number > 0")):
        vllm_arrival({"request_rate": 2.0, "burstiness": value})


@pytest.mark.parametrize("value,process,cv", [(None, "poisson", 1.0), (1, "poisson", 1.0), (4, "gamma", 0.5),
                                               ("0.25", "gamma", 2.0)])
def test_good_burstiness_gives_the_gap_cv(value, process, cv):
    data = {"request_rate": 2.0, "completed": 100} | ({} if value is None else {"burstiness": value})
    out = vllm_arrival(data)
    assert out["arrival_process"] == process and math.isclose(out["arrival_cv"], cv)
    assert out["rate_requests_per_s"] == 2.0 and out["requests"] == 100


@pytest.mark.parametrize("strategy", [{"type_": "poisson"}, {"type_": "constant", "rate": "fast"}])
def test_guidellm_rate_strategy_without_a_rate_is_named(strategy):
    """A poisson/constant benchmark without a numeric rate raised KeyError 'rate' or a bare ValueError."""
    from perfmodel.validation.importers import _find
    from perfmodel.validation.openloop_import import guidellm_results

    report = {"benchmarks": [{"config": {"strategy": strategy}, "metrics": {}}]}
    with pytest.raises(PerfmodelError, match=re.escape(f"benchmarks[0] strategy {strategy['type_']!r} has rate=")):
        guidellm_results(report, _find)
