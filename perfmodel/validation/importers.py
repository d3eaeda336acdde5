"""Measurement importers: benchmark-tool result files -> rows in the ``serving_measured.csv`` schema.

Supported result files (format detected from the keys):

``vllm``
    ``vllm bench serve`` / ``benchmarks/benchmark_serving.py --save-result`` JSON: top-level
    ``mean_ttft_ms``, ``mean_tpot_ms``, ``completed``, ``total_input_tokens``, ``total_output_tokens``,
    ``max_concurrency``, ``model_id`` (vllm-project/vllm, ``benchmarks/benchmark_serving.py``, the
    ``result_json`` written by ``main``).
``aiperf`` / ``genai-perf``
    ``profile_export_aiperf.json`` (AIPerf) or ``profile_export_genai_perf.json`` (GenAI-Perf): one
    stats block ``{"unit": "ms", "avg": ..., "p50": ...}`` per metric — ``time_to_first_token``,
    ``inter_token_latency``, ``input_sequence_length``, ``output_sequence_length`` — and the run's
    configuration under ``input_config`` (AIPerf: ``endpoint.model_names`` and
    ``loadgen.concurrency``; GenAI-Perf: ``model`` and ``concurrency``). See
    https://docs.nvidia.com/aiperf/reference/json-export-schema (AIPerf ``JsonMetricResult``) and the
    AIPerf metrics reference (``inter_token_latency`` = (request latency − TTFT)/(output tokens − 1),
    i.e. TPOT).
``guidellm``
    GuideLLM ``benchmarks.json``: one row per benchmark (rate or concurrency) of the report.
``inference-perf``
    inference-perf ``stage_N_lifecycle_metrics.json``: one load stage.

Rate-based runs (a finite vLLM ``request_rate``, AIPerf ``--request-rate``, GuideLLM ``poisson`` /
``constant`` benchmarks, inference-perf stages) become open-loop rows (``arrival = open``, the rate and
the arrival process; columns in :mod:`perfmodel.validation.arrivals`, file fields in
:mod:`perfmodel.validation.openloop_import`); the others are closed-loop rows at their concurrency.

The files do not say on which hardware, engine and layout the server ran: the caller supplies them in a
:class:`MeasuredDeployment` (values found in the file, such as the model id or the concurrency, are
used when the caller leaves them out). Only means are imported (the CSV schema holds means).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import PerfmodelError
from ..fileio import read_json
from ..formats import DEPRECATED, renamed
from .arrivals import ARRIVAL_COLUMNS
from .openloop_import import aiperf_arrival, guidellm_results, inference_perf_result, vllm_arrival
from .rows import QUANT_MODE_OF_PRECISION


@dataclass(frozen=True)
class MeasuredDeployment:
    """What a result file does not record: where and how the server ran.

    Attributes
    ----------
    system : str
        ``h100_sxm``/``h200_sxm``/``b200_sxm``/``gb200`` or any shipped accelerator id.
    backend : str
        ``vllm``, ``sglang`` or ``trtllm``.
    model : str, optional
        HF repo id (default: the one in the file).
    tp, pp, attention_dp, ep, moe_tp : int
        Parallel layout of one replica.
    replicas : int
        Identical replicas behind the load balancer (the client concurrency is split evenly).
    weights : str
        ``fp8``, ``fp4``/``nvfp4``, ``int4_wo``, ``bf16`` or '' (the checkpoint's own format); the
        ``precision`` column of the measured-runs schema.
    concurrency : int, optional
        Client concurrency (default: the one in the file).
    arrival_process : str, optional
        Load type of an inference-perf report with no ``config.yaml`` beside it (``constant``, the
        tool's default, or ``poisson``).
    precision : str
        Deprecated old name of ``weights`` (warns).
    """

    system: str
    backend: str
    model: str | None = None
    tp: int = 1
    pp: int = 1
    attention_dp: int = 1
    ep: int = 1
    moe_tp: int = 0
    replicas: int = 1
    weights: str = ""
    concurrency: int | None = None
    arrival_process: str | None = None
    precision: Any = DEPRECATED

    def __post_init__(self) -> None:
        if self.precision is not DEPRECATED:
            weights = renamed("weights", self.weights or None, "precision", self.precision, "MeasuredDeployment")
            object.__setattr__(self, "weights", weights or "")
            object.__setattr__(self, "precision", DEPRECATED)


def _stat(block: Any, name: str) -> float | None:
    """Mean of an AIPerf / GenAI-Perf stats block, in ms for times."""
    if isinstance(block, dict):
        value = block.get("avg", block.get("mean"))
        if value is None:
            return None
        unit = str(block.get("unit", "ms")).lower()
        scale = {"s": 1e3, "sec": 1e3, "us": 1e-3, "ns": 1e-6}.get(unit, 1.0) if name != "tokens" else 1.0
        return float(value) * scale
    return float(block) if isinstance(block, (int, float)) else None


def _find(obj: Any, key: str) -> Any:
    """First value of ``key`` in a nested mapping (depth-first), or None."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            found = _find(v, key)
            if found is not None:
                return found
    return None


def detect_format(data: dict) -> str:
    """``'vllm'``, ``'aiperf'``, ``'genai-perf'``, ``'guidellm'`` or ``'inference-perf'`` from a result
    file's keys.

    Raises
    ------
    PerfmodelError
        Not a recognised result file.
    """
    if "mean_ttft_ms" in data and "mean_tpot_ms" in data:
        return "vllm"
    if isinstance(data.get("time_to_first_token"), dict) and isinstance(data.get("inter_token_latency"), dict):
        config = data.get("input_config", {})
        return "aiperf" if isinstance(config, dict) and ("loadgen" in config or "endpoint" in config) \
            else "genai-perf"
    if isinstance(data.get("benchmarks"), list):
        return "guidellm"
    if isinstance(data.get("load_summary"), dict) and isinstance(data.get("successes"), dict):
        return "inference-perf"
    raise PerfmodelError("not a recognised benchmark result: expected vLLM benchmark_serving keys "
                         "(mean_ttft_ms, mean_tpot_ms), AIPerf/GenAI-Perf stats blocks "
                         "(time_to_first_token, inter_token_latency), a GuideLLM report (benchmarks) or "
                         "an inference-perf stage report (load_summary, successes)")


def _vllm(data: dict) -> dict[str, Any]:
    done = float(data.get("completed") or 0)
    if done <= 0:
        raise PerfmodelError("vLLM result: 'completed' is 0 or missing (no successful requests)")
    return {"ttft_ms": float(data["mean_ttft_ms"]), "tpot_ms": float(data["mean_tpot_ms"]),
            "isl": float(data["total_input_tokens"]) / done, "osl": float(data["total_output_tokens"]) / done,
            "model": data.get("model_id"), **vllm_arrival(data),
            "tool": f"vllm benchmark_serving ({data.get('backend', 'backend ?')}, {data.get('date', '')})"}


def _aiperf(data: dict, tool: str) -> dict[str, Any]:
    config = data.get("input_config", {}) or {}
    names = _find(config, "model_names") or _find(config, "model")
    model = names[0] if isinstance(names, list) and names else names
    return {"ttft_ms": _stat(data["time_to_first_token"], "time"),
            "tpot_ms": _stat(data["inter_token_latency"], "time"),
            "isl": _stat(data.get("input_sequence_length"), "tokens"),
            "osl": _stat(data.get("output_sequence_length"), "tokens"),
            **aiperf_arrival(config, data, _find), "model": model, "tool": tool}


def read_results(path: str | Path, arrival_process: str | None = None) -> list[dict[str, Any]]:
    """Means and run facts of every run in one result file (a GuideLLM report holds several).

    Each result has ``ttft_ms, tpot_ms, isl, osl, model, tool, format, arrival`` (``open`` or
    ``closed``), ``concurrency`` (closed loop) or ``rate_requests_per_s, arrival_process, arrival_cv,
    requests, max_concurrency`` (open loop). ``arrival_process``: see :class:`MeasuredDeployment`.
    """
    p = Path(path)
    data = read_json(p, what="benchmark result JSON")
    if not isinstance(data, dict):
        raise PerfmodelError(f"{p}: expected a JSON object")
    fmt = detect_format(data)
    if fmt == "guidellm":
        out = guidellm_results(data, _find)
    elif fmt == "inference-perf":
        out = [inference_perf_result(data, p, arrival_process)]
    else:
        out = [_vllm(data) if fmt == "vllm" else _aiperf(data, fmt)]
    return [{**r, "format": fmt} for r in out]


def read_result(path: str | Path) -> dict[str, Any]:
    """The one run of a single-run result file (see :func:`read_results`)."""
    results = read_results(path)
    if len(results) != 1:
        raise PerfmodelError(f"{path}: holds {len(results)} runs; use read_results")
    return results[0]


def to_measured_row(result: dict[str, Any], deployment: MeasuredDeployment, source: str) -> dict[str, Any]:
    """One ``serving_measured.csv`` row from :func:`read_result` output and the deployment."""
    model = deployment.model or result.get("model")
    open_loop = result.get("arrival") == "open"
    concurrency = deployment.concurrency or result.get("concurrency") or (1 if open_loop else None)
    missing = [n for n, v in (("model", model), ("concurrency", concurrency), ("isl", result.get("isl")),
                              ("osl", result.get("osl")), ("ttft", result.get("ttft_ms")),
                              ("tpot", result.get("tpot_ms"))) if v in (None, "")]
    if missing:
        raise PerfmodelError(f"{source}: cannot build a measured row, missing {missing}; pass them in the "
                             f"deployment (model=..., concurrency=...)")
    conc = float(concurrency)
    per_rank = conc / max(deployment.replicas, 1) / max(deployment.attention_dp, 1)
    mode = QUANT_MODE_OF_PRECISION.get(deployment.weights.lower(), "")
    isl, osl = round(float(result["isl"])), round(float(result["osl"]))
    load = f"r{result['rate_requests_per_s']:g}" if open_loop else f"c{int(conc)}"
    bench = f"_b{result['benchmark']}" if "benchmark" in result else ""
    return {
        "id": f"{Path(source).stem}{bench}_{deployment.system}_{deployment.backend}_{isl}x{osl}_{load}",
        "silicon_data_source": f"import={result['format']}; file={source}; "
                               + ("" if open_loop else f"silicon_concurrency={int(conc)}; ")
                               + f"tool={result['tool']}",
        "backend": deployment.backend, "backend_version": "", "model_path": model,
        "system": deployment.system, "precision": deployment.weights, "mode": "agg",
        "isl": isl, "osl": osl, "gemm_quant_mode": mode, "moe_quant_mode": mode,
        "batch_size": per_rank, "tp_size": deployment.tp, "pp_size": deployment.pp,
        "attention_dp_size": deployment.attention_dp, "moe_tp_size": deployment.moe_tp or None,
        "moe_ep_size": deployment.ep,
        "silicon_ttft_ms": float(result["ttft_ms"]), "silicon_tpot_ms": float(result["tpot_ms"]),
        **_arrival_columns(result, deployment),
    }


def _arrival_columns(result: dict[str, Any], deployment: MeasuredDeployment) -> dict[str, Any]:
    """The :mod:`~perfmodel.validation.arrivals` columns of an imported run ('' where not open loop)."""
    if result.get("arrival") != "open":
        return {"arrival": "closed", **dict.fromkeys(ARRIVAL_COLUMNS[1:], "")}
    return {"arrival": "open", "rate_requests_per_s": result["rate_requests_per_s"],
            "arrival_process": result["arrival_process"], "arrival_cv": result["arrival_cv"],
            "replicas": deployment.replicas, "requests": result.get("requests") or "",
            "max_concurrency": result.get("max_concurrency") or ""}


def import_results(paths, deployment: MeasuredDeployment) -> pd.DataFrame:
    """Measured rows (``serving_measured.csv`` schema) from benchmark result files.

    Parameters
    ----------
    paths : str | Path | iterable of them
        vLLM ``benchmark_serving``, AIPerf / GenAI-Perf ``profile_export_*.json``, GuideLLM
        ``benchmarks.json`` or inference-perf ``stage_N_lifecycle_metrics.json`` files.
    deployment : MeasuredDeployment
        Hardware, engine and layout the files were measured on.

    Returns
    -------
    pandas.DataFrame
        One row per run (a GuideLLM report gives one per benchmark), ready for :func:`perfmodel.validation.rows.map_rows` or the fit.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    rows = [to_measured_row(r, deployment, str(p)) for p in paths
            for r in read_results(p, deployment.arrival_process)]
    return pd.DataFrame(rows)
