"""The project's own H200 per-op measurements (perfmodel/data/validation/own_h200, README there).

These rows were never used in a fit: the calibrated profiles come from TensorRT-LLM kernel tables, the
rows here from PyTorch's kernels on a lent H200. The tolerances are the issue's per-op targets.
"""

import numpy as np
import pandas as pd
import pytest

from perfmodel.hardware import load_accelerator
from perfmodel.validation import shipped_path
from perfmodel.validation.run import validate_file

TABLES = ("gemm", "attention-decode", "attention-prefill", "decode-step", "prefill-step", "decode-step-mha",
          "prefill-step-mha", "hbm-copy")


@pytest.fixture(scope="module")
def h200_bandwidth():
    return load_accelerator("h200-sxm").memory_bandwidth  # B/s, datasheet (4.8 TB/s)


def _validated(table, efficiency="calibrated"):
    return validate_file(shipped_path(f"own-h200-{table}"), efficiency=efficiency).predictions


@pytest.mark.parametrize("table", TABLES)
def test_every_row_carries_its_provenance(table):
    df = pd.read_csv(shipped_path(f"own-h200-{table}"))
    assert len(df) > 0
    assert set(df["device"]) == {"NVIDIA H200"} and set(df["system"]) == {"h200_sxm"}
    assert set(df["driver"].astype(str)) == {"580.159.04"} and set(df["date"]) == {"2026-11-30"}
    assert set(df["backend_version"]) == {"2.11.0+cu130"} and (df["runs"] == 3).all()
    assert set(df["timing"]) == ({"eager"} if table == "hbm-copy" else {"cuda_graph"})
    assert (df["latency_ms"] > 0).all() and (df["spread_pct"] >= 0).all()


def test_no_measurement_beats_the_datasheet_roofline():
    """max(F/P, D/B) with datasheet P and B is a lower bound on any kernel's time."""
    for table in ("gemm", "attention-decode", "attention-prefill", "decode-step", "prefill-step",
                  "decode-step-mha", "prefill-step-mha"):
        rows = _validated(table, "datasheet")
        assert len(rows) > 0 and (rows["predicted_ms"] <= rows["latency_ms"]).all(), table


def test_measured_bandwidths_stay_under_the_datasheet(h200_bandwidth):
    copy = pd.read_csv(shipped_path("own-h200-hbm-copy"))
    rate = 2 * copy["bytes"] / (copy["latency_ms"] * 1e-3)  # read + write
    assert np.allclose(rate, copy["bandwidth_GBps"] * 1e9, rtol=1e-3)
    assert ((0.75 * h200_bandwidth < rate) & (rate < h200_bandwidth)).all()  # 4.30 and 3.82 of 4.8 TB/s
    att = pd.read_csv(shipped_path("own-h200-attention-decode"))
    kv_bytes = 2 * att["batch_size"] * att["num_key_value_heads"] * att["kv_len"] * att["head_dim"] * 2
    assert (kv_bytes / (att["latency_ms"] * 1e-3)).max() < h200_bandwidth


def test_bf16_gemm_meets_the_per_op_target_on_unseen_measurements():
    rows = _validated("gemm")
    bf16 = rows[rows["dtype"] == "bfloat16"]
    assert len(bf16) == 90
    assert np.median(np.abs(bf16["error_pct"])) <= 10.0  # measured 9.6 %
    assert abs(np.median(bf16["error_pct"])) <= 10.0


def test_step_model_predicts_whole_decode_steps_within_the_target():
    """Llama-3.1-8B decode steps (plain PyTorch ops in a CUDA graph, no engine): measured 5.7 % median,
    all within 13 %; the remaining under-prediction at small batch is the unfused small ops."""
    rows = _validated("decode-step")
    assert len(rows) == 10
    assert np.median(np.abs(rows["error_pct"])) <= 10.0
    assert np.abs(rows["error_pct"]).max() <= 20.0
    # bandwidth-bound long-context rows: the kernel-level decode terms (not the fallback form, +23 %)
    big = rows[(rows["batch_size"] >= 64) & (rows["context"] == 4096)]
    assert (np.abs(big["error_pct"]) <= 10.0).all()


