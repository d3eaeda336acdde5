"""Speculative decoding reaches every serving path through the engine step (one model, one answer)."""

from __future__ import annotations

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.engine.speculative import speculative_step
from perfmodel.serving import Workload, simulate, steady_state

SM = StepModel("llama-3.1-8b", "h100-sxm")


def test_one_client_agrees_with_speculation():
    e = Engine.load("vllm", spec_decode="eagle:k=3,accept=0.7")
    p = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=256, step_model=SM, engine=e)
    ss = steady_state(SM, 1, 1024, 256, engine=e)
    sim = simulate(SM, Workload.fixed(1024, 256, concurrency=1), engine=e, requests=4, step_table="exact").summary()
    for ttft, tpot in ((float(p.ttft_s), float(p.tpot_s)), (float(ss.ttft_mean_s), float(ss.tpot_mean_s))):
        assert ttft == pytest.approx(sim["ttft_mean_s"], rel=0.02)
        assert tpot == pytest.approx(sim["tpot_mean_s"], rel=0.02)
    assert "eagle:k=3" in p.config["engine"]


def test_engine_tpot_is_the_engine_decode_step_times_the_speculative_ratio():
    """TPOT_spec / TPOT = (t_verify + t_draft) / (E · T_dec) of the device model, at one sequence."""
    plain = Engine.load("vllm")
    spec = Engine.load("vllm", spec_decode="eagle:k=3,accept=0.7")
    a = plain.step(SM).step_time(1, 1500.0, 0.0, 0.0)
    b = spec.step(SM).step_time(1, 1500.0, 0.0, 0.0)
    s = speculative_step(SM, spec.spec, 1.0, 1500.0)
    assert float(b / a) == pytest.approx(float(s.tpot / SM.step_time(1, 1500.0)), rel=1e-9)


def test_no_acceptance_never_pays_and_full_acceptance_gives_k_plus_one():
    n = np.array([1.0, 8.0, 64.0])
    base = Engine.load("trtllm").step(SM).step_time(n, 2000.0, 0.0, 0.0)
    none = Engine.load("trtllm", spec_decode="eagle:k=3,accept=0").step(SM).step_time(n, 2000.0, 0.0, 0.0)
    assert np.all(none >= base)
    assert Engine.load("trtllm", spec_decode="eagle:k=3,accept=1").spec.expected_tokens == pytest.approx(4.0)


def test_prompt_steps_without_decodes_are_unchanged():
    e = Engine.load("sglang", spec_decode="ngram:k=4,accept=0.5")
    assert float(e.step(SM).step_time(0, 0.0, 2048.0, 0.0)) == pytest.approx(
        float(Engine.load("sglang").step(SM).step_time(0, 0.0, 2048.0, 0.0)))


def test_an_edited_calibration_file_is_read_again(tmp_path):
    """No path-keyed cache of files a user may edit: a profile YAML changed between calls is re-read."""
    from perfmodel.engine.calibration import load_profile

    f = tmp_path / "engines.yaml"
    f.write_text("kind: engine_calibration\nengines:\n  vllm:\n    request_overhead: 0.02\n")
    assert load_profile(str(f))["vllm"].request_overhead == pytest.approx(0.02)
    f.write_text("kind: engine_calibration\nengines:\n  vllm:\n    request_overhead: 0.05\n")
    assert load_profile(str(f))["vllm"].request_overhead == pytest.approx(0.05)
