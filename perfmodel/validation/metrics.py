"""Error metrics of predictions against measurements, overall and by group (percent units).

Per row, the signed relative error of a metric is

.. math:: e = 100 \\, \\frac{\\hat y - y}{y} \\; [\\%]

with :math:`\\hat y` predicted and :math:`y` measured. A set of rows is summarised by the median and
90th percentile of :math:`|e|` and by the *bias*, the median of :math:`e` (positive = the model is
slow, i.e. over-predicts latency). Rows flagged anomalous are excluded from the summary figures unless
asked for; their count is reported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..deprecation import renamed_columns

#: Metrics compared: column stem -> (predicted column, measured column). Both are means over the requests
#: of a run (closed-loop steady state or simulated open loop; the measured files give means), hence
#: ``_mean_s``: a bare ``ttft_s`` is one static batch on an idle replica (:mod:`perfmodel.metrics_vocabulary`).
METRICS = {"tpot": ("predicted_tpot_mean_s", "measured_tpot_mean_s"),
           "ttft": ("predicted_ttft_mean_s", "measured_ttft_mean_s")}

#: Columns of prediction tables renamed in this release (old -> new): a table written before (``perfmodel
#: validate --out``, a script's ``--out``) is read with :func:`current_columns`.
RENAMED_COLUMNS = {"predicted_ttft_s": "predicted_ttft_mean_s", "predicted_tpot_s": "predicted_tpot_mean_s",
                   "measured_ttft_s": "measured_ttft_mean_s", "measured_tpot_s": "measured_tpot_mean_s",
                   "predicted_ttft_ci_pct": "predicted_ttft_mean_ci_pct",
                   "predicted_tpot_ci_pct": "predicted_tpot_mean_ci_pct"}

#: Grouping columns reported under ``by``.
GROUPS = ("system", "model", "mode", "backend", "spec_decode", "prefix_caching")


def current_columns(rows: pd.DataFrame, where: str) -> pd.DataFrame:
    """``rows`` with the old column names of :data:`RENAMED_COLUMNS` replaced by the new ones, after a
    :class:`DeprecationWarning` naming them; ``rows`` itself when it has none (a column already under its new
    name is kept, its old twin dropped)."""
    return renamed_columns(rows, RENAMED_COLUMNS, where, "means over requests")


def pct_error(predicted, measured) -> np.ndarray:
    """Signed relative error 100 (p − m)/m [%] (NaN where either is missing or m ≤ 0)."""
    p = np.asarray(predicted, dtype=float)
    m = np.asarray(measured, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(m > 0, 100.0 * (p - m) / m, np.nan)


def not_flagged(rows: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the rows not flagged anomalous (an empty or missing ``anomaly`` cell)."""
    if "anomaly" not in rows:
        return np.ones(len(rows), dtype=bool)
    return rows["anomaly"].fillna("").astype(str).to_numpy() == ""


def add_errors(df: pd.DataFrame) -> pd.DataFrame:
    """Return ``df`` with ``tpot_pct_error`` and ``ttft_pct_error`` columns added."""
    out = df.copy()
    for name, (p, m) in METRICS.items():
        out[f"{name}_pct_error"] = pct_error(out[p], out[m]) if p in out else np.nan
    return out


def error_stats(errors) -> dict[str, Any]:
    """Median and p90 of |e| and the median signed error (bias) of percent errors.

    Returns
    -------
    dict
        ``{"n", "median_abs_pct_error", "p90_abs_pct_error", "bias_pct"}``; NaN-only input gives
        ``n = 0`` and None values.
    """
    e = np.asarray(errors, dtype=float)
    e = e[np.isfinite(e)]
    if e.size == 0:
        return {"n": 0, "median_abs_pct_error": None, "p90_abs_pct_error": None, "bias_pct": None}
    a = np.abs(e)
    return {"n": int(e.size), "median_abs_pct_error": float(np.median(a)),
            "p90_abs_pct_error": float(np.percentile(a, 90)), "bias_pct": float(np.median(e))}


def _stats_of(df: pd.DataFrame) -> dict[str, Any]:
    return {name: error_stats(df[f"{name}_pct_error"]) for name in METRICS}


def summarize(predictions: pd.DataFrame, skipped: pd.DataFrame | None = None, rows: int | None = None,
              include_anomalous: bool = False) -> dict[str, Any]:
    """Summary of a validation run (the ``--format json`` output of ``perfmodel validate``).

    Parameters
    ----------
    predictions : pandas.DataFrame
        One row per predicted measurement with ``*_pct_error`` columns (see :func:`add_errors`), the
        group columns and an ``anomaly`` column (empty string = not flagged).
    skipped : pandas.DataFrame, optional
        ``reason`` per skipped row.
    rows : int, optional
        Rows read (default: predicted + skipped).
    include_anomalous : bool
        Count flagged rows in the error figures (default: excluded, reported separately).

    Returns
    -------
    dict
        ``rows, predicted, skipped, skipped_reasons, anomalous, tpot, ttft, by``.
    """
    skipped = skipped if skipped is not None else pd.DataFrame(columns=["reason"])
    flagged = predictions["anomaly"].astype(bool) if "anomaly" in predictions else \
        pd.Series(False, index=predictions.index)
    scored = predictions if include_anomalous else predictions[~flagged]
    reasons = skipped["reason"].astype(str)
    categories = reasons.str.split(":", n=1).str[0].str.strip()
    out: dict[str, Any] = {
        "rows": int(rows if rows is not None else len(predictions) + len(skipped)),
        "predicted": int(len(predictions)),
        "skipped": int(len(skipped)),
        "skipped_reasons": {k: int(v) for k, v in categories.value_counts().items()},
        "skipped_reasons_detail": {k: int(v) for k, v in reasons.value_counts().items()},
        "anomalous": int(flagged.sum()),
        "anomalous_included": bool(include_anomalous),
        "scored": int(len(scored)),
    }
    out.update(_stats_of(scored))
    out["by"] = by_group(scored)
    return out


def by_group(df: pd.DataFrame, groups=GROUPS) -> dict[str, dict[str, Any]]:
    """Error stats per value of each grouping column present in ``df``."""
    out: dict[str, dict[str, Any]] = {}
    for g in groups:
        if g not in df:
            continue
        out[g] = {str(k): {"n": int(len(sub)), **_stats_of(sub)} for k, sub in df.groupby(g, sort=True)}
    return out


def headline(summary: dict[str, Any]) -> dict[str, float | None]:
    """The four headline figures: TPOT/TTFT median and p90 absolute percent error."""
    return {f"{m}_{k}": summary[m][f"{k}_abs_pct_error"] for m in METRICS for k in ("median", "p90")}
