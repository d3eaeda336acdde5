"""Curves over operating points: Pareto fronts, latency percentiles and goodput under load,
completion time against output length, and predicted against measured values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from ..core.roofline import crossover_tokens, e2e_latency
from ..errors import ConfigError
from .labels import place_labels
from .normalize import normalized_rate
from .style import PERCENTILE_COLORS, RC, column_label, get_axes, series_colors, styled, time_scale
from .titles import describe, set_figure_title, set_title

#: Column names accepted for the load axis of :func:`slo_vs_load`, in order of preference.
LOAD_COLUMNS = ("load", "rate_rps", "arrival_rate_rps", "request_rate", "concurrency")
#: Latency percentiles drawn by :func:`slo_vs_load` when present (``ttft_p50_s``...).
PERCENTILE_COLUMNS = ("p50", "p90", "p95", "p99")
_PCT_STYLES = {"p50": "-", "p90": ":", "p95": "--", "p99": "-."}


def pareto_mask(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    """Points not dominated when both ``x`` and ``y`` are to be maximised.

    A point is dominated if another is at least as good in both and better in one. NaNs are
    never on the front.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    order = np.lexsort((-y, -x))  # x descending, ties by y descending
    mask = np.zeros(x.shape, dtype=bool)
    best_y = -np.inf
    for i in order:
        if ok[i] and y[i] > best_y:
            mask[i] = True
            best_y = y[i]
    return mask


@styled
def pareto_front(df: pd.DataFrame, x: str = "per_user_tokens_per_s", y: str = "output_tokens_per_s",
                 *, normalize: str | None = "device", group: str | None = "auto", annotate: str | None = None,
                 xlabel: str | None = None, ylabel: str | None = None, frontier: bool = True,
                 log: bool = False, ax: Axes | None = None) -> Axes:
    """Trade-off of two rates to maximise, one series per group, with the Pareto front.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per operating point (:func:`perfmodel.predict`, :func:`perfmodel.planning.sweep` or
        deployment frames). A boolean ``fits`` column, when present, draws points that do not fit in
        memory hollow and keeps them off the front. Config columns (``model``, ``hardware``,
        ``precision``, ``isl``, ``osl``, ``engine``) make the subtitle.
    x : str
        Column to maximise on the x axis, drawn as it is (default: output tokens/s per user).
    y : str
        Rate of the whole row on the y axis (default: output tokens/s), divided as ``normalize`` says.
    normalize : {"device", "gpu", "mw", "dollar", "user"} or None
        Per device (every chip), per GPU, per MW of power, per US dollar (from ``usd_per_hour``) or per
        concurrent user; None draws ``y`` as it is (:func:`perfmodel.plots.normalize.normalized_rate`).
    group : str or None
        Column naming the series; ``"auto"`` takes the first of ``deployment``, ``hardware``,
        ``model`` that varies (else one series); None for one series.
    annotate : str, optional
        Column whose value labels each point (e.g. ``"batch"``); labels are placed not to overlap.
    xlabel, ylabel : str, optional
        Axis labels; they need a unit in brackets (default: derived from the columns).
    frontier : bool
        Draw the front over all (fitting) points as a wide grey line.
    log : bool
        Log-scale both axes.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Titled with what is compared and, below, the model, hardware, formats, ISL/OSL and engine of
        the rows.
    """
    yv, ylab = normalized_rate(df, y, normalize)
    if x not in df.columns:
        raise ConfigError(f"x: {x!r} is not a column of the frame (columns: {list(df.columns)})")
    d = df.assign(_x=df[x].astype(float), _y=yv)
    group = _series_column(d, group)
    _, ax = get_axes(ax)
    fits = d["fits"].astype(bool) if "fits" in d else pd.Series(True, index=d.index)
    groups = d[group] if group else pd.Series("all", index=d.index)
    colors = series_colors(groups)
    labels = []
    for name, sub in d.groupby(groups, sort=False):
        sub = sub.sort_values("_x")
        ok = fits.loc[sub.index]
        c = colors[name]
        ax.plot(sub["_x"], sub["_y"], color=c, lw=1.2, alpha=0.7)
        ax.scatter(sub["_x"][ok], sub["_y"][ok], color=c, s=28, zorder=3, label=str(name) if group else None)
        if (~ok).any():
            ax.scatter(sub["_x"][~ok], sub["_y"][~ok], facecolor="none", edgecolor=c, s=28, zorder=3)
        if annotate:
            labels += [ax.annotate(_text(r[annotate]), (r["_x"], r["_y"]), xytext=(3, 3),
                                   textcoords="offset points", fontsize=7, color=c)
                       for _, r in sub.iterrows() if np.isfinite(r["_x"]) and np.isfinite(r["_y"])]
    if frontier and fits.any():
        pts = d[fits]
        front = pts[pareto_mask(pts["_x"], pts["_y"])].sort_values("_x")
        ax.plot(front["_x"], front["_y"], color="#444444", lw=5.0, alpha=0.18, zorder=1,
                solid_capstyle="round", label="Pareto front")
    if log:
        ax.set(xscale="log", yscale="log")
    xl, yl = column_label(x, xlabel), column_label(y, ylabel) if ylabel else ylab
    ax.set(xlabel=xl, ylabel=yl)
    set_title(ax, f"{_quantity(yl)} vs {_quantity(xl)}",
              describe(d, by=group,
                       extra=[f"labels: {annotate}" if annotate else "",
                              "hollow: does not fit in memory" if (~fits).any() else ""]))
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best")
    place_labels(ax, labels)
    return ax


