"""The plan's search space: pipeline stages (``pp``) and a weight format per P/D pool."""

from __future__ import annotations

import json

import pytest

from perfmodel.errors import ConfigError
from perfmodel.planning import plan
from perfmodel.planning.space import Layout, enumerate_candidates, layouts
from perfmodel.serving import SLO, Workload


def test_layouts_take_every_pipeline_depth():
    assert layouts(False, [1, 8], pp=[1, 2]) == [Layout(1), Layout(1, pp=2), Layout(8), Layout(8, pp=2)]
    assert [lay.devices for lay in layouts(False, [1, 8], pp=[1, 2])] == [1, 2, 8, 16]
    # MoE: ep spans a stage's tp x dp_attention group, the stages multiply the devices
    moe = layouts(True, [8], [1], None, [1, 2])
    assert moe == [Layout(8, 1, 8, 1), Layout(8, 1, 8, 2)]
    assert [lay.label() for lay in moe] == ["tp8-ep8", "tp8-pp2-ep8"] and moe[1].devices == 16
    assert Layout(8, pp=2).kwargs() == {"tp": 8, "dp_attention": 1, "ep": 1, "pp": 2}
    assert "pp" not in Layout(8).kwargs()   # pp 1 leaves the step model's arguments as they were


def test_decode_pool_formats_pair_with_every_prefill_format():
    cands = enumerate_candidates("llama-3.1-8b", ["b200"], ["fp8"], [1], disaggregated=True,
                                 decode_weights=["fp8", "nvfp4"])
    assert [c.name for c in cands] == ["1x b200 tp1 fp8", "P/D b200 prefill tp1 + decode tp1 fp8",
                                       "P/D b200 prefill tp1 fp8 + decode tp1 nvfp4"]
    mixed = cands[2]
    assert mixed.step_model["weights"] == "fp8" and mixed.decode["weights"] == "nvfp4"
    assert mixed.layout["prefill_weights"] == "fp8" and mixed.layout["decode_weights"] == "nvfp4"
    # without decode_weights: one pair per format, as before
    same = enumerate_candidates("llama-3.1-8b", ["b200"], ["fp8", "nvfp4"], [1], disaggregated=True,
                                aggregated=False)
    assert [(c.step_model["weights"], c.decode["weights"]) for c in same] == [("fp8", "fp8"), ("nvfp4", "nvfp4")]


def test_a_model_too_large_for_one_node_is_planned_with_pipeline_stages():
    # Llama-3.1-405B in BF16: 405.8e9 parameters x 2 B / 8 devices = 101.5 GB per H100 (72 GB usable);
    # two stages of tp 8 hold about half each and fit
    r = plan("llama-3.1-405b", Workload.fixed(1024, 128, rate=1.0), SLO(ttft="3 s", tpot="100 ms", target=0.95),
             hardware=["h100-sxm"], tp=[8], pp=[1, 2], requests=100)
    (rejected,) = r.rejected
    assert rejected["deployment"] == "8x h100-sxm tp8 bf16" and rejected["rejected_for"] == "memory"
    assert "weights need 101.5 GB per device" in rejected["reason"]
    best = r.best
    assert best["deployment"] == "16x h100-sxm tp8-pp2 bf16 x1" and best["pp"] == 2
    assert best["devices"] == 16 * best["replicas"] and best["devices_per_replica"] == 16
    assert r.inputs["search_space"]["pp"] == [1, 2]
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2" in r.launch("vllm").text()


def test_mixed_precision_pd_pools_run_their_own_formats():
    slo = SLO(ttft="2 s", tpot="50 ms", target=0.95)
    r = plan("llama-3.1-8b", Workload.fixed(512, 64, rate=4.0), slo, hardware=["b200"], weights=["fp8"],
             decode_weights=["fp8", "nvfp4"], tp=[1], disaggregated=True, aggregated=False, requests=100,
             prune=False)
    rows = {r_["decode_weights"]: r_ for r_ in r.ranked}
    assert set(rows) == {"fp8", "nvfp4"} and all(x["prefill_weights"] == "fp8" for x in rows.values())
    # the same prefill pool and KV format: the same KV transfer; NVFP4 decode reads fewer weight bytes
    # per step, so its decode steps (and TPOT) are shorter
    assert rows["nvfp4"]["kv_transfer_s"] == rows["fp8"]["kv_transfer_s"]
    assert rows["nvfp4"]["tpot_p95_s"] < rows["fp8"]["tpot_p95_s"]
    assert rows["nvfp4"]["weights"] == "fp8 prefill, nvfp4 decode"
    # one weight format per launch configuration: refused with the reason for the mixed row
    rank = {x["decode_weights"]: x["rank"] for x in r.ranked}
    assert r.launch("vllm", rank=rank["fp8"]).text()
    with pytest.raises(ConfigError, match="prefill fp8, decode nvfp4"):
        r.launch("vllm", rank=rank["nvfp4"])
    with pytest.raises(ConfigError, match="decode_weights.*disaggregated=True"):
        plan("llama-3.1-8b", Workload.fixed(512, 64, rate=4.0), slo, hardware=["b200"], decode_weights=["nvfp4"])


def test_plan_cli_pp_and_decode_weights(capsys):
    from perfmodel.cli import main

    args = ["plan", "--model", "llama-3.1-8b", "--rate", "4", "--isl", "512", "--osl", "64", "--slo-ttft", "2s",
            "--slo-tpot", "50ms", "--hardware", "b200", "--tp", "1", "--pp", "1,2", "--weights", "fp8",
            "--decode-weights", "nvfp4", "--disaggregated", "--requests", "100"]
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    space = out["inputs"]["search_space"]
    assert space["pp"] == [1, 2] and space["decode_weights"] == ["nvfp4"]
    # 2 aggregated layouts (tp1, tp1-pp2) + 2 x 2 P/D pairs with an NVFP4 decode pool
    assert out["counts"]["enumerated"] == 2 + 4
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "pp 1,2; aggregated on, P/D on (decode pool nvfp4); pruning on" in text
