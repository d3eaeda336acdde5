"""Prefix reuse in the simulator: the per-replica prefix cache, shared prefixes, sessions, traces and the
steady-state hit-rate rule (perfmodel.serving.prefixcache / reuse)."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.errors import ConfigError, SpecError
from perfmodel.serving import Workload, expected_hit_rate, simulate, steady_state
from perfmodel.serving.prefixcache import PrefixCache
from perfmodel.serving.reuse import lru_keep_probability

SM = StepModel("llama-3.1-8b", "h100-sxm")
ARRAYS = ("arrival_s", "sched_s", "first_token_s", "finish_s", "isl", "osl", "status", "preemptions",
          "itl_values", "itl_weights")


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in ARRAYS)


# -- the cache itself -----------------------------------------------------------------------------
def test_cache_pins_keeps_and_evicts_least_recently_used():
    c = PrefixCache()
    c.pin([1, 2, 3])
    assert (c.size, c.pinned) == (3, 3)
    c.unpin([1, 2, 3])                  # idle in order 1, 2, 3
    c.keep([4])
    assert (c.size, c.pinned, list(c.idle)) == (4, 0, [1, 2, 3, 4])
    assert c.match([1, 2, 9, 4]) == (2, 2)   # a hit after a miss is no hit
    c.pin([1])                          # in use again: not evictable
    assert c.evict(2) == 2 and set(c.ref) == {1, 4} and c.evicted == 2
    assert c.evict(5) == 1 and set(c.ref) == {1}   # the pinned block stays


# -- invariants of the simulation ---------------------------------------------------------------
@pytest.mark.parametrize("engine,load", [("vllm", {"rate": 8.0}), ("sglang", {"concurrency": 48}),
                                         ("trtllm", {"rate": 6.0})])
def test_reuse_that_cannot_hit_changes_nothing(engine, load):
    """A 15-token prefix never fills a 16-token block: the cache runs and finds nothing, and every
    per-request array equals the run without any reuse, bit for bit (same seed). (SGLang's radix cache
    has 1-token pages; 16-token ones here, for the invariant.)"""
    engine = Engine.load(engine, kv_block_size=16)
    base = Workload.fixed(2048, 256, **load)
    a = simulate(SM, base, engine=engine, requests=300, seed=3)
    assert a.summary()["preemptions"] == 0    # (a preempted request would find its own blocks cached)
    b = simulate(SM, base.replace(prefix={"tokens": 15, "pool": 4}), engine=engine, requests=300, seed=3)
    assert _same(a, b)
    assert b.summary()["prefix_hit_rate"] == 0.0 and "prefix_hit_rate" not in a.summary()


def test_one_shared_prefix_with_ample_kv_reaches_s_over_isl():
    """Concurrency 1: request 0 computes the 3072-token prefix, every later one finds it, so the
    token-weighted hit rate is exactly 3072·(n−1) / (4096·n)."""
    n = 12
    w = Workload.fixed(4096, 64, concurrency=1, prefix={"tokens": 3072})
    res = simulate(SM, w, engine="vllm", requests=n, seed=0)
    assert res.summary()["prefix_hit_rate"] == pytest.approx(3072 * (n - 1) / (4096 * n), rel=1e-12)
    assert list(res.cached_tokens) == [0] + [3072] * (n - 1)
    assert expected_hit_rate(w) == pytest.approx(0.75)
    # under load (open loop), the prompts that arrive while the first one computes miss too
    hot = simulate(SM, w.with_load(rate=6.0), engine="vllm", requests=600, seed=1).summary()
    assert 0.72 < hot["prefix_hit_rate"] <= 0.75


def test_ttft_tends_to_the_uncached_prefill_plus_overheads():
    """Cached prompts: TTFT = request overhead + the prefill of the 1024 uncached tokens after a
    3072-token cached context + late first tokens, the same as an explicit hit rate of 3072/4096."""
    cache = simulate(SM, Workload.fixed(4096, 64, concurrency=1, prefix={"tokens": 3072}), engine="vllm",
                     requests=6, seed=0, step_table="exact")
    rate = simulate(SM, Workload.fixed(4096, 64, concurrency=1, prefix_hit_rate=0.75), engine="vllm",
                    requests=6, seed=0, step_table="exact")
    assert np.allclose(cache.request_ttft_s[1:], rate.request_ttft_s[1:], rtol=1e-12)
    e = Engine.load("vllm")
    prefill = float(e.step(SM).step_time(0, 0, 1024, 3072))
    expect = prefill + e.request_overhead + e.terms.first_token_steps * cache.request_tpot_s[1:]
    assert np.allclose(cache.request_ttft_s[1:], expect, rtol=1e-9)
    # the first one computed the whole prompt: 4096 tokens against 1024 (the request overhead, fitted, left out)
    assert cache.request_ttft_s[0] - e.request_overhead > 2.0 * (cache.request_ttft_s[1] - e.request_overhead)


def test_a_small_cache_evicts_and_hits_less():
    """64 prefixes of 3072 tokens (196k tokens) over a cache of ~13k tokens: evictions, a hit rate far
    below the ample cache's, and fewer hits than with one prefix in the same small cache."""
    w = Workload.fixed(4096, 64, rate=3.0, prefix={"tokens": 3072, "pool": 64})
    small = Engine.load("vllm", kv_capacity_fraction=0.03)
    big = simulate(SM, w, engine="vllm", requests=600, seed=2)
    tiny = simulate(SM, w, engine=small, requests=600, seed=2)
    one = simulate(SM, w.replace(prefix={"tokens": 3072, "pool": 1}), engine=small, requests=600, seed=2)
    h_big, h_tiny = big.summary()["prefix_hit_rate"], tiny.summary()["prefix_hit_rate"]
    assert h_big > 0.6     # every prefix after its first use (the prompts' own tails are what is evicted)
    assert tiny.meta["prefix_cache_evicted_blocks"] > 1000
    assert h_tiny < 0.5 * h_big
    assert one.summary()["prefix_hit_rate"] > 0.7
    for r in (big, tiny, one):   # conservation: every request ends in exactly one state
        s = r.summary()
        assert s["completed"] + s["cancelled"] + s["rejected"] + s["in_flight"] == s["arrived"] == 600


