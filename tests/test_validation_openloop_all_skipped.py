"""Open-loop rows that cannot be simulated are skipped with the reason. A serving file whose open-loop
rows are all skipped while mapping (here an unknown system) is validated: the open-loop group reports
0 predicted with the reason (it raised KeyError 'tpot_pct_error')."""

from __future__ import annotations

import pandas as pd

from perfmodel.validation.run import validate_serving


def test_open_rows_all_skipped_at_mapping_are_reported():
    one = pd.read_csv("tests/data/serving_tiny.csv")
    df = pd.concat([one, one], ignore_index=True)
    df["arrival"] = ["closed", "open"]
    df["rate_requests_per_s"] = [None, 1.0]
    df.loc[1, "system"] = "nosuchsystem"
    run = validate_serving(df)
    group = run.summary["open_loop"]
    assert (group["rows"], group["predicted"], group["skipped"]) == (1, 0, 1)
    assert group["skipped_reasons_detail"] == {"unknown system: nosuchsystem": 1}
    assert group["tpot"]["n"] == 0 and group["ttft"]["median_abs_pct_error"] is None
    assert len(run.open_loop) == 0 and len(run.predictions) == 1      # the closed row is still scored


def test_an_open_row_without_room_in_the_engines_pool_is_skipped():
    """As the closed-loop path does (engine_kv_tokens <= 0): it was simulated with every request rejected
    and kept as a NaN prediction."""
    from perfmodel.engine.engine import Engine
    from perfmodel.validation.predict_disagg import NO_KV_REASON
    from perfmodel.validation.predict_openloop import predict_open_loop
    from perfmodel.validation.rows import map_rows
    from perfmodel.validation.stepmodels import StepModelCache

    df = pd.read_csv("tests/data/serving_tiny.csv").assign(arrival="open", rate_requests_per_s=1.0, requests=50)
    deployments = map_rows(df, arrival="open")[0].rename(columns={"model_key": "model"})
    tight = {"vllm": Engine.load("vllm", gpu_memory_utilization=0.2)}   # 8B bf16 on one H100: pool 0
    predictions, skipped = predict_open_loop(deployments, tight, StepModelCache("calibrated"))
    assert len(predictions) == 0 and skipped["reason"].tolist() == [NO_KV_REASON]
    roomy = {"vllm": Engine.load("vllm")}
    predictions, skipped = predict_open_loop(deployments, roomy, StepModelCache("calibrated"))
    assert len(skipped) == 0 and predictions["predicted_ttft_mean_s"].iloc[0] > 0


def test_the_old_rate_column_is_read_with_a_warning(tmp_path, capsys):
    """A measurement table written before the rename (``request_rate_rps``) maps to the same rows, with a
    DeprecationWarning naming the new column (``rate_requests_per_s``, the glossary's arrival rate); the
    command line says it once as a note on stderr."""
    import warnings

    import pytest

    from perfmodel.cli import main
    from perfmodel.validation.rows import map_rows

    new = pd.read_csv("tests/data/serving_tiny.csv").assign(arrival="open", rate_requests_per_s=2.5, requests=50)
    old = new.rename(columns={"rate_requests_per_s": "request_rate_rps"})
    with pytest.warns(DeprecationWarning, match=r"\['request_rate_rps'\] renamed to \['rate_requests_per_s'\]"):
        got = map_rows(old, arrival="open")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        want = map_rows(new, arrival="open")[0]
    assert "request_rate_rps" not in got.columns and got["rate_requests_per_s"].tolist() == [2.5]
    pd.testing.assert_frame_equal(got, want)
    path = tmp_path / "old.csv"
    old.assign(system="nosuchsystem").to_csv(path, index=False)   # skipped at mapping: nothing simulated
    assert main(["validate", "--data", str(path), "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert err.count("perfmodel validate: note:") == 1 and "'rate_requests_per_s'" in err
