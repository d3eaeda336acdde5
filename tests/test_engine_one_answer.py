"""One deployment, one answer: at one client every serving path gives the same TTFT and TPOT.

``predict(engine=E)``, the simulator (closed loop, C = 1), the steady state and ``estimate`` all time
their steps through :class:`perfmodel.engine.EngineStep` and add the engine's request terms, so at one
client (nothing else in the engine) they must agree within 2 % for every shipped engine (issue: "One
calibrated engine behind every command"). ``estimate`` interpolates tabulated steps (< 1 % off).
"""

from __future__ import annotations

import pytest

import perfmodel as pm
from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.serving import Workload, simulate, steady_state

# (model, hardware, tp, weights passed to estimate, isl, osl)
SLOW = pytest.mark.slow   # ~5 s each: the large models run in the slow tier
DEPLOYMENTS = [
    pytest.param(("llama-3.1-8b", "h100-sxm", 1, "bf16", 1024, 256), id="llama-3.1-8b"),
    pytest.param(("llama-3.1-70b", "h200-sxm", 4, "fp8", 2048, 256), id="llama-3.1-70b", marks=SLOW),
    pytest.param(("qwen3-30b-a3b", "h200-sxm", 1, "bf16", 1024, 128), id="qwen3-30b-a3b", marks=SLOW),
    pytest.param(("deepseek-v3", "h200-sxm", 8, "fp8", 1024, 128), id="deepseek-v3", marks=SLOW),
    pytest.param(("gpt-oss-120b", "b200", 1, "", 1024, 128), id="gpt-oss-120b", marks=SLOW),
]
ENGINES = ["vllm", "sglang", "trtllm"]


def _paths(model, hardware, tp, precision, isl, osl, engine):
    est = pm.estimate(model, hardware, engine=engine, concurrency=[1], isl=isl, osl=osl, tp=tp,
                      weights=precision).iloc[0]
    sm = StepModel(model, hardware, tp=tp, weights=est["weights"], kv_cache=est["kv_cache"])
    pred = pm.predict(model, hardware, isl=isl, osl=osl, batch=1, step_model=sm, engine=engine)
    ss = steady_state(sm, 1, isl, osl, engine=engine)
    sim = simulate(sm, Workload.fixed(isl, osl, concurrency=1), engine=engine, requests=6,
                   step_table="exact").summary()
    return {"estimate": (est["ttft_mean_s"], est["tpot_mean_s"]),
            "predict": (float(pred.ttft_s), float(pred.tpot_s)),
            "steady_state": (float(ss.ttft_mean_s), float(ss.tpot_mean_s)),
            "simulate": (sim["ttft_mean_s"], sim["tpot_mean_s"])}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_one_client_one_answer(deployment, engine):
    answers = _paths(*deployment, engine)
    ttft_sim, tpot_sim = answers["simulate"]
    for path, (ttft, tpot) in answers.items():
        assert ttft == pytest.approx(ttft_sim, rel=0.02), (path, answers)
        assert tpot == pytest.approx(tpot_sim, rel=0.02), (path, answers)


def test_the_fitted_terms_are_in_every_answer():
    """The preset and the fitted engine differ (the fitted request overhead and late tokens are
    visible in every path), and each result says which engine it used."""
    fitted = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=256, engine="sglang")
    preset = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=256, engine="sglang-preset")
    bare = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=256)
    terms = Engine.load("sglang").terms
    assert float(fitted.ttft_s) > float(preset.ttft_s) + terms.request_overhead * 0.99
    assert "fitted terms" in fitted.config["engine"] and "uncalibrated" in preset.config["engine"]
    assert bare.config["engine"].startswith("none")


@pytest.mark.parametrize("engine", ENGINES)
def test_one_client_one_answer_disaggregated(engine):
    """P/D: estimate (closed form) and the simulator share the engine step, the request terms and the
    one KV-transfer time (perfmodel.deployment.disagg.request_kv_transfer_time)."""
    from perfmodel.serving import Disaggregated

    est = pm.estimate("llama-3.1-70b", "h200-sxm", engine=engine, concurrency=[1], isl=2048, osl=128, tp=4,
                      weights="fp8", prefill=pm.PrefillPool(tp=4, workers=1, decode_workers=1)).iloc[0]
    sm = StepModel("llama-3.1-70b", "h200-sxm", tp=4, weights=est["weights"], kv_cache=est["kv_cache"])
    sim = simulate(Disaggregated(prefill=sm, decode=sm), Workload.fixed(2048, 128, concurrency=1),
                   engine=engine, requests=6, step_table="exact").summary()
    assert est["ttft_mean_s"] == pytest.approx(sim["ttft_mean_s"], rel=0.02)
    assert est["tpot_mean_s"] == pytest.approx(sim["tpot_mean_s"], rel=0.02)
