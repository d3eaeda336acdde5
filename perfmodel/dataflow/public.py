"""Public per-user speeds of SRAM / dataflow machines next to perfmodel's prediction, and the fit.

``perfmodel/data/dataflow/public_speeds.csv`` lists published per-user decode speeds with their
model, precision, chip count (published or stated as assumed), source and ``role``:

- ``fit``: used to fit the architecture's one parameter η (``stream_efficiency``);
- ``predict``: predicted with the fitted η, never used in the fit;
- ``later-release``: a figure from a later software release than the fit's (shown, not expected to
  match a model fitted on the earlier release);
- ``unexplained``: shown next to the prediction of an architecture with no fitted parameter, where
  the model falls short and the note says what it would take;
- ``check``: a figure that tests a datasheet figure rather than the model (SambaNova's DeepSeek-R1
  speed against its HBM bandwidth); shown, not scored.

:func:`fit_stream_efficiency` solves η so that the predicted per-user speeds of an architecture's
``fit`` rows match the public ones in the least-squares sense of log ratios (with one row, exactly):

.. math:: \\hat\\eta = \\arg\\min_\\eta \\sum_{rows} \\ln^2\\frac{v_{pred}(\\eta)}{v_{public}}

Each prediction uses the fastest layout of the published chip count that fits
(:func:`perfmodel.dataflow.best_layout`).

:func:`implied_stream_efficiency` solves the same equation for one row alone, on that row's layout:
the η the public figure implies by itself. Rows of one architecture and software release should
imply similar values; a figure that implies η > 1 is beyond the datasheet bandwidth of its weight
tier, whatever the execution model does with the other terms.
"""

from __future__ import annotations

import functools
import io
from importlib import resources

import numpy as np
import pandas as pd
from scipy.optimize import brentq, minimize_scalar

from .layout import search_layouts
from .step import predict_dataflow


@functools.lru_cache(maxsize=1)
def _csv() -> str:
    return (resources.files("perfmodel") / "data" / "dataflow" / "public_speeds.csv").read_text(encoding="utf-8")


def public_speeds() -> pd.DataFrame:
    """The shipped table of public per-user speeds (one row per published figure)."""
    return pd.read_csv(io.StringIO(_csv()))


def _predict_row(row, eta: float | None) -> dict:
    df = search_layouts(row["model"], row["hardware"], int(row["devices"]), isl=int(row["isl"]),
                        osl=int(row["osl"]), batch=1, weights=row["weights"], kv_cache=row["kv_cache"],
                        stream_efficiency=eta)
    best = df.iloc[0]
    return {"layout": f"tp{best['tp']}-pp{best['pp']}" + (f"x{best['replicas']}" if best["replicas"] > 1 else ""),
            "fits": bool(best["fits"]), "predicted_tokens_per_s_per_user": float(best["per_user_tokens_per_s"])}


def fit_stream_efficiency(hardware: str, bounds: tuple[float, float] = (1e-4, 1.0)) -> float:
    """η of ``hardware`` from its ``fit`` rows (module docstring); bounded scalar search in log η."""
    rows = public_speeds()
    rows = rows[(rows["hardware"] == hardware) & (rows["role"] == "fit")]
    if rows.empty:
        raise ValueError(f"no 'fit' rows for {hardware!r} in public_speeds.csv")

    def loss(log_eta: float) -> float:
        eta = float(np.exp(log_eta))
        return sum(np.log(_predict_row(r, eta)["predicted_tokens_per_s_per_user"] / r["tokens_per_s_per_user"]) ** 2
                   for _, r in rows.iterrows())

    res = minimize_scalar(loss, bounds=tuple(np.log(bounds)), method="bounded", options={"xatol": 1e-4})
    return float(np.exp(res.x))


def compare_public() -> pd.DataFrame:
    """Every public figure next to perfmodel's prediction with the shipped η.

    Returns
    -------
    pandas.DataFrame
        The CSV's columns plus layout, fits, predicted_tokens_per_s_per_user and ratio
        (predicted / public).
    """
    rows = []
    for _, r in public_speeds().iterrows():
        rows.append({**r.to_dict(), **_predict_row(r, None)})
    df = pd.DataFrame(rows)
    df["ratio"] = df["predicted_tokens_per_s_per_user"] / df["tokens_per_s_per_user"]
    return df


def implied_stream_efficiency(row) -> float:
    """The η that alone makes perfmodel match one public row, on the row's fastest layout.

    Parameters
    ----------
    row : mapping
        A row of :func:`public_speeds` (hardware, model, devices, isl, osl, weights, kv_cache,
        tokens_per_s_per_user).

    Returns
    -------
    float
        η in (0, 1] with :math:`v_{pred}(\\eta) = v_{public}` [-], or ``inf`` when even η = 1 (the
        datasheet bandwidth of the weight tier) predicts less than the public figure.
    """
    best = search_layouts(row["model"], row["hardware"], int(row["devices"]), isl=int(row["isl"]),
                          osl=int(row["osl"]), batch=1, weights=row["weights"], kv_cache=row["kv_cache"]).iloc[0]
    target = float(row["tokens_per_s_per_user"])

    def gap(log_eta: float) -> float:
        p = predict_dataflow(row["model"], row["hardware"], tp=int(best["tp"]), pp=int(best["pp"]),
                             isl=int(row["isl"]), osl=int(row["osl"]), weights=row["weights"],
                             kv_cache=row["kv_cache"], stream_efficiency=float(np.exp(log_eta)))
        return float(np.log(float(np.ravel(p.per_user_tokens_per_s)[0]) / target))

    if gap(0.0) < 0:
        return float("inf")
    return float(np.exp(brentq(gap, np.log(1e-5), 0.0, xtol=1e-6)))
