"""Whether a measured row's KV cache fits is decided by its engine's own pool (validation/predict.py,
predict_disagg.py), as in ``perfmodel estimate``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.engine.calibration import load_profile
from perfmodel.engine.kv_memory import engine_kv_tokens
from perfmodel.validation.data import shipped_path
from perfmodel.validation.predict import engines_under
from perfmodel.validation.run import serving_problem
from perfmodel.validation.stepmodels import StepModelCache


def test_rows_whose_engine_pool_has_room_are_predicted():
    """DeepSeek-R1 FP8 on 4 B200 (TensorRT-LLM): the step model's generic reserve leaves no KV room, the
    engine's own pool (its memory fraction of what the weights leave) does, and the run was measured."""
    df = pd.read_csv(shipped_path("serving"))
    row = df[df["id"] == "2026_04_06_deepseek_r1_b200_sxm_trtllm_fp8_agg_8192x1024_c8_tp4_ep1_1848"]
    problem, skipped = serving_problem(row, "calibrated")
    assert not len(skipped) and len(problem.rows) == 1
    sm = StepModelCache("calibrated").get(("deepseek-ai/DeepSeek-R1", "b200", 4, 1, 1, 1, 4, "fp8_block", "fp8",
                                           "fp8"))
    assert sm.kv_capacity_tokens == 0 and engine_kv_tokens(sm, engines_under(None)["trtllm"].profile) > 1e5
    assert np.isfinite(problem.predictions(load_profile("calibrated"))["predicted_tpot_mean_s"]).all()
