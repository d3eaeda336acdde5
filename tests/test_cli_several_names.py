"""Several hardware or model ids given to a command that takes one: an error that names the value and
the call that compares several (sweep, plan), never an unknown-name error or silently the first name."""

from __future__ import annotations

import pytest

import perfmodel as pm
from perfmodel.cli import main
from perfmodel.errors import ConfigError

LOAD = ["--isl", "512", "--osl", "16"]
COMMANDS = {
    "predict": ["predict", *LOAD],
    "simulate": ["simulate", *LOAD, "--rate", "1", "--requests", "5"],
    "max-load": ["max-load", *LOAD],
    "estimate": ["estimate", *LOAD, "--engine", "vllm", "--concurrency", "1"],
    "plan": ["plan", *LOAD, "--rate", "1", "--slo-tpot", "50ms"],
}
ONE = {"--model": "llama-3.1-8b", "--hardware": "h100-sxm"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("flag, several, pointer", [
    ("--hardware", "h100-sxm,h200-sxm", "perfmodel sweep --hardware A,B"),
    ("--model", "llama-3.1-8b,llama-3.1-70b", "perfmodel sweep --model A,B"),
])
def test_a_list_where_one_name_goes_points_to_sweep(capsys, command, flag, several, pointer):
    if command == "plan" and flag == "--hardware":
        pytest.skip("plan compares several hardware itself")
    names = {**ONE, flag: several}
    argv = [*COMMANDS[command], *(x for kv in names.items() for x in kv)]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"argument {flag}: one {flag[2:]} id or file per call, got '{several}'" in err
    assert pointer in err
    assert "unknown" not in err


def test_plan_takes_several_hardware_but_one_model(capsys):
    argv = ["plan", *COMMANDS["plan"][1:], "--model", "llama-3.1-8b,llama-3.1-70b", "--hardware", "h100-sxm,b200"]
    with pytest.raises(SystemExit):
        main(argv)
    assert "argument --model: one model id or file per call" in capsys.readouterr().err


@pytest.mark.parametrize("hardware", ["h100-sxm,h200-sxm", ["h100-sxm", "b200"]])
def test_estimate_refuses_several_hardware_instead_of_taking_the_first(hardware):
    """The hardware-name reader behind estimate reads 'h100-sxm,h200-sxm' as an H100 (a measured table's
    cell); a user asking for two must hear it, not get the H100's numbers."""
    with pytest.raises(ConfigError, match=r"hardware: one accelerator id.*perfmodel\.sweep"):
        pm.estimate("llama-3.1-8b", hardware, engine="vllm", isl=512, osl=16, concurrency=[1])