def test_preempted_requests_find_their_prompt_blocks():
    """KV so small that decodes preempt: with a prefix cache a re-admitted request finds the blocks of
    its prompt still cached (its own and the shared prefix), so the run does less prefill work (fewer
    busy seconds) than without reuse, where every preemption recomputes the whole prompt."""
    small = Engine.load("vllm", kv_capacity_fraction=0.05)
    w = Workload.fixed(3072, 1024, concurrency=10, ramp_up=0)   # all at once: the prompts overfill the KV
    none = simulate(SM, w, engine=small, requests=120, seed=4)
    own = simulate(SM, w.replace(prefix={"tokens": 15}), engine=small, requests=120, seed=4)
    shared = simulate(SM, w.replace(prefix={"tokens": 2048}), engine=small, requests=120, seed=4)
    assert none.summary()["preemptions"] > 0 and own.summary()["preemptions"] > 0
    assert own.summary()["prefix_hit_rate"] == 0.0    # first admissions find nothing
    assert all(r.summary()["completed"] == 120 for r in (none, own, shared))
    busy = [sum(r.meta["busy_s"]) for r in (shared, own, none)]
    assert busy[0] < busy[1] < busy[2]


# -- sessions ---------------------------------------------------------------------------------------
def test_session_prompts_resend_the_history_and_hit_it():
    """Turn t+1 = turn t's prompt + answer + 50 user tokens; at concurrency 1 with ample KV each later
    turn finds the previous prompt + answer in whole 16-token blocks."""
    w = Workload.fixed(1000, 100, concurrency=1, sessions={"turns": 3, "user_tokens": 50})
    res = simulate(SM, w, engine="vllm", requests=9, seed=0)
    assert list(res.isl) == [1000, 1150, 1300] * 3
    assert list(res.cached_tokens) == [0, 1088, 1248] * 3     # floor(1100/16)·16, floor(1250/16)·16
    assert res.summary()["prefix_hit_rate"] == pytest.approx(3 * 2336 / (3 * 3450), rel=1e-12)
    assert expected_hit_rate(w) == pytest.approx(2350 / 3450)


