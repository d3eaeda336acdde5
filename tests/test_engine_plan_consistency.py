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
    per_replica = float(best["offered_requests_per_s"]) / int(best["replicas"])
    est = pm.estimate("llama-3.1-8b", "h100-sxm", engine="vllm", isl=1024, osl=256, rate=per_replica).iloc[0]
    # both simulate the fitted engine at that load (plan: all replicas behind its router, estimate: one)
    assert est["tpot_mean_s"] == pytest.approx(best["tpot_mean_s"], rel=0.10)
    assert est["ttft_mean_s"] == pytest.approx(best["ttft_mean_s"], rel=0.25)
    assert "fitted terms" in est["engine"]


def test_plan_searches_speculative_decoding():
    """Each candidate is tried with and without speculation; a TPOT limit the plain engine cannot hold
    on one replica at that load is met with EAGLE (TPOT = step / E), and every row says which it ran."""
    w = Workload.fixed(1024, 256, rate=6.0)
    slo = SLO(ttft="2 s", tpot="8 ms", target=0.9)
    result = pm.plan("llama-3.1-8b", w, slo, hardware=["h100-sxm"], tp=[1], engine="vllm", requests=300,
                     spec_decode=[None, "eagle:k=3"], max_replicas=1)
    ranked = result.to_dataframe()
    assert set(ranked["spec_decode"].str.split(",").str[0]) == {"eagle:k=3"}
    assert [r["spec_decode"] for r in result.rejected] == ["off"]
    assert result.inputs["spec_decode"][0] == "off"
