"""How low the serving error can go on a measurement set: repeats, per-group rescaling, load slopes.

Three views of what limits the error of a model on measured serving rows:

*Repeat agreement* (:func:`repeat_agreement`). Where the same deployment point (model, system, engine,
layout, formats, prompt and output lengths, concurrency) was measured more than once, each pair of
measurements :math:`(a, b)` disagrees by

.. math:: d = 100 \\left(\\frac{\\max(a, b)}{\\min(a, b)} - 1\\right) \\; [\\%].

Pairs are split into the *same* engine release, *different* releases, and pairs where a release is not
recorded. A model that is not told the release cannot be closer to both members of a cross-release pair
than about half their disagreement. This view is independent of any model.

*Per-group rescaling* (:func:`offset_bound`). Each prediction of *this* model is multiplied by the
median measured / predicted ratio of its group, fitted on the very rows it is scored on:

.. math:: \\hat y_i' = \\hat y_i \\, \\exp\\!\\Big(\\operatorname*{median}_{j \\in g(i)} \\ln \\frac{y_j}{\\hat y_j}\\Big).

Groups with fewer than ``min_rows`` rows keep factor 1 (a factor fitted on one or two rows would only
count free parameters). This shows how much of the model's error a constant per group (model, system,
engine; + release) would remove in-sample. It is not a bound for other models: one whose dependence on
load, lengths or layout is better can do better.

*Concurrency slopes* (:func:`concurrency_slopes`). Within one measured sweep (every column of a point
but the concurrency C), the least-squares slope of the log residual against log concurrency and its
standard error,

.. math:: s = \\frac{\\sum_i (x_i - \\bar x)(r_i - \\bar r)}{\\sum_i (x_i - \\bar x)^2}, \\qquad
          \\sigma_s = \\sqrt{\\frac{\\sum_i e_i^2 / (n - 2)}{\\sum_i (x_i - \\bar x)^2}}, \\qquad
          x_i = \\ln C_i, \\; r_i = \\ln \\frac{y_i}{\\hat y_i},

(:math:`e_i` the fit's residuals) is 0 where the model's growth with load is right. Whether a recorded
column organises the slopes is measured by :func:`variance_explained`, corrected for chance.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from perfmodel.validation.metrics import METRICS, error_stats, pct_error

#: Columns that identify one measured deployment point (everything the model is told about a row).
REPEAT_COLUMNS = ("model", "system", "backend", "mode", "tp", "pp", "dp", "ep", "moe_tp", "p_tp", "p_dp", "p_ep",
                  "p_workers", "d_workers", "weights", "activations", "kv_cache", "isl", "osl", "concurrency")
#: Column holding the engine release.
RELEASE_COLUMN = "backend_version"
#: Columns that define one measured sweep: a deployment point but its concurrency, and the release.
SWEEP_COLUMNS = (*[c for c in REPEAT_COLUMNS if c != "concurrency"], RELEASE_COLUMN)
#: Groupings of :func:`offset_bound` reported in ``docs/validation.md``, coarse to fine: label -> columns.
OFFSET_GROUPINGS: dict[str, tuple[str, ...]] = {
    "none (the model as fitted)": (),
    "model / system / engine": ("model", "system", "backend"),
    "model / system / engine / release": ("model", "system", "backend", RELEASE_COLUMN),
}
#: Pair kinds of :func:`repeat_agreement`.
PAIR_KINDS = ("same release", "different releases", "release not recorded")


def group_ids(rows: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Integer group id per row from ``columns`` (NaN is a value of its own; no columns: one group).

    Raises
    ------
    ValueError
        Naming the columns that ``rows`` lacks.
    """
    missing = [c for c in columns if c not in rows]
    if missing:
        raise ValueError(f"columns: {missing} not in the rows (have {sorted(map(str, rows.columns))})")
    if not columns:
        return np.zeros(len(rows), dtype=np.intp)
    return rows.groupby(list(columns), dropna=False, sort=False).ngroup().to_numpy()


def _pair_kind(a, b) -> str:
    if pd.isna(a) or pd.isna(b):
        return PAIR_KINDS[2]
    return PAIR_KINDS[0] if str(a) == str(b) else PAIR_KINDS[1]


def repeat_agreement(rows: pd.DataFrame, columns: Sequence[str] = REPEAT_COLUMNS, by: str | None = None
                     ) -> list[dict]:
    """Disagreement of repeated measurements of one deployment point (see module doc).

    Parameters
    ----------
    rows : pandas.DataFrame
        Measured rows with ``measured_tpot_mean_s``, ``measured_ttft_mean_s``, :data:`RELEASE_COLUMN` and the
        identifying ``columns``.
    columns : sequence of str
        Columns that make two rows the same deployment point (all must be present).
    by : str, optional
        Column to break the figures down by (e.g. ``"backend"``); it should be one of ``columns``.

    Returns
    -------
    list of dict
        One entry per (``by`` value,) metric and pair kind (:data:`PAIR_KINDS`) that has pairs:
        ``n pairs``, ``points`` (distinct deployment points with such a pair) and the median / p90 of
        the pairwise disagreement :math:`d` [%].
    """
    ids = group_ids(rows, columns)
    release = rows[RELEASE_COLUMN].to_numpy(object) if RELEASE_COLUMN in rows else np.full(len(rows), np.nan)
    label = rows[by].astype(str).to_numpy() if by else np.full(len(rows), "")
    found: dict[tuple, list[float]] = {}
    points: dict[tuple, set] = {}
    positions = pd.Series(np.arange(len(rows))).groupby(ids).groups
    for metric, (_, measured) in METRICS.items():
        values = rows[measured].to_numpy(float)
        for point, idx in positions.items():
            for i, j in combinations(list(idx), 2):
                a, b = values[i], values[j]
                if not (a > 0 and b > 0):
                    continue
                key = (label[i], metric.upper(), _pair_kind(release[i], release[j]))
                found.setdefault(key, []).append(100.0 * (max(a, b) / min(a, b) - 1.0))
                points.setdefault(key, set()).add(point)
    out = []
    for key in sorted(found, key=lambda k: (k[0], k[1], PAIR_KINDS.index(k[2]))):
        s = error_stats(found[key])
        entry = {by: key[0]} if by else {}
        out.append({**entry, "metric": key[1], "pairs": key[2], "n pairs": s["n"], "points": len(points[key]),
                    "median disagreement %": s["median_abs_pct_error"],
                    "p90 disagreement %": s["p90_abs_pct_error"]})
    return out


