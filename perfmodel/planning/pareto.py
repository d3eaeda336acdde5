"""Pareto fronts of sweep results and their plots.

The usual trade-off: **output tokens/s per user** (interactivity, 1/TPOT) against output tokens/s per
device, per megawatt or per dollar (efficiency). Batching moves a configuration along its curve;
the front keeps the configurations no other beats on both axes. Tokens/s per user is a *rate*, not a
latency: higher is better, and 1/TPOT of one request is not TTFT or E2E.

A point p dominates q when :math:`x_p \\ge x_q`, :math:`y_p \\ge y_q` and at least one is strict (for
maximised axes; minimised axes are negated). Identical points do not dominate each other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

#: Axis labels with units for the columns of :func:`perfmodel.planning.sweep` results.
AXIS_LABELS = {
    "per_user_tokens_per_s": "output tokens/s per user [tok/s]",
    "output_tokens_per_s_per_device": "output tokens/s per device [tok/s/device]",
    "output_tokens_per_s": "output tokens/s, all devices [tok/s]",
    "output_tokens_per_s_per_mw": "output tokens/s per MW [tok/s/MW]",
    "output_tokens_per_usd": "output tokens per US dollar [tok/USD]",
    "usd_per_m_output": "cost per million output tokens [USD/Mtok]",
    "usd_per_m_output_all_in": "cost per million output tokens, all-in [USD/Mtok]",
    "ttft_s": "time to first token, no queueing [s]",
    "tpot_s": "time per output token [s]",
    "e2e_s": "end-to-end latency [s]",
    "concurrency": "concurrent requests [-]",
    "batch": "sequences per replica [-]",
    "devices": "devices [-]",
    "power_w": "power [W]",
    "goodput_requests_per_s": "goodput [requests/s]",
}


def pareto_mask(x: ArrayLike, y: ArrayLike, maximize: tuple[bool, bool] = (True, True)) -> np.ndarray:
    """Boolean mask of the non-dominated points (NaN points are never on the front).

    Parameters
    ----------
    x, y : array_like
        Coordinates.
    maximize : (bool, bool)
        Whether larger is better on each axis.

    Returns
    -------
    numpy.ndarray
        True where no other point dominates (definition in the module docstring). O(n log n).

    Examples
    --------
    >>> pareto_mask([1, 2, 3, 2], [3, 2, 1, 1]).tolist()
    [True, True, True, False]
    """
    xs = np.asarray(x, dtype=float) * (1.0 if maximize[0] else -1.0)
    ys = np.asarray(y, dtype=float) * (1.0 if maximize[1] else -1.0)
    ok = np.isfinite(xs) & np.isfinite(ys)
    out = np.zeros(xs.shape, dtype=bool)
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return out
    xv, yv = xs[idx], ys[idx]
    order = np.lexsort((-yv, -xv))  # x descending, then y descending
    xs_s, ys_s = xv[order], yv[order]
    # best y among points with strictly larger x: running max up to the start of each x group
    new_group = np.r_[True, xs_s[1:] != xs_s[:-1]]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(xs_s.size), 0))
    run_max = np.maximum.accumulate(ys_s)
    before = np.r_[-np.inf, run_max][group_start]
    group_top = ys_s[group_start]  # sorted y-descending within a group: the first is the group max
    front = (ys_s > before) & (ys_s == group_top)
    out[idx[order]] = front
    return out


def pareto_front(df: pd.DataFrame, x: str, y: str, maximize: tuple[bool, bool] = (True, True),
                 by: str | Sequence[str] | None = None, feasible_only: bool = True) -> pd.DataFrame:
    """Rows of ``df`` on the Pareto front of columns ``x`` and ``y``, sorted by ``x``.

    Parameters
    ----------
    df : pandas.DataFrame
        E.g. a :func:`~perfmodel.planning.sweep` result.
    x, y : str
        Column names (e.g. ``per_user_tokens_per_s`` and ``output_tokens_per_s_per_device``).
    maximize : (bool, bool)
        Direction of each axis (cost columns are minimised: ``(True, False)``).
    by : str or list of str, optional
        One front per group (e.g. ``"hardware"``).
    feasible_only : bool
        Drop rows with ``valid`` or ``fits`` False first, when those columns exist.

    Returns
    -------
    pandas.DataFrame
        The front rows (original index kept).
    """
    data = df
    if feasible_only:
        for col in ("valid", "fits"):
            if col in data.columns:
                data = data[data[col].astype(bool)]
    if by is None:
        mask = pareto_mask(data[x].to_numpy(float), data[y].to_numpy(float), maximize)
        return data[mask].sort_values(x)
    parts = [pareto_front(g, x, y, maximize, None, False)
             for _, g in data.groupby(by, observed=True, sort=True)]
    return pd.concat(parts) if parts else data.iloc[:0]


def axis_label(column: str) -> str:
    """Label with units for a result column (the column name itself when unknown)."""
    return AXIS_LABELS.get(column, column)


def plot_pareto(df: pd.DataFrame, x: str = "per_user_tokens_per_s", y: str = "output_tokens_per_s_per_device",
                by: str | None = "hardware", maximize: tuple[bool, bool] = (True, True), ax=None,
                show_points: bool = True, logy: bool = False):
    """Plot the Pareto front of ``y`` against ``x`` (one line per ``by`` group) and return the Axes.

    The title names the two axes and, under it, the model, layouts, formats, ISL/OSL and engine of
    the rows (:func:`perfmodel.plots.titles.describe`).

    Parameters
    ----------
    df : pandas.DataFrame
        Sweep results.
    x, y : str
        Columns; axis labels carry units (:data:`AXIS_LABELS`).
    by : str, optional
        Group column: one front and colour per value.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (a new figure otherwise).
    show_points : bool
        Also scatter the dominated feasible points, faintly.
    logy : bool
        Logarithmic y axis.

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.4))
    groups = [(None, df)] if by is None else list(df.groupby(by, observed=True, sort=True))
    for name, g in groups:
        front = pareto_front(g, x, y, maximize)
        label = None if name is None else str(name)
        line = ax.plot(front[x], front[y], marker="o", ms=3, label=label)[0]
        if show_points:
            feas = g
            for col in ("valid", "fits"):
                if col in feas.columns:
                    feas = feas[feas[col].astype(bool)]
            ax.scatter(feas[x], feas[y], s=4, alpha=0.15, color=line.get_color())
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(y))
    if logy:
        ax.set_yscale("log")
    if by is not None:
        ax.legend(title=by, fontsize="small")
    ax.grid(True, alpha=0.3)
    from ..plots.titles import describe, set_title

    set_title(ax, f"Pareto front: {_quantity(y)} vs {_quantity(x)}", describe(df, by=by))
    return ax


