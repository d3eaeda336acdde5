"""How a benchmark tool's result file says its requests arrived, and the rate-based tools' reports.

Field names are the tools' own (read from their result writers; facts, not code):

vLLM ``vllm bench serve`` (``vllm/benchmarks/serve.py``; ``benchmarks/benchmark_serving.py`` before)
    ``request_rate`` (a number, or ``"inf"``: every request sent at once), ``burstiness`` (shape k of
    the gamma-distributed gaps, 1 = Poisson, so CV = 1/sqrt(k)), ``max_concurrency`` (a cap on
    requests in flight, ``null`` when none), ``ramp_up_strategy`` (a rate that changes during the run).
AIPerf ``profile_export_aiperf.json`` (ai-dynamo/aiperf ``aiperf/common/config/loadgen_config.py``)
    ``input_config.loadgen.request_rate``, ``request_rate_mode`` (``poisson``, the default, or
    ``constant``; ``concurrency_burst`` is a closed loop), ``concurrency`` (with a rate: a cap); the
    ``request_count`` metric block.
GuideLLM ``benchmarks.json`` (vllm-project/guidellm v0.7.3, ``GenerativeBenchmarksReport``; v0.3.0 kept
    the strategy under ``benchmarks[i].args``, ``request_totals`` beside ``metrics`` and the model
    in ``worker.backend_model``, read too)
    ``benchmarks[i].config.strategy`` = ``{"type_": "poisson"|"constant", "rate": ...}`` (open loop),
    ``{"type_": "concurrent", "streams": C}`` or ``{"type_": "synchronous"}`` (closed loop, C or 1
    client), ``throughput`` (all at once); ``benchmarks[i].metrics`` holds one status-split
    distribution per metric, of which the ``successful`` ``mean`` is read:
    ``time_to_first_token_ms``, ``inter_token_latency_ms`` ((last − first token)/(output tokens − 1),
    i.e. TPOT; ``time_per_output_token_ms`` includes the first token and is not used),
    ``prompt_token_count``, ``output_token_count``, and ``request_totals.successful``.
inference-perf ``stage_N_lifecycle_metrics.json`` (kubernetes-sigs/inference-perf v0.6.1,
    ``inference_perf/reportgen/base.py`` ``summarize_requests``)
    ``load_summary.requested_rate`` [1/s] (and ``achieved_rate``), ``successes.count``,
    ``successes.latency.time_to_first_token`` and ``.time_per_output_token`` (seconds, TPOT =
    (last − first token)/(output tokens − 1)), ``successes.prompt_len`` / ``output_len`` (tokens). The
    load type (``constant``, the tool's default, or ``poisson``) is in the run's ``config.yaml``
    (``load.type``), written next to the reports; it is read from there when present.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..errors import PerfmodelError

#: inference-perf's default load type (``LoadConfig.type``, v0.6.1).
INFERENCE_PERF_DEFAULT_LOAD = "constant"


def _closed(concurrency: Any) -> dict[str, Any]:
    return {"arrival": "closed", "concurrency": concurrency}


def _open(rate: float, process: str, cv: float, requests: Any, cap: Any) -> dict[str, Any]:
    return {"arrival": "open", "rate_requests_per_s": float(rate), "arrival_process": process, "arrival_cv": cv,
            "requests": None if requests is None else round(float(requests)),
            "max_concurrency": None if cap in (None, "") else int(cap), "concurrency": None}


def vllm_arrival(data: dict) -> dict[str, Any]:
    """Arrival fields of a vLLM result JSON: closed loop at ``max_concurrency`` when the rate is
    ``inf`` (or absent), else open loop at ``request_rate`` with Poisson (burstiness 1) or gamma gaps."""
    raw = data.get("request_rate", "inf")
    try:
        rate = float(raw)
    except (TypeError, ValueError):
        raise PerfmodelError(f"vLLM result: request_rate={raw!r} is not a number or 'inf'") from None
    if not math.isfinite(rate):
        return _closed(data.get("max_concurrency"))
    raw_burst = data.get("burstiness")
    try:
        burst = 1.0 if raw_burst is None else float(raw_burst)
    except (TypeError, ValueError):
        burst = math.nan
    if not (math.isfinite(burst) and burst > 0):
        raise PerfmodelError(f"vLLM result: burstiness={raw_burst!r} must be a finite number > 0 (1 = Poisson)")
    process = "poisson" if burst == 1.0 else "gamma"
    if data.get("ramp_up_strategy"):
        process = f"ramp-up ({data['ramp_up_strategy']})"   # a changing rate: skipped when scored
    return _open(rate, process, 1.0 / math.sqrt(burst), data.get("completed"), data.get("max_concurrency"))


def aiperf_arrival(config: dict, data: dict, find) -> dict[str, Any]:
    """Arrival fields of an AIPerf / GenAI-Perf export: open loop when ``request_rate`` is set (mode
    ``poisson`` by default, or ``constant``), else closed loop at ``concurrency``."""
    rate = find(config, "request_rate")
    if isinstance(rate, list):   # GenAI-Perf keeps a list (one value per profile run)
        rate = rate[0] if len(rate) == 1 else None
    mode = str(find(config, "request_rate_mode") or "poisson").lower()
    concurrency = find(config, "concurrency")
    if rate is None or rate == "" or mode == "concurrency_burst":
        return _closed(concurrency)
    count = data.get("request_count")
    count = count.get("avg") if isinstance(count, dict) else count
    return _open(float(rate), mode, 1.0 if mode == "poisson" else 0.0, count, concurrency)


def _mean(block: Any) -> float | None:
    """``successful.mean`` of a GuideLLM status-split distribution (or ``mean`` of a plain one)."""
    if isinstance(block, dict):
        inner = block.get("successful", block)
        value = inner.get("mean") if isinstance(inner, dict) else None
        return None if value is None else float(value)
    return None


def guidellm_results(data: dict, find) -> list[dict[str, Any]]:
    """One result per benchmark of a GuideLLM report (see the module docstring)."""
    out = []
    for i, b in enumerate(data.get("benchmarks") or []):
        if not isinstance(b, dict):
            raise PerfmodelError(f"GuideLLM report: benchmarks[{i}] is not an object")
        strategy = find(b.get("config") or {}, "strategy") or find(b.get("args") or {}, "strategy") or {}
        kind = str(strategy.get("type_", "")).lower()
        m = b.get("metrics") or {}
        totals = m.get("request_totals") or b.get("request_totals") or {}
        models = (find(b.get("config") or {}, "model"), find(b.get("worker") or {}, "backend_model"),
                  find(data.get("config") or {}, "model"))
        res = {"ttft_ms": _mean(m.get("time_to_first_token_ms")), "tpot_ms": _mean(m.get("inter_token_latency_ms")),
               "isl": _mean(m.get("prompt_token_count")), "osl": _mean(m.get("output_token_count")),
               "model": next((x for x in models if isinstance(x, str) and x), None),
               "tool": f"guidellm {kind} benchmark {i}", "benchmark": i}
        requests = totals.get("successful") if isinstance(totals, dict) else None
        if kind in ("poisson", "constant"):
            rate = strategy.get("rate")
            if isinstance(rate, bool) or not isinstance(rate, (int, float)):
                raise PerfmodelError(f"GuideLLM report: benchmarks[{i}] strategy {kind!r} has rate={rate!r}; "
                                     "expected a number of requests/s")
            res.update(_open(float(rate), kind, 1.0 if kind == "poisson" else 0.0, requests,
                             strategy.get("max_concurrency")))
        elif kind in ("concurrent", "synchronous"):
            res.update(_closed(strategy.get("streams", 1) if kind == "concurrent" else 1))
        else:   # throughput (all at once) or an unknown strategy: kept, skipped when scored
            res.update(_open(math.nan, kind or "unknown", math.nan, requests, strategy.get("max_concurrency")))
        out.append(res)
    if not out:
        raise PerfmodelError("GuideLLM report: 'benchmarks' is empty")
    return out


def _load_type(path: Path) -> str | None:
    """``load.type`` of the inference-perf ``config.yaml`` next to a report, None when there is none."""
    cfg = path.parent / "config.yaml"
    if not cfg.is_file():
        return None
    from ..hardware.registry import read_yaml

    data = read_yaml(cfg)
    load = data.get("load") if isinstance(data, dict) else None
    kind = load.get("type") if isinstance(load, dict) else None
    return None if kind is None else str(kind).lower()


def inference_perf_result(data: dict, path: Path, process: str | None) -> dict[str, Any]:
    """Means and arrival of one inference-perf stage report (times in the report are seconds).

    ``process``: the load type given by the caller, used when no ``config.yaml`` sits beside the
    report; without either, inference-perf's default (:data:`INFERENCE_PERF_DEFAULT_LOAD`).
    """
    ok = data.get("successes") or {}
    lat = ok.get("latency") or {}
    load = data.get("load_summary") or {}

    def seconds_to_ms(block):
        v = _mean(block)
        return None if v is None else v * 1e3
    kind = _load_type(path) or process or INFERENCE_PERF_DEFAULT_LOAD
    res = {"ttft_ms": seconds_to_ms(lat.get("time_to_first_token")),
           "tpot_ms": seconds_to_ms(lat.get("time_per_output_token")),
           "isl": _mean(ok.get("prompt_len")), "osl": _mean(ok.get("output_len")), "model": None,
           "tool": f"inference-perf {path.name} (load type {kind})"}
    rate = load.get("requested_rate")
    if kind == "concurrent" or rate is None:
        res.update(_closed(load.get("concurrency")))
    else:
        res.update(_open(float(rate), kind, 1.0 if kind == "poisson" else 0.0, ok.get("count"), None))
    return res
