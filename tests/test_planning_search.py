"""The plan's search space (MoE layouts, P/D pairs), its analytic bounds and frontier pruning."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from perfmodel.engine.engine import Engine
from perfmodel.planning import Candidate, plan
from perfmodel.planning.bounds import prefill_capacity_bound, replica_capacity_bound
from perfmodel.planning.cost import PowerBasis
from perfmodel.planning.space import Layout, enumerate_candidates, layouts
from perfmodel.serving import SLO, Workload, steady_state
from perfmodel.serving.stand_in import ConstantStepModel

#: A scheduler without host overheads: 8 sequences at most, prompts of 16 tokens fit one step.
ENGINE = {"name": "hand", "max_num_seqs": 8, "max_num_batched_tokens": 4096}
STEP = 0.01  # s per step, whatever it holds
ISL, OSL = 16, 21
SLO_HAND = SLO(ttft="1 s", tpot="50 ms", target=0.95)
#: The KV link of the stand-in P/D pools (they have no hardware to take it from).
LINK = {"link_bandwidth": "1 GB/s", "link_alpha": "10 us"}


def _identity(counts: dict) -> None:
    assert counts["enumerated"] == counts["invalid_layout"] + counts["pruned_analytically"] + counts["simulated"]
    assert counts["pruned_analytically"] == sum(counts["pruned_by"].values())
    assert counts["simulated"] == counts["accepted"] + counts["failed"] + counts["abandoned"]


def test_capacity_bounds_by_hand():
    eng = Engine.load(ENGINE)
    sm = ConstantStepModel(STEP)
    # 8 sequences, each needs OSL - 1 = 20 decode steps of 10 ms: 8 / 0.2 s = 40 requests/s
    assert replica_capacity_bound(eng.step(sm), eng.profile, ISL, OSL) == pytest.approx(40.0)
    # prefill-only steps of up to 4096 / 16 = 256 prompts, 10 ms each
    assert prefill_capacity_bound(eng.step(sm), eng.profile, ISL) == pytest.approx(25600.0)
    # KV room for 74 tokens holds 74 / (16 + 21/2) = 2.79 sequences: 2.79 / 0.2 s
    small = ConstantStepModel(STEP, kv_capacity_tokens=74)
    assert replica_capacity_bound(eng.step(small), eng.profile, ISL, OSL) == pytest.approx(74 / 26.5 / 0.2)


@pytest.mark.parametrize("kw", [
    {"model": "llama-3.1-70b", "hardware": "b200", "tp": 2},
    {"model": "llama-3.1-8b", "hardware": "h100-sxm", "tp": 1, "weights": "fp8"},
    {"model": "deepseek-v3", "hardware": "hgx-h200", "tp": 8, "ep": 8, "weights": "fp8"},
])
@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "vllm+eagle:k=3"])
def test_replica_bound_is_above_the_steady_state(kw, engine):
    from perfmodel.core.step import StepModel

    name, _, spec = engine.partition("+")
    eng, sm = Engine.load(name, spec_decode=spec or None), StepModel(**kw)
    for isl, osl in ((2048, 256), (256, 2048)):
        x_ub = replica_capacity_bound(eng.step(sm), eng.profile, isl, osl)
        ss = steady_state(sm, float(eng.profile.max_num_seqs), isl, osl, engine=eng)
        assert float(ss.requests_per_s) <= x_ub


def test_steady_state_rtol_stops_early_within_tolerance():
    from perfmodel.core.step import StepModel

    sm = StepModel("llama-3.1-8b", "h100-sxm")
    full = steady_state(sm, 64.0, 1024, 256, engine="vllm")
    quick = steady_state(sm, 64.0, 1024, 256, engine="vllm", rtol=1e-9)
    assert float(quick.requests_per_s) == pytest.approx(float(full.requests_per_s), rel=1e-8)
    assert float(quick.ttft_mean_s) == pytest.approx(float(full.ttft_mean_s), rel=1e-7)


def test_moe_layouts_attention_dp_and_ep():
    assert layouts(False, [1, 2], [1, 8], [4]) == [Layout(1), Layout(2)]   # dense: tp only
    assert layouts(True, [1, 8], [1, 8]) == [Layout(1, 1, 1), Layout(1, 8, 8), Layout(8, 1, 8), Layout(8, 8, 64)]
    # ep must divide the group tp x dp_attention: 8 does not divide 1
    assert layouts(True, [1, 8], [1, 8], [8]) == [Layout(1, 8, 8), Layout(8, 1, 8), Layout(8, 8, 8)]
    assert Layout(1, 8, 8).label() == "tp1-adp8-ep8" and Layout(1, 8, 8).devices == 8
    cands = enumerate_candidates("deepseek-v3", ["hgx-b200"], ["fp8"], [1], dp_attention=[8], disaggregated=True)
    assert [c.name for c in cands] == ["8x hgx-b200 tp1-adp8-ep8 fp8",
                                       "P/D hgx-b200 prefill tp1-adp8-ep8 + decode tp1-adp8-ep8 fp8"]
    assert cands[1].decode == {**cands[1].step_model} and cands[1].decode["dp_attention"] == 8
    assert cands[1].layout["mode"] == "disaggregated" and not cands[0].disaggregated


def _hand_candidates() -> list[Candidate]:
    pb = PowerBasis("tdp", 500.0, source="input")
    return [
        Candidate("slow", ConstantStepModel(0.06), power=pb),                                  # TPOT floor
        Candidate("no room", ConstantStepModel(STEP, kv_capacity_tokens=10), power=pb),        # memory
        Candidate("small", ConstantStepModel(STEP, devices=1), power=pb, price=2.0),
        Candidate("mid", ConstantStepModel(STEP / 2, devices=2), power=pb, price=2.0),
        Candidate("big", ConstantStepModel(STEP / 4, devices=8), power=pb, price=2.0),
        Candidate("P/D", ConstantStepModel(STEP, devices=1), power=pb, price=2.0,
                  decode=ConstantStepModel(STEP, devices=2), kv_link=LINK),
    ]


@pytest.mark.parametrize("objective", ["devices", "power", "cost"])
def test_pruning_keeps_the_full_search_pick(objective):
    w = Workload.fixed(ISL, OSL, rate=100.0)
    kw = dict(engine=ENGINE, requests=200, objective=objective)
    full = plan(None, w, SLO_HAND, _hand_candidates(), prune=False, **kw)
    fast = plan(None, w, SLO_HAND, _hand_candidates(), **kw)
    assert fast.best["deployment"] == full.best["deployment"]
    assert fast.best["devices"] == full.best["devices"]
    # what was simulated in both is the same plan row
    rows = {r["deployment"]: r for r in full.ranked}
    for r in fast.ranked:
        assert {k: v for k, v in r.items() if k != "rank"} == {k: v for k, v in rows[r["deployment"]].items()
                                                                if k != "rank"}
    for res in (full, fast):
        _identity(res.counts)
        assert res.counts["enumerated"] == 6
        assert res.counts["pruned_by"]["memory"] == 1 and res.counts["pruned_by"]["speed_ceiling"] == 1
    assert full.counts["simulated"] == 4 and full.counts["pruned_by"]["frontier"] == 0
    assert fast.counts["simulated"] < 4 and fast.counts["pruned_by"]["frontier"] + fast.counts["abandoned"] > 0
    assert len(fast.ranked) + len(fast.pruned) + len([r for r in fast.rejected if r["stage"] == "simulated"]) == 4


def test_parallel_waves_keep_the_pick():
    from concurrent.futures import ThreadPoolExecutor

    from perfmodel.planning.frontier import workers

    w = Workload.fixed(ISL, OSL, rate=100.0)
    serial = plan(None, w, SLO_HAND, _hand_candidates(), engine=ENGINE, requests=200)
    with ThreadPoolExecutor(2) as pool:
        assert workers(pool) == 2
        par = plan(None, w, SLO_HAND, _hand_candidates(), engine=ENGINE, requests=200, executor=pool)
    assert par.best == serial.best and workers(None) == 1
    _identity(par.counts)


def test_pd_candidate_priced_on_both_pools():
    w = Workload.fixed(ISL, OSL, rate=100.0)
    pb = PowerBasis("tdp", 500.0, source="input")
    pd_cand = Candidate("P/D", ConstantStepModel(STEP, devices=1), "h100-sxm", power=pb, price=2.0,
                        decode=ConstantStepModel(STEP, devices=2), layout={"mode": "disaggregated"}, kv_link=LINK)
    r = plan(None, w, SLO_HAND, [pd_cand], engine=ENGINE, requests=200)
    best = r.best
    p, d = best["prefill_workers"], best["decode_workers"]
    # the decode pool carries 100 req/s at <= 40 req/s per worker (8 slots, 20 steps of 10 ms): >= 3
    assert d >= 3 and p >= 1 and best["deployment"].endswith(f"{p}P+{d}D")
    assert best["devices"] == p * 1 + d * 2
    assert best["cost_per_hour"] == pytest.approx(2.0 * (p + 2 * d))
    assert best["power_w"] == pytest.approx(500.0 * (p + 2 * d))
    assert best["slo_attainment"] >= 0.95 and STEP <= best["tpot_p95_s"] <= 0.05
    assert best["kv_transfer_s"] == pytest.approx(10e-6 + ISL * 1.0 / 1e9)   # alpha + I x 1 B per token / 1 GB/s
    _identity(r.counts)
    # stand-ins without hardware and without a link: rejected, the reason names the field
    r = plan(None, w, SLO_HAND, [Candidate("P/D", ConstantStepModel(STEP), decode=ConstantStepModel(STEP))],
             engine=ENGINE, requests=200)
    assert r.rejected[0]["rejected_for"] == "layout" and "kv_link" in r.rejected[0]["reason"]


def test_pd_plan_of_a_real_model_on_both_pools_devices():
    w = Workload.fixed(512, 64, rate=4.0)
    r = plan("llama-3.1-8b", w, SLO(ttft="2 s", tpot="50 ms", target=0.95), hardware=["h100-sxm"], tp=[1, 2],
             disaggregated=True, aggregated=False, price={"h100-sxm": "2/h"}, requests=100, prune=False)
    names = [c["deployment"] for c in r.ranked]
    assert any("prefill tp1 + decode tp2" in n for n in names)
    for row in r.ranked:
        pre, dec = (int(row[k].split("tp")[1]) for k in ("prefill_layout", "decode_layout"))
        assert row["devices"] == row["prefill_workers"] * pre + row["decode_workers"] * dec
        assert row["cost_per_hour"] == pytest.approx(2.0 * row["devices"])
        assert row["kv_transfer_s"] > 0
    _identity(r.counts)
    assert r.counts["enumerated"] == 4 and r.counts["simulated"] == 4


def test_plan_cli_search_flags_and_counts(capsys):
    from perfmodel.cli import main

    args = ["plan", "--model", "llama-3.1-8b", "--rate", "4", "--isl", "512", "--osl", "64", "--slo-ttft", "2s",
            "--slo-tpot", "50ms", "--hardware", "h100-sxm", "--tp", "1,3", "--disaggregated", "--requests", "100"]
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    _identity(out["counts"])
    assert out["counts"]["enumerated"] == 2 + 4 and out["counts"]["invalid_layout"] == 1 + 3   # tp3 alone, and in 3 of the 4 pairs
    assert out["inputs"]["search_space"]["disaggregated"] is True and out["inputs"]["prune"] is True
    assert out["inputs"]["search_space"]["dp_attention"] == [1]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "search: 6 candidates; 4 invalid layouts;" in text and "simulated" in text
    assert "search space: bf16 x tp 1,3; MoE models: dp-attention 1" in text and "P/D on; pruning on" in text


def test_screen_prunes_before_simulating_with_reasons():
    w = Workload.fixed(ISL, OSL, rate=100.0)
    r = plan(None, w, SLO_HAND, _hand_candidates()[:2], engine=ENGINE, requests=200)
    assert r.ranked == [] and r.counts["simulated"] == 0
    why = {x["deployment"]: x for x in r.rejected}
    assert why["slow"]["rejected_for"] == "SLO" and why["slow"]["stage"] == "analytic"
    assert why["no room"]["rejected_for"] == "memory"
    # a capacity bound beyond max_replicas: 100 req/s at <= 40 per replica needs 3 > 2
    r = plan(None, w, SLO_HAND, [_hand_candidates()[2]], engine=ENGINE, requests=200, max_replicas=2)
    assert r.counts["pruned_by"]["capacity"] == 1 and r.rejected[0]["rejected_for"] == "load"
    assert math.isfinite(np.float64(r.counts["enumerated"]))


@pytest.mark.slow   # about 3-7 s on the 2-core VM; the stand-in cases above run in the fast tier
def test_pruning_keeps_the_full_search_pick_on_a_real_model():
    w = Workload.fixed(512, 64, rate=8.0)
    kw = dict(hardware=["h100-sxm"], tp=[1, 2, 4], requests=100, objective="power")
    slo = SLO(ttft="2 s", tpot="40 ms", target=0.95)
    full = plan("llama-3.1-8b", w, slo, prune=False, **kw)
    fast = plan("llama-3.1-8b", w, slo, **kw)
    assert fast.best["deployment"] == full.best["deployment"] and fast.best["power_w"] == full.best["power_w"]
    assert fast.counts["simulated"] < full.counts["simulated"] == 3
    _identity(fast.counts)


def test_max_load_stop_below_ends_early_with_the_same_verdict():
    from perfmodel.serving import max_load

    w = Workload.fixed(ISL, OSL, rate=1.0)
    kw = dict(engine=ENGINE, requests=300, start=60.0)
    full = max_load(ConstantStepModel(STEP), w, SLO_HAND, **kw)
    quick = max_load(ConstantStepModel(STEP), w, SLO_HAND, stop_below=50.0, **kw)
    # one replica saturates at 8 / (21 x 10 ms) = 38 req/s: both answers are below 50, the quick one
    # after the first run at or below 50 that misses the target
    assert full.max_load < 50.0 and quick.max_load < 50.0
    assert quick.simulations < full.simulations
    assert any(p["load"] <= 50.0 and p["slo_attainment"] < 0.95 for p in quick.curve)


def test_one_progress_bar_over_all_candidates(monkeypatch):
    import io
    import sys

    from perfmodel import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    w = Workload.fixed(ISL, OSL, rate=100.0)
    r = plan(None, w, SLO_HAND, _hand_candidates(), engine=ENGINE, requests=200, progress=True)
    # every candidate counted once: screened out, simulated or pruned at the frontier
    assert "plan" in stream.getvalue() and "6/6" in stream.getvalue()
    assert stream.getvalue().count("candidates") == 0   # no per-wave bars of map_tasks
    _identity(r.counts)
