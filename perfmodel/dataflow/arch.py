"""How a statically scheduled machine executes a model: one YAML per architecture, with sources.

An architecture file (``perfmodel/data/dataflow/<id>.yaml``) names the accelerator spec, the chip
network (a link spec with its topology), where weights and KV cache live, how layers share a chip
(``temporal``: a chip runs its layers one after the other at its full bandwidth; ``spatial``: each
layer owns a region of the chip and its share of the bandwidth, as on a wafer) and **at most one
fitted parameter**: ``stream_efficiency`` η, the fraction of the weight tier's datasheet bandwidth
that weight streaming sustains, with the public figure it was fitted on. Everything else is a
datasheet figure or a stated assumption.

What replaces the GPU kernel-launch and framework terms is the same on every architecture here: the
program is compiled ahead of time into a fixed schedule, so there is no per-kernel launch, no
per-step host scheduling and no dynamic collective setup; what remains is the per-layer tensor
parallel synchronisation and the stage hand-offs, costed from the chip network's hop counts and
per-hop latency (:mod:`perfmodel.core.topology`), and the weight streaming rate η.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Literal

from pydantic import Field

from ..errors import SpecError, UnknownNameError, unknown_name
from ..hardware import Accelerator, Link, load_accelerator, load_link
from ..hardware.registry import read_yaml
from ..spec_base import Strict as _Strict
from ..spec_base import format_validation_error

Tier = Literal["sram", "hbm", "ddr"]


class Fitted(_Strict):
    """The one fitted parameter of an architecture: its value, what it was fitted on, and how.

    ``basis`` is ``fitted`` (solved from public speeds, ``fitted_on`` says which) or ``vendor`` (a
    sustained rate the vendor reports, nothing fitted).
    """

    value: float = Field(gt=0, le=1)
    basis: Literal["fitted", "vendor"]
    fitted_on: str
    source: str
    note: str = ""


class DataflowArch(_Strict):
    """Execution model of one statically scheduled architecture (see the module docstring).

    Attributes
    ----------
    id, name : str
    accelerator : str
        Accelerator spec id (per-chip datasheet figures).
    link : str | None
        Chip-to-chip link spec id (topology, per-hop α); None for a machine that is one chip.
    execution : "temporal" | "spatial"
        How layers placed on one chip share it.
    weights_tier, kv_tier : str
        Memory levels holding weights and KV cache.
    spill_tier : str | None
        Slower level that takes what does not fit (explicit; None = a misfit is reported, not hidden).
    tables_in_weight_format : bool
        Embedding and LM head stored in the weight format (True) or in bf16.
    moe_experts : "all" | "routed"
        ``all``: a compiled schedule reserves every expert's slot, so each token streams all local
        experts' weights (an assumption: routing is data-dependent, the schedule is not);
        ``routed``: only the experts the tokens are routed to are read (dynamic control).
    reserve : float
        Fraction of each tier kept free (program, buffers).
    sync_hidden_by_stream : bool
        The chip keeps streaming the next weights from their tier while a layer's tensor-parallel
        collectives run (weights do not depend on activations), so a stage's layer work is
        max(ops, compute + sync) rather than ops + sync. Declared, with the evidence, in the file.
    stream_efficiency : Fitted
        η (the fitted parameter).
    compute_efficiency : float
        Sustained fraction of the datasheet peak for matrix work, from the vendor's papers or 1.
    compute_source : str
        Where ``compute_efficiency`` comes from.
    sources : list[str]
        Documents the execution model rests on.
    notes : str
    """

    schema_version: Literal[1] = 1
    kind: Literal["dataflow"] = "dataflow"
    id: str
    name: str
    accelerator: str
    link: str | None = None
    execution: Literal["temporal", "spatial"]
    weights_tier: Tier
    kv_tier: Tier
    spill_tier: Tier | None = None
    tables_in_weight_format: bool = True
    moe_experts: Literal["all", "routed"] = "all"
    reserve: float = Field(default=0.0, ge=0, lt=1)
    sync_hidden_by_stream: bool = False
    stream_efficiency: Fitted
    compute_efficiency: float = Field(default=1.0, gt=0, le=1)
    compute_source: str
    sources: list[str] = Field(min_length=1)
    notes: str = ""

    @functools.cached_property
    def chip(self) -> Accelerator:
        """The accelerator spec (checked to hold every tier named here)."""
        acc = load_accelerator(self.accelerator)
        for field in ("weights_tier", "kv_tier", "spill_tier"):
            tier = getattr(self, field)
            if tier is not None and tier not in acc.memory:
                raise SpecError(f"dataflow/{self.id}: {field}: {acc.id} has no {tier!r} memory level "
                                f"(levels: {', '.join(acc.memory)})")
        return acc

    @functools.cached_property
    def network(self) -> Link | None:
        """The chip-to-chip link spec, or None."""
        return load_link(self.link) if self.link else None

    def link_bandwidth(self) -> float:
        """Per-direction injection bandwidth per chip on the chip network [B/s].

        The accelerator's scale-up port figure when it overrides the link's, else the link's.
        """
        if self.network is None:
            raise SpecError(f"dataflow/{self.id}: no chip-to-chip link; the machine is one chip")
        port = self.chip.scale_up
        if port is not None and port.link == self.network.id and port.bandwidth is not None:
            return port.bandwidth.value
        return self.network.bandwidth.value


def _root():
    return resources.files("perfmodel") / "data" / "dataflow"


@functools.lru_cache(maxsize=1)
def _files() -> dict[str, str]:
    root = _root()
    return {f.name[:-5]: f.read_text(encoding="utf-8") for f in root.iterdir() if f.name.endswith(".yaml")}


def list_archs() -> list[str]:
    """Ids of the shipped dataflow architectures."""
    return sorted(_files())


@functools.cache
def _load(ident: str) -> DataflowArch:
    from pydantic import ValidationError

    data = read_yaml(f"data/dataflow/{ident}.yaml", _files()[ident])
    try:
        return DataflowArch.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"dataflow/{ident}.yaml: {format_validation_error(exc, DataflowArch)}") from None


def load_arch(name: str | DataflowArch) -> DataflowArch:
    """A shipped architecture by its id or by its accelerator's id (``groq-lpu``, ``cerebras-wse3``).

    An id names one file; an accelerator id names the file with that id if there is one (several
    files may run one chip, one per software release: ``cerebras-wse3`` and ``cerebras-wse3-oct2024``),
    else the first in sorted order.

    Raises
    ------
    UnknownNameError
        Neither an architecture nor an accelerator with one; lists the shipped ones.
    """
    if isinstance(name, DataflowArch):
        return name
    if name in _files():
        return _load(name)
    for ident in sorted(_files()):
        arch = _load(ident)
        if arch.accelerator == name:
            return arch
    raise unknown_name("dataflow architecture", name, list_archs())


def is_dataflow(hardware: str) -> bool:
    """True when ``hardware`` names a shipped dataflow architecture or its accelerator."""
    try:
        load_arch(hardware)
    except UnknownNameError:
        return False
    return True
