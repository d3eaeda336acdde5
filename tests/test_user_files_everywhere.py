"""A user's hardware YAML and model ``config.json`` work wherever a shipped name does, in the API and the CLI.

The user files are copies of shipped ones under new names: the H100 SXM spec with another id, and the
Llama-3.1-8B ``config.json`` in a folder ``my-llama`` (the folder names the model). The same figures must
give the same numbers, so every entry point is run twice, once with the shipped names and once with the
files, and the results are compared: predict, sweep, plan, estimate, simulate, max-load, a deployment
YAML and a claim YAML that name the files.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
import yaml

import perfmodel as pm
from perfmodel.cli import main
from perfmodel.hardware import registry

GPU_ID = "my-h100-copy"
SLO = {"ttft": "2 s", "tpot": "100 ms"}
KW = {"isl": 256, "osl": 16}
WL = {**KW, "arrival": {"process": "poisson", "rate": 4}}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """``gpu`` (YAML), ``model`` (config.json), ``dep`` (deployment YAML) and ``claim`` (claim YAML: the
    files against the shipped names), the last two naming the files by paths relative to themselves."""
    shipped = yaml.safe_load((resources.files("perfmodel.hardware_specs") / "accelerators" / "h100-sxm.yaml")
                             .read_text(encoding="utf-8"))
    gpu = tmp_path / "my-gpu.yaml"
    gpu.write_text(yaml.safe_dump({**shipped, "id": GPU_ID, "name": "My H100 copy", "aliases": []}))
    wrapped = json.loads((resources.files("perfmodel") / "data" / "models" / "llama-3.1-8b.json").read_text())
    (tmp_path / "my-llama").mkdir()
    model = tmp_path / "my-llama" / "config.json"
    model.write_text(json.dumps(wrapped["config"]))  # the plain Hugging Face config, as downloaded
    dep = tmp_path / "dep.yaml"
    dep.write_text(yaml.safe_dump({
        "schema_version": 1, "kind": "deployment", "name": "mine", "model": "my-llama/config.json",
        "precision": {"weights": "bf16", "kv_cache": "bf16"},
        "pools": {"gpu": {"hardware": "my-gpu.yaml", "count": 2, "tp": 2}}, "placement": "gpu"}))
    side = {"precision": {"weights": "bf16", "kv_cache": "bf16"}, "spec_decode": "off"}
    claim = tmp_path / "claim.yaml"
    claim.write_text(yaml.safe_dump({
        "schema_version": 1, "kind": "claim", "id": "mine-vs-shipped", "title": "same figures, same answer",
        "claimed_by": "test", "source": "https://example.org", "metric": "output_tokens_per_s_per_device",
        "claim_type": "ratio", "claimed": 1.0, "model": "my-llama/config.json",
        "operating_point": {"per_user_tokens_per_s": 20, "isl": 256, "osl": 16, "max_batch": 64},
        "baseline": {"name": "shipped", **side, "pools": {"gpu": {"hardware": "h100-sxm", "count": 1}}},
        "candidate": {"name": "files", **side, "pools": {"gpu": {"hardware": "my-gpu.yaml", "count": 1}}},
        "unknowns": [{"name": "isl", "path": "operating_point.isl", "nominal": 256, "values": [256, 512]}]}))
    yield {"gpu": str(gpu), "model": str(model), "dep": str(dep), "claim": str(claim)}
    for key in [k for k in registry._USER_SPECS if GPU_ID in str(k) or str(tmp_path) in str(k)]:
        del registry._USER_SPECS[key]


def cli_json(args: list[str], capsys) -> object:
    capsys.readouterr()
    assert main([*args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_and_sweep(files, capsys):
    ours = pm.predict(files["model"], files["gpu"], tp=2, batch=[1, 8], **KW).records()
    ref = pm.predict("llama-3.1-8b", "h100-sxm", tp=2, batch=[1, 8], **KW).records()
    assert [r["tpot_s"] for r in ours] == pytest.approx([r["tpot_s"] for r in ref], rel=1e-12)
    assert ours[0]["efficiency_fallback"] is True  # a user part borrows the H100 profile, flagged
    out = cli_json(["predict", "--model", files["model"], "--hardware", files["gpu"], "--tp", "2",
                    "--isl", "256", "--osl", "16", "--batch", "1,8"], capsys)
    assert [r["tpot_s"] for r in out] == pytest.approx([r["tpot_s"] for r in ref], rel=1e-12)

    df = pm.sweep([files["model"], "llama-3.1-8b"], [files["gpu"], "h100-sxm"], batch=4, **KW)
    assert set(df.model) == {"my-llama", "llama-3.1-8b"} and set(df.hardware) == {GPU_ID, "h100-sxm"}
    assert df.valid.all() and df.tpot_s.nunique() == 1  # four names, one set of figures
    out = cli_json(["sweep", "--model", f"{files['model']},llama-3.1-8b", "--hardware", f"{files['gpu']},h100-sxm",
                    "--batch", "4", "--isl", "256", "--osl", "16"], capsys)
    assert [r["tpot_s"] for r in out] == pytest.approx([float(df.tpot_s.iloc[0])] * 4, rel=1e-12)


def test_estimate_simulate_and_max_load(files, capsys):
    est = pm.estimate(files["model"], files["gpu"], engine="vllm", concurrency=[1, 4], **KW)
    ref = pm.estimate("llama-3.1-8b", "h100-sxm", engine="vllm", concurrency=[1, 4], **KW)
    assert est.ttft_mean_s.tolist() == pytest.approx(ref.ttft_mean_s.tolist(), rel=1e-12)
    # the profile actually used, named by the file's id (not its path)
    assert est.efficiency_profile.iloc[0] == f"h100-sxm (fallback for {GPU_ID})"
    out = cli_json(["estimate", "--model", files["model"], "--hardware", files["gpu"], "--engine", "vllm",
                    "--concurrency", "4", "--isl", "256", "--osl", "16"], capsys)
    assert out["points"][0]["ttft_mean_s"] == pytest.approx(ref.ttft_mean_s.iloc[1], rel=1e-12)

    mine = {"model": files["model"], "hardware": files["gpu"]}
    shipped = {"model": "llama-3.1-8b", "hardware": "h100-sxm"}
    wl = WL
    a = pm.simulate(mine, wl, requests=80, seed=3, slo=SLO).summary()
    b = pm.simulate(shipped, wl, requests=80, seed=3, slo=SLO).summary()
    assert a["ttft_p95_s"] == pytest.approx(b["ttft_p95_s"], rel=1e-12) and a["completed"] == 80
    out = cli_json(["simulate", "--model", files["model"], "--hardware", files["gpu"], "--isl", "256", "--osl", "16",
                    "--rate", "4", "--requests", "80", "--seed", "3", "--slo-ttft", "2s", "--slo-tpot", "100ms",
                    "--quiet"], capsys)
    assert out["ttft_p95_s"] == pytest.approx(b["ttft_p95_s"], rel=1e-12)

    # a tight SLO, so that 300 requests find a finite rate (a loose one lets any burst of 300 pass)
    kw = dict(target=0.9, requests=300, seed=1)
    tight = {"ttft": "200 ms", "tpot": "20 ms"}
    x = pm.max_load(mine, wl, tight, **kw)
    y = pm.max_load(shipped, wl, tight, **kw)
    assert 1 < float(y.max_load) < 1e3 and float(x.max_load) == pytest.approx(float(y.max_load), rel=1e-12)
    out = cli_json(["max-load", "--model", files["model"], "--hardware", files["gpu"], "--isl", "256", "--osl", "16",
                    "--slo-ttft", "200ms", "--slo-tpot", "20ms", "--target", "0.9", "--requests", "300", "--seed", "1",
                    "--quiet"], capsys)
    assert out["max_arrival_requests_per_s"] == pytest.approx(float(y.max_load), rel=1e-12)


def test_plan_with_a_model_file_and_a_hardware_file(files, capsys):
    kw = dict(rate=2, hardware=[files["gpu"], "h100-sxm"], tp=[1], requests=60, prune=False)
    res = pm.plan(files["model"], WL, SLO, **kw)
    by_hw = {r["hardware"]: r for r in res.ranked}
    assert set(by_hw) == {GPU_ID, "h100-sxm"}  # before: the model file was lost ("unknown model 'my-llama'")
    assert by_hw[GPU_ID]["goodput_requests_per_s"] == pytest.approx(by_hw["h100-sxm"]["goodput_requests_per_s"], rel=1e-12)
    # the engine is pointed at the folder of the config.json (its weights' folder), not at the bare id
    argv = res.launch("vllm").commands[0]["argv"]
    assert argv[:3] == ["vllm", "serve", str(Path(files["model"]).parent)]
    out = cli_json(["plan", "--model", files["model"], "--rate", "2", "--isl", "256", "--osl", "16",
                    "--slo-ttft", "2s", "--slo-tpot", "100ms", "--hardware", f"{files['gpu']},h100-sxm", "--tp", "1",
                    "--requests", "60", "--no-prune", "--quiet"], capsys)
    assert {r["hardware"] for r in out["ranked"]} == {GPU_ID, "h100-sxm"} and not out["rejected"]


def test_deployment_and_claim_files_naming_user_files(files, capsys):
    # the deployment names both files relative to itself
    dep = pm.predict_deployment(files["dep"], batch=[1, 4], **KW).records()
    ref = pm.predict("llama-3.1-8b", "h100-sxm", tp=2, batch=[1, 4], **KW).records()
    assert [r["tpot_s"] for r in dep] == pytest.approx([r["tpot_s"] for r in ref], rel=1e-9)
    assert {r["hardware"] for r in dep} == {GPU_ID} and {r["model"] for r in dep} == {"my-llama"}
    out = cli_json(["predict", "--deployment", files["dep"], "--isl", "256", "--osl", "16", "--batch", "1,4"], capsys)
    assert [r["tpot_s"] for r in out] == pytest.approx([r["tpot_s"] for r in ref], rel=1e-9)

    # the claim sets the files (candidate, relative paths) against the shipped names (baseline): ratio 1
    chk = pm.check_claim(files["claim"], points=2)
    assert chk.ratio == pytest.approx(1.0, rel=1e-12)
    out = cli_json(["claim", files["claim"], "--points", "2"], capsys)
    assert out["predicted_ratio"] == pytest.approx(1.0, rel=1e-12)
