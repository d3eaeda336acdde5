"""One default rule for formats everywhere (perfmodel.formats, issue 21), and the deprecated spellings."""

from __future__ import annotations

import json
import warnings

import pytest

import perfmodel as pm
from perfmodel.cli import main
from perfmodel.errors import ConfigError
from perfmodel.formats import checkpoint_format, default_kv_cache, format_list, resolve_formats
from perfmodel.validation.rows import WEIGHT_FORMATS, KVPolicy, kv_cache_format

# the checkpoints' own formats, as their model cards / config.json quantization_config state
CHECKPOINTS = {
    "deepseek-v3": "fp8_block",                     # 128x128 block-scaled FP8
    "deepseek-ai/DeepSeek-R1": "fp8_block",
    "gpt-oss-120b": "mxfp4",                        # MXFP4 experts
    "llama-3.1-70b": "bf16",
    "nvidia/Llama-3.1-70B-Instruct-FP8": "fp8",     # ModelOpt per-tensor FP8
    "Qwen/Qwen3-235B-A22B-FP8": "fp8_block",        # Qwen's -FP8 repos are block-scaled
    "unsloth/gpt-oss-120b-BF16": "bf16",            # a bf16 re-export
}


@pytest.mark.parametrize("model,own", CHECKPOINTS.items())
def test_checkpoint_format(model, own):
    assert checkpoint_format(model) == own


def test_default_kv_cache_is_the_validation_rule_for_every_engine():
    backends = KVPolicy().quantized_kv_backends
    assert set(backends) == {"vllm", "sglang", "trtllm"}
    for weights in set(WEIGHT_FORMATS.values()):
        for backend in backends:
            assert default_kv_cache(weights) == kv_cache_format(backend, weights), (weights, backend)
    assert [default_kv_cache(w) for w in ("bf16", "fp8", "fp8_block", "nvfp4", "fp4", "mxfp4", "int4", "int8")] \
        == ["bf16", "fp8", "fp8", "fp8", "fp8", "fp8", "bf16", "bf16"]


def test_resolve_fills_only_what_is_not_given():
    spec = pm.load_model("deepseek-v3")
    assert resolve_formats("deepseek-v3", spec, None, None) == ("fp8_block", "fp8")
    assert resolve_formats("deepseek-v3", spec, "", "") == ("fp8_block", "fp8")
    assert resolve_formats("deepseek-v3", spec, "bf16", None) == ("bf16", "bf16")
    assert resolve_formats("deepseek-v3", spec, "fp8", "bf16") == ("fp8", "bf16")
    assert format_list("fp8, bf16") == ["fp8", "bf16"] and format_list(None) == [None]
    assert format_list(["fp8", ""]) == ["fp8", None]
    with pytest.raises(ConfigError, match="weights: expected format names"):
        format_list([8])


def _formats(label: str) -> tuple[str, str]:
    parts = dict(p.split(":") for p in label.split())
    return parts["w"], parts["kv"]


def test_every_path_applies_the_same_default():
    """DeepSeek-V3 without formats: block FP8 weights and an FP8 KV cache, whatever the entry point."""
    want = ("fp8_block", "fp8")
    sm = pm.StepModel("deepseek-v3", "h200-sxm", tp=8)
    assert (sm.precision.weights.name, sm.precision.kv_cache.name) == want
    p = pm.predict("deepseek-v3", "h200-sxm", tp=8, isl=1024, osl=64, batch=4)
    assert _formats(p.config["precision"]) == want
    df = pm.sweep("deepseek-v3", "h200-sxm", tp=8, batch=4, isl=1024, osl=64)
    assert _formats(str(df["precision"].iloc[0])) == want
    assert float(df["tpot_s"].iloc[0]) == pytest.approx(float(p.tpot_s), rel=1e-12)
    dep = pm.Deployment.model_validate({"model": "deepseek-v3", "pools": {"gpu": {"hardware": "h200-sxm", "tp": 8}}})
    assert dep.precision.weights is None
    cands = pm.planning.enumerate_candidates("deepseek-v3", ["h200-sxm"], tp=[8])
    assert {(c.step_model["weights"], c.step_model["kv_cache"]) for c in cands} == {want}
    assert pm.min_devices_for_weights("deepseek-v3", "h200-sxm", part="all") == \
        pm.min_devices_for_weights("deepseek-v3", "h200-sxm", "fp8_block", part="all")
    # the default differs from the old bf16 one, so the equalities above are not vacuous
    old = pm.predict("deepseek-v3", "h200-sxm", tp=8, isl=1024, osl=64, batch=4, weights="bf16", kv_cache="bf16")
    assert not bool(old.fits) and float(p.tpot_s) != pytest.approx(float(old.tpot_s), rel=0.01)


