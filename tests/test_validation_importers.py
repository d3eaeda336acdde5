"""Importers of benchmark-tool results (vLLM benchmark_serving, AIPerf, GenAI-Perf) on synthetic files.

Field names follow the tools' documented outputs: vLLM ``benchmarks/benchmark_serving.py`` ``result_json``
(``max_concurrency``, ``completed``, ``total_input_tokens``, ``mean_ttft_ms``, ``mean_tpot_ms``...);
AIPerf ``profile_export_aiperf.json`` (stats blocks ``{"unit", "avg", "p50", ...}`` per metric, run
configuration under ``input_config.endpoint.model_names`` / ``input_config.loadgen.concurrency``,
https://docs.nvidia.com/aiperf/reference/json-export-schema); GenAI-Perf
``profile_export_genai_perf.json`` (same stats blocks, flat ``input_config``).
"""

from __future__ import annotations

import json

import pytest

from perfmodel.cli import main
from perfmodel.errors import PerfmodelError
from perfmodel.validation.importers import MeasuredDeployment, detect_format, import_results, read_result
from perfmodel.validation.rows import map_rows

VLLM = {"date": "20250101-120000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "num_prompts": 320, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 32,
        "duration": 60.0, "completed": 320, "total_input_tokens": 320 * 1024, "total_output_tokens": 320 * 256,
        "request_throughput": 5.3, "output_throughput": 1365.0, "mean_ttft_ms": 85.0, "median_ttft_ms": 80.0,
        "p99_ttft_ms": 190.0, "mean_tpot_ms": 11.5, "median_tpot_ms": 11.2, "p99_tpot_ms": 14.0,
        "mean_itl_ms": 11.4, "median_itl_ms": 11.0, "p99_itl_ms": 30.0}


def _block(avg, unit="ms"):
    return {"unit": unit, "avg": avg, "p50": avg, "p90": avg * 1.2, "p99": avg * 1.5, "min": avg / 2,
            "max": avg * 2, "std": avg / 10}


AIPERF = {"time_to_first_token": _block(120.0), "inter_token_latency": _block(9.0),
          "request_latency": _block(2400.0), "input_sequence_length": _block(2048, "tokens"),
          "output_sequence_length": _block(256, "tokens"), "request_throughput": {"unit": "requests/sec", "avg": 3.1},
          "input_config": {"endpoint": {"model_names": ["meta-llama/Llama-3.1-70B-Instruct"], "type": "chat",
                                        "streaming": True},
                           "loadgen": {"concurrency": 16, "request_count": 160}}}

GENAI_PERF = {"time_to_first_token": _block(0.15, "s"), "inter_token_latency": _block(12.0),
              "input_sequence_length": _block(512, "tokens"), "output_sequence_length": _block(128, "tokens"),
              "input_config": {"model": ["Qwen/Qwen3-32B"], "concurrency": 8, "streaming": True}}


@pytest.fixture
def files(tmp_path):
    out = {}
    for name, data in (("vllm", VLLM), ("aiperf", AIPERF), ("genai", GENAI_PERF)):
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(data))
        out[name] = p
    return out


def test_formats_are_detected_and_read(files):
    assert detect_format(VLLM) == "vllm" and detect_format(AIPERF) == "aiperf"
    assert detect_format(GENAI_PERF) == "genai-perf"
    v = read_result(files["vllm"])
    assert (v["ttft_ms"], v["tpot_ms"], v["isl"], v["osl"], v["concurrency"]) == (85.0, 11.5, 1024, 256, 32)
    a = read_result(files["aiperf"])
    assert (a["ttft_ms"], a["tpot_ms"], a["isl"], a["concurrency"]) == (120.0, 9.0, 2048, 16)
    assert a["model"] == "meta-llama/Llama-3.1-70B-Instruct"
    g = read_result(files["genai"])
    assert g["ttft_ms"] == pytest.approx(150.0) and g["model"] == "Qwen/Qwen3-32B" and g["concurrency"] == 8


def test_imported_rows_follow_the_measured_schema_and_map(files):
    dep = MeasuredDeployment(system="h100_sxm", backend="vllm", tp=1)
    rows = import_results([files["vllm"]], dep)
    assert "silicon_concurrency=32" in rows.iloc[0].silicon_data_source
    assert (rows.iloc[0]["isl"], rows.iloc[0]["osl"], rows.iloc[0]["mode"]) == (1024, 256, "agg")
    mapped, skipped = map_rows(rows)
    assert skipped.empty and mapped.iloc[0].concurrency == 32 and mapped.iloc[0].model_key == "llama-3.1-8b"
    two = import_results([files["aiperf"]], MeasuredDeployment(system="h200_sxm", backend="trtllm", tp=4,
                                                                replicas=2, weights="fp8"))
    assert two.iloc[0].batch_size == 8 and two.iloc[0].gemm_quant_mode == "fp8"


def test_missing_facts_and_foreign_files_raise(tmp_path, files):
    bare = dict(VLLM, max_concurrency=None)
    p = tmp_path / "bare.json"
    p.write_text(json.dumps(bare))
    with pytest.raises(PerfmodelError, match="concurrency"):
        import_results([p], MeasuredDeployment(system="h100_sxm", backend="vllm"))
    q = tmp_path / "other.json"
    q.write_text(json.dumps({"hello": 1}))
    with pytest.raises(PerfmodelError, match="not a recognised benchmark result"):
        read_result(q)


def test_cli_validates_a_result_json(files, capsys):
    assert main(["validate", "--data", str(files["aiperf"]), "--hardware", "h200-sxm", "--engine", "trtllm",
                 "--tp", "4", "--weights", "fp8", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == 1 and out["predicted"] == 1 and out["tpot"]["n"] == 1
    assert main(["validate", "--data", str(files["aiperf"])]) == 2  # deployment missing: one-line error
