"""Packaging: every sub-package is listed for the wheel, spec files ship inside it, entry points work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11+")

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "perfmodel").rglob("__init__.py")}
    found.add("perfmodel.hardware_specs")
    assert found == listed, f"add to / remove from pyproject packages: {sorted(found ^ listed)}"


def test_shipped_specs_are_read_through_the_package():
    import perfmodel as pm

    ids = {s.id for s in pm.list_hardware()}
    yaml_files = {p.stem for p in (ROOT / "hardware_specs").rglob("*.yaml")}
    assert ids == yaml_files


def test_python_dash_m_entry_point():
    out = subprocess.run([sys.executable, "-m", "perfmodel", "hardware", "list", "--kind", "link"],
                         capture_output=True, text=True, check=True)
    assert "nvlink4" in out.stdout


@pytest.mark.slow
def test_device_benchmark_script_runs_on_cpu(tmp_path):
    """The GPU script (benchmarks/device_ops.py) is smoke-tested on the CPU where torch is installed."""
    pytest.importorskip("torch", reason="torch is not installed (the GPU script needs it)")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "device_ops.py"), "--out", str(tmp_path),
                          "--device", "cpu", "--quick"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    header = (tmp_path / "gemm.csv").read_text().splitlines()[0].split(",")
    assert {"system", "backend", "backend_version", "kernel_source", "dtype", "m", "n", "k", "latency_ms"} <= set(header)


@pytest.mark.slow
def test_prefill_breakdown_script_runs_on_cpu(tmp_path):
    """benchmarks/device_prefill_breakdown.py (profiler categories) on a tiny model on the CPU."""
    pytest.importorskip("torch", reason="torch is not installed (the GPU script needs it)")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "device_prefill_breakdown.py"), "--out",
                          str(tmp_path), "--device", "cpu", "--tokens", "64"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    rows = (tmp_path / "prefill_breakdown.csv").read_text().splitlines()
    assert rows[0] == "tokens,category,kernel,time_ms" and len(rows) > 3


@pytest.mark.slow
def test_steady_state_benchmark_runs():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_steady_state.py"), "--points", "20",
                          "--repeat", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "steady_state_disagg, 20 concurrencies" in out.stdout and "estimate, 8 concurrencies" in out.stdout


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "scripts").glob("*.py")))
def test_every_maintenance_script_starts_and_prints_its_usage(script):
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--help"], capture_output=True,
                            text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout
