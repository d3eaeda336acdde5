"""A model replica on one accelerator type (:class:`StepModel`): what it is, and the parts that cost its steps.

This module resolves a replica's model, hardware, parallel layout, number formats, efficiency profile
and links from their ids or specs; the class gathers its other concerns from one module each:

- :mod:`perfmodel.core.step_memory`: memory fit (weights, KV and recurrent-state bytes, KV capacity);
- :mod:`perfmodel.core.step_links`: the collective and host links, and the time of one message;
- :mod:`perfmodel.core.step_costs`: the time parts of one op (calibrated forms or roofline), with
  :data:`STACK_POINTS`;
- :mod:`perfmodel.core.step_assembly`: a step's ops, their sums (:meth:`StepModel.breakdown`, its
  attention / FFN / head parts, ``step_time``) and the compiled op plan.
"""

from __future__ import annotations

import functools

import numpy as np

from ..checks import real
from ..errors import ConfigError
from ..formats import resolve_formats
from ..hardware import Accelerator, Link, System, load_accelerator, load_hardware
from ..modelspec import ModelSpec, load_model
from ..precision import Precision, dtype, serving_activations
from .attention_costs import DecodeAttentionForm
from .efficiency import Efficiency, profile_for
from .memory import DEFAULT_RESERVE
from .parallel import Parallel
from .step_assembly import StepAssembly
from .step_costs import STACK_POINTS, OpCosts
from .step_links import LinkTimes
from .step_memory import ReplicaMemory

__all__ = ["STACK_POINTS", "StepModel", "check_system_size"]


def check_system_size(hardware: object, tp: object = 1, pp: object = 1, dp_attention: object = 1) -> None:
    """A replica given a *system* id (``hgx-h100``) must fit in that system's device count.

    Raises
    ------
    ConfigError
        tp * dp_attention * pp exceeds the system's count (name the accelerator id to span systems).
    """
    if not isinstance(hardware, (str, System)) or not all(type(v) is int for v in (tp, pp, dp_attention)):
        return  # an accelerator (no count), or degrees that Parallel.build refuses with their own message
    spec = hardware if isinstance(hardware, System) else load_hardware(hardware)
    devices = tp * pp * dp_attention  # type: ignore[operator]
    if isinstance(spec, System) and devices > spec.count:
        raise ConfigError(f"hardware: {spec.id} has {spec.count} x {spec.accelerator}, but tp*dp_attention*pp = "
                          f"{devices} devices (tp={tp}, dp_attention={dp_attention}, pp={pp}); allowed: at most "
                          f"{spec.count}, or name the accelerator '{spec.accelerator}' for a replica spanning "
                          f"several systems")