def test_a_step_table_skips_unknown_systems_and_bad_shapes_with_reasons(tmp_path):
    rows = pd.read_csv(shipped_path("own-h200-decode-step")).head(4).assign(prefill_tokens="")
    rows.loc[1, "system"] = "h900_sxm"
    rows.loc[2, "batch_size"] = -4
    rows.loc[3, ["batch_size", "prefill_tokens"]] = [0, "0"]
    path = tmp_path / "steps.csv"
    rows.to_csv(path, index=False)
    run = validate_file(path)
    assert run.kind == "step" and len(run.predictions) == 1  # an empty prefill_tokens cell is 0
    assert run.summary["skipped_reasons"] == {"unknown system h900_sxm": 1, "batch_size=-4 is not a number >= 0": 1,
                                              "no work: batch_size = prefill_tokens = 0": 1}


def test_decode_rows_count_the_new_token_in_the_context():
    """``context`` is the cached tokens before the step; the step model's context includes the new one."""
    from perfmodel.core.step import StepModel
    from perfmodel.validation.run import step_shape

    row = pd.read_csv(shipped_path("own-h200-decode-step")).iloc[-1]
    shape, why = step_shape(row)
    assert why == "" and shape[1] == row["context"] + 1
    predicted = float(StepModel("llama-3.1-8b", "h200-sxm").step_time(row["batch_size"], row["context"] + 1)) * 1e3
    assert _validated("decode-step").iloc[-1]["predicted_ms"] == pytest.approx(predicted)


@pytest.mark.slow
def test_the_own_measurements_page_is_up_to_date():
    """docs/own-measurements.md is regenerated from these rows and the shipped profiles."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "make_own_measurements_report.py"
    out = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_prefill_step_parts_match_the_profiled_kernels():
    """One 8192-token prefill of Llama-3.1-8B on H200, profiled: the step model's GEMM and attention parts
    are within 5 % of the kernels' time; the whole step is predicted 20-22 % fast because this PyTorch
    step runs its elementwise ops unfused (about 4x the model's elementwise time)."""
    from perfmodel.core.ops import StepShape
    from perfmodel.core.step import StepModel

    kernels = pd.read_csv(shipped_path("own-h200-prefill-breakdown"))
    measured = kernels[kernels["tokens"] == 8192].groupby("category")["time_ms"].sum()
    parts = StepModel("llama-3.1-8b", "h200-sxm").breakdown(StepShape.make(0.0, 0.0, 1.0, 8192.0, 0.0)).op_total
    ms = {k: float(np.ravel(v)[0]) * 1e3 for k, v in parts.items()}
    gemm = ms["attention_proj"] + ms["ffn"] + ms["embedding_head"]
    assert gemm == pytest.approx(measured["gemm"], rel=0.05)
    assert ms["attention"] == pytest.approx(measured["attention"], rel=0.05)
    assert ms["elementwise"] < 0.5 * measured["elementwise/other"]
    steps = _validated("prefill-step")
    assert ((steps["error_pct"] < 0) & (steps["error_pct"] > -25)).all()


def test_plain_mha_decode_steps_stay_within_the_reported_band():
    """Llama-2-7B (32 KV heads) decode steps: the coarse form the step model keeps for MHA is 13.4 %
    median, -17 to +24 % (docs/own-measurements.md reports the kernel-level alternative at 9.7 %)."""
    rows = _validated("decode-step-mha")
    assert len(rows) == 8 and set(rows["model"]) == {"meta-llama/Llama-2-7b-hf"}
    assert np.median(np.abs(rows["error_pct"])) <= 15.0
    assert np.abs(rows["error_pct"]).max() <= 25.0