def test_open_loop_sessions_keep_turns_in_order_and_account_for_every_request():
    w = Workload.fixed(1024, 128, rate=4.0, sessions={"turns": 4, "user_tokens": 64, "think_time": "2 s"},
                       prefix={"tokens": 512, "pool": 4})
    res = simulate(SM, w, engine="vllm", requests=400, seed=5)
    s = res.summary()
    assert s["arrived"] == 400 and s["completed"] == 400
    assert set(np.unique(res.isl)) == {1024, 1216, 1408, 1600}
    assert 0.5 < s["prefix_hit_rate"] <= expected_hit_rate(w) + 1e-9


def test_reasoning_turns_resend_only_the_prompt():
    w = Workload.fixed(1000, 100, concurrency=1, reasoning_tokens=200,
                       sessions={"turns": 2, "user_tokens": 50})
    res = simulate(SM, w, engine="vllm", requests=2, seed=0)
    assert list(res.isl) == [1000, 1150] and list(res.cached_tokens) == [0, 992]
    assert expected_hit_rate(w) == pytest.approx(1000 / 2150)


# -- traces, the steady state, bad input -------------------------------------------------------------
def test_trace_prefix_ids_name_the_shared_prefix(tmp_path):
    n = 20
    csv = tmp_path / "t.csv"
    csv.write_text("arrival_s,isl,osl,prefix_id\n" + "".join(f"{2.0 * k},2048,16,{k % 2}\n" for k in range(n)))
    w = Workload(arrival={"process": "trace", "trace": str(csv)}, isl=1, osl=1, prefix={"tokens": 1024})
    res = simulate(SM, w, engine="vllm", seed=0)
    assert list(res.cached_tokens) == [0, 0] + [1024] * (n - 2)
    bad = tmp_path / "w.yaml"
    bad.write_text(f"arrival: {{process: trace, trace: {csv}}}\nisl: 1\nosl: 1\n")
    with pytest.raises(SpecError, match="prefix_id"):
        simulate(SM, str(bad), engine="vllm", seed=0)


def test_expected_hit_rate_rules():
    w = Workload.fixed(4096, 256, concurrency=8, prefix={"tokens": 3072, "pool": 16})
    assert expected_hit_rate(w) == pytest.approx(0.75)
    assert expected_hit_rate(w, kv_capacity=8 * 3072) == pytest.approx(0.375)   # LRU keeps 8 of 16
    # Che's approximation without unshared tails is the same K/(P·S), whatever the rate
    for rate in (0.1, 5.0, 300.0):
        assert lru_keep_probability(16, 3072, 0.0, rate, 8 * 3072) == pytest.approx(0.5, rel=1e-9)
    assert lru_keep_probability(16, 3072, 0.0, 5.0, 16 * 3072) == 1.0
    # tails take room: with the 1024-token tails of 5 requests/s the prefixes keep less
    assert lru_keep_probability(16, 3072, 1024.0, 5.0, 8 * 3072) < 0.5
    assert expected_hit_rate(Workload.fixed(4096, 256, rate=1.0, prefix_hit_rate=0.3)) == 0.3
    assert expected_hit_rate(Workload.fixed(4096, 256, rate=1.0)) == 0.0


