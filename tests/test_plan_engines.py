"""The engine and its knobs as plan search dimensions (issue 20): rows and launch configurations per
engine, the collapse of sequence limits the KV cache keeps from binding, bad names."""

from __future__ import annotations

import json

import pytest
import yaml

from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.errors import ConfigError, UnknownNameError
from perfmodel.planning import plan
from perfmodel.planning.engine_args import build_parser, load_arg_schema
from perfmodel.planning.engine_space import engine_list, engine_variants, knob_values
from perfmodel.serving import SLO, Workload

SLO_8B = SLO(ttft="2 s", tpot="50 ms", target=0.95)
#: The engines' own scheduler limits (perfmodel/data/engines/*.yaml): (max_num_seqs, max_num_batched_tokens).
DEFAULTS = {"vllm": (1024, 8192), "sglang": (1024, 8192), "trtllm": (2048, 8192)}


def _argv(cfg):
    (cmd,) = cfg.commands
    return cmd["argv"]


def _parse(engine, argv, n_command):
    return build_parser(load_arg_schema(engine)).parse_args(argv[n_command:])


@pytest.fixture(scope="module")
def three_engines():
    """Llama-3.1-8B on one H100 under each engine, every candidate simulated (no pruning)."""
    return plan("llama-3.1-8b", Workload.fixed(512, 64, rate=4), SLO_8B, rate=4, hardware=["h100-sxm"], tp=[1],
                engine="vllm,sglang,trtllm", prune=False, requests=60)


def test_each_engine_gives_rows_labelled_with_it_and_its_own_launch(three_engines):
    r = three_engines
    assert r.counts["enumerated"] == 3 and r.counts["simulated"] == 3
    assert sorted(row["engine"] for row in r.ranked) == ["sglang", "trtllm", "vllm"]
    for row in r.ranked:
        assert (row["max_num_seqs"], row["max_num_batched_tokens"]) == DEFAULTS[row["engine"]]
        assert row["deployment"].endswith(f"[{row['engine']}]")   # several engines: the name says which
    assert r.inputs["search_space"]["engine"] == ["vllm", "sglang", "trtllm"]
    assert [e.split(" (")[0] for e in r.inputs["engines"]] == ["vllm", "sglang", "trtllm"]
    assert all(e.endswith("error in docs/validation.md)") for e in r.inputs["engines"])   # fitted terms, each
    assert set(r.to_dataframe().columns) >= {"engine", "max_num_seqs", "max_num_batched_tokens"}
    # the launch configuration of each row is for the engine that row ran, with its limits
    for rank, row in enumerate(r.ranked, 1):
        cfg = r.launch(rank=rank)
        assert cfg.engine == row["engine"]
        argv = _argv(cfg)
        if row["engine"] == "vllm":
            ns = _parse("vllm", argv, 2)
            assert (ns.max_num_seqs, ns.max_num_batched_tokens) == (1024, 8192)
        elif row["engine"] == "sglang":
            ns = _parse("sglang", argv, 3)
            assert (ns.max_running_requests, ns.chunked_prefill_size) == (1024, 8192)
        else:
            ns = _parse("trtllm", argv, 1)
            assert (ns.max_batch_size, ns.max_num_tokens) == (2048, 8192)
            opts = yaml.safe_load(cfg.files["extra-llm-api-config.yml"])
            assert (opts["max_batch_size"], opts["max_num_tokens"]) == (2048, 8192)


def test_knob_values_reach_rows_and_the_launch_flags():
    r = plan("llama-3.1-8b", Workload.fixed(512, 64, rate=4), SLO_8B, rate=4, hardware=["h100-sxm"], tp=[1],
             engine="sglang", max_num_seqs=[64], max_num_batched_tokens="4096", requests=60)
    row = r.best
    assert (row["engine"], row["max_num_seqs"], row["max_num_batched_tokens"]) == ("sglang", 64, 4096)
    assert "[" not in row["deployment"]   # one value each: nothing to tell apart
    ns = _parse("sglang", _argv(r.launch()), 3)
    assert (ns.max_running_requests, ns.chunked_prefill_size) == (64, 4096)
    # another launch engine keeps the values the plan simulated
    ns = _parse("vllm", _argv(r.launch("vllm")), 2)
    assert (ns.max_num_seqs, ns.max_num_batched_tokens) == (64, 4096)


def test_variants_are_engine_x_budget_x_spec_x_ascending_limit():
    got = [(e.name, e.profile.max_num_batched_tokens, e.spec is not None, e.profile.max_num_seqs)
           for e in engine_variants(["vllm", "trtllm"], (None, "mtp:k=1"), [1024, 8], "8192,2048")]
    want = [(n, b, s, q) for n in ("vllm", "trtllm") for b in (2048, 8192) for s in (False, True) for q in (8, 1024)]
    assert got == want
    assert engine_list("vllm, sglang,vllm") == ["vllm", "sglang"] and engine_list(None) == ["vllm"]
    assert knob_values(None, "max_num_seqs") is None and knob_values(256, "max_num_seqs") == [256]


