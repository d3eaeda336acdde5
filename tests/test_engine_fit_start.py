"""The engine fit moves a host overhead held at 0 by FIXED when a fit names it.

A stub problem whose predictions depend on ``seq_overhead`` alone (TPOT = a + s·n per row, a fixed,
n the decoding sequences; TTFT = 10 TPOT) with s = 20 µs/seq: the fit of s from the preset 0 must
return it. Started on its lower bound the trust-region solver left it at 0 (the "went to 0" of the
earlier joint fits); :data:`INTERIOR_START` starts it at its typical scale.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.calibration.engine_fit import INTERIOR_START, fit_backend
from perfmodel.engine.calibration import fit_start

A_S = 0.02                           # fixed step time [s]
TRUE_SEQ = 2e-5                      # per-sequence time [s/seq]
N = np.array([1.0, 8.0, 64.0, 256.0, 512.0, 1024.0, 32.0, 128.0])   # decoding sequences per row


class _Stub:
    """Just what ``fit_backend`` asks of a ServingProblem."""

    efficiency = "stub"
    disagg: dict = {}

    def __init__(self, n: np.ndarray) -> None:
        tpot = A_S + TRUE_SEQ * n
        self.n = n
        self.rows = pd.DataFrame({"backend": "vllm", "measured_tpot_mean_s": tpot, "measured_ttft_mean_s": 10 * tpot})

    def subset(self, mask) -> _Stub:
        return _Stub(self.n[np.asarray(mask, dtype=bool)])

    def evaluate(self, calibrations, backends=None):
        tpot = A_S + calibrations["vllm"].seq_overhead * self.n
        return 10 * tpot, tpot


def test_fit_moves_a_host_overhead_off_its_zero_preset():
    assert fit_start()["vllm"].seq_overhead == 0.0 and INTERIOR_START["seq_overhead"] > 0
    cal = fit_backend(_Stub(N), "vllm", fit_start()["vllm"], ("seq_overhead",))
    assert cal.seq_overhead == pytest.approx(TRUE_SEQ, rel=1e-3)
    assert cal.fit["tpot"]["median_abs_pct_error"] < 0.1
