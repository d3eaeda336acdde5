"""Hardware strings of published and measured rows -> (count, accelerator, memory variant).

The table lists every hardware string of the shipped validation CSVs (``perfmodel/data/validation``,
checked below) and of the project's shared published tables, with the reading checked by hand: part,
device count, memory written, and the start of the problem for those that cannot be read.
"""

from __future__ import annotations

import glob
from pathlib import Path

import pandas as pd
import pytest

from perfmodel.validation.hardware_names import parse_hardware
from perfmodel.validation.rows import hardware_id

DATA = Path(__file__).resolve().parents[1] / "perfmodel" / "data" / "validation"

CASES = [
    ('2x H100 80GB', 'h100-sxm', 2, 80.0, None),
    ('4 nodes x 8xB200 (AWS p6-b200, 8x50 GB/s EFA v4 per node)', 'b200', 32, None, None),
    ('8xA100 (single node, NVLink 3)', 'a100-sxm', 8, None, None),
    ('8xB200', 'b200', 8, None, None),
    ('8xB200 (AWS p6-b200, single node, NVLink 5)', 'b200', 8, None, None),
    ('8xH100-SXM', 'h100-sxm', 8, None, None),
    ('8xH100-SXM (NVLink 4 + NVSwitch)', 'h100-sxm', 8, None, None),
    ('8xH200 (single node)', 'h200-sxm', 8, None, None),
    ('8xH200 (single node, NVLink 4)', 'h200-sxm', 8, None, None),
    ('A100 40GB', None, 1, 40.0, 'memory variant 40 GB diff'),
    ('A100-80GB (x1)', 'a100-sxm', 1, 80.0, None),
    ('A100-80GB (x2)', 'a100-sxm', 2, 80.0, None),
    ('A100-80GB (x4)', 'a100-sxm', 4, 80.0, None),
    ('A100-80GB (x8)', 'a100-sxm', 8, 80.0, None),
    ('A100-SXM-80GB (x1)', 'a100-sxm', 1, 80.0, None),
    ('AMD MI300X', 'mi300x', 1, None, None),
    ('AMD MI325X', 'mi325x', 1, None, None),
    ('AMD MI355X', 'mi355x', 1, None, None),
    ('B200', 'b200', 1, None, None),
    ('B200 (HGX, multi-node over CX-7 RoCEv2 400 Gb/s)', 'b200', None, None, 'device count not stated'),
    ('B200 (x1)', 'b200', 1, None, None),
    ('B200 (x2)', 'b200', 2, None, None),
    ('B200 (x4)', 'b200', 4, None, None),
    ('B200 (x8)', 'b200', 8, None, None),
    ('B200 node (AWS p6-b200.48xlarge)', 'b200', 8, None, None),
    ('Cerebras CS-3 (WSE-3) cluster (count not stated)', 'cerebras-wse3', None, None, 'device count not stated'),
    ('Cerebras CS-3 cluster (count not stated)', 'cerebras-wse3', None, None, 'device count not stated'),
    ('DGX B200 (8xB200)', 'b200', 8, None, None),
    ('GB200 (Azure ND GB200 v6)', 'gb200', 1, None, None),
    ('GB200 (x1)', 'gb200', 1, None, None),
    ('GB200 (x4)', 'gb200', 4, None, None),
    ('GB200 NVL72', 'gb200', 72, None, None),
    ('GB200 NVL72 (18 x ND GB200 v6 VMs, 4 GPUs each)', 'gb200', 72, None, None),
    ('GB300 NVL72 (18 x ND GB300 v6 VMs)', 'gb300', 72, None, None),
    ('Groq LPU system (GroqChip: 230 MB SRAM, 80 TB/s, 188 TFLOPS FP16, 750 TOPS INT8 per chip)', 'groq-lpu', None, None, 'device count not stated'),
    ('H100-SXM (x1)', 'h100-sxm', 1, None, None),
    ('H100-SXM (x2)', 'h100-sxm', 2, None, None),
    ('H100-SXM (x4)', 'h100-sxm', 4, None, None),
    ('H100-SXM (x8)', 'h100-sxm', 8, None, None),
    ('H100-SXM-80GB (Azure ND H100 v5)', 'h100-sxm', 1, 80.0, None),
    ('H100-SXM-80GB (Azure ND H100 v5) (x1)', 'h100-sxm', 1, 80.0, None),
    ('H100-SXM-80GB (Azure ND H100 v5) (x8)', 'h100-sxm', 8, 80.0, None),
    ('H100-SXM-80GB (x1)', 'h100-sxm', 1, 80.0, None),
    ('H100-SXM-80GB (x2)', 'h100-sxm', 2, 80.0, None),
    ('H100-SXM-80GB (x4)', 'h100-sxm', 4, 80.0, None),
    ('H100-SXM-80GB (x8)', 'h100-sxm', 8, 80.0, None),
    ('H200 (x4)', 'h200-sxm', 4, None, None),
    ('H200 node (1 node, NVLink 4)', 'h200-sxm', 8, None, None),
    ('H200-SXM (x1)', 'h200-sxm', 1, None, None),
    ('H200-SXM (x2)', 'h200-sxm', 2, None, None),
    ('H200-SXM (x4)', 'h200-sxm', 4, None, None),
    ('H200-SXM (x8)', 'h200-sxm', 8, None, None),
    ('H200-SXM-141GB (Azure ND H200 v5)', 'h200-sxm', 1, 141.0, None),
    ('H200-SXM-141GB (Azure ND H200 v5) (x1)', 'h200-sxm', 1, 141.0, None),
    ('H200-SXM-141GB (Azure ND H200 v5) (x8)', 'h200-sxm', 8, 141.0, None),
    ('H200-SXM-141GB (x1)', 'h200-sxm', 1, 141.0, None),
    ('H200-SXM-141GB (x2)', 'h200-sxm', 2, 141.0, None),
    ('H200-SXM-141GB (x4)', 'h200-sxm', 4, 141.0, None),
    ('H200-SXM-141GB (x8)', 'h200-sxm', 8, 141.0, None),
    ('H800 (NVLink ~160 GB/s max; CX7 IB 400Gb/s ~50 GB/s per GPU)', 'h800', 1, None, None),
    ('H800 + CX7 IB 400Gb/s', 'h800', 1, None, None),
    ('H800-SXM5', 'h800', 1, None, None),
    ('L40S-48GB (x1)', 'l40s', 1, 48.0, None),
    ('L40S-48GB (x2)', 'l40s', 2, 48.0, None),
    ('L40S-48GB (x4)', 'l40s', 4, 48.0, None),
    ('L40S-48GB (x8)', 'l40s', 8, 48.0, None),
    ('NVIDIA A100 PCIe', None, None, None, 'A100 PCIe is not a shippe'),
    ('NVIDIA A100 SXM', 'a100-sxm', 1, None, None),
    ('NVIDIA B200 SXM', 'b200', 1, None, None),
    ('NVIDIA B300 SXM', 'b300', 1, None, None),
    ('NVIDIA GB200 SXM', 'gb200', 1, None, None),
    ('NVIDIA GH200 SXM', 'gh200', 1, None, None),
    ('NVIDIA H100 SXM', 'h100-sxm', 1, None, None),
    ('NVIDIA H200 SXM', 'h200-sxm', 1, None, None),
    ('RTX-PRO-6000-Blackwell-Server (x1)', 'rtx-pro-6000', 1, None, None),
    ('RTX-PRO-6000-Blackwell-Server (x2)', 'rtx-pro-6000', 2, None, None),
    ('RTX-PRO-6000-Blackwell-Server (x4)', 'rtx-pro-6000', 4, None, None),
    ('RTX-PRO-6000-Blackwell-Server (x8)', 'rtx-pro-6000', 8, None, None),
    ('SM100 (Blackwell), NIC CX7', None, None, None, 'names a GPU architecture '),
    ('SM100 (Blackwell), NIC N/A', None, None, None, 'names a GPU architecture '),
    ('SM90 (Hopper), NIC CX7', None, None, None, 'names a GPU architecture '),
    ('Vera Rubin NVL72 + Groq 3 LPX (256 LPUs/rack, 128 GB SRAM, 640 TB/s scale-up; 315 PFLOPS, 40 PB/s SRAM BW per secondary)', None, None, None, 'mixes accelerator kinds g'),
    ('b200_sxm', 'b200', 1, None, None),
    ('b300_sxm', 'b300', 1, None, None),
    ('gb200', 'gb200', 1, None, None),
    ('gb300', 'gb300', 1, None, None),
    ('h100_sxm', 'h100-sxm', 1, None, None),
    ('h200_sxm', 'h200-sxm', 1, None, None),
    # shipped accelerator ids, as the open-loop MLPerf file writes them (one device per replica row)
    ('b200', 'b200', 1, None, None),
    ('h100-sxm', 'h100-sxm', 1, None, None),
    ('h200-sxm', 'h200-sxm', 1, None, None),
    ('mi300x', 'mi300x', 1, None, None),
    ('rtx-pro-6000', 'rtx-pro-6000', 1, None, None),
    ('A100-PCIe-40GB', None, None, None, 'A100-PCIe-40GB is not a s'),
    ('XYZ-9000', None, None, None, "part 'XYZ-9000' is not a "),
]


