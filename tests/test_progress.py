"""Progress bars (perfmodel.progress over tqdm.auto): off by default in the API, on a terminal in the CLI
unless --quiet, and tqdm imported only when a bar is drawn."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel import progress
from perfmodel.cli import main

ROOT = Path(__file__).resolve().parents[1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _terminal(monkeypatch) -> _Terminal:
    """stderr that says it is a terminal, and bars drawn at once (no start-up delay). Called in the test
    body: pytest puts its own capture back on sys.stderr between a fixture's setup and the test."""
    stream = _Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    return stream


def test_tqdm_is_not_imported_by_import_perfmodel_help_or_a_silent_bar():
    code = ("import sys, perfmodel\nfrom perfmodel.cli import build_parser\nbuild_parser().format_help()\n"
            "from perfmodel.progress import Bar\nwith Bar(3, 'x', False) as b: b.update()\n"
            "print('tqdm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_none_follows_the_terminal(monkeypatch):
    terminal = _terminal(monkeypatch)
    assert progress.wanted(None) and progress.wanted(True) and not progress.wanted(False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not progress.wanted(None) and progress.wanted(True)
    assert terminal.getvalue() == ""


def test_bar_counts_to_its_total_on_stderr(monkeypatch):
    terminal = _terminal(monkeypatch)
    with progress.Bar(4, "things", True, unit="thing") as bar:
        assert bar.shown
        for _ in range(4):
            bar.update()
        bar.note("last one")
    text = terminal.getvalue()
    assert "things" in text and "4/4" in text and "last one" in text
    assert not bar.shown  # closed


def test_api_default_draws_nothing_even_on_a_terminal(monkeypatch):
    terminal = _terminal(monkeypatch)
    from perfmodel.serving import simulate

    wl = {"isl": 256, "osl": 32, "arrival": {"process": "poisson", "rate": 4.0}}
    simulate({"model": "llama-3.1-8b", "hardware": "h100-sxm"}, wl, requests=500, seed=0)
    assert terminal.getvalue() == ""


def test_simulate_progress_true_shows_the_share_done_and_a_callable_still_works(monkeypatch):
    terminal = _terminal(monkeypatch)
    from perfmodel.serving import simulate

    wl = {"isl": 256, "osl": 32, "arrival": {"process": "poisson", "rate": 4.0}}
    simulate({"model": "llama-3.1-8b", "hardware": "h100-sxm"}, wl, requests=3000, seed=0, progress=True)
    assert "simulate" in terminal.getvalue() and "%" in terminal.getvalue()
    seen: list[float] = []
    simulate({"model": "llama-3.1-8b", "hardware": "h100-sxm"}, wl, requests=3000, seed=0, progress=seen.append)
    assert seen and all(0 <= s <= 1 for s in seen) and seen == sorted(seen)


def test_max_load_bar_counts_the_simulations(monkeypatch):
    terminal = _terminal(monkeypatch)
    from perfmodel.serving import max_load

    found = max_load({"model": "llama-3.1-8b", "hardware": "h100-sxm"},
                     {"isl": 512, "osl": 64, "arrival": {"process": "poisson", "rate": 1.0},
                      "slo": {"ttft": "1 s"}}, requests=200, max_simulations=6, progress=True)
    assert f"{found.simulations}/6" in terminal.getvalue() and "attainment" in terminal.getvalue()


SWEEP = ["sweep", "--model", "llama-3.1-8b", "--hardware", "h100-sxm,h200-sxm", "--tp", "1,2", "--format", "json"]


def test_cli_draws_on_a_terminal_and_quiet_silences_it(monkeypatch, capsys):
    terminal = _terminal(monkeypatch)
    assert main(SWEEP) == 0
    assert "sweep" in terminal.getvalue() and "4/4" in terminal.getvalue()
    assert len(json.loads(capsys.readouterr().out)) == 4  # stdout stays clean JSON
    terminal.seek(0)
    terminal.truncate()
    assert main([*SWEEP, "--quiet"]) == 0
    assert terminal.getvalue() == ""


def test_cli_draws_nothing_when_stderr_is_not_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    assert main(SWEEP) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_a_notebook_gets_a_text_bar_without_ipywidgets_and_no_warning():
    """tqdm.auto in a Jupyter kernel: a widget with ipywidgets, else the text bar (its warning silenced)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import perfmodel.progress as pr\npr.DELAY_S = 0\nimport perfmodel as pm\n"
        "df = pm.sweep('llama-3.1-8b', ['h100-sxm', 'h200-sxm'], tp=[1, 2], batch=[1, 8], progress=True)\n"
        "print(len(df))")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = nb.cells[0].outputs
    err = "".join(o.get("text", "") for o in outputs if o.get("name") == "stderr")
    widgets = [o for o in outputs if o.get("output_type") == "display_data"]
    assert "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout").strip() == "8"
    assert ("sweep" in err and "4/4" in err) or widgets
    assert "Warning" not in err
