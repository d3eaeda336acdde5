"""Data-integrity sweep over every shipped hardware spec, and each figure against its cited source value.

The cited values come from the seed tables copied into ``tests/data/specs`` and, for parts added after
the seed library, from the project's own ``catalogue_figures.csv`` / ``catalogue_links.csv`` there (see
the README). Where a cell is a range or text, the test writes the cited number explicitly, with a comment.
"""

from __future__ import annotations

import csv
import math
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import pytest

from perfmodel.hardware import list_hardware, load_hardware, parse_spec, read_yaml
from perfmodel.hardware.schema import Accelerator, Figure, Link, System, iter_figures
from perfmodel.units import to_si

DATA = Path(__file__).parent / "data" / "specs"
REL = 1e-9


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
def shipped_files() -> list[Path]:
    """Every YAML file under the installed ``perfmodel.hardware_specs`` package."""
    root = Path(str(resources.files("perfmodel.hardware_specs")))
    return sorted(root.rglob("*.y*ml"))


@cache
def read_csv(name: str) -> tuple[dict[str, str], ...]:
    with open(DATA / name, newline="", encoding="utf-8") as fh:
        return tuple(csv.DictReader(fh))


def urls(cell: str | None) -> set[str]:
    """The URLs of a ``source_url`` cell (several are separated by ' | ')."""
    return {u.strip() for u in (cell or "").split("|") if u.strip()}


@cache
def all_seed_urls() -> frozenset[str]:
    found: set[str] = set()
    for row in read_csv("accelerators.csv"):
        found |= urls(row["source_urls"])
    for name in (*LONG_TABLES, *LINK_TABLES):
        for row in read_csv(name):
            found |= urls(row["source_url"])
    return frozenset(found)


#: per-figure tables: the seed library's, then the figures added for parts it lacks (same columns)
LONG_TABLES = ("accelerator_figures_long.csv", "catalogue_figures.csv")
LINK_TABLES = ("links.csv", "catalogue_links.csv")


def long_row(chip: str, metric: str) -> dict[str, str]:
    rows = [r for t in LONG_TABLES for r in read_csv(t) if r["chip"] == chip and r["metric"] == metric]
    assert len(rows) == 1, f"expected one row for ({chip!r}, {metric!r}), found {len(rows)}"
    return rows[0]


def link_row(link: str, product: str) -> dict[str, str]:
    rows = [r for t in LINK_TABLES for r in read_csv(t)
            if r["link"] == link and r["generation_or_product"] == product]
    assert len(rows) == 1, f"expected one links.csv row for ({link!r}, {product!r}), found {len(rows)}"
    return rows[0]


def dimension_of(path: str) -> str:
    """Named dimension of a figure path (``memory.hbm.capacity`` -> ``bytes``)."""
    if path.endswith("capacity") or path == "host_memory":
        return "bytes"
    if path.endswith("bandwidth"):
        return "bandwidth"
    if path.startswith("compute."):
        return "flops"
    if path == "power":
        return "power"
    if path == "alpha":
        return "time"
    raise KeyError(path)


def cell_si(value: str, unit: str, path: str, scale: float = 1.0) -> float:
    """A numeric CSV cell with its unit (first word of the unit column) converted to SI."""
    return scale * to_si(f"{float(value)} {unit.split()[0]}", dimension_of(path))


def effective(spec: Accelerator, path: str) -> tuple[float, Figure | None]:
    """Value at ``path``; for ``<port>.bandwidth`` the override or else the port's link figure.

    Returns the value and the figure if it lives in the accelerator's own file (else None).
    """
    figures = dict(iter_figures(spec))
    if path in figures:
        return figures[path].value, figures[path]
    port_name = path.split(".")[0]
    port = getattr(spec, port_name)
    assert port is not None, f"{spec.id}: no {port_name} port"
    return load_hardware(port.link, "link").bandwidth.value, None


def close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(a, b, rel_tol=rel)


# --------------------------------------------------------------------------------------------------
# sweep over every file
# --------------------------------------------------------------------------------------------------
FILES = shipped_files()
KIND_DIRS = {"accelerators": "accelerator", "links": "link", "systems": "system"}


def test_the_expected_ids_ship():
    ids = {s.id for s in list_hardware()}
    expected = {
        "a100-sxm", "h100-sxm", "h100-pcie", "h200-sxm", "h20", "b200", "b300", "gb200", "gb300", "rubin",
        "mi300x", "mi325x", "mi355x", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-ironwood", "gaudi3",
        "groq-lpu", "groq-lp30", "cerebras-wse3", "sambanova-sn40l", "cerebras-cs3-io", "sambanova-sn40l-16",
        "l40s", "l4", "rtx-pro-6000", "h800", "gh200", "gh200-hbm3e", "mi250x", "gaudi2", "trainium2",
        "inferentia2", "gaudi2-roce", "neuronlink-v3", "trn2-48xlarge", "dgx-gh200", "h100-nvl",
        "nvlink3", "nvlink4", "nvlink5", "nvlink6", "pcie4", "pcie5", "pcie6", "ib-hdr", "ib-ndr", "ib-xdr",
        "eth-400g", "eth-800g",
        "hgx-h100", "hgx-h200", "hgx-b200", "gb200-nvl72", "gb300-nvl72", "vera-rubin-nvl72", "groq-lpx",
    }
    assert expected <= ids, f"missing: {sorted(expected - ids)}"
    assert len(FILES) == len(ids)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_file_loads_and_is_named_after_its_id(path: Path):
    spec = parse_spec(read_yaml(path), str(path))
    assert spec.id == path.stem
    assert spec.kind == KIND_DIRS[path.parent.name]
    assert spec.name.strip()


