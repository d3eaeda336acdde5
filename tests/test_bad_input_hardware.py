"""Bad hardware input fails loudly, with the error type and a message naming the field and what is allowed."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from perfmodel.errors import SpecError, UnitError, UnknownNameError
from perfmodel.hardware import list_hardware, load_accelerator, load_hardware, load_link
from perfmodel.hardware.schema import iter_figures
from perfmodel.units import DIMENSIONS, to_si

SRC = "https://example.org/datasheet"

ACCELERATOR: dict[str, Any] = {
    "schema_version": 1, "kind": "accelerator", "id": "my-gpu", "name": "My GPU",
    "memory": {"hbm": {"capacity": {"value": "80 GB", "source": SRC},
                       "bandwidth": {"value": "3.35 TB/s", "source": SRC}}},
    "compute": {"bf16": {"value": "989 TFLOP/s", "basis": ["dense"], "source": SRC}},
    "power": {"value": "700 W", "source": SRC},
    "scale_up": {"link": "nvlink4", "domain": 8},
}
LINK: dict[str, Any] = {
    "schema_version": 1, "kind": "link", "id": "my-link", "name": "My link",
    "bandwidth": {"value": "450 GB/s", "basis": ["per-direction"], "source": SRC},
    "alpha": {"value": "2 us", "source": SRC}, "alpha_basis": "measured",
}
SYSTEM: dict[str, Any] = {
    "schema_version": 1, "kind": "system", "id": "my-box", "name": "My box",
    "accelerator": "h100-sxm", "count": 8, "scale_up": "nvlink4",
    "host_memory": {"value": "2 TB", "source": SRC},
}


def _parent(data: dict, path: str) -> tuple[dict, str]:
    *head, last = path.split(".")
    for key in head:
        data = data[key]
    return data, last


def put(path: str, value: Any) -> Callable[[dict], None]:
    """Mutation: set ``path`` (dotted) to ``value``."""
    def apply(data: dict) -> None:
        parent, key = _parent(data, path)
        parent[key] = value
    return apply


def drop(path: str) -> Callable[[dict], None]:
    """Mutation: remove ``path``."""
    def apply(data: dict) -> None:
        parent, key = _parent(data, path)
        del parent[key]
    return apply


def rename(path: str, new: str) -> Callable[[dict], None]:
    """Mutation: rename the key at ``path`` to ``new`` (a typo)."""
    def apply(data: dict) -> None:
        parent, key = _parent(data, path)
        parent[new] = parent.pop(key)
    return apply


class Case(NamedTuple):
    name: str
    base: dict
    mutate: Callable[[dict], None]
    error: type[Exception]
    needles: tuple[str, ...]


A, L, S = ACCELERATOR, LINK, SYSTEM
FILE_CASES = [
    # wrong dimension
    Case("bandwidth-given-bytes", A, put("memory.hbm.bandwidth.value", "4.8 TB"), SpecError,
         ("memory.hbm.bandwidth", "bandwidth", "4.8 TB")),
    Case("capacity-given-bandwidth", A, put("memory.hbm.capacity", "80 GB/s"), SpecError,
         ("memory.hbm.capacity", "bytes")),
    Case("compute-given-bandwidth", A, put("compute.bf16.value", "989 TB/s"), SpecError,
         ("compute.bf16", "FLOP/time")),
    Case("power-given-energy", A, put("power", "700 J"), SpecError, ("power", "power [W]")),
    Case("alpha-given-bytes", L, put("alpha.value", "2 GB"), SpecError, ("alpha", "time [s]")),
    Case("host-memory-given-bandwidth", S, put("host_memory", "17 TB/s"), SpecError,
         ("host_memory", "bytes")),
    Case("bare-number-string-for-bytes", A, put("memory.hbm.capacity", "80"), SpecError,
         ("memory.hbm.capacity", "bytes")),
    # out of range
    Case("negative-bandwidth", A, put("memory.hbm.bandwidth.value", "-3.35 TB/s"), SpecError,
         ("memory.hbm.bandwidth", ">= 0")),
    Case("zero-capacity", A, put("memory.hbm.capacity.value", "0 GB"), SpecError,
         ("memory.hbm.capacity", "> 0")),
    Case("zero-compute", A, put("compute.bf16", "0 TFLOP/s"), SpecError, ("compute.bf16", "> 0")),
    Case("zero-link-bandwidth", L, put("bandwidth.value", "0 GB/s"), SpecError, ("bandwidth", "> 0")),
    Case("nan-capacity", A, put("memory.hbm.capacity.value", float("nan")), SpecError,
         ("memory.hbm.capacity", "finite")),
    Case("inf-bandwidth", A, put("memory.hbm.bandwidth.value", "inf TB/s"), SpecError,
         ("memory.hbm.bandwidth", "finite")),
    Case("port-domain-zero", A, put("scale_up.domain", 0), SpecError,
         ("scale_up.domain", "greater than or equal to 1")),
    Case("system-count-zero", S, put("count", 0), SpecError, ("count", "greater than or equal to 1")),
    Case("system-count-text", S, put("count", "eight"), SpecError, ("count", "integer")),
    # unknown keys (typos) name the allowed ones
    Case("typo-bandwith", A, rename("memory.hbm.bandwidth", "bandwith"), SpecError,
         ("memory.hbm.bandwith", "unknown key", "did you mean 'bandwidth'", "allowed keys")),
    Case("unknown-top-level-key", A, put("colour", "green"), SpecError,
         ("colour", "unknown key", "allowed keys: kind")),
    Case("typo-in-figure", A, rename("compute.bf16.source", "sorce"), SpecError,
         ("compute.bf16.sorce", "did you mean 'source'")),
    Case("typo-in-port", A, rename("scale_up.link", "linc"), SpecError,
         ("scale_up.linc", "did you mean 'link'")),
    Case("typo-in-system", S, rename("accelerator", "acelerator"), SpecError,
         ("acelerator", "did you mean 'accelerator'")),
    Case("link-latency-instead-of-alpha", L, rename("alpha", "latency"), SpecError,
         ("latency", "unknown key", "alpha")),
    # missing required
    Case("missing-compute", A, drop("compute"), SpecError, ("compute", "required field is missing")),
    Case("missing-capacity", A, drop("memory.hbm.capacity"), SpecError,
         ("memory.hbm.capacity", "required field is missing")),
    Case("missing-id", A, drop("id"), SpecError, ("id", "required field is missing")),
    Case("missing-alpha", L, drop("alpha"), SpecError, ("alpha", "required field is missing")),
    Case("empty-memory", A, put("memory", {}), SpecError, ("memory", "at least one level")),
    Case("empty-compute", A, put("compute", {}), SpecError, ("compute", "at least one dense peak")),
    # basis rules
    Case("sparse-compute", A, put("compute.bf16.basis", ["sparse"]), SpecError,
         ("compute.bf16", "sparse", "dense peak")),
    Case("bidirectional-link-bandwidth", L, put("bandwidth.basis", ["bidirectional"]), SpecError,
         ("bandwidth", "per-direction")),
    Case("bidirectional-port-override", A,
         put("scale_up.bandwidth", {"value": "900 GB/s", "basis": "bidirectional", "source": SRC}),
         SpecError, ("scale_up.bandwidth", "per-direction")),
    Case("unknown-basis-tag", A, put("compute.bf16.basis", ["sparce"]), SpecError,
         ("compute.bf16.basis", "'sparse'", "'dense'")),
    # closed vocabularies
    Case("wrong-kind", A, put("kind", "gpu"), SpecError, ("kind", "accelerator, link, system", "'gpu'")),
    Case("missing-kind", A, drop("kind"), SpecError, ("kind", "accelerator, link, system")),
    Case("schema-version-2", A, put("schema_version", 2), SpecError, ("schema_version", "1")),
    Case("unknown-status", A, put("status", "shipped"), SpecError, ("status", "'shipping'", "'shipped'")),
    Case("unknown-memory-level", A, rename("memory.hbm", "hmb"), SpecError,
         ("memory.hmb", "'hbm'", "'sram'")),
    Case("unknown-compute-format", A, rename("compute.bf16", "bf61"), SpecError,
         ("compute.bf61", "'bf16'", "'fp8'")),
    Case("unknown-alpha-basis", L, put("alpha_basis", "guess"), SpecError,
         ("alpha_basis", "'measured'", "'assumed'")),
    Case("unknown-topology", L, put("topology", "star"), SpecError, ("topology", "'torus'")),
    # malformed values
    Case("unparseable-unit", A, put("power", "700 Wats"), SpecError, ("power", "cannot parse", "700 W")),
    Case("boolean-value", A, put("power", True), SpecError, ("power", "boolean")),
    Case("empty-string-value", A, put("power.value", ""), SpecError, ("power", "empty string")),
    Case("figure-as-list", A, put("power", [700, "W"]), SpecError, ("power", "dictionary")),
]


@pytest.mark.parametrize("case", FILE_CASES, ids=[c.name for c in FILE_CASES])
def test_bad_spec_file(case: Case, tmp_path: Path):
    data = copy.deepcopy(case.base)
    case.mutate(data)
    path = tmp_path / "user.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(case.error) as info:
        load_hardware(str(path))
    message = str(info.value)
    assert str(path) in message
    for needle in case.needles:
        assert needle in message, f"{needle!r} not in: {message}"


@pytest.mark.parametrize("base", [A, L, S], ids=["accelerator", "link", "system"])
def test_unmutated_bases_are_valid(base, tmp_path: Path):
    path = tmp_path / "ok.yaml"
    path.write_text(yaml.safe_dump(base), encoding="utf-8")
    assert load_hardware(path).id == base["id"]


TEXT_CASES = [
    ("malformed-yaml", "kind: accelerator\nmemory: {hbm: [1, 2\nid: x\n", ("malformed YAML", "line")),
    ("bad-indentation", "kind: link\n  id: x\n bandwidth: 1\n", ("malformed YAML", "line")),
    ("empty-file", "", ("empty", "kind: accelerator|link|system")),
    ("only-comment", "# nothing here\n", ("empty",)),
    ("top-level-list", "- kind: accelerator\n- id: x\n", ("expected a mapping", "list")),
    ("top-level-scalar", "h100-sxm\n", ("expected a mapping", "str")),
]


@pytest.mark.parametrize(("text", "needles"), [c[1:] for c in TEXT_CASES], ids=[c[0] for c in TEXT_CASES])
def test_bad_yaml_text(text: str, needles: tuple[str, ...], tmp_path: Path):
    path = tmp_path / "user.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_hardware(path)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_python_object_tags_are_not_executed(tmp_path: Path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(f"kind: accelerator\nid: !!python/object/apply:os.mkdir ['{marker}']\n", encoding="utf-8")
    with pytest.raises(SpecError, match="malformed YAML") as info:
        load_hardware(str(path))
    assert "python/object" in str(info.value)
    assert not marker.exists()


API_CASES = [
    ("unknown-id-suggests", lambda: load_hardware("h100-sxn"), UnknownNameError,
     ("unknown hardware 'h100-sxn'", "did you mean", "'h100-sxm'")),
    ("unknown-link-suggests", lambda: load_link("nvlink44"), UnknownNameError,
     ("unknown link 'nvlink44'", "'nvlink4'")),
    ("unknown-accelerator-lists-known", lambda: load_accelerator("b2000"), UnknownNameError,
     ("'b200'", "known:")),
    ("wrong-kind-requested", lambda: load_hardware("h100-sxm", "link"), SpecError,
     ("'h100-sxm'", "expected a link")),
    ("link-is-not-an-accelerator", lambda: load_accelerator("nvlink4"), SpecError,
     ("'nvlink4'", "expected an accelerator")),
    ("missing-file", lambda: load_hardware("no/such/file.yaml"), SpecError,
     ("no/such/file.yaml", "file not found")),
    ("missing-compute-format", lambda: load_hardware("h100-sxm").peak_flops("fp4"), UnknownNameError,
     ("fp4", "known: bf16", "fp8")),
    ("list-unknown-kind", lambda: list_hardware("gpu"), SpecError, ("kind", "accelerator, link or system")),
    ("direct-unit-error", lambda: to_si("4.8 TB", "bandwidth", "memory.hbm.bandwidth"), UnitError,
     ("memory.hbm.bandwidth", "bandwidth")),
]


@pytest.mark.parametrize(("call", "error", "needles"), [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES])
def test_bad_api_call(call, error, needles):
    with pytest.raises(error) as info:
        call()
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_there_are_at_least_thirty_distinct_bad_inputs():
    names = [c.name for c in FILE_CASES] + [c[0] for c in TEXT_CASES] + [c[0] for c in API_CASES]
    assert len(names) == len(set(names)) >= 30


# --------------------------------------------------------------------------------------------------
# a valid user file works like a shipped id
# --------------------------------------------------------------------------------------------------
def test_user_copy_of_shipped_file_equals_shipped(tmp_path: Path):
    shipped = load_hardware("h100-sxm")
    path = tmp_path / "my-h100.yaml"
    data = shipped.model_dump(mode="json", exclude_none=True)
    # model_dump gives SI floats; a file writes every quantity with its unit (a bare number is refused)
    for where, fig in iter_figures(shipped):
        parent, key = _parent(data, where)
        unit = DIMENSIONS[fig.dimension][0]
        parent[key]["value"] = f"{fig.value!r} {unit}" if unit else fig.value
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert load_hardware(str(path)) == shipped
    assert load_hardware(path) == shipped
    assert load_accelerator(path).memory_bandwidth == pytest.approx(3.35e12)


def test_minimal_user_file_with_bare_quantities(tmp_path: Path):
    path = tmp_path / "tiny.yml"
    path.write_text(
        "kind: accelerator\nid: tiny\nname: Tiny\n"
        "memory: {sram: {capacity: 230 MiB, bandwidth: 80 TB/s}}\n"
        "compute: {fp8: 750 TFLOPS}\n",
        encoding="utf-8",
    )
    tiny = load_accelerator(str(path))
    assert tiny.main_memory == "sram"
    assert tiny.memory_capacity == 230 * 2**20
    assert tiny.peak_flops("fp8") == pytest.approx(7.5e14)
