"""``perfmodel predict`` on SRAM / dataflow machines and with ``--devices`` (layout search)."""

from __future__ import annotations

import json

import perfmodel as pm
from perfmodel.cli import main


def test_predict_devices_picks_and_prints_the_layout(capsys):
    rc = main(["predict", "--model", "llama-2-70b", "--hardware", "groq-lpu", "--devices", "576", "--isl", "1024",
               "--osl", "256", "--weights", "int8", "--kv-cache", "fp16"])
    out = capsys.readouterr().out
    best = pm.best_layout("llama-2-70b", "groq-lpu", 576, isl=1024, osl=256, weights="int8", kv_cache="fp16")
    assert rc == 0
    assert f"layout for 576 x groq-lpu: tp{best['tp']} x pp{best['pp']}" in out
    assert "dataflow model" in out and "no kernel-launch terms" in out


def test_predict_dataflow_json_matches_api(capsys):
    rc = main(["predict", "--model", "llama-3.1-8b", "--hardware", "cerebras-wse3", "--batch", "1,16",
               "--format", "json"])
    recs = json.loads(capsys.readouterr().out)
    p = pm.predict_dataflow("llama-3.1-8b", "cerebras-wse3", batch=[1, 16])
    assert rc == 0 and len(recs) == 2
    assert recs[1]["tpot_s"] == float(p.tpot_s[1]) and recs[0]["basis"] == "analytic-dataflow"
    assert "sram_used_bytes_per_device" in recs[0]


def test_predict_devices_on_gpus(capsys):
    rc = main(["predict", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--devices", "8", "--format",
               "json"])
    recs = json.loads(capsys.readouterr().out)
    assert rc == 0 and recs[0]["hardware"] == "h100-sxm" and recs[0]["basis"] != "analytic-dataflow"


def test_gpu_engine_is_still_available_for_sram_chips(capsys):
    rc = main(["predict", "--model", "llama-3.1-8b", "--hardware", "groq-lp30", "--tp", "32", "--weights", "fp8",
               "--execution", "gpu", "--format", "json"])
    assert rc == 0 and "basis" in json.loads(capsys.readouterr().out)[0]


def test_serving_engine_is_refused_on_the_dataflow_model(capsys):
    rc = main(["predict", "--model", "llama-3.1-8b", "--hardware", "cerebras-wse3", "--engine", "vllm"])
    assert rc != 0 and "--execution gpu" in capsys.readouterr().err
