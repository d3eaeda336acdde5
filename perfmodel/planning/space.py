"""The search space of a capacity plan: candidate replicas and P/D-disaggregated pool pairs.

A candidate is one *replica design* (aggregated: one step model; disaggregated: a prefill and a
decode step model); how many replicas or workers it needs is decided later by :func:`plan`.
For each hardware and weight format the space holds

- **layouts** ``tp × dp_attention × pp`` devices per replica. Dense models use tensor parallelism
  only. MoE models also take attention data parallelism (``dp_attention`` ranks of ``tp`` devices
  each) and expert parallelism ``ep`` over the group of ``g = tp × dp_attention`` devices; the default
  ``ep = g`` (wide EP: every device holds ``E/g`` experts, ``moe_tp = 1``), other ``ep`` values
  dividing ``g`` give ``moe_tp = g / ep``. Every layout is also tried with each pipeline depth ``pp``
  (layers split evenly over ``pp`` stages; default 1 only): what a model too large for one
  scale-up domain needs. A system id (``hgx-h100``) holds at most its device count per replica;
  name the accelerator (``h100-sxm``) for a replica spanning systems;
- **aggregated** candidates, one per layout and weight format;
- **P/D-disaggregated** candidates (``disaggregated=True``), one per (prefill layout, decode layout)
  pair on the same hardware, and per (prefill format, decode format) pair: the same format in both
  pools, or with ``decode_weights`` every prefill format × every decode format (an FP8 prefill pool
  feeding an NVFP4 decode pool; the KV cache format is shared, since the cache crosses between them).
  The pools' worker counts are sized by :func:`plan`.

Layouts the model or hardware rejects are kept: :func:`plan` reports them with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..formats import DEPRECATED, checkpoint_format, default_kv_cache, format_list, renamed
from ..hardware import load_hardware
from ..modelspec import load_model


@dataclass
class Candidate:
    """One replica design to consider.

    Attributes
    ----------
    name : str
        Label shown in the plan (e.g. ``"4x h100-sxm tp4 bf16"``).
    step_model : StepModelLike | Mapping
        A step model (a :class:`~perfmodel.core.step.StepModel` or a stand-in) or ``StepModel``
        keyword arguments, built when evaluated. For a disaggregated candidate: its prefill pool's.
    hardware : str, optional
        Hardware id (for power and prices).
    spec : Accelerator | System, optional
        The resolved hardware spec (user files included), used for the power basis.
    price_source : str
        Where the cost comes from: ``input``, ``list price row <id>`` (:mod:`perfmodel.planning.prices`),
        ``total-cost model`` or ``not given``.
    power : PowerBasis, optional
        Power basis; None = no power figure.
    price : float, optional
        USD per device-hour.
    layout : dict
        Fields shown in the plan (tp, pp, ep, precision...).
    decode : StepModelLike | Mapping, optional
        The decode pool's step model of a P/D-disaggregated candidate (None: aggregated). Both pools
        run on ``hardware`` and are priced and powered per device of either pool.
    kv_link : mapping, optional
        ``link_bandwidth`` [B/s or quantity] and ``link_alpha`` [s] of one KV transfer between the pools
        (:class:`perfmodel.serving.Disaggregated`); default: from the prefill accelerator's ports
        (:func:`perfmodel.deployment.disagg.kv_transfer_link`). Step models without hardware need it.
    """

    name: str
    step_model: Any
    hardware: str | None = None
    power: Any = None
    price: float | None = None
    layout: dict[str, Any] = field(default_factory=dict)
    spec: Any = None
    price_source: str = "not given"
    decode: Any = None
    kv_link: Any = None

    @property
    def disaggregated(self) -> bool:
        return self.decode is not None


@dataclass(frozen=True)
class Layout:
    """Parallel layout of one replica: ``tp × dp_attention × pp`` devices, experts over ``ep`` of a stage's."""

    tp: int
    dp_attention: int = 1
    ep: int = 1
    pp: int = 1

    @property
    def devices(self) -> int:
        return self.tp * self.dp_attention * self.pp

    def label(self) -> str:
        """``tp8``, ``tp8-pp2``, ``tp1-adp8-ep8``... (:meth:`perfmodel.core.parallel.Parallel.label`)."""
        from ..core.parallel import Parallel

        return Parallel(tp=self.tp, pp=self.pp, dp_attention=self.dp_attention, ep=self.ep).label()

    def kwargs(self) -> dict[str, int]:
        """``StepModel`` keyword arguments (``pp`` only when > 1)."""
        return {"tp": self.tp, "dp_attention": self.dp_attention, "ep": self.ep,
                **({"pp": self.pp} if self.pp > 1 else {})}


