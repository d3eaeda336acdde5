"""Capacity plans (hand-checkable with constant-step stand-ins), executors and the plan CLI."""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from perfmodel.planning import Candidate, map_tasks, plan, serving_sweep
from perfmodel.planning.cost import PowerBasis
from perfmodel.serving import SLO, Workload
from perfmodel.serving.stand_in import ConstantStepModel

#: A scheduler without host overheads: 8 sequences at most, prompts of 16 tokens fit one step.
ENGINE = {"name": "hand", "max_num_seqs": 8, "max_num_batched_tokens": 4096}
STEP = 0.01  # s per step, whatever it holds
ISL, OSL = 16, 21
#: Saturation of one replica: 8 slots, each request holds one for OSL steps (prefill step + 20 decodes).
SATURATION = 8 / (OSL * STEP)


@pytest.fixture(scope="module")
def hand_plan():
    w = Workload.fixed(ISL, OSL, rate=100.0)
    slo = SLO(ttft="1 s", tpot="50 ms", target=0.95)
    cands = [
        Candidate("two-device replica", ConstantStepModel(STEP, devices=2), "h100-sxm",
                  power=PowerBasis("tdp", 700.0, source="input"), price=2.0),
        Candidate("one-device replica, slow", ConstantStepModel(0.06)),
        Candidate("no KV room", ConstantStepModel(STEP, kv_capacity_tokens=10)),
        {"model": "llama-3.1-8b", "hardware": "h100-sxm", "tp": 3},
    ]
    return plan(None, w, slo, cands, engine=ENGINE, requests=400)


def test_plan_replicas_are_ceil_rate_over_capacity(hand_plan):
    best = hand_plan.best
    cap = best["max_requests_per_s_per_replica"]
    assert 0.9 * SATURATION <= cap <= 1.02 * SATURATION  # max_load finds the saturation rate, 38.1 req/s
    assert best["replicas"] == math.ceil(100.0 / cap) == 3
    assert best["devices"] == 2 * best["replicas"]
    assert best["slo_attainment"] >= 0.95
    assert best["power_w"] == pytest.approx(700.0 * best["devices"])
    assert best["cost_per_hour"] == pytest.approx(2.0 * best["devices"])
    assert best["tpot_p95_s"] == pytest.approx(STEP)


def test_plan_rejections_carry_reasons(hand_plan):
    why = {r["deployment"]: (r["rejected_for"], r["reason"]) for r in hand_plan.rejected}
    assert why["one-device replica, slow"][0] == "SLO" and "TPOT floor 60 ms" in why["one-device replica, slow"][1]
    assert why["no KV room"][0] == "memory"
    layout = next(v for k, v in why.items() if "tp3" in k)
    assert layout[0] == "layout" and "does not divide" in layout[1]
    assert json.dumps(hand_plan.as_dict(), default=str)  # JSON-ready


def test_plan_load_rejection_and_ranking():
    w = Workload.fixed(ISL, OSL, rate=100.0)
    slo = {"ttft": "1 s", "tpot": "50 ms", "target": 0.95}
    small = Candidate("small", ConstantStepModel(STEP, devices=1), power=PowerBasis("tdp", 1000.0))
    big = Candidate("big", ConstantStepModel(STEP / 2, devices=4), power=PowerBasis("tdp", 100.0))
    r = plan(None, w, slo, [big, small], engine=ENGINE, requests=300, objective="devices", prune=False)
    assert [x["deployment"].split()[0] for x in r.ranked] == ["small", "big"]  # 3 devices vs 8
    r = plan(None, w, slo, [big, small], engine=ENGINE, requests=300, objective="power", prune=False)
    assert [x["deployment"].split()[0] for x in r.ranked] == ["big", "small"]  # 800 W vs 3000 W
    # pruned: the same best; the other is left unsimulated (its bound, 2 x 4 devices, cannot beat 3)
    r = plan(None, w, slo, [big, small], engine=ENGINE, requests=300, objective="devices")
    assert [x["deployment"].split()[0] for x in r.ranked] == ["small"]
    assert [x["deployment"] for x in r.pruned] == ["big"] and r.pruned[0]["min_devices"] == 8
    r = plan(None, w, slo, [small], engine=ENGINE, requests=300, max_replicas=2)
    assert r.ranked == [] and r.rejected[0]["rejected_for"] == "load"


