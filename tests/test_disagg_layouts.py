"""Recovered pool layouts of the InferenceX disaggregated rows (perfmodel/data/validation/disagg_workers.csv)."""

import csv

import pandas as pd
import pytest

from perfmodel.validation.data import shipped_path
from perfmodel.validation.disagg_layouts import FILLED, NOT_RECORDED, fill_layout, layout_table
from perfmodel.validation.rows import map_rows

MEASURED = {r["id"]: r for r in csv.DictReader(open(shipped_path("serving"), newline=""))}

# Quoted from SemiAnalysisAI/InferenceX .github/configs/nvidia-master.yaml (commit, line of the entry):
#
# efe2f531c5959cdb407996b70a1beb1a01855a24, l. 238-253, key dsr1-fp4-b200-dynamo-trt, isl 8192 / osl 1024:
#     - spec-decoding: "mtp"
#       conc-list: [10, 15, 30, 60]
#       prefill: {num-worker: 1, tp: 4, ep: 4, dp-attn: true}   (recipe ctx1_gen5_tep8_batch8_eplb0_mtp3.yaml)
#       decode:  {num-worker: 5, tp: 8, ep: 8, dp-attn: false}
# 37f353be258d8ca3d470c6a942a53dd5e027f82b, l. 3805-3819, key dsr1-fp8-gb200-dynamo-sglang, 8192 / 1024:
#     # "Low latency" (1 prefill worker at TP8 and 1 decode worker at TP8)
#     - conc-list: [4, 8, 16]
#       prefill: {num-worker: 1, tp: 8, ep: 1, dp-attn: false}  (recipe gb200-fp8/8k1k/low-latency.yaml)
#       decode:  {num-worker: 1, tp: 8, ep: 1, dp-attn: false}
# 66d6a351abec4fa3bd36a8b81b26643430ab2378, l. 2067-2080 (mtp) and 2183-2196 (no spec decoding),
# key dsr1-fp8-h100-dynamo-trt, 1024 / 1024, both:
#     - conc-list: [231]
#       prefill: {num-worker: 1, tp: 16, ep: 16, dp-attn: true}
#       decode:  {num-worker: 3, tp: 16, ep: 16, dp-attn: true}
QUOTED = {
    # tp 4 with dp-attn -> attention DP 4 (tp_size 1), ep 4, moe_tp 4/4; decode TEP8: tp 8, ep 8, moe_tp 1;
    # batch = 30 clients / (5 workers x 1 DP rank) = 6
    "2026_03_25_deepseek_r1_b200_sxm_trtllm_fp4_disagg_8192x1024_c30_tp4_0_ep4_0_1158": (
        "efe2f531c5959cdb407996b70a1beb1a01855a24", "mtp",
        {"prefill": (1, 1, 4, 1, 4), "decode": (5, 8, 1, 1, 8)}, 6.0),
    # TP8 without EP: moe_tp 8; 4 clients on one decode worker
    "2026_04_06_deepseek_r1_gb200_sglang_fp8_disagg_8192x1024_c4_tp8_ep1_1777": (
        "37f353be258d8ca3d470c6a942a53dd5e027f82b", "none",
        {"prefill": (1, 8, 1, 8, 1), "decode": (1, 8, 1, 8, 1)}, 4.0),
    # DEP16 both pools; 231 clients / (3 workers x 16 DP ranks) = 4.8125
    "2026_03_25_deepseek_r1_h100_sxm_trtllm_fp8_disagg_1024x1024_c231_tp16_0_ep16_0_874": (
        "66d6a351abec4fa3bd36a8b81b26643430ab2378", "mtp|none",
        {"prefill": (1, 1, 16, 1, 16), "decode": (3, 1, 16, 1, 16)}, 4.8125),
}
POOL = ("num_workers", "tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")


#: spec_decode filled for the quoted rows: MTP with the 3 draft tokens of recipe ..._mtp3.yaml; off; not
#: known (one entry with MTP, one without)
SPEC = dict(zip(QUOTED, ("mtp:k=3", "off", ""), strict=True))


@pytest.mark.parametrize("rid", sorted(QUOTED))
def test_filled_rows_match_the_quoted_config_entries(rid):
    commit, spec, pools, batch = QUOTED[rid]
    t = layout_table()[rid]
    assert (t["status"], t["source_commit"], t["spec_decoding"]) == ("filled", commit, spec)
    assert t["spec_decode"] == SPEC[rid]
    for pool, values in pools.items():
        assert tuple(int(t[f"{pool}_{f}"]) for f in POOL) == values, pool
    assert float(t["decode_batch_size"]) == batch and t["prefill_batch_size"] == "1"


