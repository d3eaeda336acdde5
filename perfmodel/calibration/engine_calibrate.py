"""Engine calibration end to end: fit, cross-validate, write the profile with its provenance.

:func:`calibrate` fits :mod:`perfmodel.engine.calibration` parameters on every non-anomalous row
(the shipped profile) and, for the record, cross-validates them (grouped k-fold, leave-one-system-out,
leave-one-model-out); :func:`calibrate_file` does the same for a user's measurement file and writes a
profile YAML that ``perfmodel validate --engines PROFILE.yaml`` (or
:func:`perfmodel.engine.calibration.load_profile`) reads back.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..engine.calibration import EngineCalibration, profile_to_dict, save_profile
from ..validation.metrics import add_errors, not_flagged, summarize
from ..validation.predict import ServingProblem
from .engine_fit import F_SCALE, K_FOLDS, cross_validate, fit_engines

#: Cross-validation schemes reported (see :func:`perfmodel.calibration.engine_fit.folds`).
CV_SCHEMES = ("kfold", "system", "model")


@dataclass
class Calibration:
    """Fitted calibrations with training and held-out predictions and their summaries."""

    calibrations: dict[str, EngineCalibration]
    train: pd.DataFrame
    cv: dict[str, pd.DataFrame] = field(default_factory=dict)
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)


def _headline(summary: dict[str, Any]) -> dict[str, Any]:
    keep = ("n", "median_abs_pct_error", "p90_abs_pct_error", "bias_pct")
    return {m: {k: summary[m][k] for k in keep} for m in ("tpot", "ttft")}


def calibrate(problem: ServingProblem, cv_schemes=CV_SCHEMES) -> Calibration:
    """Fit on all scored rows, then cross-validate with each scheme.

    Parameters
    ----------
    problem : ServingProblem
        Rows with ``measured_*`` and ``anomaly`` columns.
    cv_schemes : iterable of str
        Subset of :data:`CV_SCHEMES` (empty = training error only).
    """
    fitted = fit_engines(problem)
    train = add_errors(problem.predictions(fitted.calibrations))
    out = Calibration(fitted.calibrations, train)
    out.summaries["train"] = summarize(train)
    for scheme in cv_schemes:
        held = add_errors(cross_validate(problem, scheme))
        out.cv[scheme] = held
        out.summaries[f"cv_{scheme}"] = summarize(held)
    return out


def sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def provenance(data: str, result: Calibration, efficiency, rows_read: int) -> dict[str, Any]:
    """Provenance block of a calibration profile."""
    scored = result.train[not_flagged(result.train)]
    out = {
        "data": str(data), "rows_read": int(rows_read), "rows_predicted": int(len(result.train)),
        "rows_fitted": int(len(scored)),
        "rows_excluded_anomalous": int(len(result.train) - len(scored)),
        "date": _dt.date.today().isoformat(),
        "efficiency_profile": str(getattr(efficiency, "name", efficiency)),
        "method": (f"scipy.optimize.least_squares per backend on log(pred/measured) of TPOT and TTFT, "
                   f"loss soft_l1, f_scale {F_SCALE}; rows flagged anomalous excluded"),
        "fit_residuals": _headline(result.summaries["train"]),
    }
    if Path(str(data)).exists():
        out["sha256"] = sha256(data)
    return out


def cross_validation_block(result: Calibration) -> dict[str, Any]:
    """Held-out errors per scheme, for the profile file."""
    names = {"kfold": f"grouped {K_FOLDS}-fold (groups: deployment configurations)",
             "system": "leave one system out", "model": "leave one model out"}
    return {scheme: {"scheme": names[scheme], **_headline(result.summaries[f"cv_{scheme}"])}
            for scheme in result.cv}


def write_profile(path: str | Path, result: Calibration, data: str, efficiency, rows_read: int,
                  name: str = "calibrated") -> dict[str, Any]:
    """Write the calibration profile YAML and return its content."""
    content = profile_to_dict(result.calibrations, provenance(data, result, efficiency, rows_read),
                              cross_validation_block(result) if result.cv else None, name=name)
    save_profile(path, content)
    return content


def calibrate_file(data: str | Path, out: str | Path, efficiency="calibrated", deployment=None,
                   cv_schemes=()) -> dict[str, Any]:
    """Fit engine parameters on a measurement file and write the profile ``out``.

    Parameters
    ----------
    data : str | Path
        ``serving_measured.csv``-schema table or a benchmark result JSON (with ``deployment``).
    out : str | Path
        Profile YAML to write.
    efficiency : str | Efficiency
        Per-op efficiency profile the fit builds on.
    deployment : MeasuredDeployment, optional
        For a result JSON.
    cv_schemes : iterable of str
        Cross-validation schemes to run as well (slower).

    Returns
    -------
    dict
        Fitted parameters per backend and training errors.
    """
    from ..validation.importers import import_results
    from ..validation.run import read_table, serving_problem

    df = import_results([data], deployment) if str(data).lower().endswith(".json") else read_table(data)
    problem, _ = serving_problem(df, efficiency)
    result = calibrate(problem, cv_schemes)
    content = write_profile(out, result, str(data), efficiency, len(df), name=Path(out).stem)
    return {"profile": str(out), "engines": content["engines"],
            "fit_residuals": content["provenance"]["fit_residuals"]}
