"""``simulate --concurrency 1,8`` / ``--rate 2,4``: one simulation per value, as predict and estimate take
lists; ``max-load`` takes one start value and says where lists go."""

from __future__ import annotations

import csv
import io
import json

import pytest

from perfmodel.cli import main

BASE = ["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--isl", "512", "--osl", "32",
        "--requests", "40", "--seed", "2", "--quiet"]


def _run(capsys, argv) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("flag, values", [("--concurrency", ["1", "8"]), ("--rate", ["2", "6"])])
def test_each_load_of_a_list_is_the_single_load_run(capsys, flag, values):
    doc = json.loads(_run(capsys, [*BASE, flag, ",".join(values), "--format", "json"]))
    assert len(doc["points"]) == len(values)
    for point, value in zip(doc["points"], values, strict=True):
        one = json.loads(_run(capsys, [*BASE, flag, value, "--format", "json"]))
        assert "points" not in one  # one load: the document is that run's, as before
        for key in ("ttft_p50_s", "ttft_mean_s", "tpot_p95_s", "requests_per_s", "completed"):
            assert point[key] == one[key], (value, key)
    a, b = doc["points"]
    assert a["requests_per_s"] < b["requests_per_s"]  # more load, more throughput (unsaturated)
    rows = list(csv.DictReader(io.StringIO(_run(capsys, [*BASE, flag, ",".join(values), "--format", "csv"]))))
    assert len(rows) == len(values)
    table = _run(capsys, [*BASE, flag, ",".join(values)]).splitlines()
    header = next(line for line in table if line.startswith("metric"))
    assert header.split() == ["metric", *(f"{flag[2:]}={v}" for v in values)]
    # the title says what was simulated (not a Python repr of the result)
    assert table[0].startswith("simulated EngineStep(StepModel(llama-3.1-8b on 1x h100-sxm")
    assert "ISL 512, OSL 32 (means), loads in the columns; seed 2" in table[0]
    one = _run(capsys, [*BASE, flag, values[0]]).splitlines()[0]
    assert one.endswith(f"ISL 512, OSL 32 (means), at {flag[2:]} {values[0]}; seed 2")


@pytest.mark.parametrize("flag", ["--rate", "--concurrency"])
def test_max_load_takes_one_start_value(capsys, flag):
    argv = ["max-load", *BASE[1:], flag, "2,4"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{flag}: max-load searches the load itself and takes one start value, got 2,4" in err
    assert f"perfmodel simulate {flag} 2,4" in err
