"""predict(engine=..., spec_decode=<draft>) reports, and simulate prints, the engine's KV pool with the
draft's weights and KV in it, the pool the serving paths use (both gave the bare pool: 445,456 tokens for
Llama-3.1-8B on one H100 under vLLM with EAGLE k=4, where Engine.step holds 420,448)."""

from __future__ import annotations

import math

import perfmodel as pm
from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.engine.speculative_draft import draft_memory, draft_step_model

SPEC = "eagle:k=4,accept=0.7"


def test_reported_pool_takes_the_draft_out():
    sm = StepModel("llama-3.1-8b", "h100-sxm")
    served = Engine.load("vllm", spec_decode=SPEC)
    mem = served.memory(sm)
    d = draft_memory(served.spec, draft_step_model(sm, served.spec))
    b = mem.block_size
    # N = floor((K - W_d) / (b (k + k_d))) b D, D = 1
    by_hand = math.floor((mem.kv_pool - d.weights) / (b * (mem.kv_bytes_per_token + d.kv_per_token))) * b
    assert 0 < by_hand < mem.kv_tokens
    p = pm.predict("llama-3.1-8b", "h100-sxm", batch=1, isl=1024, osl=128, engine="vllm", spec_decode=SPEC)
    assert p.config["engine_kv_cache_tokens"] == by_hand == served.step(sm).kv_capacity_tokens


def test_without_a_draft_the_pool_is_the_engines():
    sm = StepModel("llama-3.1-8b", "h100-sxm")
    bare = Engine.load("vllm").memory(sm).kv_tokens
    for spec in (None, "ngram:k=4,accept=0.5"):
        p = pm.predict("llama-3.1-8b", "h100-sxm", batch=1, isl=1024, osl=128, engine="vllm", spec_decode=spec)
        assert p.config["engine_kv_cache_tokens"] == bare


def test_simulate_prints_the_pool_it_uses(capsys):
    from perfmodel.cli import main

    code = main(["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "vllm",
                 "--spec-decode", SPEC, "--isl", "256", "--osl", "16", "--concurrency", "4", "--requests", "20",
                 "--quiet"])
    used = Engine.load("vllm", spec_decode=SPEC).step(StepModel("llama-3.1-8b", "h100-sxm")).kv_capacity_tokens
    out = capsys.readouterr().out
    assert code == 0 and used == 420_448
    assert f"{used:,} tokens per replica (445,456 before the draft model's share)" in out
