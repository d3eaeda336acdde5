"""Memory budget per device: weights, KV cache and workspace against capacity.

Uses the same accounting as :func:`perfmodel.predict` (see :mod:`perfmodel.core.memory`):

.. math:: M_{used} = W_{device} + KV_{device}(B, L) + A_{workspace} \\le (1 - r)\\,C

and annotates each bar with the largest concurrency that fits at the context length,
:func:`perfmodel.core.memory.max_sequences`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..core.memory import static_batch_budget
from ..core.step import StepModel
from .style import CLASS_COLORS, get_axes, styled
from .titles import describe, set_title

_BYTE_UNITS = {"B": 1.0, "MB": 1e6, "GB": 1e9, "TB": 1e12, "GiB": 2.0 ** 30}

Deployments = StepModel | Sequence[StepModel] | Mapping[str, StepModel]


def _labelled(deployments: Deployments) -> dict[str, StepModel]:
    if isinstance(deployments, StepModel):
        deployments = [deployments]
    if isinstance(deployments, Mapping):
        return dict(deployments)
    out = {}
    for sm in deployments:
        out[f"{sm.hardware.id}\n{sm.parallel.label()}, {sm.precision.weights.name}"] = sm
    return out


def memory_table(deployments: Deployments, batch: float = 1.0, context: float = 4096.0) -> pd.DataFrame:
    """Memory per device of each deployment at ``batch`` sequences of ``context`` tokens [B].

    Parameters
    ----------
    deployments : StepModel | sequence of StepModel | mapping of label to StepModel
        Model replicas on their devices.
    batch : float
        Concurrent sequences per replica.
    context : float
        Tokens held per sequence (prompt + output so far) [tok].

    Returns
    -------
    pandas.DataFrame
        Index: label; columns ``weights_bytes``, ``kv_cache_bytes``, ``workspace_bytes``,
        ``used_bytes``, ``capacity_bytes``, ``usable_bytes``, ``fits``, ``max_sequences`` (at
        ``context``, as ``max_batch_at_context`` of :func:`perfmodel.predict`). KV bytes count only
        the part on the device when the replica keeps a share of its cache in host memory.
    """
    rows = {}
    for label, sm in _labelled(deployments).items():
        # the context is read as the prompt length for the prefill workspace, as in predict
        mem = static_batch_budget(sm.model, sm.parallel, sm.precision, sm.hardware.memory_capacity, batch,
                                  context, context, sm.reserve, 1.0 - getattr(sm, "kv_host_fraction", 0.0))
        rows[label] = {
            "weights_bytes": mem.weights, "kv_cache_bytes": float(mem.kv_cache),
            "workspace_bytes": float(mem.workspace), "used_bytes": float(mem.used),
            "capacity_bytes": mem.capacity, "usable_bytes": mem.usable, "fits": bool(mem.fits),
            "max_sequences": int(mem.max_batch),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


@styled
def memory_budget(deployments: Deployments, *, batch: float = 1.0, context: float = 4096.0,
                  unit: str = "GB", ax: Axes | None = None) -> Axes:
    """Stacked bars of weights, KV cache and workspace per device, with capacity marks.

    Parameters
    ----------
    deployments : StepModel | sequence of StepModel | mapping of label to StepModel
        Replicas to compare (labels default to ``"<device> <layout>, <weight format>"``).
    batch : float
        Concurrent sequences per replica.
    context : float
        Tokens per sequence [tok].
    unit : "GB" | "GiB" | "TB" | "MB" | "B"
        Unit of the y axis (GB is 10^9 B, GiB 2^30 B).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (a new figure otherwise).

    Returns
    -------
    matplotlib.axes.Axes
        Bars: weights, KV cache, workspace; solid tick: capacity C; dashed tick: usable (1 − r)·C.
        The text above each bar is the largest concurrency that fits at ``context`` tokens.
    """
    if unit not in _BYTE_UNITS:
        raise ValueError(f"unit: expected one of {sorted(_BYTE_UNITS)}, got {unit!r}")
    table = memory_table(deployments, batch, context)
    scale = 1.0 / _BYTE_UNITS[unit]
    _, ax = get_axes(ax, (max(4.8, 1.5 * len(table) + 2.5), 4.2))
    x = np.arange(len(table))
    bottom = np.zeros(len(table))
    for col, key in (("weights_bytes", "weights"), ("kv_cache_bytes", "kv_cache"),
                     ("workspace_bytes", "workspace")):
        vals = table[col].to_numpy(dtype=float) * scale
        ax.bar(x, vals, bottom=bottom, width=0.6, color=CLASS_COLORS[key], edgecolor="white", lw=0.5)
        bottom += vals
    cap = table["capacity_bytes"].to_numpy(dtype=float) * scale
    usable = table["usable_bytes"].to_numpy(dtype=float) * scale
    ax.hlines(cap, x - 0.4, x + 0.4, color="black", lw=2.0)
    ax.hlines(usable, x - 0.4, x + 0.4, color="black", lw=1.2, ls="--")
    top = np.maximum(cap, bottom)
    for xi, ti, n in zip(x, top, table["max_sequences"], strict=True):
        ax.annotate(f"max {n:,} seq per replica\n@ {context:g} tok", (xi, ti), xytext=(0, 4),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, list(table.index))
    ax.set_ylim(0, top.max() * 1.18)
    ax.set(ylabel=f"memory per device [{unit}]", xlabel="deployment")  # categorical axis: no unit
    configs = pd.DataFrame([{"model": sm.model.id, "hardware": sm.hardware.id, "parallel": sm.parallel.label(),
                             "precision": sm.precision.label()} for sm in _labelled(deployments).values()])
    set_title(ax, "memory budget per device",
              # default bar labels name device and layout; a caller's labels may not
              describe(configs, omit=("hardware", "parallel") if not isinstance(deployments, Mapping) else (),
                       extra=[f"{batch:g} sequences × {context:g} tok"]))
    handles = [Patch(color=CLASS_COLORS[k], label=lbl) for k, lbl in (
        ("weights", "weights"), ("kv_cache", f"KV cache ({batch:g} seq × {context:g} tok)"),
        ("workspace", "workspace"))] + [
        Line2D([], [], color="black", lw=2.0, label="capacity"),
        Line2D([], [], color="black", lw=1.2, ls="--", label="usable (after reserve)")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.grid(axis="x", visible=False)
    return ax
