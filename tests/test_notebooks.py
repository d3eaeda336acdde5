"""The teaching notebooks: committed as sources without outputs, each runs from a clean kernel.

``notebooks/NN-*.ipynb`` are the files people open and edit; nothing generates them. The fast tier
checks they are valid nbformat without outputs and are listed in notebooks/README.md and the docs
navigation. The slow tier executes each one (``scripts/docs_notebooks.py``: a kernel of *this*
interpreter, working directory ``notebooks/``, inline figures) through the session's ``notebook_runs``,
whose executed copies the strict docs build (tests/test_docs.py) then renders.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
KERNEL = "python3"

EXPECTED = [
    "01-quickstart", "02-reference-article", "03-placement-split-disaggregation", "04-serving-under-load",
    "05-capacity-planning", "06-vendor-claims", "07-validation", "08-sram-dataflow",
]
NOTEBOOKS = [NB_DIR / f"{name}.ipynb" for name in EXPECTED]
STRIP = "nbstripout --keep-id"


@pytest.fixture(scope="module")
def docs_notebooks():
    spec = importlib.util.spec_from_file_location("docs_notebooks", ROOT / "scripts" / "docs_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_targets(node) -> list[str]:
    """Every page path in a mkdocs ``nav`` tree."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _nav_targets(value)]
    return [p for item in node for p in _nav_targets(item)]


def test_every_notebook_is_listed_in_readme_and_docs_nav(docs_notebooks):
    assert sorted(p.stem for p in NB_DIR.glob("*.ipynb")) == EXPECTED
    assert [p.stem for p in docs_notebooks.notebook_paths()] == EXPECTED
    readme = (NB_DIR / "README.md").read_text(encoding="utf-8")
    nav = _nav_targets(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    for name in EXPECTED:
        assert f"({name}.ipynb)" in readme, f"notebooks/README.md does not link {name}.ipynb"
        assert f"notebooks/{name}.ipynb" in nav, f"mkdocs.yml nav does not list notebooks/{name}.ipynb"
    assert "notebooks/README.md" in nav


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path, docs_notebooks):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == KERNEL
    assert docs_notebooks.SOURCE_KEY not in nb.metadata, f"{path.name} is an executed copy; run {STRIP} on it"
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: cell {i} has stored outputs; run {STRIP} {path.name}"
            assert cell.execution_count is None, f"{path.name}: cell {i} has an execution count; run {STRIP}"
        assert "execution" not in cell.metadata, f"{path.name}: cell {i} has execution timings; run {STRIP}"


def _write_copy(path: Path, source_sha: str | None) -> None:
    nb = {"cells": [], "metadata": {} if source_sha is None else {"perfmodel_source_sha256": source_sha},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb), encoding="utf-8")


def test_docs_build_refuses_missing_or_stale_executed_copies(docs_notebooks, tmp_path):
    sources = tmp_path / "src"
    sources.mkdir()
    a, b = sources / "01-a.ipynb", sources / "02-b.ipynb"
    a.write_text('{"a": 1}', encoding="utf-8")
    b.write_text('{"b": 1}', encoding="utf-8")
    copies = tmp_path / "executed"
    copies.mkdir()
    _write_copy(copies / a.name, docs_notebooks.source_sha256(a))
    _write_copy(copies / b.name, docs_notebooks.source_sha256(b))
    docs_notebooks.check_executed(copies, [a, b])            # fresh: no error

    b.write_text('{"b": 2}', encoding="utf-8")               # edited after it was executed
    with pytest.raises(ValueError, match=r"02-b\.ipynb: the copy .* another version") as info:
        docs_notebooks.check_executed(copies, [a, b])
    assert "01-a" not in str(info.value)
    (copies / a.name).unlink()
    with pytest.raises(ValueError, match=r"01-a\.ipynb: no executed copy"):
        docs_notebooks.check_executed(copies, [a, b])


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_without_errors(path, notebook_runs, record_property):
    elapsed, error = notebook_runs.run(path)
    if error is not None:
        raise error                 # nbclient's CellExecutionError names the cell and has its traceback
    record_property("runtime_s", round(elapsed, 1))
    print(f"{path.name}: {elapsed:.1f} s")
    executed = nbformat.read(notebook_runs.folder / path.name, as_version=4)
    code = [cell for cell in executed.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code), f"{path.name}: a cell did not run"
    errors = [out for cell in code for out in cell.outputs if out.get("output_type") == "error"]
    assert not errors, errors
    assert elapsed < 120, f"{path.name} took {elapsed:.0f} s; notebooks must run in under two minutes"


@pytest.mark.slow
def test_kernel_is_this_interpreter_with_this_checkout(docs_notebooks):
    """The notebooks import the checkout under test (not another installed one) and draw inline."""
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import sys, matplotlib, perfmodel\n"
        "print(sys.executable, perfmodel.__file__, matplotlib.get_backend())")]
    with docs_notebooks.this_interpreter_kernel():
        nbclient.NotebookClient(nb, kernel_name=KERNEL, timeout=120,
                                resources={"metadata": {"path": str(NB_DIR)}}).execute()
    executable, module, backend = nb.cells[0].outputs[0]["text"].split()
    assert Path(executable).resolve() == Path(sys.executable).resolve()
    assert Path(module).resolve() == (ROOT / "perfmodel" / "__init__.py").resolve()
    assert backend == "module://matplotlib_inline.backend_inline"
