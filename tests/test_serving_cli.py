"""``perfmodel simulate`` and ``perfmodel max-load`` (JSON contract, errors, workloads, deployments)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfmodel.cli import main

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("perfmodel.core.step", reason="the CLI builds perfmodel.core.step.StepModel")

BASE = ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--tp", "1", "--isl", "1024", "--osl", "256"]
REQUIRED_KEYS = ("arrived", "completed", "cancelled", "rejected", "in_flight", "output_tokens_per_s",
                 "goodput_requests_per_s", "slo_attainment", "ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "tpot_p50_s",
                 "tpot_p95_s", "tpot_p99_s")


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_simulate_json_contract(capsys):
    out = run_json(capsys, ["simulate", *BASE, "--arrival-rate", "4", "--requests", "300", "--slo-ttft", "2s",
                            "--slo-tpot", "50ms", "--seed", "1", "--format", "json"])
    for key in REQUIRED_KEYS:
        assert key in out, key
    assert out["arrived"] == 300 == out["completed"] + out["cancelled"] + out["rejected"] + out["in_flight"]
    assert out["engine"]["name"] == "vllm"
    assert {r["field"] for r in out["engine"]["defaults"]} >= {"max_num_batched_tokens", "max_num_seqs"}
    assert out["slo"] == {"ttft": 2.0, "tpot": 0.05, "target": 0.95}
    again = run_json(capsys, ["simulate", *BASE, "--arrival-rate", "4", "--requests", "300", "--slo-ttft",
                              "2s", "--slo-tpot", "50ms", "--seed", "1", "--format", "json"])
    assert again["ttft_p99_s"] == out["ttft_p99_s"]  # seeded


def test_simulate_closed_loop_replicas_engine_and_table(capsys):
    out = run_json(capsys, ["simulate", *BASE, "--concurrency", "16", "--requests", "200", "--engine", "sglang",
                            "--replicas", "2", "--router", "round-robin", "--format", "json"])
    assert out["replicas"] == 2 and out["router"] == "round_robin" and out["engine"]["policy"] == "prefill_first"
    assert main(["simulate", *BASE, "--concurrency", "4", "--requests", "50"]) == 0
    text = capsys.readouterr().out
    assert "ttft_p95_ms" in text and "engine vllm" in text
    # every serving result says which engine it used and where the fitted terms come from
    assert "note: engine vllm (fitted terms: " in text and "docs/validation.md" in text
    assert out["note"].startswith("engine sglang (fitted terms") and out["engine"]["calibrated"]


def test_simulate_with_workload_file_and_overrides(capsys):
    out = run_json(capsys, ["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--workload",
                            str(ROOT / "workloads" / "chat.yaml"), "--requests", "200", "--arrival-rate", "2",
                            "--engine-set", "max_num_batched_tokens=2048", "--format", "json"])
    assert out["arrived"] == 200 and out["workload"]["name"] == "chat"
    assert out["workload"]["arrival"]["rate"] == 2.0
    assert out["engine"]["max_num_batched_tokens"] == 2048
    assert "task_time_p50_s" in out


def test_max_load_json(capsys):
    out = run_json(capsys, ["max-load", *BASE, "--slo-ttft", "2s", "--slo-tpot", "50ms", "--requests", "300",
                            "--target", "0.95", "--rel-tol", "0.1", "--format", "json"])
    assert out["max_arrival_requests_per_s"] > 0 and out["curve"]
    out = run_json(capsys, ["max-load", *BASE, "--slo-tpot", "20ms", "--requests", "200", "--search",
                            "concurrency", "--format", "json"])
    assert isinstance(out["max_concurrency"], int) and out["max_concurrency"] >= 1


@pytest.mark.parametrize("argv,msg", [
    (["simulate", *BASE, "--requests", "10"], "--rate R"),
    (["simulate", *BASE, "--arrival-rate", "3", "--slo-ttft", "2GB"], r"slo.ttft: expected time \[s\]"),
    (["simulate", *BASE, "--arrival-rate", "3", "--engine", "vlm"], "did you mean 'vllm'"),
    (["simulate", *BASE, "--arrival-rate", "3", "--engine-set", "max_num_seq=3"], "did you mean 'max_num_seqs'"),
    (["simulate", *BASE, "--arrival-rate", "3", "--think-time", "1s"], "only for a closed loop"),
    (["simulate", "--isl", "10", "--osl", "2", "--arrival-rate", "1"], "--model and --hardware are required"),
])
def test_errors_are_one_line_with_the_field(capsys, argv, msg):
    import re

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(msg, err), err
    assert "Traceback" not in err


def test_deployment_flag_is_passed_to_load_deployment(capsys, tmp_path):
    pytest.importorskip("perfmodel.deployment", reason="deployments not built")
    bad = tmp_path / "dep.yaml"
    bad.write_text("model: llama-3.1-8b\npools: {gpu: {hardwre: h100-sxm}}\n")
    assert main(["simulate", "--deployment", str(bad), "--isl", "10", "--osl", "2", "--arrival-rate", "1"]) == 2
    assert "dep.yaml" in capsys.readouterr().err


@pytest.mark.parametrize("name,pools", [("llama-3.1-70b-8xh100-aggregated.yaml", {"both"}),
                                        ("llama-3.1-70b-h200-disaggregated.yaml", {"prefill", "decode"})])
def test_shipped_deployments_simulate(capsys, name, pools):
    pytest.importorskip("perfmodel.deployment", reason="deployments not built")
    path = ROOT / "deployments" / name
    if not path.exists():
        pytest.skip(f"{name} not shipped")
    out = run_json(capsys, ["simulate", "--deployment", str(path), "--isl", "2048", "--osl", "128",
                            "--arrival-rate", "2", "--requests", "100", "--format", "json"])
    assert out["completed"] == 100 and set(out["step_model"]) == pools
