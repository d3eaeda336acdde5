"""Measured-row mapping, model resolution and anomaly flags (perfmodel.validation)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import perfmodel
from perfmodel.validation.anomalies import anomaly_category, flag_anomalies
from perfmodel.validation.models import UnsupportedModel, checkpoint_default_format, resolve_model
from perfmodel.validation.rows import KVPolicy, hardware_id, kv_cache_format, map_rows, silicon_concurrency


def _row(**kw) -> dict:
    base = {"id": "r0", "silicon_data_source": "x; silicon_concurrency=16; y", "backend": "trtllm",
            "model_path": "meta-llama/Llama-3.1-70B", "system": "h200_sxm", "precision": "fp8",
            "mode": "agg", "isl": 1024, "osl": 1024, "gemm_quant_mode": "fp8", "moe_quant_mode": "fp8",
            "batch_size": 16, "tp_size": 4, "pp_size": 1, "attention_dp_size": 1, "moe_tp_size": 1,
            "moe_ep_size": 1, "silicon_ttft_ms": 100.0, "silicon_tpot_ms": 10.0}
    base.update(kw)
    return base


def test_agg_row_maps_to_replica_layout_and_formats():
    dep, skipped = map_rows(pd.DataFrame([_row()]))
    assert skipped.empty
    r = dep.iloc[0]
    assert (r.hardware, r.model_key, r.tp, r.dp, r.weights, r.activations, r.kv_cache) == \
        ("h200-sxm", "llama-3.1-70b", 4, 1, "fp8", "fp8", "fp8")
    assert r.concurrency == 16 and r.total_concurrency == 16
    assert r.measured_tpot_mean_s == pytest.approx(0.010)


def test_attention_dp_multiplies_replica_concurrency():
    row = _row(model_path="deepseek-ai/DeepSeek-R1", system="b200_sxm", tp_size=1, attention_dp_size=8,
               moe_ep_size=8, moe_tp_size=1, batch_size=32, precision="fp4", gemm_quant_mode="nvfp4",
               silicon_data_source="silicon_concurrency=256")
    dep, _ = map_rows(pd.DataFrame([row]))
    assert dep.iloc[0].concurrency == 256 and dep.iloc[0].weights == "nvfp4"


def test_fp4_on_hopper_is_weight_only_with_fp8_kv():
    row = _row(model_path="openai/gpt-oss-120b", backend="vllm", precision="fp4", gemm_quant_mode="nvfp4",
               moe_quant_mode="nvfp4", tp_size=2, moe_ep_size=1, moe_tp_size=2)
    dep, _ = map_rows(pd.DataFrame([row]))
    # gpt-oss's FP4 checkpoint is MXFP4: W4A16 on Hopper (no FP4 peak)
    assert (dep.iloc[0].weights, dep.iloc[0].activations, dep.iloc[0].kv_cache) == ("mxfp4", "bf16", "fp8")
    row.update(model_path="nvidia/Qwen3-32B-NVFP4", moe_quant_mode=np.nan)
    dep, _ = map_rows(pd.DataFrame([row]))
    assert (dep.iloc[0].weights, dep.iloc[0].activations) == ("nvfp4", "bf16")


def test_model_dtype_kv_policy_applies_to_its_engine_and_accelerator_only():
    """KVPolicy.model_dtype_kv: the named (engine, accelerator) keeps a bf16 KV cache for FP8/MXFP4
    checkpoints; NVFP4 checkpoints (FP8 KV declared) and other engines or accelerators keep FP8."""
    policy = KVPolicy(model_dtype_kv=(("vllm", "h100-sxm"),))
    assert kv_cache_format("vllm", "fp8_block", policy, "h100-sxm") == "bf16"
    assert kv_cache_format("vllm", "mxfp4", policy, "h100-sxm") == "bf16"
    assert kv_cache_format("vllm", "nvfp4", policy, "h100-sxm") == "fp8"
    assert kv_cache_format("sglang", "fp8", policy, "h100-sxm") == "fp8"
    assert kv_cache_format("vllm", "fp8", policy, "h200-sxm") == "fp8"
    assert kv_cache_format("vllm", "fp8", hardware="h100-sxm") == "fp8"   # the default policy: none
    row = _row(model_path="openai/gpt-oss-120b", backend="vllm", precision="fp4", gemm_quant_mode="nvfp4",
               moe_quant_mode="nvfp4", tp_size=2, moe_ep_size=1, moe_tp_size=2, system="h100_sxm")
    assert map_rows(pd.DataFrame([row]), policy)[0].iloc[0].kv_cache == "bf16"
    assert map_rows(pd.DataFrame([row]))[0].iloc[0].kv_cache == "fp8"
    row.update(system="b200_sxm")
    assert map_rows(pd.DataFrame([row]), policy)[0].iloc[0].kv_cache == "fp8"


def test_mxfp4_checkpoint_runs_mxfp8_activations_on_blackwell():
    """TensorRT-LLM's default gpt-oss MoE backend on Blackwell is MXFP4 weights x MXFP8 activations
    (its GPT-OSS deployment guide); the MoE block then uses the ``moe.mxfp4_a8`` terms."""
    from perfmodel.precision import Precision
    row = _row(model_path="openai/gpt-oss-120b", system="b200_sxm", precision="fp4", gemm_quant_mode="nvfp4",
               moe_quant_mode="nvfp4", tp_size=1, moe_ep_size=1, moe_tp_size=1)
    r = map_rows(pd.DataFrame([row]))[0].iloc[0]
    assert (r.weights, r.activations) == ("mxfp4", "fp8")
    assert Precision.of(r.weights, r.activations).moe_format == "mxfp4_a8"
    assert Precision.of("mxfp4", "bf16").moe_format == "mxfp4_a16"
    assert Precision.of("mxfp4").moe_format == "fp4"          # MXFP4 x MXFP4: the FP4 terms
    assert Precision.of("fp8_block").moe_format == "fp8_block"


def test_empty_precision_uses_checkpoint_format():
    # block-scaled FP8 checkpoints (config.json weight_block_size [128, 128]) vs NVIDIA per-tensor FP8
    assert checkpoint_default_format("Qwen/Qwen3-235B-A22B-FP8") == "fp8_block"
    assert checkpoint_default_format("deepseek-ai/DeepSeek-R1") == "fp8_block"
    assert checkpoint_default_format("nvidia/Llama-3.1-8B-Instruct-FP8") == "fp8"
    assert checkpoint_default_format("Qwen/Qwen3-32B") == "bf16"
    dep, _ = map_rows(pd.DataFrame([_row(precision=np.nan, gemm_quant_mode=np.nan, moe_quant_mode=np.nan)]))
    assert dep.iloc[0].weights == "bf16" and dep.iloc[0].kv_cache == "bf16"


def test_fp8_rows_of_block_scaled_checkpoints_use_the_block_fp8_terms():
    """A row saying fp8 for DeepSeek-R1 runs its block-scaled checkpoint: weights fp8_block (the
    profiles' gemm/moe.fp8_block terms), fp8 activations and the fp8 peak; Llama FP8 stays per-tensor."""
    from perfmodel.precision import Precision

    ds = _row(model_path="deepseek-ai/DeepSeek-R1", precision="fp8", gemm_quant_mode="fp8",
              moe_quant_mode="fp8", tp_size=8, moe_ep_size=8)
    llama = _row(model_path="nvidia/Llama-3.1-8B-Instruct-FP8", precision="fp8", gemm_quant_mode="fp8")
    dep, skipped = map_rows(pd.DataFrame([ds, llama]))
    assert skipped.empty
    assert list(dep.weights) == ["fp8_block", "fp8"] and list(dep.activations) == ["fp8", "fp8"]
    prec = Precision.of("fp8_block", "fp8")
    assert prec.compute == "fp8" and prec.matmul_format == "fp8_block"
    assert Precision.of("fp8").matmul_format == "fp8"


@pytest.mark.parametrize("change, reason", [
    ({"model_path": "acme/NoSuchModel-7B"}, "unknown model"),
    ({"system": "tpu_v9"}, "unknown system"),
    ({"tp_size": 3}, "invalid agg layout"),
    ({"mode": "disagg", "prefill_num_workers": np.nan, "decode_num_workers": np.nan}, "disagg"),
    ({"silicon_tpot_ms": np.nan}, "measured TTFT/TPOT missing"),
])
def test_unmappable_rows_are_skipped_with_a_reason(change, reason):
    dep, skipped = map_rows(pd.DataFrame([_row(**change)]))
    assert dep.empty and len(skipped) == 1
    assert skipped.iloc[0].reason.startswith(reason)


def test_missing_columns_raise_a_clear_error():
    with pytest.raises(ValueError, match="missing column"):
        map_rows(pd.DataFrame([{"model_path": "x"}]))


def test_helpers():
    assert silicon_concurrency("a; silicon_concurrency=668; b") == 668
    assert np.isnan(silicon_concurrency(""))
    assert hardware_id("b200_sxm") == "b200" and hardware_id("h100-sxm") == "h100-sxm"
    assert hardware_id("nope") is None
    assert kv_cache_format("trtllm", "nvfp4") == "fp8" and kv_cache_format("sglang", "fp8") == "fp8"
    assert kv_cache_format("vllm", "int4") == "bf16" and kv_cache_format("vllm", "bf16") == "bf16"


def test_bridged_and_refused_models():
    kimi = resolve_model("moonshotai/Kimi-K2.5")
    assert kimi.attention == "mla" and kimi.moe.num_experts == 384
    minimax = resolve_model("MiniMaxAI/MiniMax-M2.5")
    assert minimax.moe.num_experts == 256 and minimax.moe.top_k == 8 and minimax.num_layers == 62
    assert resolve_model("Qwen/Qwen3.5-397B-A17B").recurrent.kind == "gated_deltanet"
    with pytest.raises(UnsupportedModel, match="unknown model"):
        resolve_model("acme/NoSuchModel-7B")


def test_a_model_directory_is_read_again_after_an_edit(tmp_path):
    """No path-keyed cache of a file a user may edit: a directory holding config.json (not only a
    .json path) is re-read on every call, so an edit shows up."""
    config = json.loads((Path(perfmodel.__file__).parent / "data" / "models" / "llama-3.1-8b.json").read_text())
    config = config["config"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert resolve_model(str(tmp_path)).num_layers == 32
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 16}))
    assert resolve_model(str(tmp_path)).num_layers == 16


