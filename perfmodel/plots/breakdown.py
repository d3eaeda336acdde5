"""Latency breakdown: where a step's time goes, per op class, prefill vs decode.

An op's modelled time is :math:`\\max(t_{compute}, t_{memory}) + t_{overhead}`; only the larger of
the first two is on the critical path. Each op class's bar therefore shows its roofline part in the
colour of the bound that dominates it (compute if the class's summed compute time is at least its
memory time, else memory), its kernel overhead on top, and communication and framework time as bars
of their own.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..core.predict import Prediction
from .style import PART_COLORS, RC, styled, time_scale
from .titles import describe, set_figure_title

#: Order of op classes on the bars (communication and framework come last).
CLASS_ORDER = ("attention_proj", "attention", "ffn", "moe", "elementwise", "embedding_head")


def breakdown_parts(breakdown: pd.DataFrame, phase: str) -> pd.DataFrame:
    """Stacked-bar parts of one phase from :meth:`Prediction.breakdown` [s].

    Parameters
    ----------
    breakdown : pandas.DataFrame
        Columns ``phase``, ``op_class``, ``compute_s``, ``memory_s``, ``overhead_s``, ``time_s``.
    phase : str
        ``"prefill"`` or ``"decode"``.

    Returns
    -------
    pandas.DataFrame
        Index: op class (plus ``communication`` and ``framework`` when present); columns
        ``compute``, ``memory``, ``overhead``, ``communication`` [s]. Rows sum to the class's time,
        and all rows to the phase's step time.
    """
    sub = breakdown[breakdown["phase"] == phase]
    rows: dict[str, dict[str, float]] = {}
    comm = sub["op_class"].str.startswith("comm:")
    for _, r in sub[~comm & (sub["op_class"] != "framework")].iterrows():
        bound = float(r["time_s"] - r["overhead_s"])
        dominant = "compute" if r["compute_s"] >= r["memory_s"] else "memory"
        rows[r["op_class"]] = {"compute": 0.0, "memory": 0.0, "overhead": float(r["overhead_s"]),
                               "communication": 0.0} | {dominant: bound}
    if comm.any():
        rows["communication"] = {"compute": 0.0, "memory": 0.0, "overhead": 0.0,
                                 "communication": float(sub.loc[comm, "time_s"].sum())}
    fw = sub[sub["op_class"] == "framework"]
    if len(fw):
        rows["framework"] = {"compute": 0.0, "memory": 0.0, "overhead": float(fw["time_s"].sum()),
                             "communication": 0.0}
    order = [c for c in CLASS_ORDER if c in rows] + [c for c in rows if c not in CLASS_ORDER]
    return pd.DataFrame.from_dict(rows, orient="index").reindex(order)


@styled
def latency_breakdown(prediction: Prediction | pd.DataFrame, *,
                      phases: Sequence[str] = ("prefill", "decode"), unit: str = "ms",
                      ax: Axes | Sequence[Axes] | None = None) -> Figure:
    """Horizontal stacked bars of compute / memory / overhead / communication per op class.

    Parameters
    ----------
    prediction : Prediction | pandas.DataFrame
        A prediction (its first operating point is shown) or its :meth:`Prediction.breakdown` frame.
    phases : sequence of str
        Phases to draw, one panel each (prefill is one step over the whole prompt batch; decode is
        one step at the mid-output context).
    unit : "s" | "ms" | "us"
        Time unit of the x axis.
    ax : Axes or sequence of Axes, optional
        One axes per phase (a single Axes when one phase is drawn); a new figure otherwise.

    Returns
    -------
    matplotlib.figure.Figure
    """
    frame = prediction.breakdown(point=0) if isinstance(prediction, Prediction) else prediction
    scale = time_scale(unit)
    owned = ax is None
    axes = _phase_axes(ax, len(phases))
    for a, phase in zip(axes, phases, strict=True):
        parts = breakdown_parts(frame, phase) * scale
        y = np.arange(len(parts))
        left = np.zeros(len(parts))
        for part in ("compute", "memory", "overhead", "communication"):
            vals = parts[part].to_numpy() if len(parts) else np.zeros(0)
            a.barh(y, vals, left=left, color=PART_COLORS[part], height=0.65, edgecolor="white", lw=0.5)
            left += vals
        total = left.sum()
        a.set_yticks(y, list(parts.index))
        a.invert_yaxis()
        a.set(xlabel=f"time per step [{unit}]", ylabel="op class",  # categorical: no unit
              title=f"{phase}: {total:.3g} {unit} per step")
        a.grid(axis="y", visible=False)
    fig = axes[0].figure
    handles = [Patch(color=PART_COLORS[p], label=lbl) for p, lbl in (
        ("compute", "compute-bound"), ("memory", "memory-bound"), ("overhead", "overhead"),
        ("communication", "communication"))]
    axes[-1].legend(handles=handles, loc="best")
    set_figure_title(fig, _about(prediction), owned, axes[0])
    return fig  # type: ignore[return-value]


def _about(prediction: Prediction | pd.DataFrame) -> str:
    """Description of the operating point drawn: the first of a vectorised prediction."""
    if not isinstance(prediction, Prediction):
        return describe(prediction)  # a breakdown frame carries no config: empty unless columns were added
    first = {**prediction.config, **{k: np.ravel(getattr(prediction, k))[0] for k in ("isl", "osl")}}
    first["engine"] = None  # the breakdown is the bare kernel model's, with or without an engine
    batches = np.ravel(prediction.batch)
    n = int(np.prod(np.broadcast_shapes(*(np.shape(getattr(prediction, c)) for c in ("batch", "isl", "osl")))))
    return describe(first, extra=[f"batch {batches[0]:g}" + (f" (first of {n} points)" if n > 1 else ""),
                                  "bare kernel model (no engine terms)"])


def _phase_axes(ax: Axes | Sequence[Axes] | None, n: int) -> list[Axes]:
    if ax is None:
        import matplotlib.pyplot as plt

        w, h = RC["figure.figsize"]
        _, axes = plt.subplots(1, n, figsize=(w * (0.6 + 0.5 * n), h), layout="constrained",
                                 squeeze=False)
        return list(axes[0])
    axes = [ax] if isinstance(ax, Axes) else list(ax)
    if len(axes) != n:
        raise ValueError(f"ax: expected {n} axes (one per phase), got {len(axes)}")
    return axes