@pytest.mark.parametrize("spec", list_hardware(), ids=lambda s: s.id)
def test_every_figure_has_a_seed_source(spec):
    for path, fig in iter_figures(spec):
        assert fig.source and fig.source.startswith("http"), f"{spec.id}.{path}: no source URL"
        assert fig.source in all_seed_urls(), f"{spec.id}.{path}: {fig.source} is not a seed-library source"
        if "derived" in fig.basis:
            assert fig.note, f"{spec.id}.{path}: a derived figure needs a note saying how"


# (low, high) in SI units per (kind, figure path pattern)
RANGES: list[tuple[str, str, float, float]] = [
    ("accelerator", r"memory\.hbm\.capacity", 8e9, 1e12),
    ("accelerator", r"memory\.hbm\.bandwidth", 5e11, 5e13),
    ("accelerator", r"memory\.gddr\.capacity", 8e9, 2e11),
    ("accelerator", r"memory\.gddr\.bandwidth", 2e11, 3e12),  # the L4's GDDR6 is 300 GB/s
    ("accelerator", r"memory\.sram\.capacity", 1e7, 1e11),
    ("accelerator", r"memory\.sram\.bandwidth", 1e12, 1e17),
    ("accelerator", r"memory\.ddr\.capacity", 1e10, 1e13),
    ("accelerator", r"memory\.ddr\.bandwidth", 1e10, 2e12),
    ("accelerator", r"compute\..*", 1e12, 2e17),
    ("accelerator", r"power", 50, 3e4),  # the L4 is a 72 W card
    ("accelerator", r"(scale_up|scale_out|host_link)\.bandwidth", 1e10, 5e12),
    ("link", r"bandwidth", 1e10, 5e12),
    ("link", r"alpha", 1e-7, 1e-4),
    ("system", r"power", 1e3, 1e6),
    ("system", r"host_memory", 1e12, 1e15),
]


def sane_range(kind: str, path: str) -> tuple[float, float]:
    for k, pattern, low, high in RANGES:
        if k == kind and re.fullmatch(pattern, path):
            return low, high
    raise AssertionError(f"no sane range for {kind} figure {path!r}; add one to RANGES")


@pytest.mark.parametrize("spec", list_hardware(), ids=lambda s: s.id)
def test_values_in_sane_ranges(spec):
    for path, fig in iter_figures(spec):
        low, high = sane_range(spec.kind, path)
        assert low <= fig.value <= high, f"{spec.id}.{path} = {fig.value:g} outside [{low:g}, {high:g}]"


@pytest.mark.parametrize("spec", list_hardware("accelerator"), ids=lambda s: s.id)
def test_accelerator_has_a_low_precision_peak(spec):
    assert {"bf16", "fp16", "fp8", "fp4"} & set(spec.compute), f"{spec.id}: no bf16/fp16/fp8/fp4 peak"
    assert spec.memory_capacity > 0 and spec.memory_bandwidth > 0


@pytest.mark.parametrize("spec", list_hardware("accelerator"), ids=lambda s: s.id)
def test_sram_only_chips_have_no_hbm(spec):
    sram_only = {"groq-lpu", "groq-lp30", "cerebras-wse3"}
    gddr_cards = {"l4", "l40s", "rtx-pro-6000"}  # graphics-card memory, no HBM
    if spec.id in sram_only:
        assert set(spec.memory) == {"sram"}
        assert spec.main_memory == "sram"
    elif spec.id in gddr_cards:
        assert "hbm" not in spec.memory and spec.main_memory == "gddr"
    else:
        assert "hbm" in spec.memory


def test_ids_and_aliases_are_unique():
    specs = list_hardware()
    ids = [s.id for s in specs]
    assert len(ids) == len(set(ids))
    seen: dict[str, str] = {i.lower(): i for i in ids}
    for s in specs:
        for alias in s.aliases:
            key = alias.lower()
            assert key not in seen or seen[key] == s.id, f"alias {alias!r} of {s.id} clashes with {seen[key]}"
            seen[key] = s.id
            assert load_hardware(alias) is s


@pytest.mark.parametrize("spec", list_hardware("accelerator"), ids=lambda s: s.id)
def test_accelerator_ports_resolve_to_links(spec):
    for port_name in ("scale_up", "scale_out", "host_link"):
        port = getattr(spec, port_name)
        if port is not None:
            assert isinstance(load_hardware(port.link, "link"), Link), f"{spec.id}.{port_name}"


@pytest.mark.parametrize("spec", list_hardware("system"), ids=lambda s: s.id)
def test_system_references_resolve(spec: System):
    acc = load_hardware(spec.accelerator, "accelerator")
    load_hardware(spec.scale_up, "link")
    if spec.scale_out:
        load_hardware(spec.scale_out, "link")
    assert acc.scale_up is not None and acc.scale_up.link == spec.scale_up
    if spec.scale_up_domain and acc.scale_up.domain:
        assert spec.scale_up_domain == acc.scale_up.domain
    if spec.scale_out and acc.scale_out:
        assert spec.scale_out == acc.scale_out.link


@pytest.mark.parametrize("spec", list_hardware(), ids=lambda s: s.id)
def test_unreleased_parts_are_marked(spec):
    """Announced or preliminary parts tag every figure as such; shipping parts are not tagged so."""
    preliminary = {"rubin", "groq-lp30", "vera-rubin-nvl72", "groq-lpx", "nvlink6", "groq-c2c"}
    if spec.kind != "link":
        assert (spec.status != "shipping") == (spec.id in preliminary), spec.id
    if spec.id in preliminary:
        for path, fig in iter_figures(spec):
            if path != "alpha":  # an assumed latency, not an announcement
                assert {"announced", "preliminary"} & set(fig.basis), f"{spec.id}.{path}"


