"""Roofline chart of a device with the ops of a step placed on it.

The roofs are the device's datasheet figures: one horizontal compute roof per dense peak P (per
format) and one bandwidth roof :math:`I \\cdot B` per memory level, on log-log axes of arithmetic
intensity :math:`I = F/D` [FLOP/B] against attainable performance [FLOP/s]. An op sits at its own
intensity and at the performance the model predicts for it, :math:`F / t` with
:math:`t = \\max(F/(P\\eta_c), D/(B\\eta_m)) + t_{kernel}`: the gap to the roof is the modelled
efficiency loss plus the launch overhead.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from ..core.ops import StepShape, attention_ops, elementwise_op, embedding_head_ops, ffn_ops
from ..core.step import StepModel
from ..hardware import Accelerator, load_accelerator
from .labels import place_labels
from .style import CLASS_COLORS, PART_COLORS, get_axes, si_format, styled
from .titles import describe, set_title

Phase = Literal["prefill", "decode"]

#: Compute formats drawn by default, when the device lists them.
DEFAULT_DTYPES = ("fp4", "fp8", "bf16", "fp16")
_PHASE_MARKERS = {"decode": "o", "prefill": "s"}
_ROOF_STYLES = ("-", "--", "-.", ":")


def phase_shape(phase: Phase, batch: float = 1.0, context: float = 2048.0) -> StepShape:
    """The step of a phase: ``batch`` prompts of ``context`` tokens, or ``batch`` decodes at ``context``.

    Parameters
    ----------
    phase : "prefill" | "decode"
        Prefill processes whole prompts (no cached past); decode adds one token per sequence.
    batch : float
        Sequences in the step.
    context : float
        Prompt length (prefill) or tokens attended per decoding sequence (decode) [tok].
    """
    if phase == "prefill":
        return StepShape.make(n_prefill=batch, chunk=context)
    if phase == "decode":
        return StepShape.make(n_decode=batch, context=context)
    raise ValueError(f"phase: expected 'prefill' or 'decode', got {phase!r}")


def phase_ops(step_model: StepModel, phase: Phase = "decode", batch: float = 1.0,
              context: float = 2048.0, shape: StepShape | None = None) -> pd.DataFrame:
    """FLOPs, bytes and modelled time of each op of one layer (and the head) in a step.

    Parameters
    ----------
    step_model : StepModel
        Model replica on its device (parallel layout, formats and efficiencies).
    phase : "prefill" | "decode"
        Step to decompose (see :func:`phase_shape`); used for the ``phase`` column with ``shape``.
    batch, context : float
        Sequences and tokens [tok] of the step.
    shape : StepShape, optional
        An explicit step (scalar fields) instead of ``phase``/``batch``/``context``.

    Returns
    -------
    pandas.DataFrame
        One row per op occurrence on one device: ``name``, ``op_class``, ``kind``, ``phase``,
        ``flops`` [FLOP], ``bytes`` [B], ``intensity`` [FLOP/B], ``time_s`` [s],
        ``attained_flops`` [FLOP/s], and the step's ``batch`` [sequences] and ``context`` [tok]
        (prompt length for prefill). Ops of every distinct layer group are listed; a name is
        suffixed with the group's window when two groups give it different work. Ops absent from
        the step (zero kernels) are dropped.
    """
    sm = step_model
    s = shape if shape is not None else phase_shape(phase, batch, context)
    model, par, prec = sm.model, sm.parallel, sm.precision
    rows: list[dict] = []
    seen: dict[str, tuple[float, float]] = {}
    for group in model.layer_groups:
        ops = attention_ops(model, group, par, prec, s) + ffn_ops(model, group, par, prec, s,
                                                                   sm.expert_imbalance)
        ops.append(elementwise_op(model, group, par, prec, s))
        for op in ops:
            _add_row(rows, seen, sm, op, phase, f" [window {group.window}]" if group.window else " [full]")
    for op in embedding_head_ops(model, par, prec, s):
        _add_row(rows, seen, sm, op, phase, "")
    out = pd.DataFrame(rows, columns=["name", "op_class", "kind", "phase", "flops", "bytes",
                                      "intensity", "time_s", "attained_flops"])
    seqs = float(np.ravel(s.n_prefill)[0] + np.ravel(s.n_decode)[0])
    tokens = float(np.ravel(s.chunk if phase == "prefill" else s.context)[0])
    return out.assign(batch=seqs, context=tokens)


def _add_row(rows: list[dict], seen: dict[str, tuple[float, float]], sm: StepModel, op, phase: str,
             suffix: str) -> None:
    flops, data = float(np.ravel(op.flops)[0]), float(np.ravel(op.bytes)[0])
    if float(np.ravel(op.kernels)[0]) == 0 or (flops == 0 and data == 0):
        return
    name = op.name
    if name in seen:
        if np.allclose(seen[name], (flops, data)):
            return
        name += suffix
    seen[name] = (flops, data)
    time = float(np.ravel(sm._op_parts(op).total)[0])
    rows.append({"name": name, "op_class": op.op_class, "kind": op.kind, "phase": phase, "flops": flops,
                 "bytes": data, "intensity": flops / data if data > 0 else np.inf, "time_s": time,
                 "attained_flops": flops / time if time > 0 else 0.0})


def _resolve_device(hardware: str | Accelerator | StepModel) -> Accelerator:
    if isinstance(hardware, StepModel):
        return hardware.hardware
    return load_accelerator(hardware)


@styled
def roofline_chart(hardware: str | Accelerator | StepModel, ops: pd.DataFrame | None = None, *,
                   dtypes: tuple[str, ...] | None = None, levels: tuple[str, ...] | None = None,
                   intensity_range: tuple[float, float] | None = None, annotate: bool = True,
                   ax: Axes | None = None) -> Axes:
    """Roofline of a device, optionally with ops placed on it.

    Parameters
    ----------
    hardware : str | Accelerator | StepModel
        Device (a StepModel's accelerator is used).
    ops : pandas.DataFrame, optional
        Ops to place, as returned by :func:`phase_ops` (columns ``name``, ``op_class``,
        ``intensity``, ``attained_flops``; optional ``phase``). Ops without FLOPs (pure memory
        traffic: norms, embedding gather, sampling) have zero intensity and are not drawn.
    dtypes : tuple of str, optional
        Compute formats whose dense peaks are drawn (default: fp4, fp8, bf16, fp16 where listed,
        else every listed format).
    levels : tuple of str, optional
        Memory levels whose bandwidth roofs are drawn (default: all the device has).
    intensity_range : (float, float), optional
        x-axis limits [FLOP/B] (default: wide enough for the roofs' ridge points and the ops).
    annotate : bool
        Label each op point with its name.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (a new figure otherwise).

    Returns
    -------
    matplotlib.axes.Axes
    """
    dev = _resolve_device(hardware)
    _, ax = get_axes(ax)
    peaks = _peaks(dev, dtypes)
    bws = {lvl: dev.memory[lvl].bandwidth.value for lvl in (levels or tuple(dev.memory))}
    p_max, p_min = max(peaks.values()), min(peaks.values())
    b_main = dev.memory_bandwidth
    pts = _drawable(ops)
    lo, hi = intensity_range or _x_range(peaks, bws, pts)
    y_lo = min([p_min / 100.0] + ([float(pts["attained_flops"].min()) / 3.0] if len(pts) else []))
    x = np.geomspace(lo, hi, 256)
    for i, (lvl, bw) in enumerate(sorted(bws.items(), key=lambda kv: -kv[1])):
        xs = x[x * bw <= p_max * 1.0001]
        xs = np.append(xs, p_max / bw) if p_max / bw <= hi else xs
        ax.plot(xs, xs * bw, color=PART_COLORS["memory"], ls=_ROOF_STYLES[i % 4], lw=1.6)
        x_txt = np.sqrt(max(lo, y_lo / bw) * min(hi, p_max / bw))
        ax.annotate(f"{lvl.upper()} {si_format(bw, 'B/s')}", (x_txt, x_txt * bw), xytext=(-6, 4),
                    textcoords="offset points", ha="right", color=PART_COLORS["memory"], fontsize=8)
    for i, (name, peak) in enumerate(sorted(peaks.items(), key=lambda kv: -kv[1])):
        ridge = peak / b_main
        ax.plot([max(ridge, lo), hi], [peak, peak], color=PART_COLORS["compute"], ls=_ROOF_STYLES[i % 4],
                lw=1.6)
        ax.annotate(f"{name} {si_format(peak, 'FLOP/s')}", (hi, peak), xytext=(-4, 3),
                    textcoords="offset points", ha="right", color=PART_COLORS["compute"], fontsize=8)
    roof_labels = list(ax.texts)
    labels = _draw_ops(ax, pts, annotate) if len(pts) else []
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(y_lo, p_max * 3),
           xlabel="arithmetic intensity [FLOP/B]", ylabel="attainable performance [FLOP/s]")
    set_title(ax, f"{dev.name}: roofline", describe(hardware if isinstance(hardware, StepModel) else None,
                                                      extra=_steps(pts)))
    place_labels(ax, roof_labels + labels)  # last: needs the final layout; roofs keep their place first
    return ax


def _steps(pts: pd.DataFrame) -> list[str]:
    """``"decode: batch 16 @ 2048 tok"`` per phase of the ops drawn."""
    if not {"phase", "batch", "context"} <= set(pts.columns):
        return []
    steps = pts[["phase", "batch", "context"]].drop_duplicates()
    return [f"{r.phase}: batch {r.batch:g} @ {r.context:g} tok" for r in steps.itertuples()]


def _peaks(dev: Accelerator, dtypes: tuple[str, ...] | None) -> dict[str, float]:
    wanted = dtypes or tuple(d for d in DEFAULT_DTYPES if d in dev.compute) or tuple(dev.compute)
    if "bf16" in wanted and "fp16" in wanted and "bf16" in dev.compute and "fp16" in dev.compute:
        if dev.compute["bf16"].value == dev.compute["fp16"].value:
            wanted = tuple(d for d in wanted if d != "fp16")
    return {d: dev.peak_flops(d) for d in wanted}


def _drawable(ops: pd.DataFrame | None) -> pd.DataFrame:
    if ops is None or len(ops) == 0:
        return pd.DataFrame(columns=["name", "op_class", "intensity", "attained_flops"])
    ok = np.isfinite(ops["intensity"]) & (ops["intensity"] > 0) & (ops["attained_flops"] > 0)
    return ops[ok]


def _x_range(peaks: dict[str, float], bws: dict[str, float], pts: pd.DataFrame) -> tuple[float, float]:
    ridges = [p / b for p in peaks.values() for b in bws.values()]
    lo, hi = min(ridges) / 30.0, max(ridges) * 30.0
    if len(pts):
        lo = min(lo, float(pts["intensity"].min()) / 3.0)
        hi = max(hi, float(pts["intensity"].max()) * 3.0)
    return 10 ** np.floor(np.log10(lo)), 10 ** np.ceil(np.log10(hi))


def _draw_ops(ax: Axes, pts: pd.DataFrame, annotate: bool) -> list:
    """Scatter the ops by class and phase; return their name labels (to be placed)."""
    phases = pts["phase"] if "phase" in pts else pd.Series(["decode"] * len(pts), index=pts.index)
    for (cls, phase), sub in pts.groupby([pts["op_class"], phases], sort=False):
        ax.scatter(sub["intensity"], sub["attained_flops"], color=CLASS_COLORS.get(cls, "#333333"),
                   marker=_PHASE_MARKERS.get(phase, "D"), s=30, zorder=3, edgecolor="white", lw=0.6,
                   label=f"{cls} ({phase})")
    ax.legend(loc="best", title="op class (phase)", title_fontsize=8, fontsize=7.5)
    if not annotate:
        return []
    return [ax.annotate(names, (xi, yi), xytext=(5, -10), textcoords="offset points", fontsize=7,
                        color="#333333") for (xi, yi), names in _clustered_labels(pts).items()]


def _clustered_labels(pts: pd.DataFrame, dx: float = 0.5, dy: float = 0.1) -> dict[tuple[float, float], str]:
    """Join the names of points closer than ``dx`` / ``dy`` decades (x / y) into one label."""
    out: dict[tuple[float, float], list[str]] = {}
    for _, r in pts.sort_values("intensity").iterrows():
        lx, ly = np.log10(r["intensity"]), np.log10(r["attained_flops"])
        for key, names in out.items():
            if abs(np.log10(key[0]) - lx) < dx and abs(np.log10(key[1]) - ly) < dy:
                if r["name"] not in names:
                    names.append(r["name"])
                break
        else:
            out[(r["intensity"], r["attained_flops"])] = [r["name"]]
    return {k: ", ".join(v) for k, v in out.items()}