def _series_column(df: pd.DataFrame, group: str | None, argument: str = "group") -> str | None:
    """The column naming the series (``"auto"``: the first config column that varies)."""
    if group == "auto":
        return next((c for c in ("deployment", "hardware", "model") if c in df.columns and df[c].nunique() > 1),
                    None)
    if group is not None and group not in df.columns:
        raise ConfigError(f"{argument}: {group!r} is not a column of the frame; use one of {list(df.columns)}, "
                          "'auto' or None")
    return group


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float, np.number)) else str(value)


def _quantity(label: str) -> str:
    """An axis label without its unit (``"TTFT [s]"`` -> ``"TTFT"``)."""
    return label.split(" [", 1)[0]


def _load_column(df: pd.DataFrame, load: str | None) -> str:
    if load is not None:
        if load not in df:
            raise KeyError(f"load: column {load!r} not in the frame (columns: {list(df.columns)})")
        return load
    for col in LOAD_COLUMNS:
        if col in df:
            return col
    raise KeyError(f"no load column: expected one of {LOAD_COLUMNS} (or pass load=...), "
                   f"got columns {list(df.columns)}")


def _curve_frame(data: Any) -> tuple[pd.DataFrame, str | None, float | None, str]:
    """A load-sweep frame, the load label, the maximum load and the description, from a frame or a
    search result."""
    if isinstance(data, pd.DataFrame):
        return data, None, None, describe(data)
    if hasattr(data, "curve") and hasattr(data, "mode"):  # perfmodel.serving.max_load's result
        df = pd.DataFrame(data.curve).apply(pd.to_numeric, errors="coerce")
        config = getattr(data, "config", {}) or {}
        df = df.assign(**{k: config[k] for k in ("devices", "hardware") if k in config})
        label = "concurrency [clients]" if data.mode == "concurrency" else "arrival rate [req/s]"
        return df, label, float(getattr(data, "max_load", np.nan)), describe(data)
    return pd.DataFrame(data), None, None, ""