def _square(x: int) -> int:
    return x * x


def test_map_tasks_serial_threads_and_order():
    assert map_tasks(_square, [3, 1, 2]) == [9, 1, 4]
    with ThreadPoolExecutor(2) as ex:
        assert map_tasks(_square, range(10), ex, progress=False) == [k * k for k in range(10)]


def test_serving_sweep_local_pool_matches_serial():
    from concurrent.futures import ProcessPoolExecutor

    w = Workload.fixed(ISL, OSL, rate=10.0, slo={"ttft": "1 s", "tpot": "50 ms"})
    sms = {"fast": ConstantStepModel(STEP), "slow": ConstantStepModel(2 * STEP)}
    serial = serving_sweep(sms, w, rates=[10, 60], requests=150, engine=ENGINE)
    with ProcessPoolExecutor(2) as ex:
        pooled = serving_sweep(sms, w, rates=[10, 60], requests=150, engine=ENGINE, executor=ex)
    assert serial["slo_attainment"].tolist() == pooled["slo_attainment"].tolist()
    assert len(serial) == 4 and set(serial.deployment) == {"fast", "slow"}


def test_serving_sweep_on_local_dask_cluster():
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed not installed: pip install 'perfmodel[dist]' to test "
                              "simulation sweeps on a Dask cluster")
    w = Workload.fixed(ISL, OSL, rate=10.0, slo={"ttft": "1 s", "tpot": "50 ms"})
    sms = {"fast": ConstantStepModel(STEP)}
    serial = serving_sweep(sms, w, rates=[10, 60], requests=150, engine=ENGINE)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        dist = serving_sweep(sms, w, rates=[10, 60], requests=150, engine=ENGINE, executor=client)
    assert serial["slo_attainment"].tolist() == dist["slo_attainment"].tolist()


def test_plan_cli_json(capsys):
    from perfmodel.cli import main

    rc = main(["plan", "--model", "llama-3.1-8b", "--rate", "4", "--isl", "1024", "--osl", "128",
               "--slo-ttft", "2s", "--slo-tpot", "50ms", "--target", "0.95", "--hardware", "h100-sxm",
               "--tp", "1,3", "--price", "h100-sxm=2.5/h", "--requests", "150", "--format", "json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    best = out["ranked"][0]
    for key in ("deployment", "devices", "replicas", "goodput_requests_per_s", "slo_attainment", "power_w",
                "cost_per_hour", "output_tokens_per_s_per_mw"):
        assert key in best
    assert best["cost_per_hour"] == pytest.approx(2.5 * best["devices"])
    assert out["rejected"][0]["rejected_for"] == "layout"
    assert out["inputs"]["prices_usd_per_device_hour"] == {"h100-sxm": 2.5}


def test_plan_cli_errors(capsys):
    from perfmodel.cli import main

    assert main(["plan", "--model", "llama-3.1-8b", "--rate", "4", "--isl", "1024", "--osl", "128",
                 "--hardware", "h100-sxm"]) == 2
    assert "--slo-ttft" in capsys.readouterr().err
    assert main(["plan", "--model", "llama-3.1-8b", "--rate", "4", "--isl", "1024", "--osl", "128",
                 "--slo-tpot", "50ms", "--hardware", "h100-sxm", "--price", "h100-sxm"]) == 2
    assert "HARDWARE=USD_PER_DEVICE_HOUR" in capsys.readouterr().err


def test_capacity_bounded_when_one_run_fits_in_a_batch():
    # 1024 slots absorb a 300-request run at any rate; the plan must still not exceed saturation
    eng = {**ENGINE, "max_num_seqs": 1024}
    w = Workload.fixed(ISL, OSL, rate=100.0)
    r = plan(None, w, {"ttft": "1 s", "tpot": "50 ms"}, [Candidate("wide", ConstantStepModel(STEP))],
             engine=eng, requests=300)
    cap = r.best["max_requests_per_s_per_replica"]
    assert cap <= 1.02 * 1024 / (OSL * STEP)
    assert r.best["replicas"] == 1
