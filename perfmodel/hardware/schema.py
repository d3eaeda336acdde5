"""Pydantic schemas of hardware spec files: accelerators, links and systems.

Every number is a :class:`Figure`: a value (quantity string, converted once to float64 SI) with its
source and basis. Files are strict (unknown keys are errors) and models are frozen.

A minimal accelerator file::

    schema_version: 1
    kind: accelerator
    id: my-gpu
    name: My GPU
    memory:
      hbm: {capacity: {value: 80 GB, source: "https://..."}, bandwidth: {value: 3.35 TB/s, source: ...}}
    compute:
      bf16: {value: 989 TFLOP/s, basis: dense, source: ...}
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from ..errors import SpecError, unknown_name
from ..reprs import spec_html
from ..spec_base import Strict as _Strict
from ..spec_base import format_validation_error
from ..units import DIMENSIONS, to_si, units_required

SCHEMA_VERSION = 1

Basis = Literal[
    "dense", "sparse", "spec", "derived", "measured", "announced", "preliminary", "assumed", "vendor",
    "third-party", "per-direction", "bidirectional",
]


class _SpecHTML:
    """Notebook display of a whole spec: every figure with unit, basis and source."""

    def _repr_html_(self) -> str:
        return spec_html(self, iter_figures(self))


class Figure(_Strict):
    """One sourced number.

    Attributes
    ----------
    value : float
        The value in SI units (converted from a quantity string at load time).
    source : str | None
        URL or document the number was read from. Required for shipped files (checked by tests).
    basis : list[str]
        Tags such as ``dense``, ``per-direction``, ``announced``, ``measured``, ``derived``.
    note : str | None
        Free text: conflicts, derivations, caveats.
    """

    dimension: ClassVar[str] = "dimensionless"
    value: float
    source: str | None = None
    basis: list[Basis] = Field(default_factory=list)
    note: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _accept_plain(cls, data: Any) -> Any:
        # A bare quantity string or number is a figure without provenance (user files).
        if isinstance(data, (str, int, float)) and not isinstance(data, bool):
            data = {"value": data}
        if isinstance(data, dict) and "basis" in data and isinstance(data["basis"], str):
            data = {**data, "basis": [b.strip() for b in data["basis"].split(",") if b.strip()]}
        return data

    @field_validator("value", mode="before")
    @classmethod
    def _convert(cls, v: Any) -> float:
        return to_si(v, cls.dimension, "value")

    @property
    def si(self) -> float:
        return self.value


class Bytes(Figure):
    dimension: ClassVar[str] = "bytes"


class Bandwidth(Figure):
    dimension: ClassVar[str] = "bandwidth"


class Flops(Figure):
    dimension: ClassVar[str] = "flops"


class Time(Figure):
    dimension: ClassVar[str] = "time"


class Power(Figure):
    dimension: ClassVar[str] = "power"


class Count(Figure):
    dimension: ClassVar[str] = "dimensionless"


class MemoryLevel(_Strict):
    """A memory level of an accelerator (HBM, GDDR, on-chip SRAM, DDR / host LPDDR)."""

    capacity: Bytes
    bandwidth: Bandwidth
    latency: Time | None = None

    @field_validator("capacity", "bandwidth")
    @classmethod
    def _positive(cls, fig: Figure) -> Figure:
        if fig.value <= 0:
            unit = DIMENSIONS[fig.dimension][0]
            raise ValueError(f"must be > 0 {unit}, got {fig.value}")
        return fig


#: ``gddr`` is graphics-card device memory (GDDR6/GDDR7 on L4, L40S, RTX PRO parts): the main level where
#: there is no HBM, like ``hbm`` elsewhere.
MemoryName = Literal["sram", "hbm", "gddr", "ddr", "host"]
ComputeName = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp6", "fp4", "int4"]


class Port(_Strict):
    """A port of an accelerator onto a link, with the per-device bandwidth it gets.

    ``bandwidth`` is per direction, per device. ``domain`` is the number of devices reachable over
    this port at full bandwidth (the scale-up domain: 8 on HGX, 72 in an NVL72 rack).
    """

    link: str
    bandwidth: Bandwidth | None = None
    domain: int | None = Field(default=None, ge=1)
    note: str | None = None

    @field_validator("bandwidth")
    @classmethod
    def _per_direction(cls, fig: Bandwidth | None) -> Bandwidth | None:
        if fig is not None and "bidirectional" in fig.basis:
            raise ValueError("give the per-direction figure (halve a bidirectional total)")
        if fig is not None and fig.value <= 0:
            raise ValueError(f"must be > 0 B/s (per direction), got {fig.value}")
        return fig


class Accelerator(_SpecHTML, _Strict):
    """Datasheet figures of one accelerator (per chip / package, never rack aggregates)."""

    kind: Literal["accelerator"]
    schema_version: Literal[1] = 1
    id: str
    name: str
    vendor: str | None = None
    aliases: list[str] = Field(default_factory=list)
    status: Literal["shipping", "announced", "preliminary"] = "shipping"
    memory: dict[MemoryName, MemoryLevel]
    compute: dict[ComputeName, Flops]
    power: Power | None = None
    scale_up: Port | None = None
    scale_out: Port | None = None
    host_link: Port | None = None
    notes: str | None = None

    @model_validator(mode="after")
    def _checks(self) -> Accelerator:
        if not self.memory:
            raise ValueError("memory: at least one level (sram, hbm, ddr) is required")
        if not self.compute:
            raise ValueError("compute: at least one dense peak (e.g. bf16) is required")
        for k, fig in self.compute.items():
            if "sparse" in fig.basis:
                raise ValueError(
                    f"compute.{k}: basis 'sparse' given; perfmodel needs the dense peak "
                    f"(halve a 2:4-sparse headline and say so in 'note', basis: [dense, derived])"
                )
            if fig.value <= 0:
                raise ValueError(f"compute.{k}: must be > 0 FLOP/s, got {fig.value}")
        return self

    # --- convenience accessors (float SI) ---------------------------------------------------
    @property
    def main_memory(self) -> str:
        """Level where weights and KV cache live by default: HBM (or GDDR) if present, else SRAM, else DDR."""
        for level in ("hbm", "gddr", "sram", "ddr"):
            if level in self.memory:
                return level
        return next(iter(self.memory))

    @property
    def memory_capacity(self) -> float:
        """Capacity of :attr:`main_memory` [B]."""
        return self.memory[self.main_memory].capacity.value

    @property
    def memory_bandwidth(self) -> float:
        """Bandwidth of :attr:`main_memory` [B/s]."""
        return self.memory[self.main_memory].bandwidth.value

    @property
    def tdp(self) -> float | None:
        """Thermal design power [W], if published."""
        return self.power.value if self.power else None

    def peak_flops(self, compute: str) -> float:
        """Dense peak [FLOP/s] for a compute format key (``bf16``, ``fp8``, ``fp4``...).

        ``fp16`` falls back to ``bf16`` (and vice versa), equal on every listed part; a format that is
        missing otherwise raises an error listing the available ones (no silent derivation).
        """
        if compute in self.compute:
            return self.compute[compute].value
        twin = {"fp16": "bf16", "bf16": "fp16"}.get(compute)
        if twin and twin in self.compute:
            return self.compute[twin].value
        raise unknown_name(f"{self.id} dense compute format", compute, self.compute)


class Link(_SpecHTML, _Strict):
    """An interconnect: per-direction bandwidth per device and fixed latency α."""

    kind: Literal["link"]
    schema_version: Literal[1] = 1
    id: str
    name: str
    aliases: list[str] = Field(default_factory=list)
    bandwidth: Bandwidth
    alpha: Time
    alpha_basis: Literal["measured", "vendor", "assumed"]
    topology: Literal["switched", "point-to-point", "ring", "torus", "mesh", "fully-connected", "dragonfly",
                      "torus-2d", "torus-3d", "mesh-2d", "mesh-3d"] = "switched"
    hop_alpha: Time | None = None
    group_size: int | None = Field(default=None, ge=2)
    scope: str | None = None
    notes: str | None = None

    def network(self):
        """The hop-count model of this link (:class:`perfmodel.core.topology.Topology`), or None.

        Only the kinds of :data:`perfmodel.core.topology.KINDS` have one; ``switched``,
        ``point-to-point``, ``ring``, ``torus`` and ``mesh`` keep the flat collectives of
        :mod:`perfmodel.core.comm`. The per-hop latency is ``hop_alpha``, else ``alpha``.
        """
        from ..core.topology import KINDS, Topology

        if self.topology not in KINDS:
            return None
        hop = self.hop_alpha.value if self.hop_alpha is not None else self.alpha.value
        return Topology(self.topology, hop, self.group_size)

    @model_validator(mode="after")
    def _checks(self) -> Link:
        if self.bandwidth.value <= 0:
            raise ValueError("bandwidth: must be > 0 B/s (per direction)")
        if "bidirectional" in self.bandwidth.basis:
            raise ValueError("bandwidth: give the per-direction figure (halve a bidirectional total)")
        if self.topology == "dragonfly" and self.group_size is None:
            raise ValueError("group_size: a dragonfly needs the size of its fully connected groups")
        if self.group_size is not None and self.topology not in ("dragonfly", "fully-connected"):
            raise ValueError(f"group_size: only for dragonfly or fully-connected, not {self.topology!r}")
        return self


class System(_SpecHTML, _Strict):
    """A node or rack: N accelerators plus scale-up and scale-out links."""

    kind: Literal["system"]
    schema_version: Literal[1] = 1
    id: str
    name: str
    aliases: list[str] = Field(default_factory=list)
    accelerator: str
    count: Annotated[int, Field(ge=1)]
    scale_up: str
    scale_up_domain: Annotated[int, Field(ge=1)] | None = None
    scale_out: str | None = None
    host_memory: Bytes | None = None
    power: Power | None = None
    status: Literal["shipping", "announced", "preliminary"] = "shipping"
    source: str | None = Field(default=None, description="where the composition (count, links) was read")
    notes: str | None = None


HardwareSpec = Accelerator | Link | System
KINDS = {"accelerator": Accelerator, "link": Link, "system": System}


def iter_figures(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, Figure]]:
    """Yield ``(path, figure)`` for every sourced number in a spec, depth first, in field order.

    Parameters
    ----------
    model : BaseModel
        A spec (:class:`Accelerator`, :class:`Link`, :class:`System`) or any part of one.
    prefix : str
        Prepended to each path.

    Yields
    ------
    tuple[str, Figure]
        Dotted path (``"memory.hbm.bandwidth"``, ``"compute.bf16"``, ``"scale_up.bandwidth"``) and
        the figure there. Port overrides are included; a port's link figures are not (they live in
        the link's file).
    """
    for name in type(model).model_fields:
        yield from _walk(getattr(model, name), f"{prefix}{name}")


def _walk(value: Any, path: str) -> Iterator[tuple[str, Figure]]:
    if isinstance(value, Figure):
        yield path, value
    elif isinstance(value, BaseModel):
        yield from iter_figures(value, f"{path}.")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}")


def parse_spec(data: Any, origin: str = "<spec>", from_file: bool = False) -> HardwareSpec:
    """Validate a mapping (from YAML) into a hardware spec, with readable errors.

    With ``from_file`` (the content of a YAML file) every quantity needs its unit (``capacity: 80``
    is refused: 80 what?) unless the mapping has ``units: si`` (then bare numbers are in SI base
    units, as ``hardware show --format json`` prints them). From Python, bare numbers are SI.

    Raises
    ------
    SpecError
        Names the file, the field path, the value and what is allowed.
    """
    from pydantic import ValidationError

    if data is None:
        raise SpecError(f"{origin}: the file is empty; expected a mapping with "
                        f"'kind: accelerator|link|system'")
    if not isinstance(data, dict):
        raise SpecError(f"{origin}: expected a mapping with 'kind: accelerator|link|system', got "
                        f"{type(data).__name__}")
    kind = data.get("kind")
    if kind not in KINDS:
        raise SpecError(f"{origin}: kind: expected one of accelerator, link, system, got {kind!r}")
    data = dict(data)
    units = data.pop("units", None)
    if units not in (None, "si"):
        raise SpecError(f"{origin}: units: expected 'si' (bare numbers are in SI base units, as "
                        f"`hardware show --format json` prints them) or no 'units' key, got {units!r}")
    try:
        # quantities need their unit ('80 GB'), unless the file declares 'units: si'
        with units_required() if from_file and units != "si" else nullcontext():
            return KINDS[kind].model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{origin}: " + format_validation_error(exc, KINDS[kind])) from None
