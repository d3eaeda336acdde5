"""A user's hardware YAML works wherever a shipped name does: sweeps, plans (API and CLI), prices, and by
its id once read (one resolver: :func:`perfmodel.hardware.load_hardware`)."""

from __future__ import annotations

import json
import pickle

import pytest

import perfmodel as pm
from perfmodel.core.step import StepModel
from perfmodel.errors import SpecError, UnknownNameError
from perfmodel.hardware import load_hardware, registry
from perfmodel.planning import enumerate_candidates

GPU = """\
schema_version: 1
kind: accelerator
id: {ident}
name: My GPU
memory:
  hbm: {{capacity: 80 GB, bandwidth: {bw}}}
compute:
  bf16: {{value: 900 TFLOP/s, basis: dense}}
power: 600 W
"""


@pytest.fixture
def my_gpu(tmp_path):
    def write(ident="my-gpu-test", bw="2 TB/s"):
        path = tmp_path / f"{ident}.yaml"
        path.write_text(GPU.format(ident=ident, bw=bw))
        return path
    yield write
    for key in [k for k in registry._USER_SPECS if k.startswith("my-gpu-test")]:
        del registry._USER_SPECS[key]


def test_sweep_accepts_a_yaml_file_next_to_shipped_ids(my_gpu):
    path = my_gpu()
    df = pm.sweep("llama-3.1-8b", ["h100-sxm", str(path)], batch=[1, 8], isl=512, osl=64)
    assert set(df["hardware"]) == {"h100-sxm", "my-gpu-test"}
    mine = df[df.hardware == "my-gpu-test"]
    assert mine["valid"].all() and (mine["tpot_s"] > 0).all()
    assert (mine["power_w"] == 600.0).all()  # the file's TDP reached the power basis
    # memory-bound batch-1 decode: 3.35 TB/s against the file's 2 TB/s (datasheet roofline)
    ds = pm.sweep("llama-3.1-8b", ["h100-sxm", str(path)], batch=1, isl=512, osl=64, efficiency="datasheet")
    t = dict(zip(ds["hardware"], ds["tpot_s"], strict=True))
    assert t["my-gpu-test"] / t["h100-sxm"] == pytest.approx(3.35 / 2.0, rel=0.05)


def test_a_file_read_once_is_found_by_its_id(my_gpu):
    with pytest.raises(UnknownNameError):
        load_hardware("my-gpu-test")
    path = my_gpu()
    spec = load_hardware(path)
    assert load_hardware("my-gpu-test") is spec and load_hardware("MY-GPU-TEST") is spec
    df = pm.sweep("llama-3.1-8b", ["my-gpu-test"], batch=1, isl=256, osl=16)
    assert df["valid"].all()
    with pytest.raises(UnknownNameError, match="my-gpu-test"):  # the suggestions include the user's ids
        load_hardware("my-gpu-tset")


def test_an_edited_file_is_read_again_under_its_id(my_gpu):
    """No stale copy of a user's file: after an edit (mtime or size changes) its id gives the new
    figures; unchanged, the same object; a removed file is an error naming it."""
    path = my_gpu()
    first = load_hardware(path)
    assert load_hardware("my-gpu-test") is first and first.memory_bandwidth == 2e12
    path.write_text(GPU.format(ident="my-gpu-test", bw="1.5 TB/s"))
    assert load_hardware("my-gpu-test").memory_bandwidth == 1.5e12
    path.unlink()
    with pytest.raises(SpecError, match="my-gpu-test"):
        load_hardware("my-gpu-test")


def test_a_modified_copy_of_a_shipped_id_does_not_replace_it(my_gpu):
    path = my_gpu(ident="h100-sxm", bw="1 TB/s")
    mine = load_hardware(path)
    assert mine.memory_bandwidth == 1e12
    assert load_hardware("h100-sxm").memory_bandwidth == pytest.approx(3.35e12)


def test_plan_candidates_carry_the_spec_to_other_processes(my_gpu):
    path = my_gpu()
    cand = next(c for c in enumerate_candidates("llama-3.1-8b", [str(path), "h100-sxm"], tp=[1])
                if c.hardware == "my-gpu-test")
    kw = pickle.loads(pickle.dumps(cand.step_model))  # what an executor receives
    registry._USER_SPECS.clear()  # a fresh worker has not read the file
    assert StepModel(**kw).hardware.id == "my-gpu-test"


def test_plan_cli_with_a_yaml_file_and_its_id_in_prices(my_gpu, capsys):
    from perfmodel.cli import main

    path = my_gpu()
    rc = main(["plan", "--model", "llama-3.1-8b", "--rate", "2", "--isl", "512", "--osl", "64",
               "--slo-ttft", "2s", "--slo-tpot", "100ms", "--hardware", f"{path},h100-sxm", "--tp", "1",
               "--objective", "cost", "--price", "my-gpu-test=1.5/h", "--requests", "60", "--no-prune",
               "--format", "json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    by_hw = {r["hardware"]: r for r in out["ranked"]}
    assert by_hw["my-gpu-test"]["cost_per_hour"] == pytest.approx(1.5 * by_hw["my-gpu-test"]["devices"])
    assert by_hw["my-gpu-test"]["price_source"] == "input" and by_hw["my-gpu-test"]["power_w"] == 600.0
    # no --price for the H100: the cheapest list-price row, named
    assert by_hw["h100-sxm"]["price_source"].startswith("list price row ")
    assert out["inputs"]["list_prices"]["h100-sxm"]["basis"] == "list price, not what you pay"


def test_step_model_and_predict_accept_the_file(my_gpu):
    path = my_gpu()
    rec = pm.predict("llama-3.1-8b", str(path), batch=1, isl=256, osl=16).records()[0]
    assert rec["efficiency_fallback"] is True  # a user part borrows the generic profile, flagged


