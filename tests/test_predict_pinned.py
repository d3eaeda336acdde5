"""``predict`` outputs pinned to the values the code gave before the scalar fast path (issue 21).

The pinned file ``tests/data/predict_pinned.json`` was written by the code of commit b06bae6 (before any
speed-up) with ``python tests/test_predict_pinned.py --write``, and again by main's code at fffee9b (still
without the speed-up), which changed only the MTP case's memory figures (the draft's weights and KV); the speed work must leave every number where it was
(rel 1e-12) and every label (bounds, fit reasons) unchanged. The configurations cover dense, MoE,
MLA + MoE (with attention DP and with DeepSeek Sparse Attention), hybrid recurrent models, pipeline
parallelism with a host-offloaded KV cache, the datasheet profile, the three fitted engines and a preset
(with a prefix cache, prompts longer than the token budget, the small-M variant and
speculative decoding), a broadcast grid and the few-batch-sizes vectorised path. Cases that name a
quantised weight format (or a quantised checkpoint) give ``kv_cache="bf16"``: the KV default when they
were recorded, before the KV cache followed the weights (:mod:`perfmodel.formats`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.engine.engine import Engine

PINNED = Path(__file__).parent / "data" / "predict_pinned.json"

CASES = {
    "llama-3.1-8b h100 dense": dict(model="llama-3.1-8b", hardware="h100-sxm", tp=1, isl=2048, osl=256, batch=8),
    "llama-3.1-70b h100 tp8 fp8": dict(model="llama-3.1-70b", hardware="h100-sxm", tp=8, isl=2048, osl=256,
                                      batch=8, weights="fp8", kv_cache="fp8"),
    "llama-3.1-70b h100 tp4 pp2 kv offload": dict(model="llama-3.1-70b", hardware="h100-sxm", tp=4, pp=2,
                                                 isl=4096, osl=512, batch=16, kv_host_fraction=0.25,
                                                 kv_host_overlap=0.5),
    "llama-2-7b a100 datasheet": dict(model="llama-2-7b", hardware="a100-sxm", isl=512, osl=64, batch=3,
                                      efficiency="datasheet"),
    "deepseek-v3 h200 tp8 fp8 mla+moe": dict(model="deepseek-v3", hardware="h200-sxm", tp=8, isl=2048, osl=256,
                                            batch=8, weights="fp8", kv_cache="bf16"),
    "deepseek-v3 b200 dp-attention ep8": dict(model="deepseek-v3", hardware="b200", tp=1, dp_attention=8, ep=8,
                                              isl=1024, osl=1024, batch=64, weights="fp8", kv_cache="bf16"),
    "deepseek-v3.2 h200 tp8 dsa": dict(model="deepseek-v3.2", hardware="h200-sxm", tp=8, isl=8192, osl=512,
                                      batch=4, weights="fp8", kv_cache="bf16"),
    "gpt-oss-120b b200 mxfp4": dict(model="gpt-oss-120b", hardware="b200", tp=1, isl=2048, osl=256, batch=8,
                                    weights="mxfp4", kv_cache="bf16"),
    "mixtral-8x7b h100 tp2 ep2": dict(model="mixtral-8x7b", hardware="h100-sxm", tp=2, ep=2, isl=1000, osl=300,
                                      batch=5),
    "qwen3-next hybrid h100 tp4": dict(model="qwen3-next-80b-a3b", hardware="h100-sxm", tp=4, isl=2048, osl=256,
                                       batch=8),
    "nemotron-h hybrid h100 tp2": dict(model="nemotron-h-56b", hardware="h100-sxm", tp=2, isl=3000, osl=100,
                                       batch=2),
    "llama-3.1-8b h100 vllm": dict(model="llama-3.1-8b", hardware="h100-sxm", isl=1024, osl=256, batch=1,
                                   engine="vllm"),
    "llama-3.1-70b h200 tp4 fp8 trtllm batch 64": dict(model="llama-3.1-70b", hardware="h200-sxm", tp=4,
                                                       isl=2048, osl=512, batch=64, weights="fp8",
                                                       kv_cache="bf16",
                                                       engine="trtllm"),
    "deepseek-v3 h200 tp8 sglang prefix": dict(model="deepseek-v3", hardware="h200-sxm", tp=8, isl=4096, osl=256,
                                               batch=16, weights="fp8", kv_cache="bf16", engine="sglang",
                                               prefix_hit_rate=0.5),
    "qwen3-30b-a3b h100 vllm-preset": dict(model="qwen3-30b-a3b", hardware="h100-sxm", isl=512, osl=128,
                                           batch=32, engine="vllm-preset"),
    "llama-3.1-8b h100 vllm long prompts side by side": dict(model="llama-3.1-8b", hardware="h100-sxm",
                                                             isl=20000, osl=100, batch=[1, 3]),
    "llama-3.1-70b h100 tp8 vllm-2k chunked": dict(model="llama-3.1-70b", hardware="h100-sxm", tp=8,
                                                   isl=[1000, 5000], osl=64, batch=[[1], [4]], engine="vllm-2k"),
    "llama-3.1-70b b200 tp2 nvfp4 trtllm (small-M variant)": dict(model="llama-3.1-70b", hardware="b200", tp=2,
                                                                 isl=1024, osl=256, batch=16, weights="nvfp4",
                                                                 kv_cache="bf16",
                                                                 engine="trtllm"),
    "deepseek-v3 b200 tp8 nvfp4 sglang mtp": dict(model="deepseek-v3", hardware="b200", tp=8, isl=2048, osl=512,
                                                  batch=8, weights="nvfp4", kv_cache="bf16", engine="sglang",
                                                  spec_decode="mtp:k=3"),
    "llama-3.1-70b h100 tp8 grid": dict(model="llama-3.1-70b", hardware="h100-sxm", tp=8, isl=[128, 2048, 8000],
                                        osl=[[16], [256], [1024]], batch=[1, 8, 64]),
    "deepseek-v3 h200 tp8 few batch sizes": dict(
        model="deepseek-v3", hardware="h200-sxm", tp=8, weights="fp8", kv_cache="bf16",
        isl=list(range(100, 100 + 37 * 80, 37)),
        osl=list(range(20, 20 + 13 * 80, 13)), batch=[4, 32] * 40),
}

NUMBERS = ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "output_tokens_per_s_per_device", "kv_bytes_per_device",
           "memory_used_bytes_per_device", "max_batch_at_context")
LABELS = ("fits", "prefill_bound", "decode_bound", "fit_reason")


def _outputs(case: dict) -> dict:
    kw = dict(case)
    if "spec_decode" in kw:
        kw["engine"] = Engine.load(kw["engine"], spec_decode=kw.pop("spec_decode"))
    p = pm.predict(kw.pop("model"), kw.pop("hardware"), **kw)
    out = {f: [x.item() for x in np.asarray(getattr(p, f)).ravel()] for f in NUMBERS + LABELS}
    out["weights_bytes_per_device"] = float(p.weights_bytes_per_device)
    return out


@pytest.fixture(scope="module")
def pinned() -> dict:
    return json.loads(PINNED.read_text())


def test_every_case_is_pinned(pinned):
    assert sorted(pinned) == sorted(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_predict_matches_the_pinned_values(name, pinned):
    got, want = _outputs(CASES[name]), pinned[name]
    for f in NUMBERS + ("weights_bytes_per_device",):
        assert got[f] == pytest.approx(want[f], rel=1e-12), f
    for f in LABELS:
        assert got[f] == want[f], f


def test_repeated_calls_give_the_same_answer(pinned):
    """Whatever is reused between calls (cached step models, engines, op plans) does not drift."""
    for name in ("deepseek-v3 h200 tp8 sglang prefix", "llama-3.1-8b h100 dense"):
        for _ in range(3):
            assert _outputs(CASES[name])["tpot_s"] == pytest.approx(pinned[name]["tpot_s"], rel=1e-12)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_predict_pinned.py --write   (rewrites the pinned values)")
    PINNED.write_text(json.dumps({name: _outputs(case) for name, case in CASES.items()}, indent=1) + "\n")