@pytest.mark.parametrize(("text", "accelerator", "count", "memory_gb", "problem"), CASES)
def test_hardware_strings(text, accelerator, count, memory_gb, problem):
    h = parse_hardware(text)
    assert (h.accelerator, h.count, h.memory_gb) == (accelerator, count, memory_gb)
    if problem is None:
        assert h.problem is None and h.ok
    else:
        assert h.problem.startswith(problem) and not h.ok


def _shipped_strings() -> set[str]:
    out: set[str] = set()
    for path in glob.glob(str(DATA / "*.csv")) + glob.glob(str(DATA / "*" / "*.csv")):
        df = pd.read_csv(path, dtype=str)
        for col in ("hardware", "system"):
            if col in df:
                out |= set(df[col].dropna())
    return out


def test_every_shipped_hardware_string_is_in_the_table():
    listed = {c[0] for c in CASES}
    strings = _shipped_strings()
    assert len(strings) >= 20
    assert strings <= listed, sorted(strings - listed)


def test_every_shipped_string_is_read():
    problems = {s: parse_hardware(s).problem for s in _shipped_strings()}
    assert not {s: p for s, p in problems.items() if p}


def test_memory_variant_and_form_factor_are_not_guessed():
    assert parse_hardware("A100 40GB").problem == "memory variant 40 GB differs from the shipped a100-sxm (80 GB)"
    assert parse_hardware("H200-SXM-141GB (x8)").memory_gb == 141.0
    assert parse_hardware("NVIDIA A100 PCIe").accelerator is None
    assert parse_hardware("A100-PCIe-40GB").accelerator is None


def test_measured_system_cells_and_written_parts_share_one_reader():
    assert hardware_id("b200_sxm") == "b200"
    assert hardware_id("b300_sxm") == "b300" and hardware_id("gb300") == "gb300"
    assert hardware_id("8xB200") == "b200" and hardware_id("H200-SXM-141GB (x8)") == "h200-sxm"
    assert hardware_id("L40S-48GB (x1)") == "l40s" and hardware_id("RTX-PRO-6000-Blackwell-Server (x8)") == "rtx-pro-6000"
    assert hardware_id("XYZ-9000 (x1)") is None and hardware_id("") is None