@styled
def slo_vs_load(df: pd.DataFrame | Any, *, load: str | None = None, load_label: str | None = None,
                slo_ttft: float | None = None, slo_tpot: float | None = None,
                normalize: str | None = None, ax: Sequence[Axes] | None = None) -> Figure:
    """TTFT and TPOT percentiles and goodput as load rises, with the SLO limits.

    Expected columns (those of the curve of :func:`perfmodel.serving.max_load`): a load column
    (``load``, ``rate_rps``, ``arrival_rate_rps``, ``request_rate`` or ``concurrency``),
    ``ttft_p50_s``, ``ttft_p95_s``, ``tpot_p50_s``, ``tpot_p95_s`` [s] and ``goodput_requests_per_s``
    [req/s]. Present ``_p90_s`` / ``_p99_s`` columns are drawn too, and ``requests_per_s`` next to
    goodput.

    Parameters
    ----------
    df : pandas.DataFrame or load-search result
        One row per load level; or the result of ``perfmodel.serving.max_load`` (its ``curve`` is
        drawn, the load axis labelled by its ``mode``, its ``max_load`` marked — "≥" when the search
        found no failing load above it — and its ``config`` described in the title).
    load : str, optional
        Load column (found among the accepted names by default).
    load_label : str, optional
        x-axis label with a unit (default: derived from the column name).
    slo_ttft, slo_tpot : float, optional
        Limits [s] drawn as horizontal lines.
    normalize : {"device", "gpu", "mw", "dollar", "user"} or None
        Goodput and throughput per device, GPU, MW, dollar or user (needs the matching column:
        ``devices``... — a load search's ``config`` gives ``devices``); None: of the whole deployment.
    ax : sequence of three Axes, optional
        Panels for TTFT, TPOT and goodput (a new figure otherwise).

    Returns
    -------
    matplotlib.figure.Figure
    """
    data = df
    df, search_label, max_load, about = _curve_frame(data)
    col = _load_column(df, load)
    d = df.sort_values(col)
    owned = ax is None
    if ax is None:
        import matplotlib.pyplot as plt

        w, h = RC["figure.figsize"]
        _, axes = plt.subplots(1, 3, figsize=(w * 1.9, h * 0.95), layout="constrained")
    else:
        axes = list(ax)
        if len(axes) != 3:
            raise ValueError(f"ax: expected 3 axes (TTFT, TPOT, goodput), got {len(axes)}")
    xl = column_label(col, load_label or search_label)
    for a, metric, title, unit, limit in ((axes[0], "ttft", "TTFT", "s", slo_ttft),
                                          (axes[1], "tpot", "TPOT", "ms", slo_tpot)):
        cols = [p for p in PERCENTILE_COLUMNS if f"{metric}_{p}_s" in d]
        if not cols:
            raise KeyError(f"expected {metric}_p50_s / {metric}_p95_s columns, got {list(df.columns)}")
        k = time_scale(unit)
        for p in cols:
            a.plot(d[col], d[f"{metric}_{p}_s"] * k, ls=_PCT_STYLES[p], marker="o", ms=3.5,
                   color=PERCENTILE_COLORS[p], label=p)
        if limit is not None:
            a.axhline(limit * k, color="#b8323a", lw=1.2, label=f"SLO {limit * k:g} {unit}")
        a.set(xlabel=xl, ylabel=f"{title} [{unit}]", title=f"{title} percentiles")
        a.legend(loc="upper left")
    if "goodput_requests_per_s" not in d:
        raise KeyError(f"expected a goodput_requests_per_s column, got {list(df.columns)}")
    goodput, goodput_label = normalized_rate(d, "goodput_requests_per_s", normalize)
    axes[2].plot(d[col], goodput, marker="o", ms=3.5, color="#2f9e5a", label="goodput")
    if "requests_per_s" in d:
        axes[2].plot(d[col], normalized_rate(d, "requests_per_s", normalize)[0], marker="o", ms=3.5, ls="--",
                     color="#8f8f8f", label="throughput (all completions)")
    if max_load is not None and np.isfinite(max_load) and max_load > 0:
        for a in axes:
            a.axvline(max_load, color="#444444", lw=0.8, ls=":")
        bound = "≥ " if not getattr(data, "bracketed", True) else ""  # no failing load found above it
        axes[2].annotate(f"max load {bound}{max_load:.3g}", (max_load, 0), xytext=(3, 3),
                         textcoords="offset points", xycoords=("data", "axes fraction"), fontsize=8)
    axes[2].set(xlabel=xl, ylabel=goodput_label, title="goodput (joint SLO met)")
    for a in axes:
        a.set_ylim(bottom=0)
    axes[2].legend(loc="upper left")
    set_figure_title(axes[0].figure, about, owned, axes[0])
    return axes[0].figure


