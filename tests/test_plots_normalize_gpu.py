"""normalize='gpu' counts GDDR GPUs, and reads an edited user hardware file again (review of 2de1af4..)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import perfmodel.hardware_specs
from perfmodel import plots
from perfmodel.errors import ConfigError

SPECS = Path(perfmodel.hardware_specs.__file__).parent / "accelerators"


def _rows(hardware: str) -> pd.DataFrame:
    return pd.DataFrame({"hardware": [hardware], "devices": [4], "output_tokens_per_s": [1000.0]})


@pytest.mark.parametrize("hw", ["l40s", "l4", "rtx-pro-6000"])
def test_gddr_gpus_are_gpus(hw):
    """The L4, L40S and RTX PRO 6000 keep their weights in GDDR: their devices are GPUs (1000/4)."""
    values, label = plots.normalized_rate(_rows(hw), "output_tokens_per_s", "gpu")
    assert values.tolist() == [250.0]
    assert label.endswith("[tok/s/GPU]")


def test_sram_and_unknown_devices_are_refused_by_name():
    with pytest.raises(ConfigError, match=r"groq-lp30 \(sram\) is not a device with hbm or gddr"):
        plots.normalized_rate(_rows("groq-lp30"), "output_tokens_per_s", "gpu")
    with pytest.raises(ConfigError, match=r"no-such-chip \(not in the catalogue\)"):
        plots.normalized_rate(_rows("no-such-chip"), "output_tokens_per_s", "gpu")


def test_an_edited_user_hardware_file_is_read_again(tmp_path):
    """The memory kind was cached by name: a user file edited from an SRAM part to an HBM one was still
    refused."""
    path = tmp_path / "my-chip.yaml"
    shutil.copy(SPECS / "groq-lp30.yaml", path)
    with pytest.raises(ConfigError):
        plots.normalized_rate(_rows(str(path)), "output_tokens_per_s", "gpu")
    text = (SPECS / "h100-sxm.yaml").read_text(encoding="utf-8")
    path.write_text(text + "\n", encoding="utf-8")          # a new size, whatever the clock's resolution
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert plots.normalized_rate(_rows(str(path)), "output_tokens_per_s", "gpu")[0].tolist() == [250.0]
