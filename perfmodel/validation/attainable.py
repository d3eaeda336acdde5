"""How low the serving error can go on a measurement set: repeat agreement and per-group offsets.

Two figures bound what any model of the public rows can reach, whatever its physics:

*Repeat agreement* (:func:`repeat_agreement`). Where the same deployment (model, system, engine,
layout, formats, prompt and output lengths, concurrency) was measured more than once, each pair of
measurements :math:`(a, b)` disagrees by

.. math:: d = 100 \\left(\\frac{\\max(a, b)}{\\min(a, b)} - 1\\right) \\; [\\%].

Pairs are split into the *same* engine release and *different* releases. A model that is not told the
release cannot be closer to both members of a cross-release pair than about half their disagreement.

*Per-group offset bound* (:func:`offset_bound`). Every prediction is multiplied by the median
measured/predicted ratio of its group, fitted on the very rows it is scored on:

.. math:: \\hat y_i' = \\hat y_i \\, \\exp\\!\\Big(\\operatorname*{median}_{j \\in g(i)} \\ln \\frac{y_j}{\\hat y_j}\\Big).

That is the best a per-group constant (one free factor per group, in-sample) can do on top of the
model. Coarse groups (model, system, engine) show how much of the error is such a constant; groups as
fine as one measured sweep show what is left *within* sweeps, which only the model's dependence on
concurrency can remove.

*Concurrency slopes* (:func:`concurrency_slopes`). Within one measured sweep (every column of a point
but the concurrency C), the least-squares slope of the log residual against log concurrency,

.. math:: s = \\frac{\\sum_i (x_i - \\bar x)(r_i - \\bar r)}{\\sum_i (x_i - \\bar x)^2}, \\qquad
          x_i = \\ln C_i, \\; r_i = \\ln \\frac{y_i}{\\hat y_i},

is 0 where the model's growth with load is right; its spread over sweeps is what a per-sweep constant
leaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from .metrics import METRICS, error_stats, pct_error

#: Columns that identify one measured deployment point (everything the model is told about a row).
REPEAT_COLUMNS = ("model", "system", "backend", "mode", "tp", "pp", "dp", "ep", "moe_tp", "p_tp", "p_dp", "p_ep",
                  "p_workers", "d_workers", "weights", "activations", "kv_cache", "isl", "osl", "concurrency")
#: Column holding the engine release.
RELEASE_COLUMN = "backend_version"
#: Columns that define one measured sweep: a deployment point but its concurrency, and the release.
SWEEP_COLUMNS = (*[c for c in REPEAT_COLUMNS if c != "concurrency"], RELEASE_COLUMN)
#: Groupings of :func:`offset_bound` reported in ``docs/validation.md``, coarse to fine: label -> columns.
OFFSET_GROUPINGS: dict[str, tuple[str, ...]] = {
    "model / system / engine": ("model", "system", "backend"),
    "model / system / engine / release": ("model", "system", "backend", RELEASE_COLUMN),
    "one measured sweep (all but concurrency)": SWEEP_COLUMNS,
}


def _keys(rows: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    """One string key per row from ``columns`` (missing columns ignored; NaN spelled 'nan')."""
    cols = [c for c in columns if c in rows]
    if not cols:
        raise ValueError(f"columns: none of {list(columns)} is in the rows")
    return pd.Series(["|".join(map(str, values)) for values in zip(*(rows[c] for c in cols), strict=True)],
                     index=rows.index)


def repeat_agreement(rows: pd.DataFrame, columns: Sequence[str] = REPEAT_COLUMNS) -> list[dict]:
    """Disagreement of repeated measurements of one deployment point (see module doc).

    Parameters
    ----------
    rows : pandas.DataFrame
        Measured rows with ``measured_tpot_s``, ``measured_ttft_s``, :data:`RELEASE_COLUMN` and the
        identifying ``columns``.
    columns : sequence of str
        Columns that make two rows the same deployment point.

    Returns
    -------
    list of dict
        One entry per (metric, pair kind) with ``pairs``, ``points`` (distinct deployment points with a
        pair of that kind) and the median / p90 of the pairwise disagreement :math:`d` [%] (None
        without pairs).
    """
    keys = _keys(rows, columns)
    release = (rows[RELEASE_COLUMN].astype(object).where(rows[RELEASE_COLUMN].notna(), "?").astype(str)
               if RELEASE_COLUMN in rows else pd.Series("?", index=rows.index))
    out = []
    for metric, (_, measured) in METRICS.items():
        values = rows[measured].to_numpy(float)
        found: dict[str, list[float]] = {"same release": [], "different releases": []}
        points: dict[str, set] = {"same release": set(), "different releases": set()}
        for key, idx in pd.Series(np.arange(len(rows))).groupby(keys.to_numpy()).groups.items():
            for i, j in combinations(list(idx), 2):
                a, b = values[i], values[j]
                if not (a > 0 and b > 0):
                    continue
                kind = "same release" if release.iloc[i] == release.iloc[j] else "different releases"
                found[kind].append(100.0 * (max(a, b) / min(a, b) - 1.0))
                points[kind].add(key)
        for kind, d in found.items():
            d = np.asarray(d)
            out.append({"metric": metric.upper(), "pairs": kind, "n pairs": int(d.size),
                        "points": len(points[kind]),
                        "median disagreement %": float(np.median(d)) if d.size else None,
                        "p90 disagreement %": float(np.percentile(d, 90)) if d.size else None})
    return out


def concurrency_slopes(predictions: pd.DataFrame, metric: str = "ttft",
                       columns: Sequence[str] = SWEEP_COLUMNS, min_points: int = 3,
                       min_log_range: float = 1.0) -> pd.DataFrame:
    """Slope of the log residual against log concurrency within each measured sweep (see module doc).

    Parameters
    ----------
    predictions : pandas.DataFrame
        Rows with ``concurrency``, the predicted and measured ``metric`` and the sweep ``columns``.
    metric : {"ttft", "tpot"}
        Metric of the residual.
    columns : sequence of str
        Columns that define a sweep (default: every column of a deployment point but concurrency).
    min_points : int
        Fewest rows of a sweep that get a slope.
    min_log_range : float
        Smallest ln(C_max / C_min) of a sweep that gets a slope (1.0: C spans at least e-fold).

    Returns
    -------
    pandas.DataFrame
        One row per sweep: the sweep ``columns`` present, ``points`` and ``slope`` [-].
    """
    if metric not in METRICS:
        raise ValueError(f"metric: expected one of {sorted(METRICS)}, got {metric!r}")
    predicted, measured = METRICS[metric]
    cols = [c for c in columns if c in predictions]
    x = np.log(predictions["concurrency"].to_numpy(float))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(predictions[measured].to_numpy(float) / predictions[predicted].to_numpy(float))
    out = []
    for _, idx in pd.Series(np.arange(len(predictions))).groupby(_keys(predictions, cols).to_numpy()).groups.items():
        xi, ri = x[idx], r[idx]
        ok = np.isfinite(xi) & np.isfinite(ri)
        xi, ri = xi[ok], ri[ok]
        if xi.size < min_points or np.ptp(xi) < min_log_range:
            continue
        dx = xi - xi.mean()
        first = predictions.iloc[idx[0]]
        out.append({**{c: first[c] for c in cols}, "points": int(xi.size),
                    "slope": float(np.sum(dx * (ri - ri.mean())) / np.sum(dx * dx))})
    return pd.DataFrame(out, columns=[*cols, "points", "slope"])


def offset_bound(predictions: pd.DataFrame,
                 groupings: dict[str, Sequence[str]] = OFFSET_GROUPINGS) -> list[dict]:
    """Errors left after an in-sample constant factor per group (see module doc).

    Parameters
    ----------
    predictions : pandas.DataFrame
        Rows with predicted and measured TPOT and TTFT (``predicted_*_s``, ``measured_*_s``).
    groupings : dict
        Label -> grouping columns (default :data:`OFFSET_GROUPINGS`).

    Returns
    -------
    list of dict
        One entry per grouping: ``groups`` and the TPOT / TTFT median and p90 absolute error [%].
    """
    out = []
    for label, columns in groupings.items():
        keys = _keys(predictions, columns).to_numpy()
        entry: dict = {"groups (one factor each, in-sample)": label, "n groups": int(pd.unique(keys).size)}
        for metric, (predicted, measured) in METRICS.items():
            p = predictions[predicted].to_numpy(float)
            m = predictions[measured].to_numpy(float)
            with np.errstate(divide="ignore", invalid="ignore"):
                log_ratio = pd.Series(np.log(m / p))
            factor = np.exp(log_ratio.groupby(keys).transform("median").to_numpy())
            s = error_stats(pct_error(p * factor, m))
            entry[f"{metric.upper()} median abs %"] = s["median_abs_pct_error"]
            entry[f"{metric.upper()} p90 abs %"] = s["p90_abs_pct_error"]
        out.append(entry)
    return out
