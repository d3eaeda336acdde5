"""P/D-disaggregated rows with speculative decoding (MTP): the decode pool runs the speculative step
(perfmodel/validation/predict_disagg.py), as ``steady_state_disagg`` does with an engine that carries
the speculation (the path of ``perfmodel estimate``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from perfmodel.deployment.disagg import request_kv_transfer_time
from perfmodel.engine.calibration import load_profile
from perfmodel.engine.speculative import parse_spec_decode
from perfmodel.serving import steady_state_disagg
from perfmodel.validation.data import shipped_path
from perfmodel.validation.predict import engines_under
from perfmodel.validation.run import serving_problem
from perfmodel.validation.stepmodels import StepModelCache, pool_keys

IDS = ["2026_03_25_deepseek_r1_b200_sxm_trtllm_fp8_disagg_8192x1024_c48_tp8_0_ep1_0_383",    # mtp:k=3, 1P + 6D
       "2026_03_25_deepseek_r1_b200_sxm_trtllm_fp8_disagg_1024x1024_c1184_tp8_0_ep8_0_356"]  # mtp:k=3, DP 8


@pytest.fixture(scope="module")
def rows():
    df = pd.read_csv(shipped_path("serving"))
    return df[df["id"].isin(IDS)]


def test_mtp_disagg_rows_are_predicted_and_faster_than_plain(rows):
    cal = load_profile("calibrated")
    problem, skipped = serving_problem(rows, "calibrated")
    assert len(problem.rows) == 2 and not len(skipped)
    assert set(problem.rows["mode"]) == {"disagg"} and set(problem.rows["spec_decode_text"]) == {"mtp:k=3"}
    mtp = problem.predictions(cal).set_index("id")
    plain = serving_problem(rows.assign(spec_decode="off"), "calibrated")[0].predictions(cal).set_index("id")
    ratio = plain.loc[IDS, "predicted_tpot_mean_s"] / mtp.loc[IDS, "predicted_tpot_mean_s"]
    # k = 3 at the shipped acceptance: faster, by less than the accepted length per step (2.82)
    assert np.all(ratio > 1.1) and np.all(ratio < 2.82)
    # the prefill pool is unchanged; the TTFT moves only through the loop (fewer clients wait)
    assert np.all(np.isfinite(mtp["predicted_ttft_mean_s"]))


def test_tabulated_disagg_speculation_matches_the_engine_path(rows):
    """The tables' rule is the engine's: the exact steady state with ``Engine(spec=...)`` on the pools'
    step models agrees within the tables' interpolation error."""
    cal = load_profile("calibrated")
    problem, _ = serving_problem(rows, "calibrated")
    got = problem.predictions(cal)
    cache = StepModelCache("calibrated")
    engine = engines_under(cal)["trtllm"]
    for _, r in got.iterrows():
        decode_key, prefill_key = pool_keys(r)
        dsm, psm = cache.get(decode_key), cache.get(prefill_key)
        served = replace(engine, spec=parse_spec_decode(r["spec_decode_text"]))
        devices = int(r["p_workers"]) * psm.devices + int(r["d_workers"]) * dsm.devices
        exact = steady_state_disagg(psm, dsm, r["concurrency"] * r["d_workers"], r["isl"], r["osl"],
                                    prefill_replicas=r["p_workers"], decode_replicas=r["d_workers"],
                                    prefill_engine=served, kv_transfer_s=request_kv_transfer_time(
                                        psm, devices, r["isl"]), iterations=40,
                                    prefill_schedulers=r["p_dp"], decode_schedulers=r["dp"])
        assert r["predicted_tpot_mean_s"] == pytest.approx(float(exact.tpot_mean_s), rel=0.02)
        assert r["predicted_ttft_mean_s"] == pytest.approx(float(exact.ttft_mean_s), rel=0.03)

