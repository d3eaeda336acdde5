"""Pin of predicted times across the typed-`Op` refactor (issue #16, "typed Op fields").

This test pins a refactor, not the model: the values in ``tests/data/ops_pin.json`` were recorded
from the code *before* :class:`perfmodel.core.ops.Op` replaced its string-keyed ``attention`` and
``moe`` dicts with typed dataclasses, and the refactor must leave every one of them unchanged
(``rel=1e-12``). The configurations cover each producer and consumer of those fields: dense GQA,
sliding-window attention, MLA + MoE (DeepSeek-V3), DSA (DeepSeek-V3.2), gpt-oss MXFP4, Qwen3 MoE,
the recurrent hybrids (Qwen3-Next, Nemotron-H), P/D disaggregation, speculative decoding (the
verification path copies the attention shape), the dataflow "all experts" path, with and without a
serving engine, and the plain (datasheet) and calibrated cost forms.

Each case records TTFT and TPOT of ``predict`` (or the deployment / dataflow prediction), the
per-op-class breakdown of ``predict``, and the time parts of every op of one layer of each layer
group at three step shapes (decode only, mixed, prefill only), costed by ``StepModel._op_parts``.

If an intended modelling change later moves these numbers, re-record them with
``python -m tests.test_core_ops_pin`` and say so in the commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.core.ops import StepShape, attention_ops, ffn_ops
from perfmodel.core.step import StepModel
from perfmodel.engine.engine import Engine
from perfmodel.engine.speculative import parse_spec_decode, speculative_step
from perfmodel.engine.speculative_draft import verify_attention_time

PIN = Path(__file__).parent / "data" / "ops_pin.json"
ROOT = Path(__file__).resolve().parents[1]

#: decode only; mixed (decode + a chunk with a cached prefix); prefill only
SHAPE = StepShape.make(n_decode=[16.0, 8.0, 0.0], context=[2500.0, 3000.0, 0.0], n_prefill=[0.0, 1.0, 2.0],
                       chunk=[0.0, 512.0, 2048.0], past=[0.0, 1024.0, 0.0])

#: name -> (StepModel arguments, predict arguments)
STEP_CASES = {
    "llama8b-h100-bf16": (dict(model="llama-3.1-8b", hardware="h100-sxm"), dict(engine=None)),
    "llama8b-h100-datasheet": (dict(model="llama-3.1-8b", hardware="h100-sxm", efficiency="datasheet"),
                               dict(engine=None)),
    "llama70b-h100-tp8-fp8-vllm": (dict(model="llama-3.1-70b", hardware="h100-sxm", tp=8, weights="fp8",
                                        kv_cache="fp8"), dict(engine="vllm")),
    "mistral7b-window-h100": (dict(model="mistral-7b", hardware="h100-sxm"), dict(engine="sglang")),
    "gptoss120b-b200-mxfp4": (dict(model="gpt-oss-120b", hardware="b200", weights="mxfp4", kv_cache="bf16"),
                              dict(engine="trtllm")),
    "gptoss120b-b200-mxfp4-bare": (dict(model="gpt-oss-120b", hardware="b200", weights="mxfp4",
                                        kv_cache="bf16"),
                                   dict(engine=None)),
    "deepseekv3-h200-tp8-ep8-fp8": (dict(model="deepseek-v3", hardware="h200-sxm", tp=8, ep=8,
                                         weights="fp8", kv_cache="fp8"), dict(engine=None)),
    "deepseekv3-h200-dp8-sglang": (dict(model="deepseek-v3", hardware="h200-sxm", tp=1, dp_attention=8, ep=8,
                                        weights="fp8", kv_cache="fp8"), dict(engine="sglang")),
    "deepseekv32-dsa-h200": (dict(model="deepseek-v3.2", hardware="h200-sxm", tp=8, ep=8, weights="fp8",
                                  kv_cache="fp8"), dict(engine=None)),
    "qwen3-30b-a3b-h100-vllm": (dict(model="qwen3-30b-a3b", hardware="h100-sxm"), dict(engine="vllm")),
    "qwen3-next-h200": (dict(model="qwen3-next-80b-a3b", hardware="h200-sxm", tp=2), dict(engine="vllm")),
    "nemotron-h-56b-h100": (dict(model="nemotron-h-56b", hardware="h100-sxm", tp=2), dict(engine=None)),
}

PREDICT = dict(isl=2048, osl=256, batch=[1, 8, 64])


def _floats(x) -> list[float]:
    return [float(v) for v in np.ravel(x)]


def _step_case(sm_args: dict, predict_args: dict) -> dict[str, list[float]]:
    args = dict(sm_args)
    sm = StepModel(args.pop("model"), args.pop("hardware"), **args)
    out: dict[str, list[float]] = {}
    p = pm.predict(sm.model, None, step_model=sm, **PREDICT, **predict_args)
    out["ttft_s"], out["tpot_s"] = _floats(p.ttft_s), _floats(p.tpot_s)
    for row in p.breakdown(point=0).itertuples():  # the first point (batch 1), as recorded
        out[f"breakdown/{row.phase}/{row.op_class}"] = [row.compute_s, row.memory_s, row.overhead_s, row.time_s]
    for gi, g in enumerate(sm.model.layer_groups):
        for op in attention_ops(sm.model, g, sm.parallel, sm.precision, SHAPE) + ffn_ops(
                sm.model, g, sm.parallel, sm.precision, SHAPE):
            t = sm._op_parts(op)
            key = f"op/{gi}/{op.name}"
            out[key + "/total"] = _floats(t.total)
            out[key + "/compute"] = _floats(t.compute)
            out[key + "/memory"] = _floats(np.broadcast_to(t.memory, np.shape(t.total)))
    return out


def _speculative() -> dict[str, list[float]]:
    sm = StepModel("llama-3.1-70b", "h100-sxm", tp=8, weights="fp8", kv_cache="fp8")
    eng = Engine.load("vllm", spec_decode="eagle:k=3,accept=0.7")
    p = pm.predict(sm.model, None, step_model=sm, engine=eng, **PREDICT)
    step = speculative_step(sm, parse_spec_decode("eagle:k=3,accept=0.7"), [1.0, 16.0], [2500.0, 4000.0])
    ds = StepModel("deepseek-v3", "h200-sxm", tp=8, ep=8, weights="fp8", kv_cache="fp8")
    mtp = speculative_step(ds, parse_spec_decode("mtp:k=2,accept=0.8"), [1.0, 32.0], 3000.0)
    return {"ttft_s": _floats(p.ttft_s), "tpot_s": _floats(p.tpot_s),
            "verify_attention": _floats(verify_attention_time(sm, [1.0, 16.0], 4, [2500.0, 4000.0])),
            "eagle_step": _floats(step.step_time), "mtp_step": _floats(mtp.step_time),
            "gptoss_verify": _floats(verify_attention_time(
                StepModel("gpt-oss-120b", "b200", weights="mxfp4", kv_cache="bf16"), [1.0, 8.0], 3, 6000.0))}


def _disaggregated() -> dict[str, list[float]]:
    d = pm.predict_deployment(ROOT / "deployments" / "llama-3.1-70b-h200-disaggregated.yaml", **PREDICT)
    return {k: _floats(d.columns[k]) for k in ("ttft_s", "tpot_s", "prefill_s", "kv_transfer_s")}


def _dataflow() -> dict[str, list[float]]:
    p = pm.predict_dataflow("mixtral-8x7b", "cerebras-wse3", tp=1, pp=4, isl=1024, osl=128, batch=[1, 8])
    return {k: _floats(p.columns[k]) for k in ("ttft_s", "tpot_s")}


OTHER_CASES = {"speculative-eagle-mtp": _speculative, "pd-llama70b-h200": _disaggregated,
               "dataflow-mixtral-wse3": _dataflow}


def measure() -> dict[str, dict[str, list[float]]]:
    """Every pinned value, by case and key."""
    out = {name: _step_case(*case) for name, case in STEP_CASES.items()}
    return out | {name: fn() for name, fn in OTHER_CASES.items()}


@pytest.fixture(scope="module")
def measured() -> dict[str, dict[str, list[float]]]:
    return measure()


def _pinned() -> dict[str, dict[str, list[float]]]:
    return json.loads(PIN.read_text())


def test_pin_has_every_case():
    assert sorted(_pinned()) == sorted([*STEP_CASES, *OTHER_CASES])


@pytest.mark.parametrize("case", [*STEP_CASES, *OTHER_CASES])
def test_refactor_leaves_times_unchanged(case, measured):
    pinned, now = _pinned()[case], measured[case]
    assert sorted(now) == sorted(pinned), f"{case}: keys changed"
    for key, values in pinned.items():
        assert now[key] == pytest.approx(values, rel=1e-12, abs=0.0), f"{case} {key}"


def test_pin_covers_the_typed_fields():
    """The pin exercises both typed fields: calibrated decode/prefill attention and MoE ops."""
    keys = {k for case in _pinned().values() for k in case}
    for name in ("attention_decode", "attention_prefill", "experts", "recurrent_decode", "indexer_decode"):
        assert any(f"/{name}/" in k for k in keys), name


if __name__ == "__main__":  # re-record (only for an intended modelling change, see the docstring)
    PIN.write_text(json.dumps(measure(), indent=0, sort_keys=True) + "\n")


def test_ops_carry_typed_work():
    """The attention and MoE shapes are typed, frozen and hold the hand-derived sizes."""
    import dataclasses

    from perfmodel.core.work import DecodeAttentionWork, MoEWork, PrefillAttentionWork

    shape = StepShape.make(n_decode=[4.0, 0.0], context=[1000.0, 0.0], n_prefill=[0.0, 2.0], chunk=[0.0, 512.0])
    ds = StepModel("deepseek-v3", "h200-sxm", tp=8, ep=8)
    ops = {op.name: op for op in attention_ops(ds.model, ds.model.layer_groups[-1], ds.parallel, ds.precision,
                                               shape)}
    dec, pre = ops["attention_decode"].attention, ops["attention_prefill"].attention
    assert isinstance(dec, DecodeAttentionWork) and isinstance(pre, PrefillAttentionWork)
    # MLA absorbed decode: 128 heads / tp 8, d_qk = 512 + 64, d_v = 512, one latent stream of 576
    assert (dec.family, dec.heads, dec.d_qk, dec.d_v, dec.kv_width, dec.kv_streams) == (
        "mla_decode", 16.0, 576.0, 512.0, 576.0, 1.0)
    # MLA prefill: d_qk = 128 nope + 64 rope, d_v = 128, K/V heads = query heads
    assert (pre.family, pre.heads, pre.kv_heads, pre.d_qk, pre.d_v) == ("mla_prefill", 16.0, 16.0, 192.0, 128.0)
    assert list(pre.isl) == [0.0, 512.0] and list(pre.batch) == [0.0, 2.0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        dec.heads = 1.0  # type: ignore[misc]

    llama = StepModel("llama-3.1-70b", "h100-sxm", tp=8)
    a = attention_ops(llama.model, llama.model.layer_groups[0], llama.parallel, llama.precision, shape)[2]
    assert (a.attention.heads, a.attention.kv_streams, a.attention.d_qk, a.attention.kv_width) == (
        8.0, 1.0, 128.0, 256.0)  # 64/8 query heads, 8/8 KV heads, K and V of 128
    assert a.attention.grouped and a.attention.window == 0  # 8 query heads share the device's KV head
    gptj = StepModel("gptj-6b", "h100-sxm")  # MHA: one KV head per query head
    a = attention_ops(gptj.model, gptj.model.layer_groups[0], gptj.parallel, gptj.precision, shape)[2]
    assert not a.attention.grouped and a.attention.heads == a.attention.kv_streams == 16.0
    mistral = StepModel("mistral-7b", "h100-sxm")
    a = attention_ops(mistral.model, mistral.model.layer_groups[0], mistral.parallel, mistral.precision, shape)[2]
    assert a.attention.window == 4096 and a.attention.grouped  # 32 query heads over 8 KV heads

    qwen = StepModel("qwen3-30b-a3b", "h100-sxm", tp=2, ep=2)
    experts = [op for op in ffn_ops(qwen.model, qwen.model.layer_groups[0], qwen.parallel, qwen.precision, shape)
               if op.moe is not None]
    assert len(experts) == 1 and isinstance(experts[0].moe, MoEWork)
    moe = experts[0].moe
    # T = 4 decode | 1024 prompt tokens; R = T * top-8 / EP 2; 768 intermediate, not split (MoE-TP 1)
    assert list(moe.tokens) == [4.0, 1024.0] and list(moe.routed) == [16.0, 4096.0]
    assert (moe.inter, moe.matrices) == (768.0, 3.0) and list(moe.decode_only) == [True, False]
