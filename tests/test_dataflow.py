"""Statically scheduled machines: hand-computed pipelined decode, per-chip memory, layouts, public speeds."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml

import perfmodel as pm
from perfmodel.core.ops import StepShape
from perfmodel.dataflow import DataflowArch, DataflowModel, best_layout, load_arch, predict_dataflow
from perfmodel.dataflow.memory import chip_memory
from perfmodel.dataflow.step import dataflow_parallel
from perfmodel.errors import ConfigError, UnknownNameError
from perfmodel.precision import Precision

H, INTER, VOCAB, LAYERS = 1024, 4096, 1000, 4


@pytest.fixture
def toy(tmp_path):
    """A 4-layer MHA model, a toy chip (given bandwidth, effectively infinite compute) and a fully
    connected link with a 10 us hop, as files."""
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
           "intermediate_size": INTER, "num_hidden_layers": LAYERS, "num_attention_heads": 8,
           "num_key_value_heads": 8, "vocab_size": VOCAB, "max_position_embeddings": 4096,
           "tie_word_embeddings": False, "hidden_act": "silu", "rms_norm_eps": 1e-5}
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "config.json").write_text(json.dumps(cfg))

    def files(bandwidth="1e18 B/s", hop="10 us"):
        chip = {"schema_version": 1, "kind": "accelerator", "id": "toy-chip", "name": "toy",
                "memory": {"sram": {"capacity": "1 GB", "bandwidth": bandwidth}},
                "compute": {"bf16": "1e30 FLOP/s"}}
        link = {"schema_version": 1, "kind": "link", "id": "toy-link", "name": "toy link",
                "topology": "fully-connected", "bandwidth": "1 GB/s", "alpha": hop, "alpha_basis": "assumed"}
        (tmp_path / "chip.yaml").write_text(yaml.safe_dump(chip))
        (tmp_path / "link.yaml").write_text(yaml.safe_dump(link))
        arch = DataflowArch(id="toy", name="toy", accelerator=str(tmp_path / "chip.yaml"),
                            link=str(tmp_path / "link.yaml"), execution="temporal", weights_tier="sram",
                            kv_tier="sram", stream_efficiency={"value": 1.0, "basis": "vendor",
                                                               "fitted_on": "none", "source": "test"},
                            compute_source="test", sources=["test"])
        return str(tmp_path / "toy"), arch

    return files


def test_pipelined_decode_hop_bound_by_hand(toy):
    """4 chips, pp = 4, free compute and memory: a token crosses 3 hand-offs and one hop back,
    each 1 hop of 10 us plus h * 2 B over 1 GB/s."""
    model, arch = toy()
    dm = DataflowModel(model, arch, tp=1, pp=4)
    out = dm.decode(1, 100)
    per_hop = 10e-6 + H * 2 / 1e9
    assert math.isclose(float(out["hand_off_s"]), 4 * per_hop)
    assert float(out["tpot_s"]) == pytest.approx(4 * per_hop, abs=1e-9)  # ops take ~1e-10 s here
    # 8 sequences fill the 4 stages with micro-batches of 2: hand-offs carry twice the activations
    out8 = dm.decode(8, 100)
    assert float(out8["micro_batch"]) == 2.0
    assert math.isclose(float(out8["hand_off_s"]), 4 * (10e-6 + 2 * H * 2 / 1e9))
    # a batch below the pipeline depth does not make a token faster or slower than batch 1
    assert math.isclose(float(dm.decode(3, 100)["tpot_s"]), float(out["tpot_s"]))


def test_pipelined_decode_stream_bound_by_hand(toy):
    """1 TB/s, no hop latency: one stage per layer, each streams its own layer's weights once per token.
    Per layer (MHA, gated FFN, bf16): (4 h^2 + 3 h I) * 2 B; the last stage adds the LM head V h * 2 B."""
    model, arch = toy(bandwidth="1 TB/s", hop="0 us")
    dm = DataflowModel(model, arch, tp=1, pp=4)
    out = dm.decode(1, 1)
    layer = (4 * H * H + 3 * H * INTER) * 2
    weights = (LAYERS * layer + VOCAB * H * 2) / 1e12
    # activations and the one-token KV read add well under 1 %
    assert float(out["tpot_s"]) == pytest.approx(weights + 4 * H * 2 / 1e9, rel=5e-3)
    assert float(out["tpot_s"]) > weights


def test_tp_sync_by_hand(toy):
    """tp = 2 within a stage on a fully connected link: two all-reduces per layer, each 2 steps of one
    10 us hop plus 2 (n-1)/n h b / B."""
    model, arch = toy()
    dm = DataflowModel(model, arch, tp=2, pp=2)
    out = dm.decode(1, 10)
    ar = 2 * 10e-6 + 2 * 0.5 * H * 2 / 1e9
    assert math.isclose(float(out["sync_s"]), LAYERS * 2 * ar)
    # hand-offs between 2-chip stages: both stages fit one fully connected group, 1 hop
    assert math.isclose(float(out["hand_off_s"]), 2 * (10e-6 + H * 2 / 1e9))


def test_more_chips_speed_a_token_up_without_launch_terms():
    """The issue's case: with the borrowed H100 kernel overheads TPOT barely moved from 576 to 768
    chips. Without them, the fastest layout of 768 chips (tp256 x pp3: 768 allows a wider stage than
    576 = 64 x 9) streams a smaller weight share per chip and is markedly faster per user."""
    kw = dict(isl=1024, osl=256, weights="int8", kv_cache="fp16")
    s576 = best_layout("llama-2-70b", "groq-lpu", 576, **kw)["per_user_tokens_per_s"]
    s768 = best_layout("llama-2-70b", "groq-lpu", 768, **kw)["per_user_tokens_per_s"]
    assert s768 > 1.5 * s576


def test_memory_shards_tables_per_chip():
    """Llama-2-70B int8 on groq-lpu tp8 x pp72: the most loaded chip holds ceil(80/72) = 2 layers / 8
    and one vocabulary shard of a table (32000 x 8192 / 8 bytes) - not both tables whole in bf16;
    that is 248 MB, over the 230 MB SRAM; tp8 x pp80 (one layer per stage) fits."""
    model = pm.load_model("llama-2-70b")
    prec = Precision.of("int8", None, "fp16")
    par = dataflow_parallel(model, 8, 72)
    arch = load_arch("groq-lpu")
    mem = chip_memory(model, par, prec, arch, 1, 1024)
    h, inter, d = 8192, 28672, 128
    layer = (h * (64 + 2 * 8) * d + 64 * d * h) / 8 + 3 * h * inter / 8  # bytes at 1 B per weight
    assert math.isclose(mem.weights, 2 * layer + 32000 * h / 8)
    # KV: 2 layers, one of the 8 KV heads per chip, K and V, 128 wide, fp16, 1024 tokens
    assert math.isclose(float(mem.kv), 2 * 1 * 2 * d * 2 * 1024)
    assert set(mem.used) == {"sram"} and not bool(mem.fits)
    assert math.isclose(float(mem.used["sram"]), mem.weights + float(mem.kv) + float(mem.workspace))
    one = chip_memory(model, dataflow_parallel(model, 8, 80), prec, arch, 1, 1024)
    assert math.isclose(one.weights, layer + 32000 * h / 8) and bool(one.fits)
    # pp = 1, tp = 64: both tables (untied) on the same chips, still vocabulary-sharded; with more
    # chips than KV heads each chip keeps one whole KV head (K and V projections replicated)
    whole = chip_memory(model, dataflow_parallel(model, 64, 1), prec, arch, 1, 1024)
    layer64 = h * (1 + 2 * 1) * d + 1 * d * h + 3 * h * inter / 64
    assert math.isclose(whole.weights, 80 * layer64 + 2 * 32000 * h / 64)


def test_memory_misfit_is_reported_and_spill_is_explicit():
    p = predict_dataflow("llama-2-70b", "groq-lpu", tp=8, pp=8, weights="int8")
    assert not bool(p.fits[()]) and "sram" in str(p.fit_reason[()])
    # SN40L: 405B bf16 on 8 sockets overflows HBM (64 GB) and spills weights to DDR
    sn = predict_dataflow("llama-3.1-405b", "sambanova-sn40l", tp=8, isl=1024, osl=128)
    mem = sn.memory
    assert mem.spill_bytes > 0 and mem.tiers["spill"] == "ddr"
    fast, slow = 1.6e12, 100e9
    want = mem.weights / ((mem.weights - mem.spill_bytes) / fast + mem.spill_bytes / slow)
    assert math.isclose(mem.weight_bandwidth, want)
    assert math.isclose(float(mem.used["ddr"][()]), mem.spill_bytes)
    # on 16 sockets it fits HBM and no spill happens
    assert predict_dataflow("llama-3.1-405b", "sambanova-sn40l", tp=16).memory.spill_bytes == 0.0


def test_layout_search_picks_fastest_fitting():
    best = best_layout("llama-2-70b", "groq-lpu", 576, isl=1024, osl=256, weights="int8", kv_cache="fp16")
    assert best["fits"] and best["tp"] * best["pp"] * best["replicas"] == 576
    p = predict_dataflow("llama-2-70b", "groq-lpu", tp=best["tp"], pp=best["pp"], isl=1024, osl=256,
                         weights="int8", kv_cache="fp16")
    assert math.isclose(float(p.per_user_tokens_per_s[()]), best["per_user_tokens_per_s"])
    with pytest.raises(ConfigError, match="no layout"):
        best_layout("llama-3.1-405b", "groq-lpu", 8, weights="int8")


def test_more_chips_never_slower_per_user():
    """Capacity never lowers per-user speed: the best layout of more chips is at least as fast."""
    speeds = [best_layout("llama-2-70b", "groq-lpu", n, isl=1024, osl=128, weights="int8",
                          kv_cache="fp16")["per_user_tokens_per_s"] for n in (576, 1152, 2304)]
    assert speeds == sorted(speeds)
    wafers = [best_layout("llama-3.1-70b", "cerebras-wse3", n, isl=1024, osl=128)["per_user_tokens_per_s"]
              for n in (4, 8, 16, 64)]
    assert wafers == sorted(wafers)


def test_per_user_speed_against_wafers_is_limited_by_hops():
    """Llama-3.1-405B on Cerebras (October 2024 release): more wafers never lower the per-user speed, but
    each wafer-to-wafer hand-off costs alpha + h b_a / B = 5 us + 16384 x 2 B / 150 GB/s = 5.218 us, so a
    pipeline of 126 one-layer stages pays 126 x 5.218 us = 0.657 ms of hops per token (at most 1,521
    tok/s whatever the streaming) and is slower than 63 stages; on 126 wafers the search keeps 63 stages
    x 2 replicas."""
    hop = 5e-6 + 16384 * 2 / 150e9
    deep = predict_dataflow("llama-3.1-405b", "cerebras-wse3-oct2024", tp=1, pp=126, isl=1024, osl=256)
    assert math.isclose(float(deep.hand_off_s[()]), 126 * hop, rel_tol=1e-6)
    assert float(deep.per_user_tokens_per_s[()]) < 1 / (126 * hop)
    half = predict_dataflow("llama-3.1-405b", "cerebras-wse3-oct2024", tp=1, pp=63, isl=1024, osl=256)
    assert float(half.per_user_tokens_per_s[()]) > float(deep.per_user_tokens_per_s[()])
    best = [best_layout("llama-3.1-405b", "cerebras-wse3-oct2024", n, isl=1024, osl=256) for n in (21, 42, 126)]
    speeds = [b["per_user_tokens_per_s"] for b in best]
    assert speeds == sorted(speeds)
    assert (best[-1]["pp"], best[-1]["replicas"]) == (63, 2)


def test_sn40l_streams_weights_through_the_all_reduces():
    """SN40L declares sync_hidden_by_stream: a layer's work is max(ops, compute + sync), so at batch 1,
    where the HBM stream dominates, TPOT is the ops and the LM head and no all-reduce time shows; the
    same chip with additive sync pays every all-reduce on top (the difference is exactly the sync)."""
    sn = load_arch("sambanova-sn40l")
    assert sn.sync_hidden_by_stream and not load_arch("groq-lpu").sync_hidden_by_stream
    hidden = DataflowModel("llama-3.1-70b", sn, tp=16)
    added = DataflowModel("llama-3.1-70b", sn.model_copy(update={"sync_hidden_by_stream": False}), tp=16)
    h, a = hidden.decode(1, 1024.0), added.decode(1, 1024.0)
    parts = hidden.stage_parts(StepShape.make(n_decode=1.0, context=1024.0), hidden.chip.memory["hbm"].bandwidth.value)
    assert float(parts.compute + parts.sync) < float(parts.total_ops)  # the stream hides the sync
    assert float(h["sync_s"]) == 0.0 and math.isclose(float(h["tpot_s"]), float(h["ops_s"] + h["head_s"]))
    assert math.isclose(float(a["tpot_s"] - h["tpot_s"]), float(parts.sync), rel_tol=1e-9)
    assert float(a["sync_s"]) > 1e-3  # about 2 ms of all-reduces per token on the assumed socket link


def test_arch_lookup_and_bad_input():
    assert load_arch("groq-lpu").accelerator == "groq-lpu"
    with pytest.raises(UnknownNameError, match="dataflow architecture"):
        load_arch("groq-lpv")
    with pytest.raises(ConfigError, match="stream_efficiency"):
        DataflowModel("llama-3.1-8b", "cerebras-wse3", stream_efficiency=2.0)
    for arch in ("groq-lpu", "groq-lp30", "cerebras-wse3", "sambanova-sn40l"):
        a = load_arch(arch)
        assert a.stream_efficiency.source.startswith("http") and a.sources


def test_vectorised_over_batch():
    p = predict_dataflow("llama-3.1-8b", "cerebras-wse3", batch=[1, 32, 64], isl=1024, osl=128)
    tpot = np.asarray(p.tpot_s)
    assert tpot.shape == (3,) and tpot[0] <= tpot[1] <= tpot[2]
    assert np.all(np.diff(np.asarray(p.output_tokens_per_s)) > 0)
