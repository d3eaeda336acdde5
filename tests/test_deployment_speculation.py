"""Speculative decoding and prefix caching as deployment fields: invariants and memory accounting."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import perfmodel as pm
from perfmodel.core.step import StepModel
from perfmodel.deployment import load_deployment
from perfmodel.deployment.placement import DeploymentPlan
from perfmodel.deployment.speculation import split_spec_step
from perfmodel.engine.engine import Engine
from perfmodel.engine.speculative import SpecDecode
from perfmodel.engine.speculative_draft import draft_memory, draft_step_model
from perfmodel.errors import SpecError

AGG = {"model": "llama-3.1-70b", "precision": {"weights": "fp8", "kv_cache": "fp8"},
       "pools": {"g": {"hardware": "h100-sxm", "count": 8, "tp": 8}}}
SPLIT = "deployments/kimi-k2-vera-rubin-lpx-split.yaml"
BATCH = [1, 16, 256]


def _split(**extra):
    with open(SPLIT, encoding="utf-8") as f:
        return {**yaml.safe_load(f), **extra}


@pytest.mark.parametrize("dep", [AGG, "split"])
def test_acceptance_zero_never_beats_no_speculation(dep):
    base = _split() if dep == "split" else AGG
    plain = pm.predict_deployment(base, isl=2048, osl=256, batch=BATCH)
    zero = pm.predict_deployment({**base, "spec_decode": "eagle:k=3,accept=0"}, isl=2048, osl=256, batch=BATCH)
    assert np.all(zero.tpot_s >= plain.tpot_s)
    good = pm.predict_deployment({**base, "spec_decode": "eagle:k=3"}, isl=2048, osl=256, batch=1)
    assert float(good.tpot_s) < float(plain.tpot_s[0])  # the sourced acceptance pays at batch 1


def test_split_step_with_full_acceptance_emits_k_plus_one_tokens():
    plan = DeploymentPlan(load_deployment(_split(), check=False))
    spec = SpecDecode("ngram", 3, 1.0)   # no draft forward: the step is the verification alone
    n, c = np.array([1.0, 64.0]), np.array([4096.0, 4096.0])
    s = split_spec_step(plan.attention_sm, plan.ffn_sm, plan.activation_link, spec, n, c,
                        plan.attention_pool.count, plan.ffn_pool.count)
    assert spec.expected_tokens == 4.0
    np.testing.assert_allclose(s.tpot * 4.0, s.verify.total + s.attention_fix, rtol=1e-12)
    assert np.all(s.attention_fix < 0)  # 4 queries reading one KV cache cost less than 4 decodes


def test_draft_weights_take_memory_and_batch_room():
    plain = pm.predict_deployment(AGG, isl=2048, osl=256, batch=BATCH)
    spec = pm.predict_deployment({**AGG, "spec_decode": {"method": "eagle", "k": 3}}, isl=2048, osl=256,
                                 batch=BATCH)
    sm = StepModel("llama-3.1-70b", "h100-sxm", tp=8, weights="fp8", kv_cache="fp8")
    mem = draft_memory(SpecDecode("eagle", 3), draft_step_model(sm, SpecDecode("eagle", 3)))
    assert mem.weights > 0 and mem.kv_per_token > 0
    extra = spec.memory_used_bytes_per_device - plain.memory_used_bytes_per_device
    per_seq = np.asarray(BATCH) / 1 * mem.kv_per_token * (2048 + 256)
    np.testing.assert_allclose(extra, mem.weights + per_seq, rtol=1e-9)
    np.testing.assert_allclose(spec.weights_bytes_per_device - plain.weights_bytes_per_device, mem.weights)
    assert np.all(spec.max_batch_at_context < plain.max_batch_at_context)
    split_plain = pm.predict_deployment(_split(), isl=8192, osl=1024, batch=1)
    split_spec = pm.predict_deployment(_split(spec_decode="eagle:k=3"), isl=8192, osl=1024, batch=1)
    assert float(split_spec.weights_bytes_per_device) > float(split_plain.weights_bytes_per_device)
    assert float(split_spec.max_batch_at_context) < float(split_plain.max_batch_at_context)


def test_engine_kv_capacity_counts_the_draft():
    sm = StepModel("deepseek-r1", "b200", tp=8, ep=8, weights="nvfp4", kv_cache="fp8")
    plain = Engine.load("trtllm").step(sm)
    mtp = Engine.load("trtllm", spec_decode="mtp:k=3").step(sm)
    ngram = Engine.load("trtllm", spec_decode="ngram:k=5").step(sm)
    assert ngram.kv_capacity_tokens == plain.kv_capacity_tokens  # nothing on the device
    # the engine's pool K (bytes per device), less the draft's weights, over target + draft KV per
    # token, in whole blocks (dp_attention 1)
    mem, pool = draft_memory(mtp.spec, mtp.draft_model), plain.engine_memory
    b = pool.block_size
    expect = np.floor((pool.kv_pool - mem.weights) / (b * (pool.kv_bytes_per_token + mem.kv_per_token))) * b
    assert mtp.kv_capacity_tokens == expect < plain.kv_capacity_tokens
    assert pool.kv_bytes_per_token == pytest.approx(sm.kv_bytes_per_token / sm.parallel.group)


def test_prefix_hit_rate_zero_is_today_and_cuts_ttft():
    plain = pm.predict_deployment(AGG, isl=4096, osl=128, batch=BATCH)
    zero = pm.predict_deployment({**AGG, "prefix_hit_rate": 0.0}, isl=4096, osl=128, batch=BATCH)
    for col in ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s"):
        np.testing.assert_array_equal(getattr(zero, col), getattr(plain, col))
    ttft = [pm.predict_deployment({**AGG, "prefix_hit_rate": h}, isl=4096, osl=128, batch=BATCH).ttft_s
            for h in (0.0, 0.5, 0.9, 0.99)]
    assert all(np.all(a > b) for a, b in zip(ttft, ttft[1:], strict=False))
    np.testing.assert_array_equal(pm.predict_deployment({**AGG, "prefix_hit_rate": 0.9}, isl=4096, osl=128,
                                                        batch=BATCH).tpot_s, plain.tpot_s)
    # h -> 1: only the uncached tokens' prefill remains (41 of 4096 here), far below the full prompt's
    sm = StepModel("llama-3.1-70b", "h100-sxm", tp=8, weights="fp8", kv_cache="fp8")
    from perfmodel.core.ops import StepShape

    uncached = sm.breakdown(StepShape.make(n_prefill=1, chunk=41, past=4055)).total
    assert ttft[-1][0] == pytest.approx(uncached, rel=1e-12) and ttft[-1][0] < 0.05 * ttft[0][0]


def test_deployment_file_fields_and_errors(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({**AGG, "spec_decode": "eagle:k=3,accept=0.7", "prefix_hit_rate": 0.5}))
    assert main(["predict", "--deployment", str(path), "--isl", "2048", "--osl", "256", "--batch", "1,8",
                 "--format", "json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert recs[0]["spec_decode"].startswith("eagle:k=3,accept=0.7") and recs[0]["prefix_hit_rate"] == 0.5
    assert any("speculative decoding eagle:k=3" in a for a in recs[0]["assumptions"])
    for bad, match in ((("spec_decode", "eagel:k=3"), "did you mean 'eagle'"), (("spec_decode", "mtp:k=0"), "integer >= 1"),
                       (("prefix_hit_rate", 1.0), "prefix_hit_rate"), (("draft_weights", "fp7"), "draft_weights")):
        with pytest.raises(SpecError, match=match):
            load_deployment({**AGG, bad[0]: bad[1]})


def test_bare_predict_full_acceptance_is_verify_over_k_plus_one():
    from perfmodel.engine.speculative_draft import verify_time

    sm = StepModel("llama-3.1-8b", "h100-sxm")
    p = pm.predict(None, None, isl=1000, osl=201, batch=[1, 32], step_model=sm, spec_decode="ngram:k=3,accept=1")
    nodes = np.array([1001.0, 1100.5, 1200.0])[:, None]          # isl + 1, midpoint, isl + osl - 1
    t = verify_time(sm, 3, np.array([1.0, 32.0]), nodes)          # no draft forward for ngram
    np.testing.assert_allclose(p.tpot_s, (t[0] + 4 * t[1] + t[2]) / 6 / 4, rtol=1e-12)
    assert p.config["spec_decode"].startswith("ngram:k=3,accept=1/1/1 (user)")


def test_bare_yaml_off_in_a_deployment_file_is_no_speculation(tmp_path):
    text = open("deployments/deepseek-r1-dgx-b200-mtp.yaml", encoding="utf-8").read()
    assert "spec_decode: {method: mtp, k: 3}" in text
    path = tmp_path / "off.yaml"
    path.write_text(text.replace("spec_decode: {method: mtp, k: 3}", "spec_decode: off"), encoding="utf-8")
    dep = load_deployment(str(path))
    assert dep.spec_decode == "off" and dep.spec is None
