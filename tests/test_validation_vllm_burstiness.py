"""vLLM result files: burstiness 0, negative, infinite or not a number is refused naming the value (0 read
as Poisson before, since `0 or 1.0` is 1.0; a string raised a bare ValueError)."""

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
    assert out["request_rate_rps"] == 2.0 and out["requests"] == 100
