"""max_load in concurrency mode with a fixed request count: once there are as many clients as requests
every request starts at once, so the search stops there (it doubled to 34,359,738,368 clients for 50
requests), and the CLI's JSON keeps the search's note beside the engine's."""

from __future__ import annotations

import json

from perfmodel.cli import main
from perfmodel.serving import Workload, max_load
from perfmodel.serving.stand_in import LinearStepModel


def test_closed_loop_search_stops_at_one_burst():
    model = LinearStepModel(base=0.002, per_token=1e-6)
    w = Workload.fixed(64, 8, concurrency=4, slo={"ttft": "10 s", "tpot": "1 s"})
    found = max_load(model, w, mode="concurrency", requests=20, seed=1)
    loads = [r["load"] for r in found.curve]
    assert not found.bracketed and "all 20 requests start at once with" in found.note
    assert loads == sorted(loads) and loads[-1] >= 20 and all(x < 20 for x in loads[:-1])
    assert found.max_load == loads[-1] and found.simulations == len(loads)


def test_cli_json_keeps_the_search_note(capsys):
    code = main(["max-load", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "vllm", "--isl",
                 "256", "--osl", "16", "--slo-ttft", "60s", "--requests", "50", "--search", "concurrency",
                 "--format", "json", "--quiet"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["bracketed"] is False and doc["max_concurrency"] < 100
    assert "all 50 requests start at once" in doc["search_note"] and "engine vllm" in doc["note"]