@styled
def completion_time(configs: Mapping[str, tuple[float, float]] | pd.DataFrame, *,
                    max_tokens: int | None = None, label: str = "auto",
                    ax: Axes | None = None) -> Axes:
    """Completion time :math:`TTFT + (N-1)\\,TPOT` against output length, crossovers marked.

    Parameters
    ----------
    configs : mapping of name to (ttft_s, tpot_s), or pandas.DataFrame
        Two or more configurations; a frame needs columns ``label``, ``ttft_s`` and ``tpot_s`` [s],
        and its config columns (``model``, ``precision``, ``isl``...) make the subtitle.
    max_tokens : int, optional
        Largest output length drawn [tok] (default: twice the latest crossover, at least 64).
    label : str
        Name column of a frame (``"auto"``: ``deployment`` if present, else the first of ``hardware``,
        ``model`` that varies).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Each pairwise crossover :math:`N^*` (:func:`perfmodel.crossover_tokens`) within the range is
        marked and labelled with its output length and completion time.
    """
    about = ""
    if isinstance(configs, pd.DataFrame):
        label = _series_column(configs, label, "label")
        if label is None:
            raise ConfigError(f"label: no column names the configurations; pass label=<column> "
                              f"(columns: {list(configs.columns)})")
        items = [(str(r[label]), float(r["ttft_s"]), float(r["tpot_s"])) for _, r in configs.iterrows()]
        about = describe(configs, by=label)
    else:
        items = [(str(k), float(v[0]), float(v[1])) for k, v in configs.items()]
    if len(items) < 2:
        raise ValueError(f"configs: need two or more configurations to compare, got {len(items)}")
    crossings = []
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            n = float(crossover_tokens(items[i][1], items[i][2], items[j][1], items[j][2]))
            if np.isfinite(n) and n > 1:
                crossings.append((n, items[i], items[j]))
    n_max = max_tokens or int(max([64.0] + [2 * c[0] for c in crossings]))
    n = np.arange(1, n_max + 1, dtype=float)
    _, ax = get_axes(ax)
    colors = series_colors(name for name, _, _ in items)
    for name, ttft, tpot in items:
        ax.plot(n, e2e_latency(ttft, tpot, n), color=colors[name],
                label=f"{name} (TTFT {ttft * 1e3:.3g} ms, TPOT {tpot * 1e3:.3g} ms)")
    labels = []
    for n_star, a, _ in crossings:
        if n_star <= n_max:
            t = float(e2e_latency(a[1], a[2], n_star))
            ax.plot([n_star], [t], marker="o", color="black", ms=6, zorder=4)
            ax.axvline(n_star, color="#444444", lw=0.8, ls=":")
            labels.append(ax.annotate(f"N* = {n_star:.3g} tok\n{t:.3g} s", (n_star, t), xytext=(6, -22),
                                      textcoords="offset points", fontsize=8))
    ax.set(xlabel="output length N [tok]", ylabel="completion time E2E [s]", xlim=(0, n_max),
           ylim=(0, None))
    set_title(ax, "starting earlier is not finishing earlier", about)
    ax.legend(loc="upper left")
    place_labels(ax, labels)
    return ax


@styled
def predicted_vs_measured(measured: ArrayLike, predicted: ArrayLike, *, groups: ArrayLike | None = None,
                          quantity: str = "TPOT", unit: str = "s", about: Any = None,
                          ax: Axes | None = None) -> Axes:
    """Log-log scatter of predictions against measurements with ±10 % and ±25 % bands.

    Parameters
    ----------
    measured, predicted : array_like
        Paired values, positive, in ``unit``.
    groups : array_like, optional
        A label per point (hardware, model, source) for colours and the legend.
    quantity : str
        What is compared (``"TPOT"``, ``"TTFT"``, ``"throughput"``).
    unit : str
        Unit of both values, shown in the axis labels (``"s"``, ``"ms"``, ``"tok/s"``).
    about : pandas.DataFrame, optional
        The rows the values come from (e.g. a validation run's predictions): their config columns
        (``model``, ``hardware``, ``precision``, ``isl``, ``osl``, ``engine``) are described under the
        title (:func:`perfmodel.plots.titles.describe`).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The title gives the share of points within each band and the median absolute error.
    """
    m = np.asarray(measured, dtype=float)
    p = np.asarray(predicted, dtype=float)
    if m.shape != p.shape or m.size == 0:
        raise ValueError(f"measured and predicted: need equal non-empty shapes, got {m.shape} and {p.shape}")
    ok = (m > 0) & (p > 0) & np.isfinite(m) & np.isfinite(p)
    _, ax = get_axes(ax, (5.2, 4.8))
    lo, hi = min(m[ok].min(), p[ok].min()) / 1.6, max(m[ok].max(), p[ok].max()) * 1.6
    line = np.geomspace(lo, hi, 64)
    for band, alpha in ((0.25, 0.10), (0.10, 0.18)):
        ax.fill_between(line, line * (1 - band), line * (1 + band), color="#2f9e5a", alpha=alpha, lw=0,
                        label=f"±{band:.0%}")
    ax.plot(line, line, color="#2f9e5a", lw=1.0)
    g = np.asarray(groups) if groups is not None else np.full(m.shape, "", dtype=object)
    colors = series_colors(g[ok])
    for name, c in colors.items():
        sel = ok & (g == name)
        ax.scatter(m[sel], p[sel], color=c, s=22, zorder=3, edgecolor="white", lw=0.5,
                   label=str(name) if groups is not None else None)
    err = np.abs(p[ok] / m[ok] - 1.0)
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), aspect="equal",
           xlabel=f"measured {quantity} [{unit}]", ylabel=f"predicted {quantity} [{unit}]")
    set_title(ax, f"{quantity}: {np.mean(err <= 0.10):.0%} within ±10 %, {np.mean(err <= 0.25):.0%} "
                  f"within ±25 %\nmedian |error| {np.median(err):.1%} (n = {ok.sum()})", describe(about))
    ax.legend(loc="upper left", fontsize=7.5)
    return ax
