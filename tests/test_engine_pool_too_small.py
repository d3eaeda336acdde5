"""An engine memory fraction that leaves no KV room for one request is refused with the reason, instead
of an estimate with a TTFT of days (447,000 s at gpu_memory_utilization 0.2) or a simulation whose every
request is 'rejected (queue full)' with the advice to lower the load, or a max-load of 0."""

from __future__ import annotations

import math

import pytest

from perfmodel.cli import main
from perfmodel.core.step import StepModel
from perfmodel.engine.kv_memory import engine_memory, short_pool_reason
from perfmodel.engine.profile import load_engine

BASE = ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "vllm", "--isl", "256", "--osl", "16"]


def _run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.err + out.out


def _pool(u: float):
    """Llama-3.1-8B bf16 on one H100 under vLLM at gpu_memory_utilization u: its EngineMemory."""
    sm = StepModel("llama-3.1-8b", "h100-sxm", weights="bf16", kv_cache="bf16")
    prof = load_engine("vllm").model_copy(update={"gpu_memory_utilization": u})
    return engine_memory(sm, prof)


@pytest.mark.parametrize("cmd", [["estimate", "--concurrency", "4"],
                                 ["simulate", "--concurrency", "4", "--requests", "20"],
                                 ["max-load", "--slo-ttft", "2s", "--requests", "20"]])
def test_an_empty_pool_is_refused_naming_the_fraction(cmd, capsys):
    code, text = _run([*cmd, *BASE, "--gpu-memory-utilization", "0.2"], capsys)
    assert code == 2
    assert "KV pool (vllm gpu_memory_utilization=0.2) is empty" in text
    assert "lower the load" not in text and "447" not in text


def test_a_pool_short_of_one_request_is_refused_by_estimate(capsys):
    """K = u M - W - A - 8 V S - R just above 0 at u = 0.2205: a few hundred tokens, fewer than 256 + 16."""
    mem = _pool(0.2205)
    tokens = math.floor(mem.kv_pool / (mem.kv_bytes_per_token * 16)) * 16
    assert 0 < tokens < 272 and mem.kv_tokens == tokens
    code, text = _run(["estimate", "--concurrency", "4", *BASE, "--gpu-memory-utilization", "0.2205"], capsys)
    assert code == 2 and f"holds {tokens:,} tokens per replica, fewer than one request's 272" in text


def test_the_reason_is_none_where_one_request_fits():
    mem = _pool(0.9)
    assert short_pool_reason(mem, mem.kv_tokens, 272) is None
    assert short_pool_reason(None, 0.0, 272) is None         # no engine memory rule: not judged here
    assert short_pool_reason(mem, 0.0, 1.0).endswith("use more devices per replica")
