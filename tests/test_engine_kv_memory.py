"""KV pool as each engine sizes it (perfmodel.engine.kv_memory), hand-computed for Llama-3.1-8B in bf16 on
one H100-SXM, and the capacity cliff it gives in the steady state."""

import math

import numpy as np
import pytest

from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.engine.kv_memory import GIB, engine_memory, sglang_mem_fraction
from perfmodel.engine.profile import load_engine
from perfmodel.errors import SpecError
from perfmodel.serving.stand_in import ConstantStepModel
from perfmodel.serving.steady_state import steady_state

# Llama-3.1-8B (config.json): h 4096, 32 layers, 32 query / 8 KV heads of 128, FFN 14336, vocab 128256
H, LAYERS, NQ, NKV, D, FFN, VOCAB = 4096, 32, 32, 8, 128, 14336, 128256
LAYER = H * (NQ + 2 * NKV) * D + NQ * D * H + 3 * H * FFN          # attention + gated FFN [elements]
W = LAYERS * LAYER * 2 + 2 * VOCAB * H * 2                          # bf16 layers + embedding + LM head [B]
KV_TOKEN = LAYERS * 2 * NKV * D * 2                                 # K and V, bf16 [B/token] = 131072
M = 80 * 2**30                                                      # H100 80GB as the driver reports it
A = 2 * 8192 * (4 * H + 2 * FFN)                                    # bf16 workspace of an 8192-token step
R = GIB                                                             # runtime buffers (module assumption)


@pytest.fixture(scope="module")
def sm():
    return StepModel("llama-3.1-8b", "h100-sxm", tp=1, weights="bf16", kv_cache="bf16")


def test_inputs_match_the_step_model(sm):
    m = engine_memory(sm, load_engine("vllm"))
    assert m.weights == W == 16_059_990_016
    assert m.kv_bytes_per_token == KV_TOKEN == 131_072
    assert m.device_bytes == 85_899_345_920


def test_vllm_pool_tokens_and_sequences(sm):
    """K = 0.9 M - W - A(8192) - 8 V S - R; whole 16-token blocks; 2048-token sequences take 128 blocks."""
    m = engine_memory(sm, load_engine("vllm"))
    k = 0.9 * M - W - A - 8 * VOCAB * 1024 - R
    assert m.kv_pool == pytest.approx(k)
    assert k == pytest.approx(58_386_808_832, abs=1)
    tokens = math.floor(k / (KV_TOKEN * 16)) * 16
    assert m.kv_tokens == tokens == 445_456              # 27,841 blocks
    assert m.max_sequences(2048) == 445_456 // 16 // 128 == 217
    assert m.max_sequences(2049) == 445_456 // 16 // 129 == 215     # one token more: a block more each


def test_sglang_default_fraction_and_pool(sm):
    """SGLang's rule on an 80 GiB GPU at tp 1: r = 512 + 1.5*8192 + 2*256 + 1024/8 MiB = 13440 MiB."""
    assert sglang_mem_fraction(M, tp=1) == round((81920 - 13440) / 81920, 3) == 0.836
    m = engine_memory(sm, load_engine("sglang"))
    assert m.fraction == 0.836
    k = 0.836 * M - W - R
    assert m.kv_pool == pytest.approx(k)
    assert m.kv_tokens == math.floor(k / KV_TOKEN)                     # page size 1
    # 8 GPUs with attention DP 8 on 141 GiB: r = 512 + 12288 + 1024 + 1024 + 3*512*8 + 1.5*512*8 MiB
    assert sglang_mem_fraction(141 * 2**30, tp=8, dp=8) == round((144384 - 33280) / 144384, 3)


def test_trtllm_fraction_of_free_memory(sm):
    m = engine_memory(sm, load_engine("trtllm"))
    k = 0.9 * (M - W - A - R)
    assert m.kv_pool == pytest.approx(k)
    assert m.kv_tokens == math.floor(k / (KV_TOKEN * 32)) * 32


def test_user_fraction_and_conflicts(sm):
    low = engine_memory(sm, load_engine("vllm", gpu_memory_utilization=0.5))
    assert low.kv_pool == pytest.approx(0.5 * M - W - A - 8 * VOCAB * 1024 - R)
    served = Engine.load("vllm", gpu_memory_utilization=0.5).step(sm)
    assert served.kv_capacity_tokens == low.kv_tokens
    with pytest.raises(SpecError, match="gpu_memory_utilization and mem_fraction_static"):
        load_engine("sglang", gpu_memory_utilization=0.8)
    with pytest.raises(SpecError, match="mem_fraction_static"):
        load_engine("sglang", mem_fraction_static=1.5)
    none = load_engine("vllm", gpu_memory_utilization=None)
    assert engine_memory(sm, none) is None       # no rule: the step model's own capacity
    assert Engine.load(none).step(sm).kv_capacity_tokens == sm.kv_capacity_tokens


