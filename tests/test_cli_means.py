"""Result tables show means next to percentiles (simulate, plan), as their JSON does."""

from __future__ import annotations

import json
import re

from perfmodel.cli import main
from perfmodel.cli.output import number, shown_name

SIM = ["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--isl", "512", "--osl", "64",
       "--rate", "2", "--requests", "60", "--seed", "3"]
PLAN = ["plan", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--tp", "1", "--isl", "512", "--osl", "64",
        "--rate", "1", "--slo-tpot", "50ms", "--requests", "60", "--quiet"]


def _table_cells(text: str, header_start: str) -> list[dict[str, str]]:
    """The rows of the table whose header starts with ``header_start``, cut at the header's columns."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(header_start))
    starts = [m.start() for m in re.finditer(r"\S+", lines[i])]
    cols = lines[i].split()
    rows = []
    for line in lines[i + 2:]:
        if not line.strip() or line.startswith(("—", "search:", "note:", "times in")):
            break
        rows.append({c: line[a:b].strip() for c, a, b in zip(cols, starts, [*starts[1:], None], strict=True)})
    return rows


def test_simulate_table_shows_means_and_percentiles(capsys):
    assert main([*SIM, "--format", "json", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main([*SIM, "--quiet"]) == 0
    cells = {r["metric"]: r["value"] for r in _table_cells(capsys.readouterr().out, "metric")}
    for key in ("ttft_mean_s", "ttft_p50_s", "ttft_p99_s", "tpot_mean_s", "tpot_p95_s", "e2e_mean_s", "e2e_p95_s"):
        assert cells[shown_name(key)] == number(doc[key] * 1e3), key  # the table in ms
    assert doc["ttft_mean_s"] != doc["ttft_p50_s"]


def test_plan_table_shows_means_and_p95(capsys):
    assert main([*PLAN, "--format", "json"]) == 0
    best = json.loads(capsys.readouterr().out)["ranked"][0]
    assert main(PLAN) == 0
    row = _table_cells(capsys.readouterr().out, "rank")[0]
    for key in ("ttft_mean_s", "ttft_p95_s", "tpot_mean_s", "tpot_p95_s"):
        assert row[shown_name(key)] == number(best[key] * 1e3), key
    assert best["ttft_mean_s"] <= best["ttft_p95_s"]


def test_estimate_table_says_its_times_are_means(capsys):
    argv = ["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "vllm", "--isl", "512",
            "--osl", "64", "--concurrency", "1,4"]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("note: times are means over requests")
    assert main([*argv, "--format", "json"]) == 0
    assert "note" not in json.loads(capsys.readouterr().out)  # the JSON's names stay as they are