#: Llama-3.1-70B at TP 2 on H100 under TensorRT-LLM: 2048 + 256 tokens per request.
ISL, OSL = 2048, 256


def test_sequence_limits_the_kv_cache_keeps_from_binding_collapse_by_hand():
    """TensorRT-LLM sizes its KV pool without max_num_seqs and reserves I + O tokens per request, so the
    replica holds n_kv = K / (I + O) sequences whatever the limit S. With 16 < n_kv < 64: S = 8 and 16
    bind (kept), S = 64 does not (kept: the smallest such), S = 4096 does not either and collapses into 64."""
    eng = Engine.load("trtllm")
    pool = float(eng.step(StepModel(model="llama-3.1-70b", hardware="h100-sxm", tp=2)).kv_capacity_tokens)
    n_kv = pool * eng.profile.kv_capacity_fraction / (ISL + OSL)
    assert 16 < n_kv < 64   # the case's premise (about 31.6 on the shipped data)
    kw = dict(rate=1, hardware=["h100-sxm"], tp=[2], engine="trtllm", max_num_seqs=[4096, 16, 8, 64], requests=60)
    w, slo = Workload.fixed(ISL, OSL, rate=1), SLO(ttft="2 s", tpot="50 ms", target=0.95)
    r = plan("llama-3.1-70b", w, slo, **kw)
    knob = [p for p in r.pruned if p["pruned_by"] == "knob"]
    assert [(p["max_num_seqs"], p["same_as"]) for p in knob] == [(4096, "2x h100-sxm tp2 bf16 [max_num_seqs 64]")]
    assert f"holds {n_kv:.0f} sequences" in knob[0]["reason"]
    assert r.counts["pruned_by"]["knob"] == 1 and r.counts["enumerated"] == 4
    assert r.counts["pruned_analytically"] == sum(r.counts["pruned_by"].values())
    # the full search simulates the collapsed limit too: it needs the devices of the one it collapsed into
    full = plan("llama-3.1-70b", w, slo, prune=False, **kw)
    assert "knob" in full.counts["pruned_by"] and full.counts["pruned_by"]["knob"] == 0
    devices = {row["max_num_seqs"]: row["devices"] for row in full.ranked}
    assert devices[4096] == devices[64]
    assert r.best["devices"] == full.best["devices"]


def test_default_search_counts_have_no_knob_reason():
    r = plan("llama-3.1-8b", Workload.fixed(512, 64, rate=4), SLO_8B, rate=4, hardware=["h100-sxm"], tp=[1],
             requests=60)
    assert "knob" not in r.counts["pruned_by"] and r.best["engine"] == "vllm"
    assert (r.best["max_num_seqs"], r.best["max_num_batched_tokens"]) == DEFAULTS["vllm"]
    assert r.inputs["search_space"]["max_num_seqs"] == "engine default"


def test_bad_engine_names_and_knobs_are_refused_before_the_search():
    w = Workload.fixed(512, 64, rate=4)
    with pytest.raises(UnknownNameError, match="unknown engine 'sglnag'; did you mean 'sglang'"):
        plan("llama-3.1-8b", w, SLO_8B, hardware=["h100-sxm"], engine="vllm,sglnag")
    with pytest.raises(ConfigError, match="max_num_seqs"):
        plan("llama-3.1-8b", w, SLO_8B, hardware=["h100-sxm"], max_num_seqs=[0, 8])
    with pytest.raises(ConfigError, match="engine"):
        plan("llama-3.1-8b", w, SLO_8B, hardware=["h100-sxm"], engine=" , ")


def test_plan_cli_engines_knobs_and_launch(capsys):
    from perfmodel.cli import main

    base = ["plan", "--model", "llama-3.1-8b", "--rate", "4", "--isl", "512", "--osl", "64", "--slo-ttft", "2s",
            "--slo-tpot", "50ms", "--hardware", "h100-sxm", "--tp", "1", "--requests", "60"]
    assert main([*base, "--engine", "vllm,trtlm"]) == 2
    assert "did you mean 'trtllm'" in capsys.readouterr().err
    assert main([*base, "--engine", "trtllm", "--max-num-seqs", "32", "--launch", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ranked"][0]["engine"] == "trtllm" and out["launch"]["engine"] == "trtllm"
    ns = _parse("trtllm", out["launch"]["commands"][0]["argv"], 1)
    assert ns.max_batch_size == 32 == out["ranked"][0]["max_num_seqs"]
    assert main([*base, "--engine", "vllm,sglang", "--max-num-batched-tokens", "2048,8192"]) == 0
    text = capsys.readouterr().out
    assert "engines vllm, sglang x max_num_batched_tokens 2048,8192" in text
