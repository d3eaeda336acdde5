"""``first_token_steps`` counts engine steps: with speculative decoding a step emits E tokens and lasts
E TPOTs, so the first token comes k · E TPOTs late (issue 19, TensorRT-LLM MTP rows)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perfmodel.core.step import StepModel
from perfmodel.engine.calibration import EngineCalibration
from perfmodel.engine.engine import Engine
from perfmodel.engine.step import tokens_per_step
from perfmodel.serving import Workload, simulate, steady_state
from perfmodel.validation.surrogate import RowTables, build_tables

SM = StepModel("llama-3.1-8b", "h100-sxm")
SPEC = "eagle:k=3,accept=0.9/0.7/0.4"   # the arithmetic of E is that of the MTP rows
#: E of SPEC by hand: 1 + 0.9 + 0.9·0.7 + 0.9·0.7·0.4
E_HAND = 1.0 + 0.9 + 0.63 + 0.252


def test_ttft_added_is_request_overhead_plus_k_steps_of_e_tpots():
    c = EngineCalibration("trtllm", 0.0, 0.0, request_overhead=0.05, first_token_steps=2.0)
    # 0.05 s + 2 steps x 2.5 tokens/step x 10 ms/token = 0.05 + 0.05 s
    assert c.ttft_added(0.01, 2.5) == pytest.approx(0.10, rel=1e-12)
    assert c.ttft_added(0.01) == pytest.approx(0.07, rel=1e-12)   # E = 1 without speculation


def test_engine_and_its_step_report_the_speculative_expected_tokens():
    e = Engine.load("trtllm", spec_decode=SPEC)
    assert e.spec.expected_tokens == pytest.approx(E_HAND, rel=1e-12)
    assert tokens_per_step(e.step(SM)) == pytest.approx(E_HAND, rel=1e-12)
    assert tokens_per_step(Engine.load("trtllm").step(SM)) == 1.0
    assert tokens_per_step(SM) == 1.0
    k, tpot = e.terms.first_token_steps, 0.004
    assert e.ttft_added(tpot) == pytest.approx(e.request_overhead + k * E_HAND * tpot, rel=1e-12)


def test_one_client_pays_k_speculative_steps_in_the_steady_state():
    """At C = 1 the decode batch is the request alone (TPOT does not depend on the closed loop), so two
    values of k differ in TTFT by exactly Δk · E · TPOT."""
    base = Engine.load("trtllm", spec_decode=SPEC)
    out = {}
    for k in (0.0, 2.0):
        e = replace(base, terms=base.terms.with_values({"first_token_steps": k, "sync_fraction": 0.0}))
        out[k] = steady_state(SM, 1, 1024, 256, engine=e)
    assert float(out[2.0].tpot_mean_s) == pytest.approx(float(out[0.0].tpot_mean_s), rel=1e-9)
    dt = float(out[2.0].ttft_mean_s - out[0.0].ttft_mean_s)
    assert dt == pytest.approx(2.0 * E_HAND * float(out[0.0].tpot_mean_s), rel=1e-6)


def test_simulator_agrees_on_the_late_first_token_with_speculation():
    e = Engine.load("trtllm", spec_decode=SPEC)
    ss = steady_state(SM, 1, 1024, 256, engine=e)
    sim = simulate(SM, Workload.fixed(1024, 256, concurrency=1), engine=e, requests=4, step_table="exact").summary()
    assert float(ss.ttft_mean_s) == pytest.approx(sim["ttft_mean_s"], rel=0.02)


def test_row_tables_carry_the_expected_tokens_per_row():
    e = Engine.load("trtllm", spec_decode=SPEC)
    isl, osl, c = np.array([1024.0, 2048.0]), np.array([256.0, 128.0]), np.array([4.0, 8.0])
    with_spec = RowTables(build_tables(SM, isl, osl, c, np.maximum(isl, 8192.0), spec=e.spec))
    plain = RowTables(build_tables(SM, isl, osl, c, np.maximum(isl, 8192.0)))
    assert np.allclose(tokens_per_step(with_spec), E_HAND)
    assert np.array_equal(tokens_per_step(plain), [1.0, 1.0])
    assert np.allclose(tokens_per_step(with_spec.subset(np.array([1]))), [E_HAND])
