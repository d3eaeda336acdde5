"""plan runs the fitted engine: at the operating point it chooses, estimate gives the same means."""

from __future__ import annotations

import pytest

import perfmodel as pm
from perfmodel.serving import SLO, Workload


def test_plan_and_estimate_agree_at_the_chosen_point():
    w = Workload.fixed(1024, 256, rate=6.0)
    slo = SLO(ttft="2 s", tpot="50 ms", target=0.9)
    result = pm.plan("llama-3.1-8b", w, slo, hardware=["h100-sxm"], tp=[1], engine="vllm", requests=400)
    best = result.to_dataframe().iloc[0]
    per_replica = float(best["offered_rps"]) / int(best["replicas"])
    est = pm.estimate("llama-3.1-8b", "h100-sxm", engine="vllm", isl=1024, osl=256, rate=per_replica).iloc[0]
    # both simulate the fitted engine at that load (plan: all replicas behind its router, estimate: one)
    assert est["tpot_s"] == pytest.approx(best["tpot_mean_s"], rel=0.10)
    assert est["ttft_s"] == pytest.approx(best["ttft_mean_s"], rel=0.25)
    assert "fitted terms" in est["engine"]