def test_anomaly_checks_flag_physically_impossible_rows():
    rows = [_row(id="ok"),
            _row(id="too_fast_tpot", silicon_tpot_ms=0.5),            # below the weight-read floor
            _row(id="too_fast_prefill", isl=8192, silicon_ttft_ms=1.0),
            _row(id="too_slow", silicon_tpot_ms=5000.0),
            _row(id="named_tp8_run_tp8_0_ep8", tp_size=4)]
    dep, _ = map_rows(pd.DataFrame(rows))
    flags = flag_anomalies(dep)
    got = dict(zip(dep["id"], flags.map(anomaly_category), strict=True))
    assert got["ok"] == []
    assert got["too_fast_tpot"] == ["tpot_below_roofline"]
    assert "ttft_below_roofline" in got["too_fast_prefill"]
    assert got["too_slow"] == ["tpot_above_ceiling"]
    assert got["named_tp8_run_tp8_0_ep8"] == ["id_layout_mismatch"]


def test_unknown_efficiency_profile_is_one_error_not_a_skip_per_row():
    from perfmodel.errors import UnknownNameError
    from perfmodel.validation.run import validate_serving

    with pytest.raises(UnknownNameError, match="known: .*calibrated.*datasheet"):
        validate_serving(pd.DataFrame([_row()]), efficiency="calibrated-nokernel")


