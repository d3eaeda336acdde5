"""A serving file whose open-loop rows are all skipped while mapping (here an unknown system) is
validated: the open-loop group reports 0 predicted with the reason (it raised KeyError
'tpot_pct_error')."""

from __future__ import annotations

import pandas as pd

from perfmodel.validation.run import validate_serving


def test_open_rows_all_skipped_at_mapping_are_reported():
    one = pd.read_csv("tests/data/serving_tiny.csv")
    df = pd.concat([one, one], ignore_index=True)
    df["arrival"] = ["closed", "open"]
    df["request_rate_rps"] = [None, 1.0]
    df.loc[1, "system"] = "nosuchsystem"
    run = validate_serving(df)
    group = run.summary["open_loop"]
    assert (group["rows"], group["predicted"], group["skipped"]) == (1, 0, 1)
    assert group["skipped_reasons_detail"] == {"unknown system: nosuchsystem": 1}
    assert group["tpot"]["n"] == 0 and group["ttft"]["median_abs_pct_error"] is None
    assert len(run.open_loop) == 0 and len(run.predictions) == 1      # the closed row is still scored
