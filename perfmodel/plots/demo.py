"""Figures of ``perfmodel demo``: one model served several ways, across batch sizes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from .curves import pareto_front
from .style import get_axes, series_colors, styled
from .titles import describe, set_title, title_parts, wrap

#: Columns :func:`demo_figures` needs.
DEMO_COLUMNS = ("deployment", "batch", "ttft_s", "tpot_s", "per_user_tokens_per_s",
                "decode_tokens_per_s", "devices")


@styled
def metric_vs_batch(df: pd.DataFrame, column: str, *, label: str, unit: str = "ms",
                    scale: float = 1e3, log_y: bool = False, headline: str | None = None, ax=None):
    """One line per deployment of ``column`` × ``scale`` against the batch size.

    Parameters
    ----------
    df : pandas.DataFrame
        Demo rows (``deployment``, ``batch`` and ``column``; a boolean ``fits`` draws points that do
        not fit in memory hollow; config columns make the subtitle).
    column : str
        Column to draw (in SI units).
    label, unit : str
        y-axis name and unit after scaling.
    scale : float
        Factor from the column's SI unit to ``unit``.
    log_y : bool
        Log-scale the y axis.
    headline : str, optional
        First title line (default: ``"<label> against batch"``); the model, hardware, formats and
        ISL/OSL under it come from ``df``.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    _, ax = get_axes(ax)
    colors = series_colors(df["deployment"])
    for name, sub in df.groupby("deployment", sort=False):
        sub = sub.sort_values("batch")
        ok = sub["fits"].astype(bool) if "fits" in sub else pd.Series(True, index=sub.index)
        ax.plot(sub["batch"], sub[column] * scale, color=colors[name], marker="o", label=str(name))
        if (~ok).any():
            ax.scatter(sub["batch"][~ok], sub[column][~ok] * scale, s=60, facecolor="white",
                       edgecolor=colors[name], zorder=4)
    ax.set(xscale="log", xlabel="batch [sequences]", ylabel=f"{label} [{unit}]")
    if log_y:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xticks(sorted(df["batch"].unique()), [f"{b:g}" for b in sorted(df["batch"].unique())])
    ax.minorticks_off()
    set_title(ax, headline or f"{label} against batch",
              describe(df, by="deployment",
                       extra=["hollow: does not fit in memory" if "fits" in df and not df["fits"].all() else ""]))
    ax.legend(loc="upper left")
    return ax


@styled
def demo_figures(df: pd.DataFrame) -> dict[str, Figure]:
    """The demo's figures, by file name.

    Parameters
    ----------
    df : pandas.DataFrame
        The frame of :func:`perfmodel.demo.run_demo` (columns listed in :data:`DEMO_COLUMNS`).

    Returns
    -------
    dict[str, matplotlib.figure.Figure]
        ``tpot_vs_batch``: time per output token against batch; ``ttft_vs_batch``: prefill time of
        the whole batch (idle replica, no queueing); ``pareto``: tokens/s per user against decode
        tokens/s per GPU (per device when the frame has no ``gpus`` column), each point a batch size.
        A split deployment's rate is divided by its GPUs only (the 8 GPUs every configuration has);
        its other chips (LPUs) are named in the title and counted in ``output_tokens_per_s_per_device``.
    """
    missing = [c for c in DEMO_COLUMNS if c not in df]
    if missing:
        raise KeyError(f"demo frame lacks columns {missing}")
    figs: dict[str, Figure] = {}
    ax = metric_vs_batch(df, "tpot_s", label="TPOT", unit="ms",
                         headline="time per output token (mean over the output)")
    figs["tpot_vs_batch"] = ax.figure
    ax = metric_vs_batch(df, "ttft_s", label="TTFT", unit="s", scale=1.0, log_y=True,
                         headline="time to first token (idle replica, whole batch prefilled)")
    figs["ttft_vs_batch"] = ax.figure
    normalize = "gpu" if "gpus" in df else "device"
    ax = pareto_front(df, "per_user_tokens_per_s", "decode_tokens_per_s", normalize=normalize,
                      group="deployment", annotate="batch")
    others = (df["devices"] - df["gpus"]) if "gpus" in df else df["devices"] * 0
    if (others > 0).any():
        mixed = df[others > 0].drop_duplicates("deployment")
        set_title(ax, title_parts(ax)[0], title_parts(ax)[1] + "\n" + wrap("; ".join(
            f"{r.deployment}: per GPU of its {r.gpus:g}, its other {r.devices - r.gpus:g} chips not counted"
            for r in mixed.itertuples()) + " (per chip: output_tokens_per_s_per_device in comparison.csv)"))
    figs["pareto"] = ax.figure
    return figs


def close_all(figures: dict[str, Figure]) -> None:
    """Close figures once saved (matplotlib keeps them alive otherwise)."""
    for fig in figures.values():
        plt.close(fig)
