"""EngineMemory.max_sequences with attention DP (a sequence's blocks sit on one rank's pool, so the
replica holds D times what one rank holds, not the replica's blocks divided by a sequence's), and
SGLang's smallest memory tiers."""

import math

import pytest

from perfmodel.core.step import StepModel
from perfmodel.engine.kv_memory import engine_memory
from perfmodel.engine.profile import load_engine


@pytest.fixture(scope="module")
def mem():
    sm = StepModel("deepseek-v3", "h200-sxm", tp=1, dp_attention=8, ep=8, weights="fp8", kv_cache="bf16")
    return engine_memory(sm, load_engine("sglang"))


def test_sequences_fit_one_rank_each(mem):
    """SGLang (page size 1) on 8 H200s at attention DP 8: each rank's pool K / k tokens, 8 such pools."""
    rank = math.floor(mem.kv_pool / mem.kv_bytes_per_token)          # tokens one rank holds
    assert mem.block_size == 1
    assert mem.kv_tokens == 8 * rank
    for length in (3000, 4096, 100_000):
        assert mem.max_sequences(length) == 8 * (rank // length)
    # the replica-wide count of blocks would put 20 sequences of 100k tokens in 8 pools that hold 2 each
    assert mem.kv_tokens // 100_000 == 20 and mem.max_sequences(100_000) == 16
    assert mem.max_sequences(0) == 0 and mem.ranks == 8


def test_sglang_small_device_tiers():
    """SGLang's two smallest tiers (sglang/srt/server_args.py _handle_gpu_memory_settings): < 20 GiB c 2048,
    g 8; < 35 GiB c 2048, g 24 (tp < 4) or 80. The L4 (24 GiB, driver-reported) was costed with the 60 GiB
    tier's c 4096, g 32: f 0.721 instead of 0.847."""
    from perfmodel.engine.kv_memory import sglang_mem_fraction

    l4 = 24 * 2**30
    # r = 512 + 1.5*2048 + 2*24 + 1024/8 = 3760 MiB of 24576
    assert sglang_mem_fraction(l4, tp=1) == round((24576 - 3760) / 24576, 3) == 0.847
    # tp 4: r = 512 + 3072 + 2*80 + 4*1024/8 = 4256 MiB
    assert sglang_mem_fraction(l4, tp=4) == round((24576 - 4256) / 24576, 3)
    # a 16 GiB card: r = 512 + 3072 + 16 + 128 = 3728 MiB of 16384
    assert sglang_mem_fraction(16 * 2**30, tp=1) == round((16384 - 3728) / 16384, 3)
    # 40 GiB stays in the < 60 GiB tier: r = 512 + 1.5*4096 + 64 + 128 = 6848 MiB
    assert sglang_mem_fraction(40 * 2**30, tp=1) == round((40960 - 6848) / 40960, 3)
