"""EngineMemory.max_sequences with attention DP: a sequence's blocks sit on one rank's pool, so the
replica holds D times what one rank holds, not the replica's blocks divided by a sequence's."""

import math

import pytest

from perfmodel.core.step import StepModel
from perfmodel.engine.kv_memory import engine_memory
from perfmodel.engine.profile import load_engine


@pytest.fixture(scope="module")
def mem():
    sm = StepModel("deepseek-v3", "h200-sxm", tp=1, dp_attention=8, ep=8, weights="fp8")
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