@pytest.mark.parametrize("spec", list_hardware("link"), ids=lambda s: s.id)
def test_link_bandwidth_is_tagged_per_direction(spec: Link):
    assert "per-direction" in spec.bandwidth.basis
    assert spec.alpha.source and spec.alpha_basis in spec.alpha.basis


# --------------------------------------------------------------------------------------------------
# figures equal the cited values
# --------------------------------------------------------------------------------------------------
#: accelerator id -> chip name in accelerator_figures_long.csv
CHIP = {
    "a100-sxm": "NVIDIA A100-80GB SXM4",
    "h100-sxm": "NVIDIA H100 SXM5 80GB",
    "h100-pcie": "NVIDIA H100 PCIe 80GB",
    "h200-sxm": "NVIDIA H200 SXM 141GB",
    "h20": "NVIDIA H20 (96GB)",
    "b200": "NVIDIA B200 (HGX, 1000 W)",
    "b300": "NVIDIA B300 / Blackwell Ultra (HGX)",
    "gb200": "NVIDIA GB200 (per Blackwell GPU, 1200 W)",
    "gb300": "NVIDIA GB300 (per Blackwell Ultra GPU, 1400 W)",
    "rubin": "NVIDIA Rubin GPU (VR200, per package, preliminary)",
    "mi300x": "AMD Instinct MI300X",
    "mi325x": "AMD Instinct MI325X",
    "mi355x": "AMD Instinct MI355X",
    "tpu-v5e": "Google TPU v5e",
    "tpu-v5p": "Google TPU v5p",
    "tpu-v6e": "Google TPU v6e (Trillium)",
    "tpu-ironwood": "Google TPU7x (Ironwood)",
    "gaudi3": "Intel Gaudi 3 (OAM)",
    "groq-lpu": "Groq GroqChip / LPU v1 (TSP)",
    "groq-lp30": "NVIDIA Groq 3 LPU (LP30, per chip)",
    "cerebras-wse3": "Cerebras WSE-3 (CS-3)",
    # catalogue_figures.csv
    "l40s": "NVIDIA L40S", "l4": "NVIDIA L4", "rtx-pro-6000": "NVIDIA RTX PRO 6000 Blackwell",
    "h800": "NVIDIA H800 SXM5", "gh200": "NVIDIA GH200 (96GB HBM3)", "gh200-hbm3e": "NVIDIA GH200 (HBM3e, announced)",
    "mi250x": "AMD Instinct MI250X", "gaudi2": "Intel Gaudi 2", "trainium2": "AWS Trainium2",
    "inferentia2": "AWS Inferentia2", "h100-nvl": "NVIDIA H100 NVL (94GB)",
    "sambanova-sn40l": "SambaNova SN40L RDU (per socket)",
}
VERA_RUBIN_RACK = "NVIDIA Vera Rubin NVL72 / 'NVL144' (rack, preliminary)"

_GPU = {
    "memory.hbm.capacity": "hbm_capacity", "memory.hbm.bandwidth": "hbm_bandwidth",
    "compute.fp64": "fp64", "compute.fp32": "fp32_vector", "compute.tf32": "tf32_tensor",
    "compute.bf16": "bf16_tensor", "compute.fp16": "fp16_tensor", "compute.fp8": "fp8_tensor",
    "compute.int8": "int8_tensor", "compute.fp6": "fp6_tensor", "compute.fp4": "fp4_tensor", "power": "tdp",
}
_GDDR = {**{k: v for k, v in _GPU.items() if not k.startswith("memory.")},
         "memory.gddr.capacity": "gddr_capacity", "memory.gddr.bandwidth": "gddr_bandwidth"}
_TPU = {
    "memory.hbm.capacity": "hbm_capacity", "memory.hbm.bandwidth": "hbm_bandwidth",
    "compute.bf16": "bf16", "compute.fp8": "fp8", "compute.int8": "int8",
}
_SRAM = {"memory.sram.capacity": "sram", "memory.sram.bandwidth": "sram_bandwidth"}
_BIDIR = 0.5  # a bidirectional total, halved to the per-direction figure
_HALF = 0.5  # a 2:4-sparse peak, halved to the dense one


class Cite(NamedTuple):
    """Where a figure is cited: long-table metric, and a scale or an explicit number for text cells."""

    metric: str
    scale: float = 1.0
    explicit: str | None = None  # quantity string, for cells that are ranges or text
    chip: str | None = None  # another row than CHIP[id]