def layouts(moe: bool, tp: Sequence[int], dp_attention: Sequence[int] = (1,),
            ep: Sequence[int] | None = None, pp: Sequence[int] = (1,)) -> list[Layout]:
    """Layouts to try: every ``tp``; for MoE models × every ``dp_attention`` × every ``ep`` dividing the
    group; each × every ``pp``.

    Parameters
    ----------
    moe : bool
        The model has routed experts (dense models: ``tp`` only, ``dp_attention`` and ``ep`` ignored).
    tp, dp_attention : sequence of int
        Tensor-parallel sizes and attention data-parallel ranks.
    ep : sequence of int, optional
        Expert-parallel sizes; None = the whole group ``tp × dp_attention`` (wide EP). A value that does
        not divide the group is skipped for that group.
    pp : sequence of int
        Pipeline stages (default 1 only).
    """
    stages = [int(p) for p in dict.fromkeys(pp)]
    if not moe:
        return [Layout(int(t), pp=p) for t in dict.fromkeys(tp) for p in stages]
    out = []
    for t in dict.fromkeys(tp):
        for d in dict.fromkeys(dp_attention):
            group = int(t) * int(d)
            for e in (dict.fromkeys(ep) if ep else (group,)):
                if group % int(e) == 0:
                    out.extend(Layout(int(t), int(d), int(e), p) for p in stages)
    return out


def enumerate_candidates(model: str, hardware: Sequence[Any], weights: Any = None,
                         tp: Sequence[int] = (1, 2, 4, 8), kv_cache: str | None = None, *,
                         dp_attention: Sequence[int] = (1,), ep: Sequence[int] | None = None,
                         disaggregated: bool = False, aggregated: bool = True, pp: Sequence[int] = (1,),
                         decode_weights: Any = None, precisions: Any = DEPRECATED) -> list[Candidate]:
    """Candidate replicas for a model on each hardware (see the module docstring).

    Parameters
    ----------
    model : str
        Model id or config path.
    hardware : sequence of str or spec
        Hardware ids, aliases, YAML paths or resolved specs.
    weights : str or sequence of str, optional
        Weight formats (``"fp8,bf16"`` or a list; of aggregated replicas; of both pools of a P/D
        candidate unless ``decode_weights`` is given); default: the checkpoint's own
        (:mod:`perfmodel.formats`).
    tp, dp_attention, ep, pp
        Layouts (:func:`layouts`).
    decode_weights : str or sequence of str, optional
        Weight formats of the decode pool of P/D candidates, each paired with every prefill format of
        ``weights`` (None: the prefill pool's format, one pair per format).
    kv_cache : str, optional
        KV-cache format (default: :func:`perfmodel.formats.default_kv_cache` of each weight format).
    disaggregated, aggregated : bool
        Include P/D pairs of layouts; include single-pool replicas.
    precisions :
        Deprecated old name of ``weights`` (warns).

    Returns
    -------
    list of Candidate
        Aggregated candidates first, then P/D pairs, per hardware and format.
    """
    if not (aggregated or disaggregated):
        raise ConfigError("plan: the search space is empty: allow aggregated or disaggregated candidates")
    weights = renamed("weights", weights, "precisions", precisions, "enumerate_candidates")
    spec = load_model(model)
    precisions = [w or checkpoint_format(model, spec) for w in format_list(weights)]
    shapes = layouts(spec.moe is not None, tp, dp_attention, ep, pp)
    out = []
    for hw in hardware:
        hw_spec = load_hardware(hw)  # an id, alias or YAML path; the spec itself travels with the candidate
        acc_id = hw_spec.id

        def kwargs(lay: Layout, prec: str, kv: str, hw_spec: Any = hw_spec) -> dict[str, Any]:
            kw = {"model": spec, "hardware": hw_spec, "weights": prec, "kv_cache": kv, **lay.kwargs()}
            return kw if spec.moe is not None else {k: v for k, v in kw.items() if k not in ("ep", "dp_attention")}

        for prec in precisions:
            kv = kv_cache or default_kv_cache(prec)   # one KV format per candidate: P/D pools share it
            if aggregated:
                for lay in shapes:
                    out.append(Candidate(f"{lay.devices}x {acc_id} {lay.label()} {prec}", kwargs(lay, prec, kv),
                                         acc_id, layout={"mode": "aggregated", "tp": lay.tp, "pp": lay.pp,
                                                         "ep": lay.ep, "dp_attention": lay.dp_attention,
                                                         "weights": prec, "kv_cache": kv},
                                         spec=hw_spec))
            if disaggregated:
                for dprec in (format_list(decode_weights) if decode_weights else (prec,)):
                    for pre in shapes:
                        for dec in shapes:
                            out.append(_pd_candidate(acc_id, hw_spec, pre, dec, prec, dprec, kv, kwargs))
    return out


def _pd_candidate(acc_id: str, hw_spec: Any, pre: Layout, dec: Layout, prec: str, dprec: str, kv: str,
                  kwargs: Any) -> Candidate:
    """A P/D pair: prefill layout and format, decode layout and format (named once when they agree)."""
    name = (f"P/D {acc_id} prefill {pre.label()} + decode {dec.label()} {prec}" if prec == dprec else
            f"P/D {acc_id} prefill {pre.label()} {prec} + decode {dec.label()} {dprec}")
    return Candidate(name, kwargs(pre, prec, kv), acc_id,
                     layout={"mode": "disaggregated", "tp": dec.tp, "pp": dec.pp, "ep": dec.ep,
                             "dp_attention": dec.dp_attention, "prefill_layout": pre.label(),
                             "decode_layout": dec.label(),
                             "weights": prec if prec == dprec else f"{prec} prefill, {dprec} decode",
                             "prefill_weights": prec, "decode_weights": dprec, "kv_cache": kv},
                     spec=hw_spec, decode=kwargs(dec, dprec, kv))