def test_filled_layouts_equal_those_recorded_for_the_same_runs():
    """Independent check of the rule: 79 filled rows repeat a run (TTFT and TPOT equal to every digit)
    that InferenceX's database dump lists with its layout recorded; the recovered layout must be that one."""
    recorded = {(r["silicon_ttft_ms"], r["silicon_tpot_ms"]): r for r in MEASURED.values()
                if r["mode"] == "disagg" and r["prefill_num_workers"]}
    pairs = [(t, recorded[(MEASURED[i]["silicon_ttft_ms"], MEASURED[i]["silicon_tpot_ms"])])
             for i, t in layout_table().items() if t["status"] == "filled"
             and (MEASURED[i]["silicon_ttft_ms"], MEASURED[i]["silicon_tpot_ms"]) in recorded]
    assert len(pairs) >= 75
    for t, r in pairs:
        assert {k: float(t[k]) for k in FILLED} == {k: float(r[k]) for k in FILLED}, (t["id"], r["id"])


def test_table_covers_exactly_the_rows_without_worker_counts():
    t = layout_table()
    missing = {i for i, r in MEASURED.items() if r["mode"] == "disagg" and not r["prefill_num_workers"]}
    assert set(t) == missing and len(t) == 700
    assert all(r["status"] in ("filled", "ambiguous", "recipe-only", "no-config") for r in t.values())
    assert all(r["reason"] for r in t.values() if r["status"] != "filled")


def test_fill_layout_touches_only_rows_without_worker_counts():
    rid = "2026_04_06_deepseek_r1_gb200_sglang_fp8_disagg_8192x1024_c4_tp8_ep1_1777"
    row = dict(MEASURED[rid])
    filled, why = fill_layout(row)
    assert why is None and filled["decode_num_workers"] == "1" and filled["decode_batch_size"] == "4"
    assert row["decode_num_workers"] == ""                          # input not modified
    recorded = next(r for r in MEASURED.values() if r["mode"] == "disagg" and r["prefill_num_workers"])
    assert fill_layout(recorded) == (recorded, None)                # a recorded layout is kept as is
    agg = next(r for r in MEASURED.values() if r["mode"] == "agg")
    assert fill_layout(agg) == (agg, None)


def test_fill_layout_says_why_a_row_stays_unmapped():
    table = layout_table()
    for status in ("ambiguous", "recipe-only", "no-config"):
        rid = next(i for i, t in table.items() if t["status"] == status)
        row, why = fill_layout(MEASURED[rid])
        assert row is MEASURED[rid] and why.startswith(NOT_RECORDED) and status in why
    # a table layout whose GPUs per worker differ from the recorded ones is not applied
    rid = next(iter(QUOTED))
    wrong = {**MEASURED[rid], "decode_tp_size": "16"}
    _, why = fill_layout(wrong)
    assert "contradicts the recorded one" in why and "decode 8 GPUs/worker" in why
    _, why = fill_layout({**MEASURED[rid], "id": "not-a-known-run"})
    assert why.endswith("no launch config known for this run")


def test_spec_decode_is_filled_only_where_the_row_has_none():
    rid = next(iter(QUOTED))
    assert fill_layout(MEASURED[rid])[0]["spec_decode"] == "mtp:k=3"
    assert fill_layout({**MEASURED[rid], "spec_decode": "off"})[0]["spec_decode"] == "off"
    unknown = list(QUOTED)[2]
    assert "spec_decode" not in fill_layout(MEASURED[unknown])[0]   # entries disagree: left as recorded
    dep, _ = map_rows(pd.DataFrame([MEASURED[rid]]))
    assert dep.iloc[0]["spec_decode"] == "mtp" and dep.iloc[0]["spec_decode_label"].startswith("mtp:k=3")


def test_map_rows_predicts_a_filled_row():
    rid = "2026_03_25_deepseek_r1_h100_sxm_trtllm_fp8_disagg_1024x1024_c231_tp16_0_ep16_0_874"
    dep, skipped = map_rows(pd.DataFrame([MEASURED[rid]]))
    assert skipped.empty and len(dep) == 1
    d = dep.iloc[0]
    assert (d["p_workers"], d["d_workers"], d["p_dp"], d["dp"], d["tp"], d["ep"]) == (1, 3, 16, 16, 1, 16)
    assert d["concurrency"] == pytest.approx(231 / 3)   # clients per decode replica