def test_the_rule_follows_the_simulated_cache_when_room_is_short():
    """128 prefixes of 3072 tokens do not fit a 421k-token cache beside the prompts' own tails: the
    simulated hit rate (after warm-up) and Che's approximation agree within 0.04; the rule without a
    rate (K/(P·S) = 1 here) does not see the shortage."""
    w = Workload.fixed(4096, 256, rate=6.0, prefix={"tokens": 3072, "pool": 128})
    sim = simulate(SM, w, engine="vllm", requests=2000, seed=1).summary(warmup=0.3)["prefix_hit_rate"]
    kv = float(SM.kv_capacity_tokens)
    rule = expected_hit_rate(w, kv)
    assert rule == pytest.approx(sim, abs=0.04) and rule < 0.6
    assert expected_hit_rate(w.with_load(concurrency=8), kv) == pytest.approx(0.75)


def test_steady_state_derives_the_hit_rate_from_the_workload():
    w = Workload.fixed(4096, 256, concurrency=16, prefix={"tokens": 3072, "pool": 4})
    a = steady_state(SM, 16, w, engine="vllm")
    b = steady_state(SM, 16, 4096, 256, engine="vllm", prefix_hit_rate=0.75)
    assert float(a.ttft_mean_s) == pytest.approx(float(b.ttft_mean_s), rel=1e-12)
    with pytest.raises(ConfigError, match="sessions"):
        steady_state(SM, 4, Workload.fixed(1024, 128, concurrency=4, sessions={"turns": 2, "user_tokens": 8}))


@pytest.mark.parametrize("extra,match", [
    ({"prefix_hit_rate": 0.5, "prefix": {"tokens": 100}}, "exclusive"),
    ({"prefix_hit_rate": 0.5, "sessions": {"turns": 2, "user_tokens": 8}}, "exclusive"),
    ({"prefix": {"tokens": 0}}, "prefix.tokens"),
    ({"prefix": {"tokens": 100, "pool": 0}}, "prefix.pool"),
    ({"prefix": {"tokens": 100, "size": 3}}, "size"),
    ({"sessions": {"turns": 1, "user_tokens": 8}}, "sessions.turns"),
    ({"sessions": {"turns": 2}}, "user_tokens"),
])
def test_bad_reuse_descriptions_are_refused(extra, match):
    with pytest.raises(SpecError, match=match):
        Workload.fixed(1024, 128, rate=1.0, **extra)


def test_closed_loop_sessions_refuse_their_own_think_time():
    with pytest.raises(SpecError, match="think_time"):
        Workload.fixed(1024, 128, concurrency=2, sessions={"turns": 2, "user_tokens": 8, "think_time": 1})


# -- bookkeeping, checked after every step --------------------------------------------------------------
CASES = [
    ("vllm", 0.03, {"rate": 4.0}, {"prefix": {"tokens": 2048, "pool": 8}}),
    ("sglang", 0.03, {"rate": 4.0}, {"prefix": {"tokens": 2048, "pool": 8}}),
    ("trtllm", 0.05, {"rate": 3.0}, {"prefix": {"tokens": 2048, "pool": 8}}),
    ("vllm", 0.04, {"concurrency": 12}, {"sessions": {"turns": 3, "user_tokens": 200},
                                         "prefix": {"tokens": 1000, "pool": 2}}),
]


