"""What makes ``plan`` fast without changing its answer: step models built once per distinct layout,
step tables shared between simulations, and a load search that stops once the replica count is known."""

from __future__ import annotations

import math

import pytest

from perfmodel.engine.engine import Engine
from perfmodel.errors import PerfmodelError
from perfmodel.planning.screen import build
from perfmodel.planning.space import enumerate_candidates
from perfmodel.serving import SLO, Workload, max_load, simulate
from perfmodel.serving.simulator import timer_identity
from perfmodel.serving.stand_in import ConstantStepModel

#: The hand scheduler of test_planning_search: 8 sequences, no host overheads, 10 ms per step.
ENGINE = {"name": "hand", "max_num_seqs": 8, "max_num_batched_tokens": 4096}
SLO_HAND = SLO(ttft="1 s", tpot="50 ms", target=0.95)


def test_engine_wrappers_of_one_model_share_a_step_table_identity():
    from perfmodel.core.step import StepModel

    eng = Engine.load("vllm")
    a, b = StepModel(model="llama-3.1-8b", hardware="h100-sxm"), StepModel(model="llama-3.1-8b", hardware="h100-sxm")
    # Engine.step makes a new wrapper each call; its tables depend on the device model and the terms
    assert eng.step(a) is not eng.step(a)
    assert timer_identity(eng.step(a)) == timer_identity(eng.step(a))
    assert timer_identity(eng.step(a)) != timer_identity(eng.step(b))
    spec = Engine.load("vllm", spec_decode="eagle:k=3")
    assert timer_identity(spec.step(a)) != timer_identity(eng.step(a))


def test_second_simulation_reuses_the_tables_and_gives_the_same_answer():
    from perfmodel.core.step import StepModel

    sm = StepModel(model="llama-3.1-8b", hardware="h100-sxm")
    w = Workload.fixed(1024, 64, rate=20.0)
    timers: dict = {}
    first = simulate(sm, w, engine="vllm", requests=200, timer_cache=timers)
    (timer,) = timers.values()
    built = timer.table_points
    again = simulate(sm, w, engine="vllm", requests=200, timer_cache=timers)
    assert len(timers) == 1 and timer.table_points == built    # no table built a second time
    alone = simulate(sm, w, engine="vllm", requests=200)
    assert again.summary() == first.summary() == alone.summary()


def test_build_memo_gives_one_step_model_per_layout():
    cands = enumerate_candidates("llama-3.1-8b", ["h100-sxm"], tp=[1, 2], disaggregated=True)
    memo: dict = {}
    agg = {c.layout["tp"]: build(c.step_model, memo) for c in cands if not c.disaggregated}
    pd = [(build(c.step_model, memo), build(c.decode, memo)) for c in cands if c.disaggregated]
    assert len(memo) == 2   # tp1 and tp2, for 2 aggregated candidates and 4 P/D pairs
    assert pd[0] == (agg[1], agg[1]) and pd[3] == (agg[2], agg[2]) and pd[1] == (agg[1], agg[2])
    assert build(cands[0].step_model) is not agg[1]   # without a memo: a new one


def test_build_memo_raises_the_same_error_for_a_layout_that_cannot_run():
    (bad,) = enumerate_candidates("llama-3.1-8b", ["h100-sxm"], tp=[3])
    memo: dict = {}
    with pytest.raises(PerfmodelError) as one:
        build(bad.step_model, memo)
    with pytest.raises(PerfmodelError) as two:
        build(bad.step_model, memo)
    assert one.value is two.value and "tp=3" in str(one.value)


def test_max_load_decided_stops_at_the_same_replica_count():
    # one replica saturates near 8 / (21 x 10 ms) = 38 req/s; 100 req/s then need 3 replicas, which
    # any capacity in [33.3, 50) gives: the search may stop once its bracket lies in one such range
    w = Workload.fixed(16, 21, rate=1.0)
    kw = dict(engine=ENGINE, requests=300, start=10.0)

    def replicas(x: float) -> int:
        return math.ceil(100.0 / x - 1e-9)

    full = max_load(ConstantStepModel(0.01), w, SLO_HAND, **kw)
    quick = max_load(ConstantStepModel(0.01), w, SLO_HAND, **kw,
                     decided=lambda lo, hi: hi is not None and replicas(lo) == replicas(hi))
    assert replicas(quick.max_load) == replicas(full.max_load) == 3
    assert quick.simulations < full.simulations
    # the answer is the highest load that met the target; the lowest one that missed it bounds it
    missed = min(p["load"] for p in quick.curve if p["slo_attainment"] < 0.95)
    assert quick.max_load < full.max_load * 1.0001 and replicas(missed) == 3
    assert quick.bracketed and "decided()" in quick.note and full.note == ""


def test_screen_costs_each_pool_once(monkeypatch):
    from perfmodel.planning import screen as screen_module

    calls = {"decode": 0, "prefill": 0}
    decode, prefill = screen_module.replica_capacity_bound, screen_module.prefill_capacity_bound

    def count(kind, fn):
        def wrapped(*a):
            calls[kind] += 1
            return fn(*a)
        return wrapped

    monkeypatch.setattr(screen_module, "replica_capacity_bound", count("decode", decode))
    monkeypatch.setattr(screen_module, "prefill_capacity_bound", count("prefill", prefill))
    cands = enumerate_candidates("llama-3.1-8b", ["h100-sxm"], tp=[1, 2], disaggregated=True)
    eng, slo = Engine.load("vllm"), SLO(ttft="2 s", tpot="50 ms", target=0.95)
    memo: dict = {}
    with_memo = [screen_module.screen(c, eng, 512, 64, slo, 4.0, 256, memo) for c in cands]
    # 2 aggregated + 4 P/D candidates over 2 step models: each bound once per model
    assert calls == {"decode": 2, "prefill": 2}
    calls.update(decode=0, prefill=0)
    alone = [screen_module.screen(c, eng, 512, 64, slo, 4.0, 256) for c in cands]
    assert calls == {"decode": 6, "prefill": 4}
    strip = ("model", "decode_model")
    assert [{k: v for k, v in s.items() if k not in strip} for s in with_memo] == \
        [{k: v for k, v in s.items() if k not in strip} for s in alone]


def test_cached_tables_are_reused_only_for_the_same_extent():
    from perfmodel.core.step import StepModel

    sm = StepModel(model="llama-3.1-8b", hardware="h100-sxm")
    # the longest context places the grid points: 1024 + 64 and 512 + 64 tokens give two grids
    long, short = Workload.fixed(1024, 64, rate=10.0), Workload.fixed(512, 64, rate=10.0)
    timers: dict = {}
    first = simulate(sm, long, engine="vllm", requests=100, timer_cache=timers)
    second = simulate(sm, short, engine="vllm", requests=100, timer_cache=timers)
    assert sorted(t.max_context for t in timers.values()) == [576, 1088]
    # figures as with tables built for the run alone
    assert first.summary() == simulate(sm, long, engine="vllm", requests=100).summary()
    assert second.summary() == simulate(sm, short, engine="vllm", requests=100).summary()
    simulate(sm, short, engine="vllm", requests=100, timer_cache=timers)
    assert len(timers) == 2   # the same extent again: reused
