"""The collapse of sequence limits for P/D candidates (issue 20): a limit that neither the prefill pool
(at most floor(B / I) + 2 prompts a step) nor the decode pool's KV cache lets bind collapses into the
smallest such limit, and a full search (prune=False) gives the collapsed variant the same plan."""

from __future__ import annotations

import pytest

from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.planning import plan
from perfmodel.planning.engine_space import prefill_sequences
from perfmodel.serving import SLO, Workload

#: Llama-3.1-70B at TP 2 on H100, 2048 + 256 tokens per request, 6 req/s: two or more workers per pool.
ISL, OSL, RATE = 2048, 256, 6
W, SLO_70B = Workload.fixed(ISL, OSL, rate=RATE), SLO(ttft="2 s", tpot="50 ms", target=0.95)
KW = dict(rate=RATE, hardware=["h100-sxm"], tp=[2], max_num_seqs=[4096, 16, 64], requests=60,
          disaggregated=True, aggregated=False)
NAME = "P/D h100-sxm prefill tp2 + decode tp2 bf16"
COMPARED = ("devices", "prefill_workers", "decode_workers", "goodput_requests_per_s", "slo_attainment",
            "ttft_mean_s", "ttft_p95_s", "tpot_mean_s", "tpot_p95_s", "output_tokens_per_s")


def test_prefill_worker_prompts_by_hand():
    eng = Engine.load("trtllm")   # budget 8192
    assert prefill_sequences(eng.profile, 2048) == 8192 // 2048 + 2 == 6
    assert prefill_sequences(eng.profile, 3000) == 2 + 2          # one continued, two whole, one cut
    assert prefill_sequences(eng.profile, 100_000) == 2             # longer than the budget


def test_pd_limit_that_cannot_bind_collapses_and_simulates_the_same():
    """TensorRT-LLM sizes its pool without max_num_seqs and reserves I + O tokens: the decode worker holds
    n_kv = K / (I + O) sequences (16 < n_kv < 64), a prefill worker 6 prompts. S = 16 binds (kept), S = 64
    does not (kept: the smallest such), S = 4096 collapses into 64; simulated anyway (prune=False), 4096
    gives the plan of 64 number for number."""
    eng = Engine.load("trtllm")
    pool = float(eng.step(StepModel(model="llama-3.1-70b", hardware="h100-sxm", tp=2)).kv_capacity_tokens)
    n_kv = pool * eng.profile.kv_capacity_fraction / (ISL + OSL)
    assert 16 < n_kv < 64   # the case's premise (31.6 on the shipped data)
    r = plan("llama-3.1-70b", W, SLO_70B, engine="trtllm", **KW)
    knob = [p for p in r.pruned if p["pruned_by"] == "knob"]
    assert [(p["max_num_seqs"], p["same_as"]) for p in knob] == [(4096, f"{NAME} [max_num_seqs 64]")]
    assert f"at most 6 prompts a step and the decode pool's KV cache holds {n_kv:.0f} sequences" in knob[0]["reason"]
    assert r.counts["pruned_by"]["knob"] == 1 and r.counts["enumerated"] == 3
    full = plan("llama-3.1-70b", W, SLO_70B, engine="trtllm", prune=False, **KW)
    assert full.counts["simulated"] == 3 and full.counts["pruned_by"]["knob"] == 0
    rows = {row["max_num_seqs"]: row for row in full.ranked}
    assert rows[4096]["prefill_workers"] + rows[4096]["decode_workers"] >= 3   # a loaded case, not 1P+1D
    assert {k: rows[4096][k] for k in COMPARED} == {k: rows[64][k] for k in COMPARED}
    assert r.best["devices"] == full.best["devices"] and r.best["max_num_seqs"] == 64


def test_vllm_collapse_needs_no_larger_pools():
    """vLLM charges S sequences of sampler logits to its profiling run: a larger S leaves smaller pools,
    so S = 64 and 4096 (both past what the KV cache holds) collapse into 16, each with the pools it got."""
    r = plan("llama-3.1-70b", W, SLO_70B, engine="vllm", **KW)
    knob = {p["max_num_seqs"]: p for p in r.pruned if p["pruned_by"] == "knob"}
    assert sorted(knob) == [64, 4096] and {p["same_as"] for p in knob.values()} == {f"{NAME} [max_num_seqs 16]"}
    pools = {s: float(Engine.load("vllm", max_num_seqs=s).step(
        StepModel(model="llama-3.1-70b", hardware="h100-sxm", tp=2)).kv_capacity_tokens) for s in (16, 64, 4096)}
    assert pools[4096] < pools[64] < pools[16]
    assert f"{pools[64]:,.0f} <= {pools[16]:,.0f}" in knob[64]["reason"]


@pytest.mark.parametrize("prune", [True, False])
def test_aggregated_and_pd_searched_together_count_each_collapse(prune):
    kw = {**KW, "aggregated": True, "max_num_seqs": [64, 4096]}
    r = plan("llama-3.1-70b", W, SLO_70B, engine="trtllm", prune=prune, **kw)
    knob = sorted(p["deployment"] for p in r.pruned if p["pruned_by"] == "knob")
    assert knob == ([] if not prune else ["2x h100-sxm tp2 bf16 [max_num_seqs 4096]",
                                          f"{NAME} [max_num_seqs 4096]"])
