"""The parts a planner rents: headline figures, efficiency fallbacks and what the model does with them.

Figure-by-figure checks against the cited sources are in ``test_hardware_specs.py``; this file checks the
dense-not-sparse headlines spelled out, the family each part borrows its efficiency profile from, and that
a part without a published interconnect figure refuses tensor parallelism instead of inventing one.
"""

from __future__ import annotations

import math

import pytest

import perfmodel as pm
from perfmodel.core.efficiency import profile_for
from perfmodel.errors import ConfigError
from perfmodel.hardware import load_hardware

#: part -> profile it borrows (None: a measured profile of its own)
FAMILY = {
    "l40s": "h100-sxm", "l4": "h100-sxm", "rtx-pro-6000": "b200", "h800": "h100-sxm", "gh200": "h100-sxm",
    "gh200-hbm3e": "h200-sxm", "mi250x": "h100-sxm", "gaudi2": "h100-sxm", "trainium2": "h100-sxm",
    "inferentia2": "h100-sxm", "h100-nvl": "h100-sxm",
}


@pytest.mark.parametrize(("ident", "peak", "value"), [
    ("l40s", "fp8", 733e12),  # '733 | 1,466*': the dense figure, not the sparse one
    ("l40s", "bf16", 362.05e12),
    ("l4", "fp8", 242.5e12),  # 485 with sparsity, halved
    ("l4", "bf16", 121e12),  # only an FP16 figure was read; bf16 falls back to it
    ("h800", "fp8", 1979e12),  # H100 SXM silicon: 3,958 with sparsity, halved
    ("gh200", "bf16", 989.5e12),
    ("mi250x", "bf16", 383e12),  # CDNA2 lists no sparse rate
    ("gaudi2", "bf16", 432e12),
    ("trainium2", "fp8", 1299e12),  # the 2,563 sparse figure is listed separately
    ("trainium2", "bf16", 667e12),
    ("inferentia2", "bf16", 190e12),
    ("rtx-pro-6000", "fp4", 2e15),  # 4,000 FP4 'AI TOPS' taken as sparse
    ("h100-nvl", "fp8", 1670.5e12),  # NVIDIA's table: 3,341* (* with sparsity), halved
    ("h100-nvl", "bf16", 835.5e12),  # 1,671*, halved
])
def test_dense_peaks(ident, peak, value):
    assert load_hardware(ident, "accelerator").peak_flops(peak) == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize(("ident", "capacity", "bandwidth"), [
    ("l40s", 48e9, 864e9), ("l4", 24e9, 300e9), ("rtx-pro-6000", 96e9, 1792e9), ("h800", 80e9, 3.35e12),
    ("gh200", 96e9, 4e12), ("gh200-hbm3e", 141e9, 5e12), ("mi250x", 128e9, 3.2e12), ("gaudi2", 96e9, 2.46e12),
    ("trainium2", 96 * 2**30, 2.9e12), ("inferentia2", 32 * 2**30, 820 * 2**30),
    ("h100-nvl", 94e9, 3.9e12),  # NVIDIA's 3.9 TB/s, not the 4.8 TB/s (H200) an aggregator page lists
])
def test_memory_figures_and_variants(ident, capacity, bandwidth):
    acc = load_hardware(ident, "accelerator")
    assert acc.memory_capacity == pytest.approx(capacity) and acc.memory_bandwidth == pytest.approx(bandwidth)


def test_gh200_variants_differ_only_in_memory():
    a, b = load_hardware("gh200"), load_hardware("gh200-hbm3e")
    assert {k: f.value for k, f in a.compute.items()} == {k: f.value for k, f in b.compute.items()}
    assert a.tdp == b.tdp and a.scale_up.link == b.scale_up.link and a.host_link.link == b.host_link.link
    assert b.memory_capacity > a.memory_capacity and b.memory_bandwidth > a.memory_bandwidth


def test_h800_nvlink_is_cut_to_200_gb_per_s_per_direction():
    h800, h100 = load_hardware("h800"), load_hardware("h100-sxm")
    assert h800.scale_up.bandwidth.value == pytest.approx(200e9)
    assert h800.scale_up.link == h100.scale_up.link == "nvlink4"
    assert h800.peak_flops("fp8") == h100.peak_flops("fp8")


@pytest.mark.parametrize("ident", sorted(FAMILY))
def test_new_parts_borrow_their_family_profile_and_say_so(ident):
    eff = profile_for(ident)
    assert eff.fallback is True
    assert eff.name.startswith(f"{FAMILY[ident]} (fallback for {ident}")
    rec = pm.predict("llama-3.1-8b", ident, isl=512, osl=64, batch=4).records()[0]
    assert rec["efficiency_fallback"] is True and rec["efficiency"] == eff.name
    assert math.isfinite(rec["ttft_s"]) and rec["ttft_s"] > 0 and rec["tpot_s"] > 0


