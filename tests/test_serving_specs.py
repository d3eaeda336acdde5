"""Engine profiles, workloads and SLOs: loading, validation, defaults with sources, sampling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfmodel.errors import SpecError, UnknownNameError
from perfmodel.serving import SLO, EngineProfile, Workload, list_engines, load_engine, load_workload
from perfmodel.serving.workload import interarrivals, read_trace, sample_lengths

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = sorted((ROOT / "workloads").glob("*.yaml"))
KNOBS = ("policy", "chunked_prefill", "max_num_batched_tokens", "max_num_seqs", "kv_block_size",
         "kv_admission", "step_overhead", "seq_overhead")


@pytest.mark.parametrize("name", ["vllm", "sglang", "trtllm", "vllm-2k"])
def test_presets_load_and_cite_every_knob(name):
    prof = load_engine(name)
    assert isinstance(prof, EngineProfile) and prof.name == name
    for knob in ("max_num_batched_tokens", "max_num_seqs", "kv_block_size", "step_overhead",
                 "seq_overhead"):
        assert prof.sources.get(knob), f"{name}: no source for {knob}"
    for knob in ("step_overhead", "seq_overhead"):
        assert "assumption" in prof.sources[knob]
    rows = {r["field"]: r for r in prof.defaults_table()}
    assert set(KNOBS) <= set(rows)


def test_preset_values_match_cited_engine_defaults():
    v = load_engine("vllm")
    assert (v.policy, v.chunked_prefill, v.max_num_batched_tokens, v.max_num_seqs, v.kv_block_size) == \
        ("decode_first", True, 8192, 1024, 16)
    v2 = load_engine("vllm-2k")
    assert (v2.max_num_batched_tokens, v2.max_num_seqs) == (2048, 256)
    s = load_engine("sglang")
    assert (s.policy, s.max_num_batched_tokens, s.kv_block_size) == ("prefill_first", 8192, 1)
    t = load_engine("trtllm")
    assert (t.chunked_prefill, t.max_num_batched_tokens, t.max_num_seqs, t.kv_block_size,
            t.kv_admission) == (False, 8192, 2048, 32, "reserve_full")
    assert set(list_engines()) >= {"vllm", "sglang", "trtllm"}
    assert load_engine("TensorRT-LLM").name == "trtllm"


def test_engine_quantity_strings_and_overrides():
    p = load_engine("vllm", step_overhead="2 ms", seq_overhead="20 us", max_num_seqs=64)
    assert p.step_overhead == pytest.approx(2e-3)
    assert p.seq_overhead == pytest.approx(20e-6)
    assert p.max_num_seqs == 64
    assert load_engine("vllm").max_num_seqs == 1024  # the preset is not mutated


def test_engine_errors_name_field_value_and_allowed(tmp_path):
    with pytest.raises(UnknownNameError, match="did you mean 'vllm'"):
        load_engine("vlm")
    with pytest.raises(SpecError, match="max_num_seq.*did you mean 'max_num_seqs'"):
        load_engine("vllm", max_num_seq=3)
    with pytest.raises(SpecError, match=r"step_overhead: expected time \[s\], got '2 GB'"):
        load_engine("vllm", step_overhead="2 GB")
    with pytest.raises(SpecError, match="policy.*'decode_first'.*'prefill_first'.*got 'fifo'"):
        load_engine("vllm", policy="fifo")
    bad = tmp_path / "e.yaml"
    bad.write_text("name: mine\nmax_num_seqs: 0\n")
    with pytest.raises(SpecError, match=r"e\.yaml: max_num_seqs"):
        load_engine(str(bad))


def test_user_engine_file_roundtrip(tmp_path):
    src = (ROOT / "perfmodel" / "data" / "engines" / "vllm.yaml").read_text()
    f = tmp_path / "my_vllm.yaml"
    f.write_text(src.replace("max_num_batched_tokens: 8192", "max_num_batched_tokens: 512"))
    assert load_engine(str(f)).max_num_batched_tokens == 512


@pytest.mark.parametrize("path", WORKLOADS, ids=[p.stem for p in WORKLOADS])
def test_shipped_workloads_load(path):
    w = load_workload(path)
    assert w.slo is not None and w.slo.limits()
    isl, osl, rea = sample_lengths(w, 100, np.random.default_rng(0))
    assert (isl >= 1).all() and (osl + rea >= 1).all()


def test_shipped_examples_cover_the_issue_cases():
    names = {load_workload(p).name for p in WORKLOADS}
    assert {"chat", "rag-long-context", "reasoning", "agentic"} <= names
    assert load_workload(ROOT / "workloads" / "agentic.yaml").is_closed_loop
    assert load_workload(ROOT / "workloads" / "reasoning.yaml").slo.ttfat == 60.0


def test_workload_errors():
    with pytest.raises(SpecError, match="arrival.rte: unknown key 'rte'.*did you mean 'rate'"):
        load_workload({"arrival": {"process": "poisson", "rte": 4}, "isl": 5, "osl": 3})
    with pytest.raises(SpecError, match="process 'poisson' needs rate > 0"):
        load_workload({"arrival": {"process": "poisson"}, "isl": 5, "osl": 3})
    with pytest.raises(SpecError, match=r"timeout: expected time \[s\], got '3 GB'"):
        load_workload({"arrival": {"process": "closed", "concurrency": 2}, "isl": 5, "osl": 3,
                       "timeout": "3 GB"})
    with pytest.raises(SpecError, match="high .* must be >= low"):
        load_workload({"arrival": {"rate": 1}, "isl": {"dist": "uniform", "low": 9, "high": 3}, "osl": 3})
    with pytest.raises(SpecError, match="Workload.fixed: give exactly one"):
        Workload.fixed(10, 10)


def test_slo_quantities_and_limits():
    slo = SLO(ttft="2 s", tpot="50 ms")
    assert slo.limits() == {"ttft": 2.0, "tpot": pytest.approx(0.05)}
    assert slo.target == 0.95


def test_length_distributions():
    rng = np.random.default_rng(1)
    w = load_workload({"arrival": {"rate": 1}, "isl": {"dist": "lognormal", "mean": 1000, "sigma": 0.5},
                       "osl": {"dist": "empirical", "values": [10, 20], "weights": [3, 1]}})
    isl, osl, _ = sample_lengths(w, 20000, rng)
    assert isl.mean() == pytest.approx(1000, rel=0.03)
    assert (osl == 10).mean() == pytest.approx(0.75, abs=0.02)


@pytest.mark.parametrize("cv", [0.5, 1.0, 2.0])
def test_gamma_burstiness(cv):
    w = Workload.fixed(10, 10, rate=4.0, cv=cv)
    gaps = interarrivals(w.arrival, 100000, np.random.default_rng(2))
    assert gaps.mean() == pytest.approx(0.25, rel=0.02)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.03)


def test_trace_workload(tmp_path):
    (tmp_path / "t.csv").write_text("arrival_s,isl,osl\n5.0,100,7\n1.0,200,9\n3.0,300,11\n")
    (tmp_path / "w.yaml").write_text("arrival: {process: trace, trace: t.csv}\nisl: 1\nosl: 1\n")
    w = load_workload(tmp_path / "w.yaml")
    tr = read_trace(w)
    assert tr["arrival_s"].tolist() == [0.0, 2.0, 4.0]
    assert tr["isl"].tolist() == [200, 300, 100]
    faster = w.with_load(rate=1.0)  # mean rate of the trace is 0.5/s
    assert read_trace(faster)["arrival_s"].tolist() == pytest.approx([0.0, 1.0, 2.0])
    (tmp_path / "bad.csv").write_text("t,isl\n1,2\n")
    with pytest.raises(SpecError, match="needs a column 'arrival_s'"):
        read_trace(w.replace(arrival={"process": "trace", "trace": str(tmp_path / "bad.csv")}))


def test_with_load_switches_open_and_closed():
    w = Workload.fixed(100, 10, rate=2.0)
    assert w.with_load(concurrency=8).arrival.concurrency == 8
    assert w.with_load(rate=3.0).arrival.rate == 3.0
    assert w.with_load(concurrency=8).with_load(rate=1.0).arrival.process == "poisson"
