"""The docs site: generated reference pages are complete, and the site builds with warnings as errors."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.hardware import list_hardware
from perfmodel.hardware.schema import Accelerator, Link, System

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pages(gen_docs, tmp_path_factory):
    out = tmp_path_factory.mktemp("generated")
    written = gen_docs.generate(out)
    assert {p.name for p in written} == set(gen_docs.GENERATED)
    return {name: (out / name).read_text(encoding="utf-8") for name in gen_docs.GENERATED}


def _row(table: str, ident: str) -> str:
    rows = [line for line in table.splitlines() if line.startswith(f"| `{ident}` |")]
    assert len(rows) == 1, f"{ident}: expected one row, found {len(rows)}"
    return rows[0]


def test_hardware_table_lists_every_accelerator_with_sources(pages):
    table = pages["hardware-table.md"]
    accelerators = list_hardware("accelerator")
    assert accelerators
    for acc in accelerators:
        row = _row(table, acc.id)
        links = re.findall(r"\]\((https?://[^ )]+)", row)
        assert links, f"{acc.id}: no source link in its row"
        mem = acc.memory[acc.main_memory]
        assert mem.capacity.source in links or not mem.capacity.source.startswith("http")
    for kind in ("link", "system"):
        for spec in list_hardware(kind):
            _row(table, spec.id)


def test_hardware_table_values_in_display_units(pages):
    row = _row(pages["hardware-table.md"], "h200-sxm")
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    assert cells[4].startswith("[141]") and cells[5].startswith("[4.8]")   # GB, TB/s
    assert cells[6].startswith("[989]") and cells[7].startswith("[1,979]")  # dense TFLOP/s


def test_spec_formats_cover_every_field(pages):
    text = pages["spec-formats.md"]
    for title, cls in (("Accelerator", Accelerator), ("Link", Link), ("System", System)):
        section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
        for name in cls.model_fields:
            assert f"| `{name}` |" in section, f"{title}.{name} missing"
    assert "### MemoryLevel" in text and "### Port" in text


def test_cli_reference_has_every_subcommand(pages):
    import argparse

    from perfmodel.cli import build_parser

    text = pages["cli.md"]
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name in action.choices:
                assert f"\n## perfmodel {name}\n" in text
    assert "usage: perfmodel predict" in text


def test_check_mode_reports_stale_pages(gen_docs, tmp_path):
    assert gen_docs.main(["--out", str(tmp_path)]) == 0
    assert gen_docs.main(["--out", str(tmp_path), "--check"]) == 0
    (tmp_path / "cli.md").write_text("stale\n")
    assert gen_docs.main(["--out", str(tmp_path), "--check"]) == 1


def _missing_docs_tools() -> str | None:
    """The first docs package (mkdocs, its theme, mkdocstrings' Python handler) that is not installed."""
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "mkdocs_jupyter"):
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except ModuleNotFoundError:
            return module
    return None


@pytest.mark.skipif(_missing_docs_tools() is not None,
                    reason=f"docs tools not installed ({_missing_docs_tools()}); pip install -e '.[docs]'")
@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path, notebook_runs):
    """The site builds with warnings as errors and shows every notebook executed, with its figures.

    The notebooks are executed once per session (``notebook_runs``, shared with tests/test_notebooks.py)
    and handed to the build's hook through ``$PERFMODEL_EXECUTED_NOTEBOOKS``.
    """
    notebooks = notebook_runs.module.notebook_paths()
    failed = {p.name: err for p in notebooks for _, err in [notebook_runs.run(p)] if err is not None}
    assert not failed, f"notebooks failed to execute (see tests/test_notebooks.py): {sorted(failed)}"
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg",
           notebook_runs.module.EXECUTED_ENV: str(notebook_runs.folder)}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "crossover_tokens" in api and "roofline_chart" in api
    table = (site / "hardware-table" / "index.html").read_text(encoding="utf-8")
    assert "h200-sxm" in table
    index = (site / "notebooks" / "index.html").read_text(encoding="utf-8")
    for path in notebooks:
        assert 'href="' + path.stem + '/"' in index, f"the Notebooks page does not link {path.stem}"
        executed = json.loads((notebook_runs.folder / path.name).read_text(encoding="utf-8"))
        figures = sum("image/png" in out.get("data", {}) for cell in executed["cells"]
                      for out in cell.get("outputs", []))
        assert figures >= 1, f"{path.stem}: the executed notebook drew no figure"
        page = (site / "notebooks" / path.stem / "index.html").read_text(encoding="utf-8")
        shown = len(re.findall(r'<img[^>]*src="data:image/png;base64,', page))
        assert shown == figures, f"{path.stem}: {shown} figures on its page, {figures} in the notebook"
        assert "jp-OutputArea-output" in page, f"{path.stem}: no outputs on its page"
        assert "Traceback" not in page, f"{path.stem}: an error output on its page"


def test_committed_generated_pages_are_fresh(pages):
    """docs/cli.md, spec-formats.md and hardware-table.md are what scripts/gen_docs.py writes today."""
    for name, text in pages.items():
        assert (ROOT / "docs" / name).read_text(encoding="utf-8") == text, \
            f"docs/{name} is stale: run python scripts/gen_docs.py"
