"""Deployment files: validation, readable errors, modes and the shipped examples."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.cli import main
from perfmodel.deployment import load_deployment, predict_deployment

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "deployments").glob("*.yaml"))

SPLIT = {
    "model": "kimi-k2", "precision": {"weights": "fp8", "kv_cache": "fp8"},
    "pools": {"gpu": {"hardware": "gb200", "count": 8, "tp": 8}, "lpu": {"hardware": "groq-lp30", "count": 2304}},
    "placement": {"prefill": "gpu", "decode_attention": "gpu", "decode_ffn": "lpu"},
    "links": {"gpu-lpu": {"bandwidth": "200 GB/s", "alpha": "5 us"}},
}


def variant(**changes):
    d = copy.deepcopy(SPLIT)
    for path, value in changes.items():
        node = d
        keys = path.split("__")
        for k in keys[:-1]:
            node = node[k]
        if value is None:
            node.pop(keys[-1])
        else:
            node[keys[-1]] = value
    return d


def test_modes():
    assert load_deployment(SPLIT).mode == "af-split"
    agg = {"model": "llama-3.1-8b", "pools": {"g": {"hardware": "h100"}}}
    assert load_deployment(agg).mode == "aggregated"
    pd_ = {"model": "llama-3.1-8b", "pools": {"p": {"hardware": "h100"}, "d": {"hardware": "h100"}},
           "placement": {"prefill": "p", "decode": "d"}, "links": {"p-d": "ib-ndr"}}
    assert load_deployment(pd_).mode == "disaggregated"
    both = variant(pools__pre={"hardware": "gb200", "count": 8, "tp": 8}, placement__prefill="pre",
                   links__pre_gpu={"link": "nvlink5"})
    assert load_deployment(both).mode == "disaggregated+af-split"


@pytest.mark.parametrize(("changes", "match"), [
    ({"placement__decode_ffn": "lpx"}, r"placement.decode_ffn: unknown pool 'lpx'; did you mean 'lpu'"),
    ({"links": None}, r"needs a link between pools 'gpu' and 'lpu'"),
    ({"pools__gpu__tpp": 8}, r"pools.gpu.tpp: unknown key 'tpp'.*did you mean 'tp'"),
    ({"links__gpu-lpu__bandwidth": "200 GB"}, r"links.gpu-lpu.bandwidth: expected bandwidth"),
    ({"links": {"gpu-lpx": {"bandwidth": "1 GB/s", "alpha": "1 us"}}}, r"links.gpu-lpx: cannot read two pool names"),
    ({"links__gpu-lpu": {"bandwidth": "1 GB/s"}}, r"both 'bandwidth'.*and 'alpha'"),
    ({"pools__spare": {"hardware": "h100"}}, r"pools.spare: defined but not used"),
    ({"pools__gpu__hardware": "rubbin"}, r"pools.gpu.hardware: unknown hardware 'rubbin'; did you mean 'rubin'"),
    ({"model": "kimi-k3"}, r"model: unknown model 'kimi-k3'; did you mean 'kimi-k2'"),
    ({"pools__lpu__tp": 8}, r"pools.lpu: runs only decode FFN"),
    ({"pools__lpu__ep": 5}, r"ep\*moe_tp = 5\*"),
    ({"pools__lpu__spill": "ddr"}, r"no 'ddr' memory level"),
    ({"pools__gpu__assumed_compute": {"fp8": "1 PFLOP/s"}}, r"already publishes fp8"),
    ({"precision__weights": "fp9"}, r"unknown weights format 'fp9'"),
    ({"pools__gpu__count": 12}, r"not a whole number of replicas|not a multiple of tp"),
    ({"placment": {}}, r"unknown key 'placment'.*did you mean 'placement'"),
    ({"pools__lpu__power_per_device": "300 GB"}, r"power_per_device: expected power"),
])
def test_errors_name_field_value_and_allowed(changes, match):
    with pytest.raises(pm.PerfmodelError, match=match):
        load_deployment(variant(**changes))


def test_link_not_needed_is_an_error():
    agg = {"model": "llama-3.1-8b", "pools": {"g": {"hardware": "h100"}}, "links": {"g-g": "ib-ndr"}}
    with pytest.raises(pm.SpecError, match="two different pools"):
        load_deployment(agg)


def test_shipped_link_and_overrides():
    dep = variant(**{"links__gpu-lpu": {"link": "ib-ndr", "alpha": "1 us"}})
    p = predict_deployment(dep, 1024, 16, 1)
    assert any("50 GB/s" in a and "alpha 1 us" in a for a in p.assumptions)


def test_frozen_and_extra_forbid():
    dep = load_deployment(SPLIT)
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        dep.model = "x"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_shipped_examples_load_and_predict(path):
    p = predict_deployment(path, isl=[1024, 2048], osl=256, batch=[1, 16])
    assert np.all(np.isfinite(p.tpot_s)) and np.all(p.ttft_s > 0) and np.all(p.fits)
    recs = p.records()
    json.dumps(recs)  # plain JSON types
    assert recs[0]["mode"] == p.mode and set(recs[0]["pools"]) == set(p.pools)
    assert "pools" in repr(p) or "pool " in repr(p)


def test_examples_cover_the_four_requested_deployments():
    modes = {p.stem: load_deployment(p).mode for p in EXAMPLES}
    assert modes["llama-3.1-70b-8xh100-aggregated"] == "aggregated"
    assert modes["llama-3.1-70b-h200-disaggregated"] == "disaggregated"
    assert modes["kimi-k2-vera-rubin-lpx-split"] == "af-split"
    assert modes["kimi-k2-gb200-nvl72-slice"] == "aggregated"


def test_records_have_core_keys_plus_deployment_keys():
    core = pm.predict("llama-3.1-8b", "h100", isl=128, osl=8, batch=1).records()[0]
    rec = predict_deployment(SPLIT, 1024, 16, 1).records()[0]
    assert set(core) <= set(rec)
    for k in ("comm_s_per_token", "kv_transfer_s", "mode", "pools"):
        assert k in rec
    assert set(rec["pools"]["lpu"]) >= {"devices", "memory_fits", "busy_fraction", "power_w"}
    assert rec["pools"]["lpu"]["power_w"] is None and rec["power_w"] is None  # LP30 power is not published
    assert rec["output_tokens_per_s_per_mw"] is None
    assert any("groq-lp30 has no published power" in a for a in rec["assumptions"])
    df = predict_deployment(SPLIT, 1024, 16, [1, 2]).to_dataframe()
    assert len(df) == 2 and "lpu.busy_fraction" in df


def test_cli_predict_deployment_json(capsys):
    path = next(p for p in EXAMPLES if "split" in p.stem)
    rc = main(["predict", "--deployment", str(path), "--isl", "2048", "--osl", "128", "--batch", "1,8",
               "--format", "json"])
    assert rc == 0
    recs = json.loads(capsys.readouterr().out)
    assert len(recs) == 2 and recs[0]["mode"] == "af-split" and recs[1]["batch"] == 8
    assert recs[0]["pools"]["lpu"]["devices"] == 2304
    rc = main(["predict", "--deployment", str(path), "--batch", "4"])
    assert rc == 0 and "rubin+groq-lp30" in capsys.readouterr().out


def test_combined_pd_and_split_predicts():
    both = variant(pools__pre={"hardware": "gb200", "count": 16, "tp": 8, "ep": 8}, placement__prefill="pre",
                   links__pre_gpu={"link": "nvlink5"}, options={"kv_transfer": "layerwise"})
    p = predict_deployment(both, 2048, 64, [1, 32])
    assert p.mode == "disaggregated+af-split" and np.all(p.kv_transfer_s > 0) and np.all(p.comm_s_per_token > 0)
    assert p.devices == 16 + 8 + 2304 and set(p.pools["pre"].roles) == {"prefill"}
