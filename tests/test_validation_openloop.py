"""Open-loop runs (requests at a fixed rate): importers per tool, scoring by simulation, its own group.

The files here are synthetic (the shipped MLPerf runs are checked in
``test_validation_openloop_mlperf.py``); their field names and structure follow each tool's result
writer (see ``perfmodel/validation/openloop_import.py`` for the sources and versions): vLLM
``vllm/benchmarks/serve.py`` ``result_json`` (``request_rate``, ``burstiness``, ``max_concurrency``,
``completed``); AIPerf ``profile_export_aiperf.json`` (``input_config.loadgen.request_rate`` /
``request_rate_mode``, metric blocks); GuideLLM v0.7.3 ``benchmarks.json``
(``benchmarks[i].config.strategy``, ``metrics.<name>.successful.mean``); inference-perf v0.6.1
``stage_N_lifecycle_metrics.json`` (``load_summary.requested_rate``, ``successes.latency.*`` in seconds)
with its ``config.yaml`` (``load.type``) beside it.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from perfmodel.cli import main
from perfmodel.core.step import StepModel
from perfmodel.engine.calibration import load_profile
from perfmodel.errors import PerfmodelError
from perfmodel.validation.arrivals import CONSTANT_CV
from perfmodel.validation.importers import MeasuredDeployment, import_results, read_results
from perfmodel.validation.models import resolve_model
from perfmodel.validation.predict import engines_under
from perfmodel.validation.predict_openloop import DEFAULT_REQUESTS, peak_in_flight, simulate_row
from perfmodel.validation.rows import OPEN_LOOP_SKIP, map_rows
from perfmodel.validation.run import validate_file, validate_serving

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
DEP = MeasuredDeployment(system="h100_sxm", backend="vllm", tp=1)
N = 120   # requests each synthetic run completed (the simulation sends as many)

VLLM = {"date": "20250101-120000", "backend": "vllm", "model_id": MODEL, "num_prompts": N,
        "request_rate": 4.0, "burstiness": 0.25, "max_concurrency": None, "duration": 50.0, "completed": N,
        "total_input_tokens": N * 1024, "total_output_tokens": N * 128, "mean_ttft_ms": 80.0,
        "mean_tpot_ms": 9.0}


def _block(avg, unit="ms"):
    return {"unit": unit, "avg": avg, "p50": avg, "p99": avg * 1.5}


AIPERF = {"time_to_first_token": _block(75.0), "inter_token_latency": _block(8.5),
          "input_sequence_length": _block(1024, "tokens"), "output_sequence_length": _block(128, "tokens"),
          "request_count": {"unit": "requests", "avg": N},
          "input_config": {"endpoint": {"model_names": [MODEL]},
                           "loadgen": {"request_rate": 3.0, "request_rate_mode": "constant"}}}


def _dist(mean):
    return {"successful": {"mean": mean, "median": mean, "count": N}, "total": {"mean": mean}}


def _guidellm_benchmark(strategy, ttft_ms, itl_ms):
    return {"type_": "generative_benchmark", "config": {"strategy": strategy, "backend": {"model": MODEL}},
            "metrics": {"request_totals": {"successful": N, "incomplete": 0, "errored": 0, "total": N},
                        "time_to_first_token_ms": _dist(ttft_ms), "inter_token_latency_ms": _dist(itl_ms),
                        "time_per_output_token_ms": _dist(itl_ms * 1.5),
                        "prompt_token_count": _dist(1024), "output_token_count": _dist(128)}}


GUIDELLM = {"metadata": {"version": 2, "guidellm_version": "0.7.3"},
            "benchmarks": [_guidellm_benchmark({"type_": "synchronous"}, 60.0, 7.5),
                           _guidellm_benchmark({"type_": "poisson", "rate": 2.0, "random_seed": 42}, 65.0, 8.0),
                           _guidellm_benchmark({"type_": "constant", "rate": 6.0}, 70.0, 8.5),
                           _guidellm_benchmark({"type_": "throughput", "max_concurrency": 512}, 900.0, 30.0)]}

INFERENCE_PERF = {"benchmark_time_seconds": 40.0,
                  "load_summary": {"count": N, "send_duration": 39.8, "requested_rate": 5.0, "achieved_rate": 5.02},
                  "successes": {"count": N, "latency": {"time_to_first_token": {"mean": 0.072, "p90": 0.09},
                                                        "time_per_output_token": {"mean": 0.0088},
                                                        "request_latency": {"mean": 1.19}},
                                "prompt_len": {"mean": 1024.0}, "output_len": {"mean": 128.0}},
                  "failures": {"count": 0}}


@pytest.fixture
def files(tmp_path):
    out = {}
    for name, data in (("vllm", VLLM), ("aiperf", AIPERF), ("guidellm", GUIDELLM)):
        out[name] = tmp_path / f"{name}.json"
        out[name].write_text(json.dumps(data))
    stage = tmp_path / "reports-20260101-000000"
    stage.mkdir()
    out["inference-perf"] = stage / "stage_0_lifecycle_metrics.json"
    out["inference-perf"].write_text(json.dumps(INFERENCE_PERF))
    (stage / "config.yaml").write_text("load:\n  type: poisson\n  stages:\n  - rate: 5\n    duration: 40\n")
    bare = tmp_path / "bare"
    bare.mkdir()
    out["inference-perf-bare"] = bare / "stage_0_lifecycle_metrics.json"
    out["inference-perf-bare"].write_text(json.dumps(INFERENCE_PERF))
    return out


def test_each_format_reads_rate_and_arrival_process(files):
    v = read_results(files["vllm"])[0]
    assert (v["arrival"], v["rate_requests_per_s"], v["arrival_process"]) == ("open", 4.0, "gamma")
    assert v["arrival_cv"] == pytest.approx(2.0) and v["requests"] == N   # burstiness 0.25: CV 1/sqrt(0.25)
    a = read_results(files["aiperf"])[0]
    assert (a["arrival"], a["rate_requests_per_s"], a["arrival_process"], a["requests"]) == ("open", 3.0, "constant", N)
    g = read_results(files["guidellm"])
    assert [r["arrival"] for r in g] == ["closed", "open", "open", "open"]
    assert g[0]["concurrency"] == 1 and (g[1]["arrival_process"], g[1]["rate_requests_per_s"]) == ("poisson", 2.0)
    assert g[1]["tpot_ms"] == 8.0 and g[1]["isl"] == 1024 and g[1]["model"] == MODEL   # ITL, not TPOT-with-first
    assert math.isnan(g[3]["rate_requests_per_s"]) and g[3]["arrival_process"] == "throughput"
    i = read_results(files["inference-perf"])[0]
    assert (i["ttft_ms"], i["tpot_ms"]) == (pytest.approx(72.0), pytest.approx(8.8))
    assert (i["rate_requests_per_s"], i["arrival_process"], i["requests"]) == (5.0, "poisson", N)   # config.yaml
    assert read_results(files["inference-perf-bare"])[0]["arrival_process"] == "constant"    # tool default
    assert read_results(files["inference-perf-bare"], "poisson")[0]["arrival_process"] == "poisson"


def test_guidellm_v0_3_layout(tmp_path):
    """GuideLLM v0.3.0 (``src/guidellm/benchmark/benchmark.py``): strategy under ``args``, request totals
    beside ``metrics``, the model in ``worker.backend_model``."""
    b = _guidellm_benchmark({"type_": "poisson", "rate": 1.5}, 65.0, 8.0)
    b["args"] = {"strategy": b.pop("config")["strategy"]}
    b["request_totals"] = b["metrics"].pop("request_totals")
    b["worker"] = {"type_": "generative_requests_worker", "backend_model": MODEL}
    p = tmp_path / "old.json"
    p.write_text(json.dumps({"benchmarks": [b]}))
    r = read_results(p)[0]
    assert (r["rate_requests_per_s"], r["arrival_process"], r["requests"], r["model"]) == (1.5, "poisson", N, MODEL)


def test_closed_loop_files_stay_closed(tmp_path):
    p = tmp_path / "closed.json"
    p.write_text(json.dumps(dict(VLLM, request_rate="inf", max_concurrency=16)))
    row = import_results([p], DEP).iloc[0]
    assert row["arrival"] == "closed" and row["batch_size"] == 16 and row["rate_requests_per_s"] == ""


def test_round_trip_every_format_predicts_finite_at_the_recorded_rate(files):
    """file -> rows -> simulation: finite predictions, the simulated arrival rate is the recorded one
    (within 4 standard errors of a rate estimated from k replications of n gaps with CV c:
    c / sqrt(n k)), closed and open rows in separate groups, the unusable benchmark skipped by name."""
    rows = import_results([files["vllm"], files["aiperf"], files["guidellm"], files["inference-perf"]],
                          DEP.__class__(**{**DEP.__dict__, "model": MODEL}))
    assert list(rows["arrival"]) == ["open", "open", "closed", "open", "open", "open", "open"]
    run = validate_serving(rows)
    assert run.summary["rows"] == 1 and run.summary["predicted"] == 1          # the GuideLLM synchronous one
    o = run.summary["open_loop"]
    assert (o["rows"], o["predicted"], o["skipped"]) == (6, 5, 1)
    assert "arrival_process='throughput' is not simulated" in next(iter(o["skipped_reasons_detail"]))
    p = run.open_loop
    assert np.isfinite(p[["predicted_ttft_mean_s", "predicted_tpot_mean_s"]].to_numpy()).all()
    assert o["ttft"]["n"] == 5 and set(o["by"]["arrival_process"]) == {"poisson", "gamma", "constant"}
    for _, r in p.iterrows():
        cv = {"poisson": 1.0, "gamma": 2.0, "constant": CONSTANT_CV}[r["arrival_process"]]
        se = cv / math.sqrt((r["simulated_requests"] - 1) * r["replications"])
        assert r["simulated_rate_requests_per_s"] == pytest.approx(r["rate_requests_per_s"], rel=4 * se + 0.01), r["id"]
        assert r["simulated_requests"] == N and 3 <= r["replications"] <= 8
    assert set(p["id"]).isdisjoint(run.predictions["id"])     # never mixed into the closed-loop figures


def test_mixed_table_keeps_closed_figures_and_row_positions(files, tmp_path):
    """A CSV with closed rows and open rows (one without a request count: the default count is sent):
    the closed-loop summary counts only the closed rows, skipped open rows keep their file position."""
    closed = pd.read_csv("perfmodel/data/validation/serving_measured.csv").query(
        "model_path == @MODEL and system == 'h100_sxm' and mode == 'agg'").head(2)
    opened = import_results([files["vllm"], files["aiperf"]], DEP)
    opened["requests"] = opened["requests"].astype(object)
    opened.loc[1, "requests"] = ""
    opened.loc[0, "arrival_process"] = "weibull"
    table = pd.concat([closed, opened], ignore_index=True)
    path = tmp_path / "mixed.csv"
    table.to_csv(path, index=False)
    run = validate_file(path)
    assert run.summary["rows"] == len(closed) and not run.predictions["id"].isin(opened["id"]).any()
    o = run.summary["open_loop"]
    assert (o["rows"], o["predicted"]) == (2, 1) and run.open_loop.iloc[0]["simulated_requests"] == DEFAULT_REQUESTS
    assert validate_serving(table).summary["open_loop"]["skipped"] == 1
    _, skipped = map_rows(table, arrival="open")
    assert list(skipped["row"]) == [len(closed)] and "weibull" in skipped.iloc[0]["reason"]


def test_closed_loop_mapping_never_answers_for_open_rows(files):
    rows = import_results([files["vllm"]], DEP)
    mapped, skipped = map_rows(rows)
    assert mapped.empty and list(skipped["reason"]) == [OPEN_LOOP_SKIP]
    mapped, skipped = map_rows(rows, arrival="open")
    assert skipped.empty and mapped.iloc[0]["rate_requests_per_s"] == 4.0 and np.isnan(mapped.iloc[0]["concurrency"])


@pytest.mark.parametrize(("column", "value", "why"), [
    ("rate_requests_per_s", "fast", "rate_requests_per_s='fast' is not a finite rate > 0"),
    ("arrival_process", "bursty", "arrival_process='bursty' is not simulated"),
    ("arrival_cv", "", "arrival_cv=None is not a number > 0"),
    ("replicas", 1.5, "replicas=1.5 is not an integer >= 1"),
])
def test_bad_open_loop_fields_are_skipped_with_the_field_and_value(files, column, value, why):
    rows = import_results([files["vllm"]], DEP).assign(**{column: value})
    _, skipped = map_rows(rows, arrival="open")
    assert why in skipped.iloc[0]["reason"]


def test_a_client_cap_is_scored_only_where_it_does_not_bind(tmp_path):
    """vLLM ``--request-rate 4 --max-concurrency C``: with C = 2 the simulation without the cap has more
    requests in flight (the cap binds: skipped, both numbers named); with C = 1000 it never reaches it
    (the cap did not bind: scored as the plain open loop, same prediction)."""
    rows = []
    for cap in (2, 1000, None):
        p = tmp_path / f"cap{cap}.json"
        p.write_text(json.dumps(dict(VLLM, max_concurrency=cap, burstiness=1.0)))
        rows.append(import_results([p], DEP))
    run = validate_serving(pd.concat(rows, ignore_index=True))
    o = run.summary["open_loop"]
    assert (o["predicted"], o["skipped"]) == (2, 1)
    reason = next(iter(o["skipped_reasons_detail"]))
    assert "max_concurrency=2: the cap binds" in reason
    assert int(reason.split("up to ")[1].split()[0]) > 2
    p = run.open_loop
    assert p["simulated_peak_in_flight"].max() <= 1000
    assert p.iloc[0][["predicted_ttft_mean_s", "predicted_tpot_mean_s"]].tolist() == \
        p.iloc[1][["predicted_ttft_mean_s", "predicted_tpot_mean_s"]].tolist()


def test_peak_in_flight_by_hand():
    assert peak_in_flight(np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])) == 1    # back to back
    assert peak_in_flight(np.array([0.0, 0.5, 0.6]), np.array([1.0, np.nan, 0.7])) == 3  # one never ends
    assert peak_in_flight(np.array([0.0, 0.1, 5.0]), np.array([4.0, 4.0, 6.0])) == 2


@pytest.fixture(scope="module")
def replica():
    engine = engines_under(load_profile("calibrated"))["vllm"]
    sm = StepModel(resolve_model(MODEL), "h100-sxm", tp=1, weights="bf16", activations="bf16", kv_cache="bf16")
    return sm, engine


def test_far_below_capacity_ttft_is_idle_prefill_plus_request_terms(replica):
    """At 0.02 req/s (a request every 50 s, each done in ~1 s) no request waits or shares a step: the
    TTFT is the request overhead + one 1024-token prefill step + first_token_steps decode steps at
    batch 1 (taken at the mean context isl + osl/2), all from the engine's step model by hand."""
    sm, engine = replica
    isl, osl = 1024, 128
    prefill = float(engine.step(sm).step_time(0, 0, isl))
    decode = float(engine.step(sm).step_time(1, isl + osl / 2, 0))
    hand = engine.request_overhead + prefill + engine.terms.first_token_steps * decode
    p = simulate_row(sm, engine, isl, osl, 0.02, 1.0, requests=100)
    assert p.ttft_mean_s == pytest.approx(hand, rel=0.02)
    assert p.tpot_mean_s == pytest.approx(decode, rel=0.02)


