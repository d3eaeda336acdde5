"""Achievable-efficiency profiles: how far real kernels get from datasheet peaks.

Datasheet peaks live in ``hardware_specs/``; the factors here are fitted to measurements and live in
``perfmodel/data/calibration/<profile>.yaml`` with their provenance. A profile is selected per
accelerator (``profile_for``); hardware without measurements gets its family's profile and the result
is flagged ``fallback``.

Cost of one op on a device (see :func:`perfmodel.core.costs.op_time`):

.. math::
    t = \\max\\left(\\frac{F}{P\\,\\eta_c(M)}, \\frac{D}{B\\,\\eta_m}\\right) + t_{kernel},
    \\qquad \\eta_c(M) = \\eta_{c,max}\\,\\frac{M}{M + M_{1/2}}

where M is the GEMM's token dimension (small in decode).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from typing import Any

from ..errors import SpecError, UnknownNameError, unknown_name
from ..fileio import read_yaml

#: Kernel-level decode-attention terms (TensorRT-LLM's decode kernel paths, work units, split-KV), fitted
#: per accelerator on GQA and MHA calls; per-op prediction uses them for every head layout, the step
#: model for grouped-query attention (:meth:`Efficiency.decode_family`).
DECODE_KERNEL_FAMILY = "attention_decode.kernel"


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of peak and fixed costs. All dimensionless except the times [s].

    Attributes
    ----------
    gemm_compute : dict[str, float]
        η_c,max per compute format (``bf16``, ``fp8``, ``fp4``; key ``default`` for the rest).
    gemm_m_half : float
        Tokens M at which a GEMM reaches half of η_c,max [tokens].
    memory : float
        η_m for streaming weights and activations from the main memory.
    attention_compute : float
        η for prefill attention FLOPs (flash attention).
    attention_memory : float
        η for the decode attention KV-cache read.
    kernel_overhead : float
        Fixed time per kernel (launch, tail, minimum duration) [s].
    collective_alpha : float
        Fixed latency of one all-reduce / all-gather on the scale-up domain [s].
    collective_bandwidth : float
        Achieved fraction of the per-direction link bandwidth (bus bandwidth / nominal).
    step_overhead : float
        Framework time per forward step not spent in kernels (scheduling, sampling, host sync) [s].
    name, source : str
        Profile name and provenance (data used, date, fit residual).
    fallback : bool
        True when the accelerator has no measurements of its own and borrows a family profile.
    op_params : dict[str, dict[str, float]]
        Optional shape-dependent terms per op family, fitted by :mod:`perfmodel.calibration.fit_ops`
        (keys ``gemm.<format>``, ``moe.<format>``, ``attention_decode``, ``mla_decode``,
        ``attention_prefill``, ``mla_prefill``, ``nccl``, and ``attention_decode.kernel``: the
        kernel-level decode terms, preferred to ``attention_decode`` for grouped-query attention
        where present, see :meth:`decode_family`). Empty (the default) means the plain roofline
        above; the cost functions of :mod:`perfmodel.core.costs` that read them document each key.
    """

    gemm_compute: dict[str, float] = field(default_factory=lambda: {"default": 1.0})
    gemm_m_half: float = 0.0
    memory: float = 1.0
    attention_compute: float = 1.0
    attention_memory: float = 1.0
    kernel_overhead: float = 0.0
    collective_alpha: float = 0.0
    collective_bandwidth: float = 1.0
    step_overhead: float = 0.0
    name: str = "datasheet"
    source: str = "datasheet peaks, no efficiency loss (pure roofline)"
    fallback: bool = False
    op_params: dict[str, dict[str, float]] = field(default_factory=dict)

    def op(self, family: str) -> dict[str, float]:
        """Shape-dependent terms of an op family (empty dict when the profile has none)."""
        return self.op_params.get(family, {})

    def decode_family(self, family: str = "attention_decode", grouped: bool = True) -> str:
        """The op family that costs a decode-attention call: the kernel-level terms
        (:data:`DECODE_KERNEL_FAMILY`) for grouped-query attention where the profile has them, else
        ``family`` itself (MLA keeps ``mla_decode``; ``grouped=False``, plain MHA, keeps
        ``attention_decode``: see docs/calibration.md for the measurements behind the split)."""
        use = family == "attention_decode" and grouped and self.op(DECODE_KERNEL_FAMILY)
        return DECODE_KERNEL_FAMILY if use else family

    def gemm_eta(self, compute: str) -> float:
        """η_c,max for a compute format key."""
        return self.gemm_compute.get(compute, self.gemm_compute.get("default", 1.0))

    def __post_init__(self) -> None:
        for f in ("memory", "attention_compute", "attention_memory", "collective_bandwidth"):
            v = getattr(self, f)
            if not 0 < v <= 1:
                raise SpecError(f"efficiency.{f}: must be in (0, 1], got {v}")
        for k, v in self.gemm_compute.items():
            if not 0 < v <= 1:
                raise SpecError(f"efficiency.gemm_compute.{k}: must be in (0, 1], got {v}")
        for f in ("gemm_m_half", "kernel_overhead", "collective_alpha", "step_overhead"):
            if getattr(self, f) < 0:
                raise SpecError(f"efficiency.{f}: must be >= 0, got {getattr(self, f)}")
        for fam, terms in self.op_params.items():
            for k, v in terms.items():
                if not (isinstance(v, (int, float)) and v >= 0):
                    raise SpecError(f"efficiency.op_params.{fam}.{k}: must be a number >= 0, got {v!r}")


