"""Shared fixtures."""

from __future__ import annotations

import os

import matplotlib
import pytest

from perfmodel.testing import make_accelerator, tiny_model

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def tiny():
    return tiny_model()


@pytest.fixture
def gpu():
    return make_accelerator()


class NotebookRuns:
    """Each notebook executed at most once per test session, its executed copy kept in one folder.

    The notebook tests and the strict docs build (which shows the executed copies through
    ``$PERFMODEL_EXECUTED_NOTEBOOKS``) share the runs, so the slow tier executes each notebook once.
    """

    def __init__(self, folder):
        import importlib.util
        from pathlib import Path

        path = Path(__file__).resolve().parents[1] / "scripts" / "docs_notebooks.py"
        spec = importlib.util.spec_from_file_location("docs_notebooks", path)
        self.module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.module)
        self.folder = folder
        self._done = {}

    def run(self, path):
        """``(seconds, None)`` once ``path`` has executed into ``self.folder``, or ``(None, error)``."""
        if path.name not in self._done:
            import nbformat

            try:
                with self.module.this_interpreter_kernel():
                    nb, elapsed = self.module.execute_notebook(path)
                nbformat.write(nb, self.folder / path.name)
                self._done[path.name] = (elapsed, None)
            except Exception as exc:          # reported by the test that asked for this notebook
                self._done[path.name] = (None, exc)
        return self._done[path.name]


@pytest.fixture(scope="session")
def notebook_runs(tmp_path_factory):
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    return NotebookRuns(tmp_path_factory.mktemp("executed-notebooks"))