def test_explicit_formats_are_kept_and_shown():
    p = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, weights="fp8", kv_cache="bf16")
    assert p.config["precision"] == "w:fp8 a:fp8 kv:bf16"
    q = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, weights="fp8")      # KV follows the weights
    assert q.config["precision"] == "w:fp8 a:fp8 kv:fp8"
    # an fp8 KV cache halves the KV bytes per device at the same batch and context
    assert float(q.kv_bytes_per_device) == pytest.approx(float(p.kv_bytes_per_device) / 2, rel=1e-12)


def test_cli_predict_shows_the_default_formats(capsys):
    assert main(["predict", "--model", "gpt-oss-120b", "--hardware", "b200", "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)[0]
    assert (record["weights"], record["kv_cache"]) == ("mxfp4", "fp8") and "precision" not in record


def test_cli_estimate_takes_a_list_of_weight_formats(capsys):
    argv = ["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "vllm", "--concurrency",
            "4", "--isl", "512", "--osl", "64", "--weights", "fp8,bf16", "--format", "json"]
    assert main(argv) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert [(p["weights"], p["kv_cache"]) for p in points] == [("fp8", "fp8"), ("bf16", "bf16")]
    assert points[0]["tpot_mean_s"] < points[1]["tpot_mean_s"]   # half the weight bytes to read per step


# ------------------------------------------------------------------------------------ deprecated spellings

def test_sweep_precision_warns_and_means_weights():
    kw = dict(tp=1, batch=[1, 8], isl=1024, osl=64)
    new = pm.sweep("llama-3.1-8b", "h100-sxm", weights=["bf16", "fp8"], **kw)
    with pytest.warns(DeprecationWarning, match=r"sweep: precision= is deprecated, use weights="):
        old = pm.sweep("llama-3.1-8b", "h100-sxm", precision=["bf16", "fp8"], **kw)
    assert old["tpot_s"].tolist() == new["tpot_s"].tolist()
    assert pm.sweep("llama-3.1-8b", "h100-sxm", weights="bf16,fp8", **kw)["tpot_s"].tolist() == new["tpot_s"].tolist()
    with pytest.raises(ConfigError, match="give weights= only"):
        pm.sweep("llama-3.1-8b", "h100-sxm", weights="fp8", precision="fp8", **kw)


def test_other_old_names_warn():
    with pytest.warns(DeprecationWarning, match="min_devices_for_weights: weights_dtype="):
        n = pm.min_devices_for_weights("kimi-k2", "groq-lp30", weights_dtype="fp8")
    assert n == pm.min_devices_for_weights("kimi-k2", "groq-lp30", "fp8")
    from perfmodel.validation import MeasuredDeployment

    with pytest.warns(DeprecationWarning, match="MeasuredDeployment: precision="):
        dep = MeasuredDeployment(system="h200_sxm", backend="vllm", precision="fp8")
    assert dep.weights == "fp8"
    with pytest.warns(DeprecationWarning, match="enumerate_candidates: precisions="):
        old = pm.planning.enumerate_candidates("llama-3.1-8b", ["h100-sxm"], tp=[1], precisions=["fp8"])
    assert [c.step_model["weights"] for c in old] == ["fp8"]
    with pytest.warns(DeprecationWarning, match="plan: precisions="), pytest.raises(ConfigError, match="candidates"):
        pm.plan("llama-3.1-8b", {"arrival": {"process": "poisson", "rate": 1.0}, "isl": 128, "osl": 16},
                slo={"ttft": "2 s"}, hardware=[], precisions=["fp8"])
    with pytest.warns(DeprecationWarning, match="estimate: precision="), pytest.raises(ConfigError, match="isl"):
        pm.estimate("llama-3.1-8b", "h100-sxm", isl=0, osl=8, concurrency=[1], precision="fp8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the new names do not warn
        pm.min_devices_for_weights("kimi-k2", "groq-lp30", weights="fp8")


def test_a_format_name_means_the_same_in_estimate_and_predict():
    """fp8 is per-tensor FP8 also for a block-scaled checkpoint; NVFP4 on Hopper runs weight-only in both."""
    est = pm.estimate("deepseek-ai/DeepSeek-R1", "h200-sxm", engine="vllm", tp=8, concurrency=[1], isl=256, osl=16,
                      weights="fp8,fp8_block")
    assert est["weights"].tolist() == ["fp8", "fp8_block"] and est["kv_cache"].tolist() == ["fp8", "fp8"]
    assert est["tpot_mean_s"].iloc[0] != pytest.approx(est["tpot_mean_s"].iloc[1], rel=0.01)   # two kernel families
    sm = pm.StepModel("llama-3.1-8b", "h100-sxm", weights="nvfp4")
    est = pm.estimate("llama-3.1-8b", "h100-sxm", engine="vllm", concurrency=[1], isl=256, osl=16,
                      weights="nvfp4").iloc[0]
    assert sm.precision.label() == "w:nvfp4 a:bf16 kv:fp8" == f"w:{est['weights']} a:bf16 kv:{est['kv_cache']}"