class StepModel(StepAssembly, OpCosts, LinkTimes, ReplicaMemory):
    """A model replica on one accelerator type: step times, memory and KV capacity.

    Parameters
    ----------
    model : str | ModelSpec
        Model id, HF repo id, config.json path or spec.
    hardware : str | Accelerator
        Accelerator id or a system id (its accelerator and links are used).
    tp, pp, ep, dp_attention, moe_tp : int
        Parallel layout (see :mod:`perfmodel.core.parallel`).
    weights, activations, kv_cache : str, optional
        Formats (``bf16``, ``fp8``, ``nvfp4``, ``int4``...). Default (``None``): weights in the
        checkpoint's own format, the KV cache in fp8 for FP8/FP4 weights else bf16
        (:mod:`perfmodel.formats`). Activations default as in
        :meth:`perfmodel.precision.Precision.of`, except for ``mxfp4`` weights: ``fp8`` on accelerators
        with an FP4 peak (MXFP4 x MXFP8 MoE kernels, Blackwell), ``bf16`` elsewhere (W4A16); and
        NVFP4 weights on accelerators without an FP4 peak (Hopper) run weight-only, ``bf16``
        (:func:`perfmodel.precision.serving_activations`, as ``estimate`` and the validation do).
    efficiency : "calibrated" | "datasheet" | Efficiency
        Achievable-efficiency profile (``datasheet`` = pure roofline).
    reserve : float
        Fraction of device memory left unused (default 0.10).
    expert_imbalance : float
        Load of the busiest EP rank relative to uniform routing (1 = uniform, ≥ 1).
    scale_up : str | Link, optional
        Override of the scale-up link used for collectives.
    kv_host_fraction : float
        Fraction of the KV cache kept in host memory (0 = none). It frees device memory; each decode
        step then reads that fraction of the attended KV over the accelerator's host link
        (PCIe or chip-to-chip), on the critical path except for the ``kv_host_overlap`` fraction.
    kv_host_overlap : float
        Fraction of the host transfer hidden behind other work, in [0, 1] (default 0).
    """

    def __init__(self, model: str | ModelSpec, hardware: str | Accelerator, tp: int = 1, pp: int = 1,
                 ep: int = 1, dp_attention: int = 1, moe_tp: int | None = None,
                 weights: str | None = None, activations: str | None = None, kv_cache: str | None = None,
                 efficiency: str | Efficiency = "calibrated", reserve: float = DEFAULT_RESERVE,
                 expert_imbalance: float = 1.0, scale_up: str | Link | None = None,
                 kv_host_fraction: float = 0.0, kv_host_overlap: float = 0.0) -> None:
        spec = model if isinstance(model, ModelSpec) else load_model(model)
        weights, kv_cache = resolve_formats(model, spec, weights, kv_cache)
        self._arguments = dict(tp=tp, pp=pp, ep=ep, dp_attention=dp_attention, moe_tp=moe_tp, weights=weights,
                               activations=activations, kv_cache=kv_cache, reserve=reserve,
                               expert_imbalance=expert_imbalance, scale_up=scale_up,
                               kv_host_fraction=kv_host_fraction, kv_host_overlap=kv_host_overlap)
        self.model = spec
        self.hardware = load_accelerator(hardware)
        self.parallel = Parallel.build(self.model, tp=tp, pp=pp, ep=ep, dp_attention=dp_attention,
                                       moe_tp=moe_tp)
        check_system_size(hardware, tp, pp, dp_attention)
        w_name, has_fp4 = dtype(weights, "weights").name, "fp4" in self.hardware.compute
        if activations is None and (w_name == "mxfp4" or (w_name in ("nvfp4", "fp4") and not has_fp4)):
            # MXFP4: the checkpoint's own kernels; FP4 without FP4 tensor cores: weight-only (W4A16)
            activations = serving_activations("nvfp4" if w_name == "fp4" else w_name, has_fp4)
        self.precision = Precision.of(weights, activations, kv_cache)
        self.efficiency = profile_for(self.hardware.id, efficiency)
        # fused-MoE terms: the MoE kernel's own where the profile has them, else the GEMM format's
        moe_format = self.precision.moe_format
        self.moe_format = moe_format if self.efficiency.op(f"moe.{moe_format}") else self.precision.matmul_format
        reserve = real(reserve, "reserve", 0, 1, hi_open=True)
        expert_imbalance = real(expert_imbalance, "expert_imbalance (1 = uniform routing)", lo=1)
        kv_host_fraction = real(kv_host_fraction, "kv_host_fraction", 0, 1)
        kv_host_overlap = real(kv_host_overlap, "kv_host_overlap", 0, 1)
        self.kv_host_fraction = kv_host_fraction
        self.kv_host_overlap = kv_host_overlap
        self.host_bandwidth = self._host_bandwidth() if kv_host_fraction > 0 else np.inf
        self.reserve = reserve
        self.expert_imbalance = expert_imbalance
        self.peak = self.hardware.peak_flops(self.precision.compute)
        # attention runs in bf16 (fp8 FMHA is an engine option); SRAM parts may publish only fp8
        try:
            self.attention_peak = self.hardware.peak_flops("bf16")
        except KeyError:
            self.attention_peak = self.peak
        self.bandwidth = self.hardware.memory_bandwidth
        self.link_bandwidth, self.link_alpha, self.link_id = self._collective_link(scale_up)
        self._decode_forms: dict[tuple, DecodeAttentionForm | None] = {}

    def with_efficiency(self, efficiency: str | Efficiency) -> StepModel:
        """The same replica (model, hardware, layout, formats) under another efficiency profile."""
        return StepModel(self.model, self.hardware, **self._arguments, efficiency=efficiency)

    @functools.cached_property
    def labels(self) -> dict[str, object]:
        """What this replica is, for result records: model and hardware ids, layout and format labels,
        the efficiency profile, the collective link and the host-KV share (formed once; do not modify)."""
        par, eff = self.parallel, self.efficiency
        return {"model": self.model.id, "hardware": self.hardware.id, "parallel": par.label(),
                "precision": self.precision.label(), "efficiency": eff.name, "efficiency_fallback": eff.fallback,
                "basis": "analytic-datasheet" if eff.name == "datasheet" else "analytic-calibrated",
                "tp": par.tp, "pp": par.pp, "ep": par.ep, "dp_attention": par.dp_attention,
                "reserve_fraction": self.reserve, "link": self.link_id, "kv_host_fraction": self.kv_host_fraction}

    def __repr__(self) -> str:
        return (f"StepModel({self.model.id} on {self.parallel.devices}x {self.hardware.id}, "
                f"{self.parallel.label()}, {self.precision.label()}, efficiency={self.efficiency.name})")
