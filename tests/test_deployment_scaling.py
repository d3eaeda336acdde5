"""TP/EP scaling curves: monotonic device counts, sub-linear per-user speed-up."""

from __future__ import annotations

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.deployment import scaling_curve


def test_tp_scaling_is_sub_linear_with_coordination_cost():
    df = scaling_curve("llama-3.1-70b", "h100-sxm", devices=[1, 2, 4, 8], isl=1024, osl=128, batch=8,
                       efficiency="datasheet")
    assert list(df["devices"]) == [1, 2, 4, 8]
    assert np.all(np.diff(df["per_user_tokens_per_s"]) > 0)  # more devices help the user...
    assert np.all(df["speedup"] <= df["ideal_speedup"] + 1e-12)  # ...but less than linearly
    assert df["scaling_efficiency"].iloc[-1] < 1.0
    assert np.all(np.diff(df["decode_tokens_per_s_per_device"]) < 0)  # each device does less
    assert df["comm_share"].iloc[0] == 0.0 and np.all(df["comm_share"].iloc[1:] > 0)
    assert not df["fits"].iloc[0] and df["fits"].iloc[-1]  # 70B bf16 does not fit one 80 GB GPU


def test_ep_scaling_for_moe():
    df = scaling_curve("deepseek-r1", "b200", devices=[8, 16, 32], batch=64, parallelism="ep", weights="fp8",
                       efficiency="datasheet")
    assert list(df["layout"]) == ["tp1-adp8-ep8", "tp1-adp16-ep16", "tp1-adp32-ep32"]
    assert np.all(df["speedup"] <= df["ideal_speedup"] + 1e-12)


@pytest.mark.parametrize("devices", [[4, 2], [1, 1], [0, 1], []])
def test_devices_must_increase(devices):
    with pytest.raises(pm.ConfigError, match=r"devices: must be (strictly increasing|a whole number in \[1,)"):
        scaling_curve("llama-3.1-8b", "h100", devices=devices)


def test_bad_parallelism():
    with pytest.raises(pm.ConfigError, match="parallelism"):
        scaling_curve("llama-3.1-8b", "h100", parallelism="dp")