@pytest.mark.parametrize("engine,fraction,load,reuse", CASES)
def test_cache_and_sequences_never_overcommit_the_kv(monkeypatch, engine, fraction, load, reuse):
    """After every step: blocks of sequences + cached blocks <= capacity, every pinned reference belongs
    to a running request, and idle blocks are exactly those with no reference."""
    from perfmodel.serving import scheduler

    seen = {"steps": 0, "evicted": 0}
    original = scheduler.Replica.commit

    def checked(self, upto=None):
        original(self, upto)
        c, R = self.cache, self.R
        used = self.reserved if self.reserve else self.dec.nblocks + self.pf_blocks
        assert used + c.size <= self.total_blocks
        assert sum(c.ref.values()) == sum(R.cblk[r] for r in self.running)
        assert set(c.idle) == {k for k, r in c.ref.items() if r == 0}
        seen["steps"] += 1
        seen["evicted"] = c.evicted

    monkeypatch.setattr(scheduler.Replica, "commit", checked)
    e = Engine.load(engine, kv_capacity_fraction=fraction)
    w = Workload.fixed(3000, 300, **load, **reuse)
    s = simulate(SM, w, engine=e, requests=200, seed=7).summary()
    assert s["completed"] + s["cancelled"] + s["rejected"] == 200
    assert seen["steps"] > 100 and seen["evicted"] > 0 and s["prefix_hit_rate"] > 0


def test_disaggregated_prefill_pool_caches_the_prefix():
    from perfmodel.serving.simulator import Disaggregated

    pool = {"model": "llama-3.1-8b", "hardware": "h100-sxm"}
    d = Disaggregated(prefill=pool, decode=pool, decode_replicas=2)
    w = Workload.fixed(4096, 128, rate=4.0)
    plain = simulate(d, w, requests=300, seed=2)
    cached = simulate(d, w.replace(prefix={"tokens": 3072}), requests=300, seed=2)
    s = cached.summary()
    assert s["completed"] == 300 and 0.74 < s["prefix_hit_rate"] <= 0.75
    assert s["ttft_p50_s"] < plain.summary()["ttft_p50_s"]


def test_estimate_takes_a_shared_prefix():
    from perfmodel.serving.estimate import estimate

    kw = {"isl": 4096, "osl": 256, "engine": "vllm"}
    a = estimate("llama-3.1-8b", "h100-sxm", concurrency=[8], prefix={"tokens": 3072, "pool": 4}, **kw)
    b = estimate("llama-3.1-8b", "h100-sxm", concurrency=[8], prefix_hit_rate=0.75, **kw)
    assert float(a.ttft_mean_s[0]) == pytest.approx(float(b.ttft_mean_s[0]), rel=1e-12)
    c = estimate("llama-3.1-8b", "h100-sxm", rate=[2.0], prefix={"tokens": 3072}, **kw)
    d = estimate("llama-3.1-8b", "h100-sxm", rate=[2.0], **kw)
    assert float(c.ttft_mean_s[0]) < 0.6 * float(d.ttft_mean_s[0])
    with pytest.raises(ConfigError, match="exclusive"):
        estimate("llama-3.1-8b", "h100-sxm", concurrency=[8], prefix={"tokens": 3072}, prefix_hit_rate=0.5, **kw)


def test_session_router_keeps_a_session_on_its_replica():
    """Two replicas, ample KV: the least-loaded router scatters a session's turns, so a turn often lands
    where its history is not; the session router keeps them together and finds every history (after
    the first turn each turn hits, exactly as on one replica: 0.677 here)."""
    w = Workload.fixed(1000, 100, rate=6.0, sessions={"turns": 3, "user_tokens": 50, "think_time": 1})
    one = simulate(SM, w, replicas=1, requests=600, seed=0).summary()["prefix_hit_rate"]
    scattered = simulate(SM, w, replicas=2, requests=600, seed=0).summary()["prefix_hit_rate"]
    sticky = simulate(SM, w, replicas=2, router="session", requests=600, seed=0)
    assert sticky.summary()["prefix_hit_rate"] == pytest.approx(one, rel=1e-12)
    assert scattered < 0.8 * one
    assert set(sticky.replica) == {0, 1}
    # without sessions the session router is the least-loaded one
    plain = Workload.fixed(1000, 100, rate=6.0)
    assert _same(simulate(SM, plain, replicas=2, requests=200, seed=0),
                 simulate(SM, plain, replicas=2, router="session", requests=200, seed=0))
