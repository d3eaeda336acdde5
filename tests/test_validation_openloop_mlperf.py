"""The shipped open-loop measurements (``perfmodel/data/validation/openloop``) and the steady-state means
the open-loop replay takes for runs longer than it simulates.

The hand-read values below were copied from the MLPerf Inference ``mlperf_log_summary.txt`` files named in
each row's ``summary_path`` (``mlcommons/inference_results_v4.0`` / ``_v4.1`` at the commits in
``source_commit``), independently of the CSV: they check the file, not the model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import perfmodel.validation.predict_openloop as po
from perfmodel.core.step import StepModel
from perfmodel.engine.calibration import load_profile
from perfmodel.validation import shipped_path
from perfmodel.validation.arrivals import open_loop_mask
from perfmodel.validation.models import resolve_model
from perfmodel.validation.predict import engines_under
from perfmodel.validation.rows import map_rows

OPEN_DIR = shipped_path("open-loop-mlperf").parent
SHIPPED = sorted(OPEN_DIR.glob("*.csv"))
MLPERF = pd.read_csv(shipped_path("open-loop-mlperf")).set_index("id")

#: id -> (Scheduled samples/s, Completed samples/s, Completed tokens/s, Mean First Token latency ns,
#: Mean Time to Output Token ns), as printed in the run's summary.
READ = {
    "mlperf40_nvidia_h100x2_llama2-70b-99.9_server": (18.36, 18.06, 5271.98, 359334888, 133326973),
    "mlperf41_nvidia_h100x8_llama2-70b-99.9_server": (75.10, 74.42, 21605.79, 275926440, 154960329),
    "mlperf41_nvidia_h200x8_llama2-70b-99_server": (101.25, 100.35, 29228.22, 198269106, 123263268),
    "mlperf41_amd_mi300xx1_llama2-70b-99.9_server": (8.62, 8.59, 2520.27, 401873796, 153377770),
    "mlperf41_amd_mi300xx8_llama2-70b-99_server": (73.66, 71.74, 21028.23, 1006329670, 143097185),
    "mlperf51_nvidia_b200x8_llama2-70b-99_interactive": (220.11, 218.82, 59545.45, 69025796, 34209789),
    "mlperf51_amd_mi300xx8_llama2-70b-99_interactive": (29.62, 29.41, 8840.42, 201330486, 32102490),
}
#: OpenOrca set used by every llama2-70b run: 24,576 samples, 5,463,976 prompt tokens in all.
OPENORCA_SAMPLES, OPENORCA_PROMPT_TOKENS = 24576, 5463976


def test_open_loop_folder_ships_csv_files_with_a_readme():
    assert SHIPPED and (OPEN_DIR / "README.md").is_file()
    text = (OPEN_DIR / "README.md").read_text(encoding="utf-8")
    assert all(f"`{p.name}`" in text for p in SHIPPED)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_file_maps_every_row_as_open_loop(path):
    """All rows are open loop and map to a deployment (none skipped: model, system, layout and arrival
    fields are all understood); the sum of replicas x TP is the GPU count the row records."""
    df = pd.read_csv(path)
    assert open_loop_mask(df).all()
    mapped, skipped = map_rows(df, arrival="open")
    assert skipped.empty and len(mapped) == len(df)
    assert (mapped["replicas"] * mapped["tp"] == df["gpus"]).all()


@pytest.mark.parametrize("run", sorted(READ))
def test_hand_read_summary_values(run):
    sched, done, tokens, ttft_ns, tpot_ns = READ[run]
    row = MLPERF.loc[run]
    assert row["rate_requests_per_s"] == sched
    assert row["completed_samples_per_s"] == done and row["completed_tokens_per_s"] == tokens
    assert row["silicon_ttft_ms"] == pytest.approx(ttft_ns / 1e6, abs=1e-3)
    assert row["silicon_tpot_ms"] == pytest.approx(tpot_ns / 1e6, abs=1e-3)
    assert row["osl"] == round(tokens / done)


def test_derived_columns_follow_their_stated_rules():
    """ISL is the OpenOrca mean; every run is Poisson at a scheduled rate within 3 % of its target;
    request counts are whole multiples of the set that cover rate x minimum duration."""
    assert (MLPERF["isl"] == round(OPENORCA_PROMPT_TOKENS / OPENORCA_SAMPLES)).all()
    assert MLPERF["isl"].iloc[0] == 222
    assert (MLPERF["arrival_process"] == "poisson").all()
    assert np.allclose(MLPERF["rate_requests_per_s"], MLPERF["target_qps"], rtol=0.03)
    assert (MLPERF["requests"] % OPENORCA_SAMPLES == 0).all()
    assert (MLPERF["requests"] >= MLPERF["target_qps"] * MLPERF["min_duration_s"]).all()
    assert (MLPERF["requests"] > po.MAX_REQUESTS).all()   # all scored on the steady state
    read = MLPERF[MLPERF["requests_basis"] == "read"]
    assert len(read) == 11 and read["detail_path"].str.endswith("mlperf_log_detail.txt").all()
    for scenario in ("Server", "Interactive"):
        rows = MLPERF[MLPERF["scenario"] == scenario]
        assert rows["summary_path"].str.endswith(f"{scenario}/performance/run_1/mlperf_log_summary.txt").all()
    assert (MLPERF["scenario"] == "Interactive").sum() == 3
    assert MLPERF.loc[read.index, "test_datetime"].str.match(r"20(24|25)-\d\d-\d\dT").all()


@pytest.fixture(scope="module")
def replica():
    engine = engines_under(load_profile("calibrated"))["vllm"]
    sm = StepModel(resolve_model("meta-llama/Llama-3.1-8B-Instruct"), "h100-sxm", tp=1, weights="bf16",
                   activations="bf16", kv_cache="bf16")
    return sm, engine


def _means_by_hand(sm, engine, rate, n, window, seeds):
    from perfmodel.serving import simulate
    from perfmodel.serving.workload import Workload

    ttft, tpot = [], []
    for seed in range(seeds):
        res = simulate(sm, Workload.fixed(1024, 128, rate=rate, cv=1.0), engine=engine, replicas=1,
                       requests=n, seed=seed, timer_cache={})
        keep = res.completed & (np.arange(res.n) >= window[0]) & (np.arange(res.n) < window[1])
        ttft.append(np.mean(res.request_ttft_s[keep]))
        tpot.append(np.nanmean(res.request_tpot_s[keep]))
    return float(np.mean(ttft)), float(np.mean(tpot))


def test_a_run_longer_than_the_simulation_is_scored_on_its_steady_state(monkeypatch, replica):
    """A run of 10^5 requests with MAX_REQUESTS = 200 (lengthened up to 800): the means are those of the
    arrivals in STEADY_STATE_WINDOW of a simulation as long as steady_length chose, by hand from the same
    seeded simulations; a run of 200 is averaged whole. At 20 req/s (capacity ~24) the batch grows over
    the first arrivals and shrinks over the last, so the whole-run TPOT is the lower."""
    monkeypatch.setattr(po, "MAX_REQUESTS", 200)
    monkeypatch.setattr(po, "MAX_STEADY_REQUESTS", 800)
    sm, engine = replica
    rate = 20.0
    long = po.simulate_row(sm, engine, 1024, 128, rate, 1.0, requests=10**5)
    whole = po.simulate_row(sm, engine, 1024, 128, rate, 1.0, requests=200)
    n = long.requests
    assert n in (200, 400, 800) and whole.requests == 200 and po.STEADY_STATE_WINDOW == (0.25, 0.75)
    by_hand = _means_by_hand(sm, engine, rate, n, (n // 4, 3 * n // 4), long.replications)
    assert (long.ttft_mean_s, long.tpot_mean_s) == pytest.approx(by_hand, rel=1e-9)
    assert (whole.ttft_mean_s, whole.tpot_mean_s) == pytest.approx(_means_by_hand(sm, engine, rate, 200, (0, 200),
                                                                        whole.replications), rel=1e-9)
    assert whole.tpot_mean_s < long.tpot_mean_s


def test_steady_length_doubles_until_the_window_opens_after_the_fill(replica):
    """By hand: the length chosen is the first of n, 2n, 4n ... (capped) whose seed-0 simulation opens
    its window at least FILL_LATENCIES mean latencies after the first arrival; shorter ones do not."""
    from perfmodel.serving import simulate
    from perfmodel.serving.workload import Workload

    sm, engine = replica
    wl = Workload.fixed(1024, 128, rate=20.0, cv=1.0)

    def opens_after_fill(n):
        res = simulate(sm, wl, engine=engine, replicas=1, requests=n, seed=0, timer_cache={})
        w = np.mean(res.finish_s[res.completed] - res.arrival_s[res.completed])
        return res.arrival_s[n // 4] - res.arrival_s[0] >= po.FILL_LATENCIES * w

    chosen = po.steady_length(sm, wl, engine, 1, 50, 10**5, {})
    assert chosen in (50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, po.MAX_STEADY_REQUESTS)
    assert all(not opens_after_fill(k) for k in (50, 100, 200, 400, 800) if k < chosen)
    assert chosen == po.MAX_STEADY_REQUESTS or opens_after_fill(chosen)
    assert po.steady_length(sm, wl, engine, 1, 50, 60, {}) <= 60     # never longer than the run


@pytest.mark.slow
def test_validate_scores_shipped_mlperf_rows(tmp_path):
    """``perfmodel validate`` on two shipped rows (the whole file takes minutes: ``docs/validation.md``
    reports it): both simulated, none skipped, each at least MAX_REQUESTS long (steady state)."""
    from perfmodel.validation.run import validate_file

    path = tmp_path / "two.csv"
    rows = pd.read_csv(shipped_path("open-loop-mlperf")).query("scenario == 'Interactive'").head(2)
    rows.to_csv(path, index=False)
    run = validate_file(path)
    o = run.summary["open_loop"]
    assert (o["rows"], o["predicted"], o["skipped"]) == (2, 2, 0)
    assert (run.open_loop["simulated_requests"] >= po.MAX_REQUESTS).all()
    assert run.open_loop[["predicted_ttft_mean_s", "predicted_tpot_mean_s"]].gt(0).all().all()
    assert Path(shipped_path("open-loop-mlperf")).stat().st_size < 1_000_000