@pytest.mark.parametrize(("model_path", "model_key"), [("Qwen/Qwen3.5-397B-A17B", "qwen3.5-397b-a17b"),
                                                      ("zhipuai/GLM-5", "glm-5")])
def test_hybrid_and_sparse_attention_rows_are_mapped(model_path, model_key):
    row = _row(model_path=model_path, system="b200_sxm", tp_size=8, moe_tp_size=8, moe_ep_size=1)
    dep, skipped = map_rows(pd.DataFrame([row]))
    assert skipped.empty and dep.iloc[0].model_key == model_key


def test_uneven_heads_run_attention_dp_with_the_recorded_requests():
    # DeepSeek-R1 (128 heads) on 36 GB200 GPUs: attention DP over the 36 ranks, MoE over the 36
    row = _row(model_path="deepseek-ai/DeepSeek-R1", system="gb200", precision="fp4", gemm_quant_mode="nvfp4",
               moe_quant_mode="nvfp4", tp_size=36, moe_tp_size=36, moe_ep_size=1, batch_size=512,
               silicon_data_source="silicon_concurrency=512")
    dep, skipped = map_rows(pd.DataFrame([row]))
    assert skipped.empty
    r = dep.iloc[0]
    assert (r.tp, r.dp, r.ep, r.moe_tp, r.concurrency) == (1, 36, 1, 36, 512)
    # a dense model cannot run attention DP: the uneven split stays an error
    dep, skipped = map_rows(pd.DataFrame([_row(tp_size=48)]))
    assert dep.empty and skipped.iloc[0].reason.startswith("invalid agg layout: tp=48 does not divide")