def _quantity(column: str) -> str:
    """An axis label without its unit."""
    return axis_label(column).split(" [", 1)[0]


def plot_fronts(df: pd.DataFrame, x: str = "per_user_tokens_per_s",
                ys: Sequence[str] = ("output_tokens_per_s_per_device", "output_tokens_per_s_per_mw", "output_tokens_per_usd"),
                by: str | None = "hardware"):
    """One panel per efficiency metric (per device, per MW, per dollar) against ``x``.

    Metrics absent from ``df`` or all-NaN (no prices given) are skipped.

    Returns
    -------
    list of matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    cols = [c for c in ys if c in df.columns and np.isfinite(df[c].to_numpy(float)).any()]
    fig, axes = plt.subplots(1, max(len(cols), 1), figsize=(5.2 * max(len(cols), 1), 4.2), squeeze=False)
    from ..plots.titles import describe, set_title

    for ax, col in zip(axes[0], cols, strict=False):
        plot_pareto(df, x, col, by=by, ax=ax)
        set_title(ax, f"Pareto front: {_quantity(col)}", "")  # the description once, above the panels
    about = describe(df, by=by)
    if about:
        fig.suptitle(about, fontsize=9.0, fontweight="normal")
    fig.tight_layout()
    return list(axes[0][: len(cols)])