DATASHEET = Efficiency()

#: Accelerator id -> calibration profile (measured family) for hardware with shipped profiles.
PROFILE_OF: dict[str, str] = {
    "h100-sxm": "h100-sxm", "h200-sxm": "h200-sxm", "b200": "b200", "gb200": "gb200",
}
#: Fallbacks for hardware without measurements of its own (flagged in results): the measured profile of
#: the same architecture where one ships, else the nearest measured one (:data:`FALLBACK_REASON` says which).
FAMILY_FALLBACK: dict[str, str] = {
    "h100-pcie": "h100-sxm", "h20": "h200-sxm", "a100-sxm": "h100-sxm", "b300": "b200",
    "gb300": "gb200", "rubin": "gb200",
    # Hopper: same GH100 GPU
    "h800": "h100-sxm", "gh200": "h100-sxm", "gh200-hbm3e": "h200-sxm", "h100-nvl": "h100-sxm",
    # Blackwell (GB202)
    "rtx-pro-6000": "b200",
    # no Ada, CDNA, Gaudi or Neuron profile is shipped: the generic (H100) profile, said so in the name
    "l40s": "h100-sxm", "l4": "h100-sxm", "mi250x": "h100-sxm", "gaudi2": "h100-sxm",
    "trainium2": "h100-sxm", "inferentia2": "h100-sxm",
}
GENERIC_FALLBACK = "h100-sxm"
#: Why a fallback was chosen, shown in the profile name of results (``efficiency`` column).
FALLBACK_REASON: dict[str, str] = {
    "h800": "same Hopper GPU", "gh200": "same Hopper GPU", "gh200-hbm3e": "same Hopper GPU, HBM3e",
    "h100-nvl": "same Hopper GPU, PCIe card",
    "rtx-pro-6000": "Blackwell family, GDDR7 card",
    "l40s": "Ada: no Ada profile, generic NVIDIA profile", "l4": "Ada: no Ada profile, generic NVIDIA profile",
    "mi250x": "CDNA2: no AMD profile, generic GPU profile",
    "gaudi2": "Gaudi: no Gaudi profile, generic GPU profile",
    "trainium2": "Neuron: no Trainium profile, generic GPU profile",
    "inferentia2": "Neuron: no Inferentia profile, generic GPU profile",
}


@functools.cache  # the shipped package data: listed once, like load_profile reads each file once
def _profile_names() -> list[str]:
    root = resources.files("perfmodel") / "data" / "calibration"
    try:
        return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))
    except FileNotFoundError:
        return []


@functools.cache
def load_profile(name: str) -> Efficiency:
    """Load a shipped calibration profile by name (``h100-sxm``, ...) or return the datasheet one."""
    if name == "datasheet":
        return DATASHEET
    names = _profile_names()
    if name not in names:
        raise unknown_name("calibration profile", name, names + ["datasheet"])
    text = (resources.files("perfmodel") / "data" / "calibration" / f"{name}.yaml").read_text()
    # libyaml when installed (read_yaml): the pure-Python loader took ~40 ms per profile, once per plan
    return efficiency_from_dict(read_yaml(f"calibration/{name}.yaml", text), origin=f"calibration/{name}.yaml")


def efficiency_from_dict(data: dict[str, Any], origin: str = "efficiency") -> Efficiency:
    """Build an :class:`Efficiency` from a mapping (a profile file's ``parameters`` section)."""
    params = data.get("parameters", data)
    allowed = {f.name for f in fields(Efficiency)}
    unknown = set(params) - allowed
    if unknown:
        raise SpecError(f"{origin}: unknown efficiency parameter(s) {sorted(unknown)}; allowed: "
                        f"{sorted(allowed)}")
    kwargs = dict(params)
    kwargs.setdefault("name", data.get("name", origin))
    if "source" not in kwargs and "provenance" in data:
        kwargs["source"] = str(data["provenance"].get("summary", data["provenance"]))
    return Efficiency(**kwargs)