def test_generic_fallbacks_name_the_missing_family():
    for ident, family in [("l4", "Ada"), ("mi250x", "CDNA2"), ("gaudi2", "Gaudi"), ("trainium2", "Neuron"),
                          ("inferentia2", "Neuron")]:
        assert family in profile_for(ident).name


def test_decode_is_bandwidth_ordered_across_rentable_parts():
    # a memory-bound batch-1 decode step of an 8B model: TPOT ranks by memory bandwidth (datasheet roofline)
    tpot = {h: float(pm.predict("llama-3.1-8b", h, isl=256, osl=32, batch=1, efficiency="datasheet").tpot_s)
            for h in ("l4", "l40s", "rtx-pro-6000", "gh200")}
    assert tpot["l4"] > tpot["l40s"] > tpot["rtx-pro-6000"] > tpot["gh200"]
    # ratio of the two GDDR6 parts is the bandwidth ratio within the fixed overheads
    assert tpot["l4"] / tpot["l40s"] == pytest.approx(864 / 300, rel=0.05)


def test_inferentia2_has_no_invented_interconnect():
    assert load_hardware("inferentia2").scale_up is None
    with pytest.raises(ConfigError, match="inferentia2 has no scale-up port"):
        pm.predict("llama-3.1-8b", "inferentia2", tp=2, batch=1)


def test_instance_and_rack_systems():
    # compositions as cited in tests/data/specs/catalogue_figures.csv
    import csv
    from pathlib import Path

    with open(Path(__file__).parent / "data" / "specs" / "catalogue_figures.csv", newline="") as fh:
        cited = {(r["chip"], r["metric"]): r for r in csv.DictReader(fh)}
    assert float(cited[("AWS Trainium2", "chips_per_trn2_48xlarge")]["value"]) == 16
    assert float(cited[("NVIDIA DGX GH200", "superchips")]["value"]) == 256
    assert load_hardware("trn2-48xlarge").source == cited[("AWS Trainium2", "chips_per_trn2_48xlarge")]["source_url"]
    assert load_hardware("dgx-gh200").source == cited[("NVIDIA DGX GH200", "superchips")]["source_url"]
    trn2 = load_hardware("trn2.48xlarge", "system")
    assert (trn2.id, trn2.accelerator, trn2.count, trn2.scale_up_domain) == ("trn2-48xlarge", "trainium2", 16, 16)
    # 16 x 96 GiB of HBM per instance (the Neuron page's per-chip figure)
    assert trn2.count * load_hardware("trainium2").memory_capacity == pytest.approx(16 * 96 * 2**30)
    dgx = load_hardware("dgx-gh200", "system")
    assert (dgx.count, dgx.scale_up_domain, dgx.accelerator) == (256, 256, "gh200")


def test_h100_nvl_is_an_nvlink_pair_on_pcie():
    """NVIDIA's table: 'NVLink: 600GB/s' (both directions, one bridged pair), 'PCIe Gen5: 128GB/s'."""
    nvl, sxm = load_hardware("h100-nvl"), load_hardware("h100-sxm")
    assert nvl.scale_up.link == "nvlink4" and nvl.scale_up.domain == 2
    assert nvl.scale_up.bandwidth.value == pytest.approx(600e9 / 2)
    assert load_hardware(nvl.scale_out.link, "link").bandwidth.value == pytest.approx(128e9 / 2)
    # the copies of NVIDIA's table that give the NVL column give the SXM column too: it equals the shipped
    # SXM figures (1,979* BF16, 3,958* FP8, 3.35 TB/s), so the NVL column is read from the same table
    assert sxm.peak_flops("bf16") * 2 == pytest.approx(1979e12, rel=1e-3)
    assert sxm.peak_flops("fp8") * 2 == pytest.approx(3958e12, rel=1e-3)
    assert sxm.memory_bandwidth == pytest.approx(3.35e12)
    # more memory and bandwidth than the SXM part, lower clocks (1,671 vs 1,979 sparse BF16)
    assert nvl.memory_capacity > sxm.memory_capacity and nvl.memory_bandwidth > sxm.memory_bandwidth
    assert nvl.peak_flops("bf16") / sxm.peak_flops("bf16") == pytest.approx(1671 / 1979, rel=1e-3)


def test_h100_nvl_tp4_crosses_pairs_over_pcie():
    # tp=2 stays on one bridged pair (300 GB/s per direction); tp=4 spans two pairs, so each all-reduce
    # also crosses PCIe (64 GB/s): the prefill all-reduce time grows although each message is the same size
    def comm(tp):
        bd = pm.predict("llama-3.1-70b", "h100-nvl", tp=tp, isl=512, osl=64, batch=8, weights="fp8").breakdown()
        rows = bd[(bd.phase == "prefill") & bd.op_class.str.startswith("comm:")]
        return float(rows.time_s.sum())

    assert comm(4) > 3 * comm(2) > 0
