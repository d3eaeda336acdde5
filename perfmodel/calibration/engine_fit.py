"""Fit the engine-level parameters on a training split and cross-validate them.

For each backend b the parameters θ_b (:data:`perfmodel.engine.calibration.PARAMETERS`) minimise a
robust loss of the log-ratio residuals of both metrics over the training rows of that backend,

.. math:: \\min_{\\theta_b} \\sum_{i \\in \\mathrm{train}_b} \\rho\\!\\left(\\ln\\frac{\\widehat{\\mathrm{TPOT}}_i}
          {\\mathrm{TPOT}_i}\\right) + \\rho\\!\\left(\\ln\\frac{\\widehat{\\mathrm{TTFT}}_i}{\\mathrm{TTFT}_i}\\right),
          \\qquad \\rho(r) = 2 s^2\\left(\\sqrt{1 + (r/s)^2} - 1\\right)

(``scipy.optimize.least_squares`` with ``loss="soft_l1"``, f_scale s = :data:`F_SCALE`, bounds from
``PARAMETERS``). Log ratios weigh over- and under-prediction alike and make rows of every latency scale
count the same; the soft-L1 loss keeps a few extreme rows from steering the fit. Rows flagged anomalous
are never in a training set.

Cross-validation (:func:`cross_validate`): every row is predicted by parameters fitted without it —
grouped k-fold (groups = deployment configurations, so a sweep of one configuration is never split
between train and test), leave-one-system-out and leave-one-model-out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from ..engine.calibration import FITTED, PARAMETERS, EngineCalibration, fit_start, presets
from ..validation.metrics import error_stats, not_flagged, pct_error
from ..validation.predict import ServingProblem

#: Scale of the soft-L1 loss in log-ratio units (0.15 ≈ 16 %): residuals beyond it count linearly.
F_SCALE = 0.15
#: Fewest training rows for which a backend is fitted (else its preset is used and flagged).
MIN_ROWS = 8
#: Folds of the grouped k-fold split.
K_FOLDS = 5
#: Starting values inside the bounds for parameters whose preset sits on a bound, where the trust-region
#: solver would leave them: ``prefill_dp_lockstep`` (fitted only where some training row depends on it,
#: see :func:`_constrained`) and the host overheads held at 0 by :data:`~perfmodel.engine.calibration.FIXED`,
#: which start at their typical scale when a fit names them (from 0 they were never moved).
INTERIOR_START = {"prefill_dp_lockstep": 0.5,
                  **{k: PARAMETERS[k][2] for k in ("step_overhead", "seq_overhead", "layer_overhead")}}
#: Columns that define a deployment configuration (the k-fold groups).
GROUP_COLUMNS = ("model", "system", "backend", "tp", "pp", "dp", "ep", "weights")


@dataclass
class FitResult:
    """Fitted calibrations per backend and the rows they were fitted on."""

    calibrations: dict[str, EngineCalibration]
    train: np.ndarray  # boolean mask over problem.rows


def _scored(problem: ServingProblem) -> np.ndarray:
    """Rows usable for fitting: not flagged anomalous."""
    return not_flagged(problem.rows)


def _constrained(problem: ServingProblem, backend: str, names: tuple[str, ...]) -> list[str]:
    """``names`` less the parameters no row of ``backend`` in ``problem`` depends on:
    ``prefill_dp_lockstep`` needs a P/D row whose prefill replica has more than one attention-DP rank."""
    dp_prefill = any(np.any(b.prefill_schedulers > 1) for b in problem.disagg.get(backend, []))
    return [k for k in names if k != "prefill_dp_lockstep" or dp_prefill]


def fit_backend(problem: ServingProblem, backend: str, start: EngineCalibration | None = None,
                names: tuple[str, ...] = FITTED) -> EngineCalibration:
    """Fit one backend's parameters on all rows of ``problem`` of that backend (see module doc).

    Parameters
    ----------
    problem : ServingProblem
        Training rows (use :meth:`ServingProblem.subset` to select them).
    backend : str
        ``vllm``, ``sglang`` or ``trtllm``.
    start : EngineCalibration, optional
        Starting point (default: :func:`~perfmodel.engine.calibration.fit_start`); parameters not in ``names`` keep its values.
    names : tuple of str
        Parameters to fit (default :data:`~perfmodel.engine.calibration.FITTED`).

    Returns
    -------
    EngineCalibration
        With ``fit`` = number of rows, residual stats and optimizer status.
    """
    start = start or fit_start()[backend]
    mask = problem.rows["backend"].to_numpy() == backend
    sub = problem.subset(mask)
    n = len(sub.rows)
    if n < MIN_ROWS:
        return EngineCalibration(**{**start.__dict__, "fit": {"rows": n, "status": "too few rows: preset"}})
    names = _constrained(sub, backend, names)
    lo = np.array([PARAMETERS[k][0] for k in names])
    hi = np.array([PARAMETERS[k][1] for k in names])
    scale = np.array([PARAMETERS[k][2] for k in names])
    x0 = np.array([start.values()[k] for k in names])
    x0 = np.clip([INTERIOR_START[k] if k in INTERIOR_START and v in PARAMETERS[k][:2] else v
                  for k, v in zip(names, x0, strict=True)], lo, hi)
    m_ttft = sub.rows["measured_ttft_mean_s"].to_numpy(float)
    m_tpot = sub.rows["measured_tpot_mean_s"].to_numpy(float)

    def residuals(x: np.ndarray) -> np.ndarray:
        cal = start.with_values(dict(zip(names, x, strict=True)))
        ttft, tpot = sub.evaluate({backend: cal}, backends=(backend,))
        return np.concatenate([np.log(tpot / m_tpot), np.log(ttft / m_ttft)])

    sol = least_squares(residuals, x0, bounds=(lo, hi), x_scale=scale, loss="soft_l1", f_scale=F_SCALE,
                        diff_step=1e-3, xtol=1e-4, ftol=1e-5, max_nfev=200)
    cal = start.with_values(dict(zip(names, sol.x, strict=True)))
    ttft, tpot = sub.evaluate({backend: cal}, backends=(backend,))
    fit = {"rows": n, "nfev": int(sol.nfev), "status": str(sol.message),
           "efficiency_profile": str(getattr(sub.efficiency, "name", sub.efficiency)),
           "tpot": error_stats(pct_error(tpot, m_tpot)), "ttft": error_stats(pct_error(ttft, m_ttft))}
    return EngineCalibration(backend, **cal.values(), fit=fit)


def fit_engines(problem: ServingProblem, train=None,
                start: Mapping[str, EngineCalibration] | None = None) -> FitResult:
    """Fit every backend on the training rows (default: all rows not flagged anomalous).

    Parameters
    ----------
    problem : ServingProblem
        All rows (with ``measured_*`` and optional ``anomaly`` columns).
    train : array_like of bool, optional
        Training mask over ``problem.rows``; anomalous rows are always left out.
    start : mapping, optional
        Starting points per backend.
    """
    mask = _scored(problem) if train is None else np.asarray(train, dtype=bool) & _scored(problem)
    sub = problem.subset(mask)
    start = {**fit_start(), **dict(start or {})}
    cals = {b: fit_backend(sub, b, start[b]) for b in sorted(set(problem.rows["backend"]))}
    return FitResult({**presets(), **cals}, mask)


def folds(rows: pd.DataFrame, scheme: str, k: int = K_FOLDS, seed: int = 0) -> list[tuple[str, np.ndarray]]:
    """Held-out masks of a cross-validation scheme.

    Parameters
    ----------
    rows : pandas.DataFrame
        Predicted rows (``system``, ``model`` and the :data:`GROUP_COLUMNS`).
    scheme : {"kfold", "system", "model"}
        Grouped k-fold over deployment configurations, leave-one-system-out, leave-one-model-out.
    """
    if scheme == "kfold":
        cols = [c for c in GROUP_COLUMNS if c in rows]
        groups = rows[cols].astype(str).agg("|".join, axis=1).to_numpy()
        unique = np.unique(groups)
        order = np.random.default_rng(seed).permutation(len(unique))
        fold_of = dict(zip(unique[order], np.arange(len(unique)) % k, strict=True))
        labels = np.array([fold_of[g] for g in groups])
        return [(f"fold{i}", labels == i) for i in range(k)]
    column = {"system": "system", "model": "model"}.get(scheme)
    if column is None:
        raise ValueError(f"scheme: expected 'kfold', 'system' or 'model', got {scheme!r}")
    return [(str(v), rows[column].to_numpy() == v) for v in sorted(rows[column].unique())]


def cross_validate(problem: ServingProblem, scheme: str, start: Mapping[str, EngineCalibration] | None = None
                   ) -> pd.DataFrame:
    """Held-out predictions of every row under a scheme (see :func:`folds`).

    Returns
    -------
    pandas.DataFrame
        ``problem.rows`` with ``predicted_ttft_mean_s``, ``predicted_tpot_mean_s`` (from the fold that held
        the row out) and ``fold``.
    """
    out = problem.rows.copy()
    out["predicted_ttft_mean_s"] = np.nan
    out["predicted_tpot_mean_s"] = np.nan
    out["fold"] = ""
    for name, held in folds(problem.rows, scheme):
        fitted = fit_engines(problem, train=~held, start=start)
        test = problem.subset(held)
        ttft, tpot = test.evaluate(fitted.calibrations)
        idx = np.flatnonzero(held)
        out.iloc[idx, out.columns.get_loc("predicted_ttft_mean_s")] = ttft
        out.iloc[idx, out.columns.get_loc("predicted_tpot_mean_s")] = tpot
        out.iloc[idx, out.columns.get_loc("fold")] = name
    return out
