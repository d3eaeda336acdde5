"""Validation against measured runs and engine-level calibration (see ``docs/validation.md``).

>>> from perfmodel.validation import validate_file
>>> run = validate_file("perfmodel/data/validation/serving_measured.csv")  # doctest: +SKIP
>>> run.summary["tpot"]["median_abs_pct_error"]  # doctest: +SKIP

Modules, one concern each: :mod:`~perfmodel.validation.rows` (measured rows -> deployments),
:mod:`~perfmodel.validation.models` (model specs of measured rows), :mod:`~perfmodel.validation.anomalies`
(physics flags), :mod:`~perfmodel.validation.surrogate` (tabulated step times),
:mod:`~perfmodel.validation.predict` (closed-loop predictions), :mod:`~perfmodel.serving.waves`
(synchronised arrival waves), :mod:`~perfmodel.validation.metrics` (errors),
:mod:`~perfmodel.engine.calibration` (engine parameters and profile files), :mod:`~perfmodel.calibration.engine_fit`
(fit and cross-validation), :mod:`~perfmodel.calibration.engine_calibrate` (calibration end to end),
:mod:`~perfmodel.validation.published` (published static-batch figures),
:mod:`~perfmodel.validation.importers` (vLLM / AIPerf / GenAI-Perf / GuideLLM / inference-perf results),
:mod:`~perfmodel.validation.openloop_import` (arrival fields of those files),
:mod:`~perfmodel.validation.arrivals` (open- vs closed-loop columns),
:mod:`~perfmodel.validation.predict_openloop` (open-loop rows by simulation), :mod:`~perfmodel.validation.run`
(entry points), :mod:`~perfmodel.validation.report` (tables and figures),
:mod:`~perfmodel.validation.report_summary` (the report pages' tables as JSON, quoted by the README),
:mod:`~perfmodel.validation.plan_regret` (the configuration ranked best vs the measured best).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (perfmodel._lazy)
    from ..engine.calibration import EngineCalibration, load_profile
    from .data import shipped_path
    from .importers import MeasuredDeployment, import_results
    from .run import ValidationRun, detect_kind, validate_file, validate_serving

__all__ = [
    "EngineCalibration", "MeasuredDeployment", "ValidationRun", "detect_kind", "import_results",
    "load_profile", "shipped_path", "validate_file", "validate_serving",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