def test_ttft_grows_toward_capacity(replica):
    """Capacity = completions per second when overloaded (40 req/s); TTFT rises with the rate and is
    more than twice the idle TTFT at 90 % of capacity."""
    sm, engine = replica
    cap = simulate_row(sm, engine, 1024, 128, 40.0, 1.0, requests=300).requests_per_s
    ttft = [simulate_row(sm, engine, 1024, 128, f * cap, 1.0, requests=300).ttft_mean_s for f in (0.01, 0.5, 0.9)]
    assert ttft[0] < ttft[1] < ttft[2] and ttft[2] > 2 * ttft[0]


def test_cli_reports_the_open_loop_group_apart(files, capsys, tmp_path):
    out = tmp_path / "pred.csv"
    assert main(["validate", "--data", str(files["inference-perf"]), "--system", "h100_sxm", "--backend", "vllm",
                 "--model", MODEL, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "open loop (request rate, simulated): 1 rows, 1 predicted" in text and "poisson" in text
    written = pd.read_csv(out)
    assert list(written["arrival"]) == ["open"] and written["predicted_ttft_mean_s"].notna().all()


def test_simulation_is_seeded_and_states_its_confidence(replica):
    """Two calls give the same means (seeds 0, 1, ...); replications stop once both 95 % half-widths are
    within 5 % of the mean, and those half-widths are the ones reported."""
    sm, engine = replica
    a = simulate_row(sm, engine, 512, 64, 5.0, 1.0, requests=150)
    assert a == simulate_row(sm, engine, 512, 64, 5.0, 1.0, requests=150)
    assert a.replications == 8 or max(a.ttft_mean_ci_pct, a.tpot_mean_ci_pct) <= 5.0
    assert 0 < a.ttft_mean_ci_pct < 100 and 0 < a.tpot_mean_ci_pct < 100
    for old, new in (("ci_ttft_pct", "ttft_mean_ci_pct"), ("ci_tpot_pct", "tpot_mean_ci_pct")):   # old names
        with pytest.warns(DeprecationWarning, match=f"OpenLoopPrediction.{old} is deprecated, use "
                                                    f"OpenLoopPrediction.{new}"):
            assert getattr(a, old) == getattr(a, new)


def test_two_replicas_at_twice_the_rate_wait_no_longer_than_one(replica):
    """Least-loaded routing pools two replicas: at twice the rate they queue no more than one replica
    at the rate (margin: the two reported half-widths)."""
    sm, engine = replica
    one = simulate_row(sm, engine, 1024, 128, 20.0, 1.0, requests=200)
    two = simulate_row(sm, engine, 1024, 128, 40.0, 1.0, replicas=2, requests=400)
    assert two.rate_requests_per_s == pytest.approx(40.0, rel=0.1)
    assert two.ttft_mean_s <= one.ttft_mean_s * (1 + (one.ttft_mean_ci_pct + two.ttft_mean_ci_pct) / 100)


def test_disaggregated_open_loop_row_at_low_rate_is_prefill_transfer_and_request_terms():
    """A shipped P/D row (Qwen3-32B, H100, SGLang, 5 prefill + 11 decode workers) replayed open loop at
    0.05 req/s: TTFT = request overhead + the prompt on the prefill pool + the KV transfer
    (request_kv_transfer_time, as the closed-loop path) + first_token_steps decode steps at batch 1,
    by hand within 2 %; replicas other than 1 on a P/D row are skipped with the reason."""
    from perfmodel.deployment.disagg import request_kv_transfer_time
    from perfmodel.validation.stepmodels import StepModelCache, pool_keys

    df = pd.read_csv("perfmodel/data/validation/serving_measured.csv")
    row = df[(df.model_path == "Qwen/Qwen3-32B") & (df["mode"] == "disagg") & df.prefill_num_workers.notna()].head(1)
    row = row.assign(arrival="open", rate_requests_per_s=0.05, arrival_process="poisson", requests=40)
    p = validate_serving(row).open_loop.iloc[0]
    m = map_rows(row, arrival="open")[0].iloc[0]
    decode_key, prefill_key = pool_keys(m)
    cache = StepModelCache()
    dsm, psm = cache.get(decode_key), cache.get(prefill_key)
    engine = engines_under(load_profile("calibrated"))["sglang"]
    isl, osl = int(m["isl"]), int(m["osl"])
    decode = float(engine.step(dsm).step_time(1, isl + osl / 2, 0))
    kv = float(request_kv_transfer_time(psm, int(m["p_workers"]) * psm.devices + int(m["d_workers"]) * dsm.devices,
                                        isl))
    hand = engine.request_overhead + float(engine.step(psm).step_time(0, 0, isl)) + kv \
        + engine.terms.first_token_steps * decode
    assert (m["p_workers"], m["d_workers"]) == (5, 11)
    assert p["predicted_ttft_mean_s"] == pytest.approx(hand, rel=0.02)
    assert p["predicted_tpot_mean_s"] == pytest.approx(decode, rel=0.02)
    o = validate_serving(row.assign(replicas=2)).summary["open_loop"]
    assert o["predicted"] == 0 and "replicas=2 on a disaggregated row" in next(iter(o["skipped_reasons_detail"]))


def test_recorded_features_reach_the_simulation(files):
    """A prefix-cache hit rate of 0.5 shortens the TTFT (half of each prompt is not computed); EAGLE k=3
    at acceptance 0.7 (2.5 tokens per verification step) cuts the TPOT by more than a quarter;
    ``spec_decode = off`` is the plain row to the last digit."""
    rows = import_results([files["vllm"]], DEP).assign(arrival_process="poisson", requests=60)
    table = pd.concat([rows, rows.assign(id="hit", prefix_hit_rate=0.5),
                       rows.assign(id="spec", spec_decode="eagle:k=3,accept=0.7"),
                       rows.assign(id="off", spec_decode="off")], ignore_index=True)
    p = validate_serving(table).open_loop.set_index("id")
    plain = p.loc[rows.iloc[0]["id"]]
    assert p.loc["hit", "predicted_ttft_mean_s"] < plain["predicted_ttft_mean_s"]
    assert p.loc["spec", "predicted_tpot_mean_s"] < 0.75 * plain["predicted_tpot_mean_s"]
    assert p.loc["off", ["predicted_ttft_mean_s", "predicted_tpot_mean_s"]].tolist() == \
        plain[["predicted_ttft_mean_s", "predicted_tpot_mean_s"]].tolist()


def test_an_inference_perf_report_folder_gives_one_row_per_stage(files, tmp_path, capsys):
    folder = files["inference-perf"].parent
    later = dict(INFERENCE_PERF, load_summary={**INFERENCE_PERF["load_summary"], "requested_rate": 0.5})
    (folder / "stage_10_lifecycle_metrics.json").write_text(json.dumps(later))
    (folder / "summary_lifecycle_metrics.json").write_text(json.dumps(INFERENCE_PERF))   # not a stage
    assert main(["validate", "--data", str(folder), "--system", "h100_sxm", "--backend", "vllm", "--model", MODEL,
                 "--format", "json"]) == 0
    o = json.loads(capsys.readouterr().out)["open_loop"]
    assert (o["rows"], o["predicted"]) == (2, 2)
    run = validate_file(folder, deployment=DEP.__class__(**{**DEP.__dict__, "model": MODEL}))
    assert list(run.open_loop["rate_requests_per_s"]) == [5.0, 0.5]                    # by stage number
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PerfmodelError, match="stage_N_lifecycle_metrics.json files; found none"):
        validate_file(empty, deployment=DEP)
