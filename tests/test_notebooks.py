"""The teaching notebooks: each runs from a clean kernel without errors and is committed without outputs.

Notebooks execute with nbclient in a fresh ``python3`` kernel whose working directory is
``notebooks/`` (as when a user opens them in Jupyter). The kernel is *this* interpreter: a private
kernelspec pointing at ``sys.executable`` is put first on ``JUPYTER_PATH``, so the test neither
depends on a kernelspec being installed nor picks up a user's ``python3`` spec for another Python
that lacks perfmodel. Figures are drawn with the Agg backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
BUILD = ROOT / "scripts" / "build_notebooks.py"
KERNEL = "python3"
CELL_TIMEOUT_S = 300

EXPECTED = [
    "01-quickstart", "02-reference-article", "03-placement-split-disaggregation", "04-serving-under-load",
    "05-capacity-planning", "06-vendor-claims", "07-validation", "08-sram-dataflow",
]
NOTEBOOKS = [NB_DIR / f"{name}.ipynb" for name in EXPECTED]


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """Run kernels of this interpreter with the Agg backend, whatever kernelspecs the machine has."""
    from ipykernel.kernelspec import write_kernel_spec

    data_dir = tmp_path_factory.mktemp("jupyter")
    write_kernel_spec(path=str(data_dir / "kernels" / KERNEL))
    spec = json.loads((data_dir / "kernels" / KERNEL / "kernel.json").read_text())
    assert Path(spec["argv"][0]).resolve() == Path(sys.executable).resolve(), spec["argv"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", os.pathsep.join(filter(None, [str(data_dir), os.environ.get("JUPYTER_PATH")])))
        mp.setenv("MPLBACKEND", "Agg")
        mp.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")   # silence the debugger's frozen-modules warning
        from jupyter_client.kernelspec import KernelSpecManager

        found = KernelSpecManager().get_kernel_spec(KERNEL)
        assert Path(found.resource_dir).parent.parent == data_dir, found.resource_dir
        yield


def test_every_notebook_is_listed_and_built_from_the_script():
    assert sorted(p.stem for p in NB_DIR.glob("*.ipynb")) == EXPECTED
    listed = subprocess.run([sys.executable, str(BUILD), "--list"], capture_output=True, text=True, check=True)
    assert listed.stdout.split() == [f"{name}.ipynb" for name in EXPECTED]
    check = subprocess.run([sys.executable, str(BUILD), "--check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    readme = (NB_DIR / "README.md").read_text(encoding="utf-8")
    for name in EXPECTED:
        assert f"{name}.ipynb" in readme, f"notebooks/README.md does not list {name}.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == KERNEL
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: cell {i} has stored outputs"
            assert cell.execution_count is None, f"{path.name}: cell {i} has an execution count"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_without_errors(path, kernel_env, record_property):
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT_S,
                                     resources={"metadata": {"path": str(NB_DIR)}})
    start = time.perf_counter()
    client.execute()            # raises CellExecutionError, with the cell and its traceback, on an error
    elapsed = time.perf_counter() - start
    record_property("runtime_s", round(elapsed, 1))
    print(f"{path.name}: {elapsed:.1f} s")
    errors = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
              if out.get("output_type") == "error"]
    assert not errors, errors
    assert elapsed < 120, f"{path.name} took {elapsed:.0f} s; notebooks must run in under two minutes"
