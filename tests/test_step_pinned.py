""":class:`~perfmodel.core.step.StepModel`'s own outputs pinned, concern by concern (issue 21, split of step.py).

``tests/test_predict_pinned.py`` pins what ``predict`` makes of a step model and
``tests/test_core_ops_pin.py`` pins the cost of single ops; this file pins the step model's other
concerns directly, so that moving them between modules is checked where they are computed:

- resolution: peaks, bandwidths, the collective link (scale-up, scale-out tier, topology, the
  "costed flat" assumption), the host link, the fused-MoE format, the labels and the repr;
- memory fit: devices, weights per device, KV bytes per token, recurrent state per sequence, KV
  capacity;
- collectives: the time of each message kind over a few rank counts and sizes (flat, hierarchical
  beyond the scale-up domain, and on a link with a topology);
- step assembly: the builders, the breakdown of a three-point step (decode only, mixed, prefill
  only) by op class and message, its attention / FFN / head parts, the decode-attention parts, and
  ``step_time`` over repeated calls (the first by the breakdown, later ones by the compiled plan).

The values in ``tests/data/step_pinned.json`` were written with
``python tests/test_step_pinned.py --write`` by the code of commit 70e43fd (step.py before its split);
a move must leave every number (rel 1e-12) and every label unchanged. If an intended modelling change
moves them, re-record and say so in the commit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from perfmodel.core.ops import Message, StepShape
from perfmodel.core.step import StepModel

PINNED = Path(__file__).parent / "data" / "step_pinned.json"

#: name -> StepModel arguments
CASES = {
    "dense llama-3.1-8b h100": dict(model="llama-3.1-8b", hardware="h100-sxm"),
    "dense llama-2-7b a100 datasheet": dict(model="llama-2-7b", hardware="a100-sxm", efficiency="datasheet"),
    "dense llama-3.1-70b h100 tp4 pp2 kv offload": dict(model="llama-3.1-70b", hardware="h100-sxm", tp=4, pp=2,
                                                       kv_host_fraction=0.25, kv_host_overlap=0.5),
    "dense llama-3.1-70b h100 tp16 two nodes": dict(model="llama-3.1-70b", hardware="h100-sxm", tp=16),
    "dense llama-3.1-70b mi300x tp16 no scale-out": dict(model="llama-3.1-70b", hardware="mi300x", tp=16),
    "dense llama-3.1-8b lp30 tp8 topology": dict(model="llama-3.1-8b", hardware="groq-lp30", tp=8, weights="fp8"),
    "mla+moe deepseek-v3 h200 tp8 ep8 fp8": dict(model="deepseek-v3", hardware="h200-sxm", tp=8, ep=8,
                                                 weights="fp8", kv_cache="fp8"),
    "mla+moe deepseek-v3 b200 dp8 ep8 imbalance": dict(model="deepseek-v3", hardware="b200", dp_attention=8,
                                                       ep=8, weights="fp8", expert_imbalance=1.3),
    "dsa deepseek-v3.2 h200 tp8": dict(model="deepseek-v3.2", hardware="h200-sxm", tp=8, weights="fp8"),
    "moe gpt-oss-120b b200 mxfp4": dict(model="gpt-oss-120b", hardware="b200", weights="mxfp4"),
    "moe gpt-oss-120b h100 mxfp4": dict(model="gpt-oss-120b", hardware="h100-sxm", weights="mxfp4"),
    "hybrid qwen3-next h200 tp2": dict(model="qwen3-next-80b-a3b", hardware="h200-sxm", tp=2),
    "hybrid nemotron-h h100 tp2": dict(model="nemotron-h-56b", hardware="h100-sxm", tp=2),
}

#: decode only; mixed (decode + a chunk with a cached prefix); prefill only (as tests/test_core_ops_pin.py)
SHAPE = StepShape.make(n_decode=[16.0, 8.0, 0.0], context=[2500.0, 3000.0, 0.0], n_prefill=[0.0, 1.0, 2.0],
                       chunk=[0.0, 512.0, 2048.0], past=[0.0, 1024.0, 0.0])
KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p")
RANKS = (2, 8, 16, 32)
SIZES = np.array([0.0, 1e3, 1e6, 1e9])  # [B]
#: (n_decode, mean_context, prefill_tokens, prefill_past) of the step_time calls
STEP_TIME = (8.0, 2000.0, 0.0, 0.0)


def _floats(x) -> list[float]:
    return [float(v) for v in np.ravel(x)]


def _parts(b) -> dict[str, list[float]]:
    out = {"total": _floats(b.total), "step_overhead": [float(b.step_overhead)]}
    for attr in ("op_total", "compute", "memory", "overhead"):
        for cls, v in getattr(b, attr).items():
            out[f"{attr}/{cls}"] = _floats(np.broadcast_to(v, np.shape(b.total)))
    for name, v in b.comm.items():
        out[f"comm/{name}"] = _floats(np.broadcast_to(v, np.shape(b.total)))
    return out


def _numbers(sm: StepModel) -> dict[str, list[float]]:
    """Every float the step model gives for the pinned calls, by key."""
    out: dict[str, list[float]] = {}
    for name in ("peak", "attention_peak", "bandwidth", "link_bandwidth", "link_alpha", "out_bandwidth",
                 "out_alpha", "host_bandwidth", "reserve", "expert_imbalance", "weights_per_device",
                 "kv_bytes_per_token", "state_bytes_per_sequence", "kv_capacity_tokens", "devices"):
        out[name] = [float(getattr(sm, name))]
    for kind in KINDS:
        for n in RANKS:
            out[f"message/{kind}/{n}"] = _floats(sm._message_time(Message("x", kind, SIZES, n)))
    out |= {f"breakdown/{k}": v for k, v in _parts(sm.breakdown(SHAPE)).items()}
    if sm.parallel.pp == 1:
        for part in ("attention", "ffn", "head"):
            out |= {f"part/{part}/{k}": v for k, v in _parts(sm.breakdown_part(SHAPE, part)).items()}
    d = sm.decode_attention_parts([1.0, 16.0, 64.0], [1000.0, 8000.0, 30000.0])
    out |= {"decode_attention/compute": _floats(d.compute), "decode_attention/memory": _floats(d.memory),
            "decode_attention/total": _floats(d.total),
            "decode_attention_time": _floats(sm.decode_attention_time([1.0, 16.0], 4000.0))}
    for call in range(3):  # breakdown, then the plan formed on the second call, then the plan reused
        out[f"step_time/{call}"] = _floats(sm.step_time(*STEP_TIME))
    out["step_time/prefill"] = _floats(sm.step_time(0.0, 0.0, [512.0, 4096.0], [0.0, 1024.0]))
    out["step_time/datasheet"] = _floats(sm.with_efficiency("datasheet").step_time(*STEP_TIME))
    return out


def _labels(sm: StepModel) -> dict[str, object]:
    """What the step model resolved, as JSON values."""
    return {"labels": dict(sm.labels), "link_id": sm.link_id, "domain": sm.domain,
            "network": sm.network is not None, "assumptions": list(sm.assumptions), "moe_format": sm.moe_format,
            "builders": [[side, None if g is None else [g.mixer, g.ffn, g.window], count]
                         for side, g, count in sm.builders],
            "repr": repr(sm)}


def _outputs(args: dict) -> dict:
    kw = dict(args)
    sm = StepModel(kw.pop("model"), kw.pop("hardware"), **kw)
    return {"numbers": _numbers(sm), "labels": _labels(sm)}


@pytest.fixture(scope="module")
def pinned() -> dict:
    return json.loads(PINNED.read_text())


def test_every_case_is_pinned(pinned):
    assert sorted(pinned) == sorted(CASES)


def test_the_cases_reach_each_link_path(pinned):
    """The pins cover what they claim: a hierarchical two-node layout, the flat fallback with its
    assumption, a link topology, a host link, recurrent state, and all four layer-group builders."""
    lab = {name: pinned[name]["labels"] for name in CASES}
    assert lab["dense llama-3.1-70b h100 tp16 two nodes"]["domain"] == 8
    assert lab["dense llama-3.1-70b mi300x tp16 no scale-out"]["assumptions"]
    assert lab["dense llama-3.1-8b lp30 tp8 topology"]["network"]
    assert pinned["dense llama-3.1-70b h100 tp4 pp2 kv offload"]["numbers"]["breakdown/comm/kv_host_read"][0] > 0
    assert pinned["hybrid qwen3-next h200 tp2"]["numbers"]["state_bytes_per_sequence"][0] > 0
    assert {b[1][0] for b in lab["hybrid nemotron-h h100 tp2"]["builders"] if b[1]} >= {"none", "attention"}


@pytest.mark.parametrize("name", list(CASES))
def test_step_model_matches_the_pinned_values(name, pinned):
    got, want = _outputs(CASES[name]), pinned[name]
    assert got["labels"] == want["labels"]
    assert sorted(got["numbers"]) == sorted(want["numbers"])
    for key, v in want["numbers"].items():
        assert got["numbers"][key] == pytest.approx(v, rel=1e-12), key


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_step_pinned.py --write   (rewrites the pinned values)")
    cases = {name: _outputs(case) for name, case in CASES.items()}
    # one key per line: the file stays readable and a re-recording diffs by key
    PINNED.write_text("{\n" + ",\n".join(
        f' {json.dumps(name)}: {{\n  "labels": {json.dumps(out["labels"])},\n  "numbers": {{\n'
        + ",\n".join(f"   {json.dumps(k)}: {json.dumps(v)}" for k, v in out["numbers"].items()) + "}}"
        for name, out in cases.items()) + "\n}\n")
