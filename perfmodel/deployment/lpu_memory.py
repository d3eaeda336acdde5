"""Where FFN/MoE weights live on an FFN pool (LPU SRAM), whether they fit, and explicit spills.

An SRAM-only accelerator (Groq LP30: 0.5 GB per chip) holds weights only if the pool is large
enough: with :math:`W_{ffn}` the FFN/MoE weight bytes of the whole model (router excluded: it runs
with attention), the minimum number of chips is

.. math:: N_{min} = \\left\\lceil \\frac{W_{ffn}}{C_{level}\\,(1 - r)} \\right\\rceil

(capacity bound; the per-chip layout can need more when experts do not divide evenly). A pool too
small is never a silent fit: the result is flagged, or, with ``spill: ddr`` on a spec that has a
``ddr`` level, the weights beyond the usable share :math:`C(1-r)` (the reserve then holds the
activation workspace) overflow :math:`o` per chip to DDR and are read from there every step, which
makes the weight reads run at the harmonic blend

.. math:: B_{eff} = \\frac{W_{dev}}{(W_{dev} - o)/B_{sram} + o/B_{ddr}}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..checks import choice
from ..core.memory import ffn_weight_elems, weights_per_device, workspace_bytes
from ..core.parallel import Parallel
from ..errors import ConfigError, unknown_name
from ..formats import DEPRECATED, checkpoint_format, renamed
from ..hardware import Accelerator, load_accelerator
from ..hardware.schema import Bandwidth, MemoryLevel
from ..modelspec import ModelSpec, load_model
from ..precision import Precision

Part = Literal["ffn", "attention", "all"]


def router_elems(model: ModelSpec) -> float:
    """Router (gate) weights of one MoE layer [elements]: :math:`h \\cdot E`."""
    return float(model.hidden_size * model.moe.num_experts) if model.moe else 0.0


def ffn_weight_bytes_per_device(model: ModelSpec, par: Parallel, prec: Precision) -> float:
    """FFN/MoE weights on each device of a layout, router excluded, all layers [B]."""
    total = 0.0
    for g in model.layer_groups:
        router = router_elems(model) if g.ffn == "moe" else 0.0
        total += g.count * (ffn_weight_elems(model, g, par) - router)
    return total / par.pp * prec.weights.bytes


def part_weight_bytes(model: ModelSpec, weights: str | None = None, part: Part = "ffn",
                      weights_dtype: Any = DEPRECATED) -> float:
    """Weight bytes of a part of the whole model [B], with ``weights`` the weight format.

    ``ffn``: dense FFNs and all experts (routed + shared); ``attention``: everything else (attention,
    routers, norms ignored, embedding and LM head in bf16 as in :func:`weights_per_device`);
    ``all``: both. ``weights`` defaults to the checkpoint's own format (:mod:`perfmodel.formats`);
    ``weights_dtype`` is its deprecated old name (warns).
    """
    weights = renamed("weights", weights, "weights_dtype", weights_dtype, "part_weight_bytes")
    prec = Precision.of(weights or checkpoint_format(model))
    par = Parallel.build(model)
    ffn = ffn_weight_bytes_per_device(model, par, prec)
    whole = weights_per_device(model, par, prec)
    parts = {"ffn": ffn, "attention": whole - ffn, "all": whole}
    return parts[choice(part, "part", parts)]


def min_devices_for_weights(model: str | ModelSpec, hardware: str | Accelerator, weights: str | None = None,
                            part: Part = "ffn", reserve: float = 0.0, level: str | None = None,
                            weights_dtype: Any = DEPRECATED) -> int:
    """Minimum devices whose memory ``level`` holds a part of the weights (capacity bound).

    Parameters
    ----------
    model : str | ModelSpec
    hardware : str | Accelerator
        Accelerator or system id (``groq-lp30``).
    weights : str, optional
        Weight format (``fp8``...; default: the checkpoint's own, :mod:`perfmodel.formats`).
    part : {"ffn", "attention", "all"}
        Which weights (see :func:`part_weight_bytes`).
    reserve : float
        Fraction of the level kept free (default 0: the bare bound).
    level : str, optional
        Memory level (default: the accelerator's main memory, ``sram`` on an LPU).

    Returns
    -------
    int
        :math:`\\lceil W / (C (1-r)) \\rceil`. Example: Kimi-K2's FFN/MoE weights at fp8 (~1.02 TB)
        on 0.5 GB-SRAM LP30 chips need about 2,036 chips, eight 256-chip LPX racks.
    weights_dtype : str
        Deprecated old name of ``weights`` (warns).
    """
    weights = renamed("weights", weights, "weights_dtype", weights_dtype, "min_devices_for_weights")
    spec = model if isinstance(model, ModelSpec) else load_model(model)
    weights = weights or checkpoint_format(model, spec)
    acc = load_accelerator(hardware)
    lvl = level or acc.main_memory
    if lvl not in acc.memory:
        raise unknown_name(f"{acc.id} memory level", lvl, acc.memory)
    if not 0 <= reserve < 1:
        raise ConfigError(f"reserve: must be in [0, 1), got {reserve}")
    usable = acc.memory[lvl].capacity.value * (1.0 - reserve)
    return int(math.ceil(part_weight_bytes(spec, weights, part) / usable))


@dataclass(frozen=True)
class FFNPoolMemory:
    """Memory of one device of an FFN pool [B] (workspace an array over operating points).

    ``spill_bytes`` is the weight share per device read from DDR (0 without spill); ``bandwidth`` the
    effective bandwidth [B/s] the pool's weight reads run at.
    """

    weights: float
    workspace: np.ndarray
    capacity: float
    reserve: float
    spill_bytes: float
    bandwidth: float
    reason_if_not: str

    @property
    def usable(self) -> float:
        return self.capacity * (1.0 - self.reserve)

    @property
    def used(self) -> np.ndarray:
        return self.weights - self.spill_bytes + self.workspace

    @property
    def fits(self) -> np.ndarray:
        """Weights + workspace within the usable share; with a spill, the SRAM-resident weights fill
        the usable share and the workspace uses the reserved one."""
        if self.spill_bytes == 0.0:
            return self.used <= self.usable
        return (self.weights - self.spill_bytes <= self.usable) & (self.used <= self.capacity)

    def reason(self) -> np.ndarray:
        return np.where(self.fits, "", self.reason_if_not)


def ffn_pool_memory(model: ModelSpec, par: Parallel, prec: Precision, acc: Accelerator, reserve: float,
                    spill: str | None, tokens: np.ndarray, pool: str = "ffn") -> FFNPoolMemory:
    """Weights and workspace per device of an FFN pool, with an explicit DDR spill if asked.

    Raises
    ------
    ConfigError
        ``spill: ddr`` on a spec without a ``ddr`` level, or an overflow larger than the DDR.
    """
    w = ffn_weight_bytes_per_device(model, par, prec)
    work = workspace_bytes(model, par, prec, np.asarray(tokens, dtype=float))
    main = acc.main_memory
    cap = acc.memory[main].capacity.value
    usable = cap * (1.0 - reserve)
    bw = acc.memory[main].bandwidth.value
    need = int(math.ceil(w * par.group / usable)) if usable > 0 else 0
    reason = (f"pool {pool!r}: FFN/MoE weights {w / 1e9:.3g} GB per {acc.id} exceed its usable {main} "
              f"{usable / 1e9:.3g} GB ({par.group} devices; at least {need} needed, or spill: ddr on a "
              f"spec with a ddr level)")
    if spill is not None and "ddr" not in acc.memory:
        raise ConfigError(f"pools.{pool}.spill: {acc.id}'s spec has no 'ddr' memory level (levels: "
                          f"{', '.join(acc.memory)}); spilling needs its capacity and bandwidth, e.g. in a "
                          f"user spec file with sourced figures")
    overflow = max(0.0, w - usable)  # weights beyond the usable share; the workspace uses the reserve
    if spill is None or overflow == 0.0:
        return FFNPoolMemory(w, work, cap, reserve, 0.0, bw, reason)
    ddr = acc.memory["ddr"]
    if overflow > ddr.capacity.value:
        raise ConfigError(f"pools.{pool}.spill: {overflow / 1e9:.3g} GB per device overflow {main} and do not "
                          f"fit the {ddr.capacity.value / 1e9:.3g} GB ddr level either")
    b_eff = w / ((w - overflow) / bw + overflow / ddr.bandwidth.value)
    return FFNPoolMemory(w, work, cap, reserve, overflow, b_eff, reason)


def spilled_accelerator(acc: Accelerator, bandwidth: float) -> Accelerator:
    """The accelerator with its main memory's bandwidth replaced by the spill blend (see module)."""
    main = acc.main_memory
    level = acc.memory[main]
    bw = Bandwidth(value=bandwidth, basis=["derived"],
                   note=f"harmonic blend of {main} and ddr bandwidths for spilled weights")
    memory = dict(acc.memory)
    memory[main] = MemoryLevel(capacity=level.capacity, bandwidth=bw, latency=level.latency)
    return acc.model_copy(update={"memory": memory})