def offset_bound(predictions: pd.DataFrame, groupings: dict[str, Sequence[str]] = OFFSET_GROUPINGS,
                 min_rows: int = 3) -> list[dict]:
    """Errors left after an in-sample constant factor per group (see module doc).

    Parameters
    ----------
    predictions : pandas.DataFrame
        Rows with predicted and measured TPOT and TTFT (``predicted_*_s``, ``measured_*_s``).
    groupings : dict
        Label -> grouping columns (default :data:`OFFSET_GROUPINGS`; empty columns = no factor).
    min_rows : int
        Fewest rows of a group that gets a factor; smaller groups keep their predictions.

    Returns
    -------
    list of dict
        One entry per grouping: groups with a factor, rows rescaled, and the TPOT / TTFT median and
        p90 absolute error [%] over all rows.
    """
    out = []
    for label, columns in groupings.items():
        ids = group_ids(predictions, columns)
        size = np.bincount(ids)[ids]
        scaled = (size >= min_rows) & bool(columns)
        entry: dict = {"grouping": label, "groups with a factor": int(np.unique(ids[scaled]).size),
                       "rows rescaled": int(scaled.sum())}
        for metric, (predicted, measured) in METRICS.items():
            p = predictions[predicted].to_numpy(float)
            m = predictions[measured].to_numpy(float)
            with np.errstate(divide="ignore", invalid="ignore"):
                log_ratio = np.log(m / p)
            log_ratio[~np.isfinite(log_ratio)] = np.nan
            median = pd.Series(log_ratio).groupby(ids).transform("median").to_numpy()
            factor = np.where(scaled & np.isfinite(median), np.exp(median), 1.0)
            s = error_stats(pct_error(p * factor, m))
            entry[f"{metric.upper()} median abs %"] = s["median_abs_pct_error"]
            entry[f"{metric.upper()} p90 abs %"] = s["p90_abs_pct_error"]
        out.append(entry)
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
        Fewest rows of a sweep that get a slope (at least 3, for a standard error).
    min_log_range : float
        Smallest ln(C_max / C_min) of a sweep that gets a slope (1.0: C spans at least e-fold).

    Returns
    -------
    pandas.DataFrame
        One row per sweep: the sweep ``columns``, ``points``, ``slope`` [-] and ``slope_se`` [-].
    """
    if metric not in METRICS:
        raise ValueError(f"metric: expected one of {sorted(METRICS)}, got {metric!r}")
    if min_points < 3:
        raise ValueError(f"min_points: must be at least 3 (a slope and its standard error), got {min_points}")
    predicted, measured = METRICS[metric]
    ids = group_ids(predictions, columns)
    x = np.log(predictions["concurrency"].to_numpy(float))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(predictions[measured].to_numpy(float) / predictions[predicted].to_numpy(float))
    out = []
    for _, idx in pd.Series(np.arange(len(predictions))).groupby(ids).groups.items():
        xi, ri = x[idx], r[idx]
        ok = np.isfinite(xi) & np.isfinite(ri)
        xi, ri = xi[ok], ri[ok]
        if xi.size < min_points or np.ptp(xi) < min_log_range:
            continue
        dx = xi - xi.mean()
        slope = float(np.sum(dx * (ri - ri.mean())) / np.sum(dx * dx))
        resid = ri - ri.mean() - slope * dx
        first = predictions.iloc[idx[0]]
        out.append({**{c: first[c] for c in columns}, "points": int(xi.size), "slope": slope,
                    "slope_se": float(np.sqrt(np.sum(resid ** 2) / (xi.size - 2) / np.sum(dx * dx)))})
    return pd.DataFrame(out, columns=[*columns, "points", "slope", "slope_se"])


def variance_explained(values: pd.Series, frame: pd.DataFrame, columns: Sequence[str]) -> list[dict]:
    """Share of the variance of ``values`` that each column's groups explain, corrected for chance.

    For a column splitting n values into k groups, with between- and within-group sums of squares
    :math:`SS_B` and :math:`SS_W` and total :math:`SS_T`,

    .. math:: \\eta^2 = \\frac{SS_B}{SS_T}, \\qquad
              \\omega^2 = \\frac{SS_B - (k - 1)\\,SS_W / (n - k)}{SS_T + SS_W / (n - k)}

    (:math:`\\eta^2` grows to about (k − 1)/(n − 1) by chance alone; :math:`\\omega^2` does not).

    Parameters
    ----------
    values : pandas.Series
        The quantity (e.g. the per-sweep slopes), aligned with ``frame``.
    frame : pandas.DataFrame
        Candidate grouping columns.
    columns : sequence of str
        Columns to try one at a time; those with a single group or as many groups as values are left out.

    Returns
    -------
    list of dict
        ``column``, ``groups``, ``share %`` (η²) and ``share beyond chance %`` (ω², may be negative).
    """
    v = np.asarray(values, dtype=float)
    n = v.size
    total = float(np.sum((v - v.mean()) ** 2))
    out = []
    for column in columns:
        ids = group_ids(frame, [column])
        k = int(ids.max()) + 1 if n else 0
        if k < 2 or k >= n or total == 0.0:
            continue
        mean = pd.Series(v).groupby(ids).transform("mean").to_numpy()
        between, within = float(np.sum((mean - v.mean()) ** 2)), float(np.sum((v - mean) ** 2))
        ms_within = within / (n - k)
        out.append({"column": column, "groups": k, "share %": 100.0 * between / total,
                    "share beyond chance %": 100.0 * (between - (k - 1) * ms_within) / (total + ms_within)})
    return out
