"""Tables and figures of a validation report (markdown and PNG); no numbers are computed twice.

Used by ``scripts/make_validation_report.py`` to write ``docs/validation.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .metrics import METRICS, error_stats


def fmt(v: Any, digits: int = 1) -> str:
    """A cell: floats rounded, None/NaN as an em dash."""
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "—"
    if isinstance(v, (float, np.floating)):
        return f"{v:.{digits}f}"
    return str(v)


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A GitHub-flavoured markdown table of dict rows."""
    if not rows:
        return "_(none)_"
    cols = list(columns or rows[0].keys())
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def headline_row(label: str, summary: dict[str, Any]) -> dict[str, Any]:
    """One row of the headline table from a summary (``tpot``/``ttft`` stats)."""
    row: dict[str, Any] = {"prediction": label, "rows": summary["tpot"]["n"]}
    for m in METRICS:
        s = summary[m]
        row[f"{m.upper()} median abs %"] = s["median_abs_pct_error"]
        row[f"{m.upper()} p90 abs %"] = s["p90_abs_pct_error"]
        row[f"{m.upper()} bias %"] = s["bias_pct"]
    return row


def group_rows(predictions: pd.DataFrame, group: str | list[str], min_rows: int = 1) -> list[dict[str, Any]]:
    """Per-group error stats (rows with at least ``min_rows``), sorted by group."""
    out = []
    for key, sub in predictions.groupby(group, sort=True):
        if len(sub) < min_rows:
            continue
        label = " / ".join(map(str, key)) if isinstance(key, tuple) else str(key)
        row: dict[str, Any] = {"group": label, "rows": len(sub)}
        for m in METRICS:
            s = error_stats(sub[f"{m}_pct_error"])
            row[f"{m.upper()} median abs %"] = s["median_abs_pct_error"]
            row[f"{m.upper()} p90 abs %"] = s["p90_abs_pct_error"]
            row[f"{m.upper()} bias %"] = s["bias_pct"]
        out.append(row)
    return out


def worst_groups(predictions: pd.DataFrame, group: list[str], metric: str, n: int = 8,
                 min_rows: int = 8) -> list[dict[str, Any]]:
    """Groups with the largest |median signed error| of ``metric`` (systematic errors)."""
    rows = []
    for key, sub in predictions.groupby(group, sort=False):
        if len(sub) < min_rows:
            continue
        s = error_stats(sub[f"{metric}_pct_error"])
        if s["n"] == 0:
            continue
        rows.append({"group": " / ".join(map(str, key)), "rows": s["n"], "bias %": s["bias_pct"],
                     "median abs %": s["median_abs_pct_error"]})
    rows.sort(key=lambda r: -abs(r["bias %"]))
    return rows[:n]


def scatter(predictions: pd.DataFrame, metric: str, path: str | Path, title: str,
            color_by: str = "system") -> Path:
    """Log-log predicted vs measured scatter with ±10 % and ±25 % bands, saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p_col, m_col = METRICS[metric]
    df = predictions[np.isfinite(predictions[p_col]) & (predictions[m_col] > 0)]
    fig, ax = plt.subplots(figsize=(6.0, 5.6), dpi=110)
    lo = float(min(df[p_col].min(), df[m_col].min())) * 1e3 * 0.8
    hi = float(max(df[p_col].max(), df[m_col].max())) * 1e3 * 1.25
    x = np.geomspace(lo, hi, 50)
    ax.plot(x, x, color="k", lw=1)
    for f, alpha in ((0.10, 0.25), (0.25, 0.12)):
        ax.fill_between(x, x * (1 - f), x * (1 + f), color="tab:green", alpha=alpha, lw=0,
                        label=f"±{int(f * 100)} %")
    for key, sub in df.groupby(color_by, sort=True):
        ax.scatter(sub[m_col] * 1e3, sub[p_col] * 1e3, s=7, alpha=0.6, label=str(key))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(f"measured {metric.upper()} [ms]")
    ax.set_ylabel(f"predicted {metric.upper()} [ms]")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left", markerscale=2)
    ax.grid(True, which="both", alpha=0.2)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out


def residual_by_concurrency(predictions: pd.DataFrame, metric: str,
                            bins=(0, 4, 16, 64, 256, np.inf)) -> list[dict[str, Any]]:
    """Median signed error of ``metric`` per backend and concurrency bin (where errors concentrate)."""
    df = predictions.assign(conc=pd.cut(predictions["concurrency"], list(bins)))
    table = df.pivot_table(index="backend", columns="conc", values=f"{metric}_pct_error", aggfunc="median",
                           observed=False)
    rows = []
    for backend, r in table.iterrows():
        rows.append({"backend": backend, **{f"C in {c}": r[c] for c in table.columns}})
    return rows