#: accelerator id -> figure path -> citation. Every figure in every accelerator file must be listed.
CITED: dict[str, dict[str, Cite | str]] = {
    "a100-sxm": {**_GPU, "scale_up.bandwidth": "nvlink_bw_per_direction",
                 "host_link.bandwidth": "pcie", "scale_out.bandwidth": "scaleout_nic_assumed"},
    "h100-sxm": {**_GPU, "scale_up.bandwidth": "nvlink_bw_per_direction",
                 "host_link.bandwidth": Cite("pcie", _BIDIR),
                 "scale_out.bandwidth": "scaleout_nic_assumed"},
    "h100-pcie": {
        **_GPU,
        # the tdp cell is the range '300-350'; the file uses the upper end
        "power": Cite("tdp", explicit="350 W"),
        "scale_up.bandwidth": Cite("pcie", _BIDIR), "host_link.bandwidth": Cite("pcie", _BIDIR),
    },
    "h200-sxm": {**_GPU, "scale_up.bandwidth": "nvlink_bw_per_direction"},
    "h20": {**_GPU, "scale_up.bandwidth": Cite("nvlink_bw_bidirectional", _BIDIR)},
    "b200": {
        **_GPU, "scale_up.bandwidth": "nvlink_bw_per_direction",
        # the pcie cell is the text 'Gen5 x16': 64 GB/s per direction (NOTES.md section 3)
        "host_link.bandwidth": Cite("pcie", explicit="64 GB/s"),
    },
    "b300": {
        **_GPU, "scale_up.bandwidth": Cite("nvlink_bw_bidirectional", _BIDIR),
        # the pcie cell reads 'Gen6 (128 GB/s per direction, 256 bidir)'
        "host_link.bandwidth": Cite("pcie", explicit="128 GB/s"),
    },
    "gb200": {**_GPU, "scale_up.bandwidth": "nvlink_bw_per_direction",
              "host_link.bandwidth": Cite("nvlink_c2c_cpu_gpu", _BIDIR)},
    "gb300": {**_GPU, "scale_up.bandwidth": Cite("nvlink_bw_bidirectional", _BIDIR)},
    "rubin": {
        **_GPU, "compute.fp4": "fp4_tensor_inference",
        "scale_up.bandwidth": Cite("nvlink6_bw", _BIDIR),
        # the rack row's vera_cpu cell reads '88 cores / 176 threads; NVLink-C2C 1.8 TB/s'
        "host_link.bandwidth": Cite("vera_cpu", explicit="900 GB/s", chip=VERA_RUBIN_RACK),
    },
    "mi300x": {**_GPU, "scale_up.bandwidth": Cite("infinity_fabric_aggregate", _BIDIR)},
    "mi325x": {**_GPU},
    "mi355x": {**_GPU, "compute.fp6": "fp4_fp6_tensor", "compute.fp4": "fp4_fp6_tensor"},
    "tpu-v5e": {**_TPU, "scale_up.bandwidth": Cite("ici_bw_bidirectional", _BIDIR)},
    "tpu-v5p": {**_TPU, "scale_up.bandwidth": Cite("ici_bw_bidirectional", _BIDIR)},
    "tpu-v6e": {**_TPU, "scale_up.bandwidth": Cite("ici_bw_bidirectional", _BIDIR)},
    "tpu-ironwood": {**_TPU, "scale_up.bandwidth": Cite("ici_bw_bidirectional", _BIDIR)},
    "gaudi3": {
        **_TPU, "memory.sram.capacity": "sram",
        # the sram row's basis cell reads 'on-die, 12.8 TB/s'
        "memory.sram.bandwidth": Cite("sram", explicit="12.8 TB/s"),
        # the tdp cell reads '900 (air) / 1200 (liquid)'; the air-cooled OAM is used
        "power": Cite("tdp", explicit="900 W"),
        # '24x 200GbE RoCE = 1200 GB/s bidirectional (9.6 Tb/s)'
        "scale_up.bandwidth": Cite("scaleup_scaleout", explicit="600 GB/s"),
        # 'Gen5 x16, 128 GB/s bidirectional'
        "host_link.bandwidth": Cite("pcie", explicit="64 GB/s"),
    },
    "groq-lpu": {
        **_SRAM, "compute.fp16": "fp16", "compute.int8": "int8",
        "power": Cite("power", explicit="300 W"),  # the cell reads '~300'
        # '16 links x 4 lanes x 30 Gbps; ...; 480 GB/s total'
        "scale_up.bandwidth": Cite("c2c_links", explicit="240 GB/s"),
        "host_link.bandwidth": Cite("host", explicit="32 GB/s"),  # 'PCIe Gen4 x16'
    },
    "groq-lp30": {
        **_SRAM, "compute.fp8": "fp8",
        # '96 links x 112 Gbps = 2.5 TB/s bidirectional'
        "scale_up.bandwidth": Cite("c2c", explicit="1250 GB/s"),
    },
    "cerebras-wse3": {
        **_SRAM, "compute.fp16": "fp16_peak",
        "power": Cite("system_power", explicit="23 kW"),  # the cell reads '~23' kW
    },
    # --- parts added in catalogue_figures.csv ---
    # 'PCIe Gen4 x16: 64GB/s bidirectional'
    "l40s": {**_GDDR, "scale_up.bandwidth": Cite("pcie", explicit="32 GB/s"),
             "host_link.bandwidth": Cite("pcie", explicit="32 GB/s")},
    "l4": {
        **_GDDR, "compute.tf32": Cite("tf32_tensor_sparse", _HALF), "compute.fp16": Cite("fp16_tensor_sparse", _HALF),
        "compute.fp8": Cite("fp8_tensor_sparse", _HALF), "compute.int8": Cite("int8_tensor_sparse", _HALF),
        # the pcie cell reads 'Gen4 x16': 32 GB/s per direction (NOTES.md section 3)
        "scale_up.bandwidth": Cite("pcie", explicit="32 GB/s"), "host_link.bandwidth": Cite("pcie", explicit="32 GB/s"),
    },
    "rtx-pro-6000": {
        # 4,000 FP4 'AI TOPS' taken as 2:4-sparse: dense FP4 = 1/2, FP8 = 1/4, BF16 = 1/8 of it
        **_GDDR, "compute.fp4": Cite("fp4_ai_tops", _HALF), "compute.fp8": Cite("fp4_ai_tops", 0.25),
        "compute.bf16": Cite("fp4_ai_tops", 0.125),
        "scale_up.bandwidth": Cite("pcie", explicit="64 GB/s"), "host_link.bandwidth": Cite("pcie", explicit="64 GB/s"),
    },
    "h800": {
        **_GPU, "compute.bf16": Cite("bf16_tensor_sparse", _HALF), "compute.fp8": Cite("fp8_tensor_sparse", _HALF),
        "scale_up.bandwidth": Cite("nvlink_bw_bidirectional", _BIDIR),
        "scale_out.bandwidth": Cite("scaleout_nic_assumed", chip=CHIP["h100-sxm"]),
        "host_link.bandwidth": Cite("pcie", _BIDIR, chip=CHIP["h100-sxm"]),
    },
    "gh200": {
        **_GPU, "compute.bf16": Cite("bf16_tensor_sparse", _HALF), "compute.fp8": Cite("fp8_tensor_sparse", _HALF),
        "power": "module_power",
        # the same Hopper GPU and NVLink4 as the H100 SXM
        "scale_up.bandwidth": Cite("nvlink_bw_per_direction", chip=CHIP["h100-sxm"]),
        "scale_out.bandwidth": Cite("scaleout_nic_assumed", chip=CHIP["h100-sxm"]),
        "host_link.bandwidth": Cite("nvlink_c2c_bidirectional", _BIDIR),
    },
    "gh200-hbm3e": {
        **_GPU, "compute.bf16": Cite("bf16_tensor_sparse", _HALF, chip=CHIP["gh200"]),
        "compute.fp8": Cite("fp8_tensor_sparse", _HALF, chip=CHIP["gh200"]),
        "power": Cite("module_power", chip=CHIP["gh200"]),
        "scale_up.bandwidth": Cite("nvlink_bw_per_direction", chip=CHIP["h100-sxm"]),
        "scale_out.bandwidth": Cite("scaleout_nic_assumed", chip=CHIP["h100-sxm"]),
        "host_link.bandwidth": Cite("nvlink_c2c_bidirectional", _BIDIR, chip=CHIP["gh200"]),
    },
    "mi250x": {**_GPU, "scale_up.bandwidth": "infinity_fabric_link_per_direction",
               "host_link.bandwidth": Cite("pcie", explicit="32 GB/s")},  # 'PCIe Gen 4 x16'
    "gaudi2": {**_GPU, "scale_up.bandwidth": Cite("nic_bidirectional", _BIDIR),
               "host_link.bandwidth": Cite("pcie_bidirectional", _BIDIR)},
    "trainium2": {**_GPU, "scale_up.bandwidth": Cite("neuronlink_per_chip", _BIDIR)},
    "inferentia2": {**_GPU},
    "h100-nvl": {
        **_GPU, "compute.tf32": Cite("tf32_tensor_sparse", _HALF), "compute.bf16": Cite("bf16_tensor_sparse", _HALF),
        "compute.fp16": Cite("fp16_tensor_sparse", _HALF), "compute.fp8": Cite("fp8_tensor_sparse", _HALF),
        "compute.int8": Cite("int8_tensor_sparse", _HALF),
        "power": Cite("tdp", explicit="400 W"),  # the cell is the range '350-400'; the upper end is used
        "scale_up.bandwidth": Cite("nvlink_bw_bidirectional", _BIDIR),
        "scale_out.bandwidth": Cite("pcie_bidirectional", _BIDIR), "host_link.bandwidth": Cite("pcie_bidirectional", _BIDIR),
    },
    "sambanova-sn40l": {
        "memory.hbm.capacity": "hbm_capacity", "memory.ddr.capacity": "ddr_capacity", "compute.bf16": "bf16",
        # the node_16_socket cell: '... slide shows 25.6 TB/s and 1600 GB/s (likely HBM and DDR
        # aggregates)' for 16 sockets: divided by 16
        "memory.hbm.bandwidth": Cite("node_16_socket", explicit="1.6 TB/s"),
        "memory.ddr.bandwidth": Cite("node_16_socket", explicit="100 GB/s"),
    },
}


