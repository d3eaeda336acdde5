"""SGLang's default memory rule depends on the token budget (``--chunked-prefill-size``), hand-computed for
Llama-3.1-8B in bf16 on one H100-SXM (80 GiB as the driver reports it), and a plan searching two budgets
under SGLang runs each with its own KV pool."""

import math

import pytest

from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.engine.kv_memory import GIB, engine_memory, sglang_mem_fraction

M_MIB = 81920                                   # 80 GiB [MiB]
W = 16_059_990_016                              # Llama-3.1-8B bf16 weights [B] (tests/test_engine_kv_memory.py)
KV_TOKEN = 131_072                              # bf16 K and V of 32 layers x 8 heads x 128 [B/token]


@pytest.fixture(scope="module")
def sm():
    return StepModel("llama-3.1-8b", "h100-sxm", tp=1, weights="bf16", kv_cache="bf16")


@pytest.mark.parametrize(("budget", "reserved_mib"), [
    (2048, 10240),                      # 512 + 1.5*2048 + 2*256 + 1024/8 = 4224, raised to the 10 GiB floor
    (4096, 10240),                      # 512 + 6144 + 512 + 128 = 7296, floor
    (8192, 13440),                      # 512 + 12288 + 512 + 128 (the shipped profile's budget)
    (16384, 25728),                     # 512 + 24576 + 512 + 128
])
def test_sglang_pool_follows_the_token_budget(sm, budget, reserved_mib):
    f = round((M_MIB - reserved_mib) / M_MIB, 3)
    assert sglang_mem_fraction(M_MIB * 2**20, tp=1, chunked_prefill_size=budget) == f
    mem = engine_memory(sm, Engine.load("sglang", max_num_batched_tokens=budget).profile)
    assert mem.fraction == f
    pool = f * M_MIB * 2**20 - W - GIB
    assert mem.kv_pool == pytest.approx(pool)
    assert mem.kv_tokens == math.floor(pool / KV_TOKEN)          # page size 1


def test_budget_16384_leaves_a_smaller_pool_than_2048(sm):
    """f = 0.875 vs 0.686: 0.189 x 80 GiB = 15.1 GiB less KV pool, 123,862 fewer tokens."""
    small = Engine.load("sglang", max_num_batched_tokens=2048).step(sm).kv_capacity_tokens
    large = Engine.load("sglang", max_num_batched_tokens=16384).step(sm).kv_capacity_tokens
    assert float(small) - float(large) == pytest.approx((0.875 - 0.686) * M_MIB * 2**20 / KV_TOKEN, abs=1)


def test_a_given_fraction_ignores_the_budget(sm):
    for budget in (2048, 16384):
        mem = engine_memory(sm, Engine.load("sglang", max_num_batched_tokens=budget,
                                            mem_fraction_static=0.8).profile)
        assert mem.fraction == 0.8 and mem.kv_pool == pytest.approx(0.8 * M_MIB * 2**20 - W - GIB)


def test_plan_variants_of_two_budgets_get_their_own_pools(sm):
    """The engine variants a plan searches (``--engine sglang --max-num-batched-tokens 2048,16384``) carry
    the budget into the memory rule: f = 0.875 and 0.686 of 80 GiB, less W and R, per token."""
    from perfmodel.planning.engine_space import engine_variants

    pools = {e.profile.max_num_batched_tokens: float(e.step(sm).kv_capacity_tokens)
             for e in engine_variants("sglang", max_num_batched_tokens="2048,16384")}
    assert pools == {b: math.floor((f * M_MIB * 2**20 - W - GIB) / KV_TOKEN)
                     for b, f in ((2048, 0.875), (16384, 0.686))}