def test_steady_state_queues_once_the_kv_cache_binds():
    """Constant 10 ms steps, reserve_full (TensorRT-LLM): n_max = K / ceil((I+O)/32)/32 sequences; past it
    the C - n_max other clients wait, TTFT = (O - 1) T (C / n_max - 1) (Little's law)."""
    T, isl, osl = 0.01, 1000, 1000                  # I + O = 2000 -> 63 blocks of 32 = 2016 tokens
    cap = 2016 * 50                                 # room for exactly 50 reserved requests
    eng = Engine.load("trtllm-preset", step_overhead=0.0, seq_overhead=0.0)
    c = np.array([10.0, 40.0, 100.0, 200.0])
    res = steady_state(ConstantStepModel(T, kv_capacity_tokens=cap), c, isl, osl, engine=eng)
    assert list(res.limited_by) == ["clients", "clients", "kv_cache", "kv_cache"]
    np.testing.assert_allclose(res.decode_batch_mean[2:], 50.0)
    np.testing.assert_allclose(res.tpot_mean_s, T)
    queued = (osl - 1) * T * (c[2:] / 50.0 - 1.0)
    np.testing.assert_allclose(res.ttft_mean_s[2:], queued, rtol=1e-9)          # 9.99 s, 29.97 s
    assert res.ttft_mean_s[1] < 0.1 < 9.0 < res.ttft_mean_s[2]                       # the cliff


def test_device_memory_figures_match_their_source():
    """Each figure is the source's mem_capacity, which is the GiB or MiB figure its comment states."""
    import re

    from perfmodel.engine.kv_memory import _device_table

    table = _device_table()
    assert {"h100-sxm", "h200-sxm", "b200", "gb200"} <= set(table)
    for row in table.values():
        quoted = re.search(r"mem_capacity: (\d+) # (\d+) ?(GiB|MiB)", row["source"])
        assert quoted and int(quoted.group(1)) == row["bytes"]
        assert row["bytes"] == int(quoted.group(2)) * (2**30 if quoted.group(3) == "GiB" else 2**20)


def test_sglang_default_rule_without_room_falls_back():
    """At attention-DP 72 SGLang's padding term alone (3*512*72 + 1.5*512*72 MiB) exceeds a GB200's memory:
    the default rule cannot be what such a run used, so the step model's capacity stands."""
    sm72 = StepModel("deepseek-r1", "gb200", tp=1, dp_attention=72, weights="fp8", kv_cache="fp8")
    assert sglang_mem_fraction(198_674_743_296, tp=72, dp=72) < 0.2
    assert engine_memory(sm72, load_engine("sglang")) is None
    assert engine_memory(sm72, load_engine("sglang", mem_fraction_static=0.8)).kv_tokens > 0
    assert Engine.load("sglang").step(sm72).kv_capacity_tokens == sm72.kv_capacity_tokens


def test_estimate_reports_the_pool_and_takes_the_flag(sm, capsys):
    import json

    from perfmodel.cli import main

    expected = engine_memory(sm, load_engine("vllm", gpu_memory_utilization=0.5)).kv_tokens
    assert main(["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "vllm",
                 "--weights", "bf16", "--concurrency", "8", "--isl", "1024", "--osl", "256",
                 "--gpu-memory-utilization", "0.5", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["kv_cache_tokens"] == expected


def test_predict_with_an_engine_reports_its_pool(sm):
    import perfmodel as pm

    p = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=256, batch=[1],
                   engine=Engine.load("trtllm", free_gpu_memory_fraction=0.5))
    expected = engine_memory(sm, load_engine("trtllm", free_gpu_memory_fraction=0.5))
    assert p.config["engine_kv_cache_tokens"] == expected.kv_tokens
    assert p.config["engine_memory_rule"] == "trtllm free_gpu_memory_fraction=0.5"
    assert p.records()[0]["engine_kv_cache_tokens"] == expected.kv_tokens
    assert "engine_kv_cache_tokens" not in pm.predict("llama-3.1-8b", "h100-sxm", batch=[1]).records()[0]


@pytest.mark.parametrize("field", ["gpu_memory_utilization", "mem_fraction_static", "free_gpu_memory_fraction"])
def test_a_boolean_memory_fraction_is_refused(field):
    """pydantic reads ``true`` as 1.0 for a float field; a memory fraction of ``true`` is a mistake."""
    from perfmodel.engine.engine import Engine
    from perfmodel.errors import PerfmodelError

    with pytest.raises(PerfmodelError, match=f"{field}.*got True"):
        Engine.load({"gpu_memory_utilization": "vllm", "mem_fraction_static": "sglang",
                     "free_gpu_memory_fraction": "trtllm"}[field], **{field: True})