def test_validate_serving_reuses_the_problem_only_for_the_same_rows_and_profile():
    """Comparing engine calibrations maps and tabulates the rows once; the answer is the fresh one."""
    import perfmodel.validation.run as run

    rows = pd.read_csv(perfmodel.validation.shipped_path("serving")).query("system == 'h100_sxm'").head(40)
    run._PROBLEMS.clear()
    first = run.validate_serving(rows, engines="preset")
    assert len(run._PROBLEMS) == 1
    again = run.validate_serving(rows, engines="calibrated")      # same rows and profile: reused
    assert len(run._PROBLEMS) == 1
    run._PROBLEMS.clear()
    fresh = run.validate_serving(rows, engines="calibrated")
    pd.testing.assert_frame_equal(again.predictions, fresh.predictions)
    assert not first.predictions["predicted_tpot_mean_s"].equals(fresh.predictions["predicted_tpot_mean_s"])
    changed = rows.assign(isl=rows["isl"] + 1)                       # other rows: built afresh
    run.validate_serving(changed, engines="calibrated")
    assert len(run._PROBLEMS) == 2


def test_measurement_coverage_counts_each_duplicated_measurement_once():
    from perfmodel.validation.rows import measurement_coverage
    skipped = pd.DataFrame({"row": [1, 2, 3], "id": ["b", "c", "d"],
                            "reason": ["duplicate: same measurement as a", "duplicate: same measurement as a",
                                       "disagg: pool worker counts not recorded"]})
    c = measurement_coverage(10, 6, skipped)
    # 10 rows, 2 repeats -> 8 distinct measurements, 6 of them predicted
    assert (c["duplicates"], c["distinct"]) == (2, 8)
    assert c["coverage_rows"] == pytest.approx(0.6)
    assert c["coverage_distinct"] == pytest.approx(0.75)


def test_measurement_coverage_refuses_more_predictions_than_measurements():
    from perfmodel.validation.rows import measurement_coverage
    skipped = pd.DataFrame({"row": [1], "id": ["b"], "reason": ["duplicate: same measurement as a"]})
    with pytest.raises(ValueError, match="predicted = 10 rows must lie in"):
        measurement_coverage(10, 10, skipped)


@pytest.mark.parametrize(("moe_tp", "expected"), [(np.nan, 4), (0, 4), (4, 4)])
def test_unrecorded_moe_tp_is_derived_from_the_group(moe_tp, expected):
    """An empty or 0 moe_tp_size with EP 1 shards the experts by TP over the whole tp x dp group (vLLM
    without expert parallelism), as a recorded 4 does; a recorded value that contradicts it is refused."""
    row = _row(model_path="Qwen/Qwen3-235B-A22B-FP8", system="h100_sxm", tp_size=1, attention_dp_size=4,
               moe_ep_size=0, moe_tp_size=moe_tp, batch_size=4)
    dep, skipped = map_rows(pd.DataFrame([row]))
    assert skipped.empty and (dep.iloc[0].tp, dep.iloc[0].dp, dep.iloc[0].ep, dep.iloc[0].moe_tp) == (1, 4, 1, expected)
    _, skipped = map_rows(pd.DataFrame([{**row, "moe_tp_size": 2}]))
    assert skipped.iloc[0].reason == "invalid agg layout: ep*moe_tp = 1*2 must equal tp*dp_attention = 4"