def _cases() -> list[tuple[str, str, Cite]]:
    out = []
    for ident, table in CITED.items():
        for path, cite in table.items():
            out.append((ident, path, Cite(cite) if isinstance(cite, str) else cite))
    return out


def _present(ident: str, path: str) -> bool:
    spec = load_hardware(ident, "accelerator")
    if path in dict(iter_figures(spec)):
        return True
    port = path.split(".")[0]
    return path.endswith(".bandwidth") and port in ("scale_up", "scale_out", "host_link") and \
        getattr(spec, port) is not None


CASES = [c for c in _cases() if _present(c[0], c[1])]


@pytest.mark.parametrize("spec", list_hardware("accelerator"), ids=lambda s: s.id)
def test_every_accelerator_figure_has_a_citation_test(spec):
    missing = [p for p, _ in iter_figures(spec) if p not in CITED[spec.id]]
    assert not missing, f"{spec.id}: add these figures to CITED: {missing}"


@pytest.mark.parametrize(("ident", "path", "cite"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_accelerator_figure_equals_cited_value(ident: str, path: str, cite: Cite):
    spec = load_hardware(ident, "accelerator")
    row = long_row(cite.chip or CHIP[ident], cite.metric)
    if cite.explicit is not None:
        expected = to_si(cite.explicit, dimension_of(path))
    else:
        expected = cell_si(row["value"], row["unit"], path, cite.scale)
    value, fig = effective(spec, path)
    assert close(value, expected), f"{ident}.{path}: {value:g} != cited {expected:g} ({row['value']} {row['unit']})"
    if fig is not None:
        assert fig.source in urls(row["source_url"]), f"{ident}.{path}: source not among the row's sources"


#: wide-table columns (accelerators.csv) -> figure path and unit; only numeric cells are compared
WIDE_CHIP = {
    "a100-sxm": "A100-80GB SXM4", "h100-sxm": "H100 SXM5 80GB", "h100-pcie": "H100 PCIe 80GB",
    "h200-sxm": "H200 SXM 141GB", "h20": "H20 (96GB)", "b200": "B200 (HGX/DGX, 1000 W)",
    "b300": "B300 / Blackwell Ultra (HGX)", "gb200": "GB200 (per GPU in NVL72)",
    "gb300": "GB300 (per GPU in NVL72)", "rubin": "Rubin GPU (VR200, preliminary)",
    "mi300x": "Instinct MI300X", "mi325x": "Instinct MI325X", "mi355x": "Instinct MI355X",
    "tpu-v5e": "TPU v5e", "tpu-v5p": "TPU v5p", "tpu-v6e": "TPU v6e (Trillium)",
    "tpu-ironwood": "TPU7x (Ironwood)", "gaudi3": "Gaudi 3 (OAM)", "groq-lpu": "GroqChip / LPU v1",
    "groq-lp30": "Groq 3 LPU (LP30)", "cerebras-wse3": "WSE-3 (CS-3)",
}
WIDE_COLUMNS = {
    "mem_bw_TBps": ("main.bandwidth", "TB/s"), "mem_capacity_GB": ("main.capacity", "GB"),
    "bf16_dense_TFLOPS": ("compute.bf16", "TFLOP/s"), "fp8_dense_TFLOPS": ("compute.fp8", "TFLOP/s"),
    "fp4_dense_TFLOPS": ("compute.fp4", "TFLOP/s"), "tf32_dense_TFLOPS": ("compute.tf32", "TFLOP/s"),
    "tdp_W": ("power", "W"),
}


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


@pytest.mark.parametrize("ident", sorted(WIDE_CHIP))
def test_accelerator_matches_wide_table(ident: str):
    spec = load_hardware(ident, "accelerator")
    row = next(r for r in read_csv("accelerators.csv") if r["chip"] == WIDE_CHIP[ident])
    compared = 0
    for column, (path, unit) in WIDE_COLUMNS.items():
        cited = _number(row[column])
        if cited is None:
            continue  # text or range: covered by the long-table citations above
        if path.startswith("main."):
            value = getattr(spec, f"memory_{path.split('.')[1]}")
        elif path == "power":
            value = spec.tdp
        else:
            value = spec.compute[path.split(".")[1]].value if path.split(".")[1] in spec.compute else None
        assert value is not None, f"{ident}: wide table has {column}={cited} but the spec lacks {path}"
        assert close(value, to_si(f"{cited} {unit}", dimension_of(path.replace("main.", "memory.x.")))), \
            f"{ident}.{path}: {value:g} vs wide-table {column}={cited}"
        compared += 1
    assert compared >= 2


class LinkCite(NamedTuple):
    link: str
    product: str
    column: str = "bw_per_direction_GBps"
    scale: float = 1.0
    explicit: str | None = None


#: link id -> links.csv row for the bandwidth (GB/s columns)
LINK_BW: dict[str, LinkCite] = {
    "nvlink3": LinkCite("NVLink", "NVLink 3 (A100)"),
    "nvlink4": LinkCite("NVLink", "NVLink 4 (H100/H200/H20)"),
    "nvlink5": LinkCite("NVLink", "NVLink 5 (B200/B300/GB200/GB300)"),
    # '3600 (direction basis not stated; assumed bidir like NVLink5)'
    "nvlink6": LinkCite("NVLink", "NVLink 6 (Rubin)", explicit="1800 GB/s"),
    # '900 (GB200/GB300); 1800 (Vera)', bidirectional
    "nvlink-c2c": LinkCite("NVLink-C2C", "Grace<->Blackwell; Vera<->Rubin", explicit="450 GB/s"),
    # '31.5 (~32)': the rounded per-direction figure is used
    "pcie4": LinkCite("PCIe", "Gen4 x16", explicit="32 GB/s"),
    # '63 (~64)': the rounded per-direction figure is used
    "pcie5": LinkCite("PCIe", "Gen5 x16", explicit="64 GB/s"),
    "pcie6": LinkCite("PCIe", "Gen6 x16"),
    "ib-hdr": LinkCite("InfiniBand", "HDR (ConnectX-6)"),
    "ib-ndr": LinkCite("InfiniBand", "NDR (ConnectX-7, Quantum-2)"),
    "ib-xdr": LinkCite("InfiniBand", "XDR (ConnectX-8, Quantum-X800)"),
    # '100 per 800GbE port; 50 per 400G NIC'
    "eth-400g": LinkCite("Ethernet (Spectrum-X)", "Spectrum-4 SN5600 + BlueField-3 SuperNIC",
                         explicit="50 GB/s"),
    "eth-800g": LinkCite("Ethernet/IB NIC", "ConnectX-8 SuperNIC"),
    "gaudi3-roce": LinkCite("Gaudi 3 RoCE", "24x 200GbE integrated"),
    "groq-c2c": LinkCite("Groq 3 C2C", "LP30 in LPX rack", explicit="1250 GB/s"),  # '1250 (derived)'
    "tpu-ici-v5e": LinkCite("TPU ICI", "v5e", "bw_bidirectional_GBps", _BIDIR),
    "tpu-ici-v5p": LinkCite("TPU ICI", "v5p", "bw_bidirectional_GBps", _BIDIR),
    "tpu-ici-v6e": LinkCite("TPU ICI", "v6e", "bw_bidirectional_GBps", _BIDIR),
    "tpu-ici-v7": LinkCite("TPU ICI", "TPU7x Ironwood", "bw_bidirectional_GBps", _BIDIR),
    # '448 aggregate (derived); 64 per link'
    "infinity-fabric": LinkCite("AMD Infinity Fabric (xGMI)", "MI300X/MI325X", explicit="448 GB/s"),
    # catalogue_links.csv
    "gaudi2-roce": LinkCite("Gaudi 2 RoCE", "24x 100GbE integrated"),
    "neuronlink-v3": LinkCite("NeuronLink-v3", "Trainium2"),
    "cerebras-cs3-io": LinkCite("Cerebras CS-3 I/O", "CS-3 (WSE-3)"),  # 1.2 Tb/s = 12 x 100 GbE
}

_P2P = ("P2P latency (measured)", "4-GPU NVLink system, p2pBandwidthLatencyTest (GPU model unstated)")
_AIC = ("modeling constants (NVIDIA aiconfigurator)", "all systems")
_ICI = ("TPU ICI", "v5e")
#: link id -> (links.csv row, cited alpha range [us]); cells are text such as '1.8-2.3 (P2P/NVLink) ...'
LINK_ALPHA: dict[str, tuple[tuple[str, str], float, float]] = {
    **{k: (_P2P, 1.8, 2.3) for k in ("nvlink3", "nvlink4", "nvlink5", "nvlink6", "nvlink-c2c",
                                      "infinity-fabric")},
    **{k: (_AIC, 10.0, 10.0) for k in ("pcie4", "pcie5", "pcie6")},  # 'p2p_latency 10'
    **{k: (_AIC, 5.0, 5.0) for k in ("ib-hdr", "ib-ndr", "ib-xdr", "eth-400g", "eth-800g",
                                     "gaudi3-roce")},  # 'inter_rack (IB) 5'
    "gaudi2-roce": (("Gaudi 2 RoCE", "24x 100GbE integrated"), 5.0, 5.0),  # the aiconfigurator constant
    "neuronlink-v3": (("NeuronLink-v3", "Trainium2"), 1.8, 2.3),  # the NVLink P2P measurement, assumed
    "cerebras-cs3-io": (("Cerebras CS-3 I/O", "CS-3 (WSE-3)"), 5.0, 5.0),  # the aiconfigurator constant
    **{k: (_ICI, 1.0, 1.0) for k in ("tpu-ici-v5e", "tpu-ici-v5p", "tpu-ici-v6e", "tpu-ici-v7",
                                     "groq-c2c")},  # '~1 per hop'
}


def test_every_link_is_cited():
    ids = {s.id for s in list_hardware("link")}
    assert ids == set(LINK_BW) == set(LINK_ALPHA)


@pytest.mark.parametrize("ident", sorted(LINK_BW))
def test_link_bandwidth_equals_cited_value(ident: str):
    cite = LINK_BW[ident]
    link = load_hardware(ident, "link")
    row = link_row(cite.link, cite.product)
    if cite.explicit is not None:
        expected = to_si(cite.explicit, "bandwidth")
    else:
        expected = cite.scale * to_si(f"{float(row[cite.column])} GB/s", "bandwidth")
    assert close(link.bandwidth.value, expected), f"{ident}: {link.bandwidth.value:g} != {expected:g}"
    assert link.bandwidth.source in urls(row["source_url"])


@pytest.mark.parametrize("ident", sorted(LINK_ALPHA))
def test_link_alpha_is_within_cited_range(ident: str):
    (name, product), low, high = LINK_ALPHA[ident]
    link = load_hardware(ident, "link")
    row = link_row(name, product)
    assert low * 1e-6 * (1 - REL) <= link.alpha.value <= high * 1e-6 * (1 + REL), ident
    assert link.alpha.source in urls(row["source_url"])
    assert link.alpha_basis in ("measured", "assumed")
    if "measured" not in row["latency_kind"]:
        assert link.alpha_basis == "assumed", f"{ident}: the cited latency is not a measurement"


#: system id -> (field, cited quantity, long-table chip and metric or None for the wide table's row)
SYSTEM_CITED = [
    # rack_power cell '~120' kW; third-party, conflicts with ~70 kW (note in the file)
    ("gb200-nvl72", "power", "120 kW", "NVIDIA GB200 NVL72 (rack)", "rack_power"),
    # wide-table tdp_W cell '100800 (GPUs only); ~120 kW rack (3rd party)'
    ("gb300-nvl72", "power", "120 kW", "GB300 NVL72 (rack)", None),
    ("gb300-nvl72", "host_memory", "17 TB", "NVIDIA GB300 NVL72 (rack)", "cpu_memory"),
    ("vera-rubin-nvl72", "host_memory", "54 TB", VERA_RUBIN_RACK, "lpddr5x"),
]


@pytest.mark.parametrize(("ident", "field", "cited", "chip", "metric"), SYSTEM_CITED,
                         ids=[f"{c[0]}:{c[1]}" for c in SYSTEM_CITED])
def test_system_figure_equals_cited_value(ident, field, cited, chip, metric):
    spec = load_hardware(ident, "system")
    fig = getattr(spec, field)
    assert close(fig.value, to_si(cited, dimension_of(field)))
    if metric is None:
        row = next(r for r in read_csv("accelerators.csv") if r["chip"] == chip)
        assert fig.source in urls(row["source_urls"])
    else:
        row = long_row(chip, metric)
        assert fig.source in urls(row["source_url"])
        if _number(row["value"]) is not None:
            assert close(fig.value, cell_si(row["value"], row["unit"], field))


def test_every_system_figure_is_cited():
    cited = {(c[0], c[1]) for c in SYSTEM_CITED}
    present = {(s.id, p) for s in list_hardware("system") for p, _ in iter_figures(s)}
    assert present == cited


@pytest.mark.parametrize(("ident", "count"), [("gb200-nvl72", 72), ("gb300-nvl72", 72),
                                               ("vera-rubin-nvl72", 72), ("groq-lpx", 256),
                                               ("hgx-h100", 8), ("hgx-h200", 8), ("hgx-b200", 8)])
def test_system_counts(ident, count):
    # GB200 NVL72 'gpus' 72; LPX 'lpus' 256 (32 trays x 8); Vera Rubin '72 packages (144 dies)'
    assert load_hardware(ident, "system").count == count


# --------------------------------------------------------------------------------------------------
# per-chip figures times the count reproduce the cited rack aggregates
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("system", "per_chip", "rack", "rel"), [
    ("gb200-nvl72", "memory_capacity", "13.4 TB", 0.01),  # 72 x 186 GB = 13.39 TB
    ("gb300-nvl72", "compute.fp4", "1080 PFLOP/s", REL),  # dense, 1,440 sparse
    ("gb300-nvl72", "compute.fp8", "360 PFLOP/s", REL),
    ("gb300-nvl72", "compute.bf16", "180 PFLOP/s", REL),
    ("groq-lpx", "memory_capacity", "128 GB", REL),  # 256 x 0.5 GB
    ("groq-lpx", "memory_bandwidth", "40 PB/s", 0.05),  # 256 x 150 TB/s = 38.4 PB/s
    ("groq-lpx", "compute.fp8", "315 PFLOP/s", 0.03),  # 256 x 1.2 PF = 307 PF
    ("vera-rubin-nvl72", "memory_capacity", "20.7 TB", 0.01),  # 72 x 288 GB = 20.74 TB
    ("vera-rubin-nvl72", "compute.fp4", "3.6 EFLOP/s", REL),  # 72 x 50 PF, basis unstated
])
def test_rack_aggregate(system, per_chip, rack, rel):
    sys_spec = load_hardware(system, "system")
    acc = load_hardware(sys_spec.accelerator, "accelerator")
    if per_chip.startswith("compute."):
        value, dim = acc.compute[per_chip.split(".")[1]].value, "flops"
    else:
        value, dim = getattr(acc, per_chip), ("bytes" if "capacity" in per_chip else "bandwidth")
    assert close(sys_spec.count * value, to_si(rack, dim), rel)


def test_lpx_scale_up_total():
    # rack scale-up total 640 TB/s = 256 x 2.5 TB/s (both directions)
    lpx = load_hardware("groq-lpx", "system")
    assert close(2 * lpx.count * load_hardware(lpx.scale_up, "link").bandwidth.value, 640e12)


# --------------------------------------------------------------------------------------------------
# the headline numbers, spelled out
# --------------------------------------------------------------------------------------------------
def test_h100_sxm_headline_figures():
    h100 = load_hardware("h100-sxm", "accelerator")
    assert h100.memory_bandwidth == pytest.approx(3.35e12, rel=REL)
    assert h100.memory_capacity == pytest.approx(80e9, rel=REL)
    assert h100.peak_flops("bf16") == pytest.approx(9.89e14, rel=REL)
    assert h100.peak_flops("fp16") == pytest.approx(9.89e14, rel=REL)  # falls back to bf16
    assert h100.peak_flops("fp8") == pytest.approx(1.979e15, rel=REL)
    assert {"dense", "derived"} <= set(h100.compute["bf16"].basis)
    assert h100.tdp == pytest.approx(700.0)


def test_nvlink4_is_450_gb_per_s_per_direction():
    nvlink4 = load_hardware("nvlink4", "link")
    assert nvlink4.bandwidth.value == pytest.approx(4.5e11, rel=REL)
    assert load_hardware("h100-sxm", "accelerator").scale_up.link == "nvlink4"


def test_aiconfigurator_system_names_resolve():
    for alias, ident in [("h100_sxm", "h100-sxm"), ("h200_sxm", "h200-sxm"), ("b200_sxm", "b200"),
                         ("gb200", "gb200"), ("b300_sxm", "b300"), ("gb300", "gb300"),
                         ("a100_sxm", "a100-sxm"), ("LP30", "groq-lp30"), ("MI300X", "mi300x")]:
        assert load_hardware(alias).id == ident


def test_dense_not_sparse_examples():
    # Hopper datasheet numbers are with 2:4 sparsity and are halved; A100's dense 312 is read directly
    assert load_hardware("a100-sxm").compute["bf16"].value == pytest.approx(312e12)
    assert load_hardware("h200-sxm").compute["fp8"].value == pytest.approx(1979e12)
    assert load_hardware("b200").compute["fp4"].value == pytest.approx(9e15)
    assert load_hardware("gb300").compute["fp4"].value == pytest.approx(15e15)


def test_binary_and_decimal_capacities_are_kept_as_cited():
    # Google's Ironwood doc says 192 GiB; TPU v5p's training doc says 95 GB
    assert load_hardware("tpu-ironwood").memory_capacity == 192 * 2**30
    assert load_hardware("tpu-v5p").memory_capacity == 95e9