def profile_for(accelerator_id: str, efficiency: str | Efficiency | None = "calibrated") -> Efficiency:
    """Pick the efficiency profile for an accelerator.

    Parameters
    ----------
    accelerator_id : str
        Shipped accelerator id.
    efficiency : "calibrated" | "datasheet" | str | Efficiency
        ``"calibrated"`` (default) uses the accelerator's fitted profile, the execution profile of a
        statically scheduled chip (:func:`dataflow_efficiency`: Groq, Cerebras,
        SambaNova), or its family's with ``fallback=True``; ``"datasheet"`` is the pure roofline (η = 1, no overheads); another string
        names a profile; an :class:`Efficiency` is used as given.
    """
    if isinstance(efficiency, Efficiency):
        return efficiency
    if efficiency in (None, "calibrated"):
        dataflow = _dataflow_profile(accelerator_id)
        if dataflow is not None:
            return dataflow
        names = _profile_names()
        own = PROFILE_OF.get(accelerator_id)
        if own in names:
            return load_profile(own)
        borrowed = FAMILY_FALLBACK.get(accelerator_id, GENERIC_FALLBACK)
        if borrowed not in names:
            return DATASHEET
        why = FALLBACK_REASON.get(accelerator_id)
        return replace(load_profile(borrowed), fallback=True,
                       name=f"{borrowed} (fallback for {accelerator_id}{': ' + why if why else ''})")
    check_profile(efficiency)
    return load_profile(str(efficiency))


def _dataflow_profile(accelerator_id: str) -> Efficiency | None:
    """The execution profile of a statically scheduled chip (:mod:`perfmodel.dataflow`), if it is one.

    Where several architecture files run the same chip (software releases), the one whose id is the
    accelerator's id is used (:func:`perfmodel.dataflow.load_arch`).
    """
    from ..dataflow.arch import load_arch

    try:
        return dataflow_efficiency(load_arch(accelerator_id))
    except UnknownNameError:
        return None


def dataflow_efficiency(arch: Any) -> Efficiency:
    """A dataflow architecture (:class:`perfmodel.dataflow.DataflowArch`) as an :class:`Efficiency`.

    Used where a statically scheduled chip runs inside a deployment built on
    :class:`perfmodel.StepModel` (the FFN pool of a GPU/LPU split): weight and KV streaming at the
    architecture's stream efficiency η (``memory`` and ``attention_memory``), matrix and attention work
    at its sourced compute efficiency, and no kernel-launch, per-step framework or measured-collective
    terms (collectives follow the link's topology). Not a borrowed GPU profile.
    """
    eta, comp = arch.stream_efficiency.value, arch.compute_efficiency
    return Efficiency(gemm_compute={"default": comp}, memory=eta, attention_compute=comp,
                      attention_memory=eta, name=f"dataflow:{arch.id}",
                      source=f"perfmodel/data/dataflow/{arch.id}.yaml: stream_efficiency {eta:g} "
                             f"({arch.stream_efficiency.basis}: {arch.stream_efficiency.fitted_on}); "
                             f"no kernel-launch or framework terms")


def check_profile(efficiency: str | Efficiency | None) -> None:
    """Raise :class:`~perfmodel.errors.UnknownNameError` (listing ``calibrated``, ``datasheet`` and the
    shipped profiles) unless ``efficiency`` is an Efficiency or one of those names."""
    if efficiency is None or isinstance(efficiency, Efficiency):
        return
    names = _profile_names()
    if str(efficiency) not in ("calibrated", "datasheet", *names):
        raise unknown_name("efficiency profile", str(efficiency), ["calibrated", "datasheet", *names])


def small_m_variant(eff: Efficiency, compute: str) -> Efficiency | None:
    """The profile without format ``compute``'s small-M GEMM penalty (``gemm.<compute>.m_half`` = 0).

    The per-format GEMM terms are fitted on kernels measured one at a time through one library path
    (``perfmodel/data/ops``). For NVFP4 on Blackwell that path runs one tile shape for every M: its
    latency is flat from M = 1 to 256 (16384² at 44–48 µs on B200, ≈ 3.2 TB/s of weights, against
    59 µs and ≈ 4.5 TB/s for FP8), which the fit expresses as a large :math:`M_{1/2}` (≈ 170 tokens
    against ≈ 27 for FP8). Serving engines autotune their FP4 GEMMs per M bucket (small-M, swap-AB
    tiles), so a served decode step runs closer to the weight-streaming bound. This variant — no
    small-M compute penalty, memory efficiency and fixed costs unchanged — is the other end of that
    range; how much of the way an engine goes is fitted per engine (``small_m_tactic`` in
    :mod:`perfmodel.engine.calibration`).

    Returns
    -------
    Efficiency or None
        None unless ``compute`` is ``fp4`` and the profile's FP4 penalty exceeds its FP8 one (today:
        the B200 and GB200 profiles). Applied to every format whose :math:`M_{1/2}` exceeds FP8's
        (BF16, block-scaled FP8) the variant fitted worse on the public serving rows (training TPOT
        median 11.3 % against 10.9 %), so it is kept to the format the isolated tables single out.
    """
    own, fp8 = eff.op(f"gemm.{compute}"), eff.op("gemm.fp8")
    if compute != "fp4" or "m_half" not in own or own["m_half"] <= fp8.get("m_half", math.inf):
        return None
    params = {**eff.op_params, f"gemm.{compute}": {**own, "m_half": 0.0}}
    return replace(eff, op_params=params, name=f"{eff.name} ({compute} without small-M penalty)")
