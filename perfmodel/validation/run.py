"""Validation entry points: recognise a measurement table, predict it, summarise the errors.

:func:`validate_file` reads a CSV (or a benchmark-tool JSON, see :mod:`perfmodel.validation.importers`)
and dispatches on its columns:

- measured serving runs (``serving_measured.csv`` schema) -> :func:`validate_serving`;
- published end-to-end figures (``published_end_to_end.csv``) -> :mod:`perfmodel.validation.published`;
- per-op micro-benchmark tables (``gemm.csv.gz``, ``attention_*``, ``mla_*``, ``moe``, ``nccl``,
  ``custom_allreduce``) -> :mod:`perfmodel.calibration.op_validation`;
- whole forward steps measured without a serving engine (:data:`STEP_COLUMNS`, e.g. the
  ``decode_step.csv`` and ``prefill_step.csv`` of ``benchmarks/device_ops.py``) -> :func:`validate_steps`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import fileio
from ..core.efficiency import check_profile, profile_for
from ..engine.calibration import load_profile
from ..errors import ConfigError, PerfmodelError, UnknownNameError
from ..progress import Bar
from .anomalies import flag_anomalies
from .arrivals import open_loop_mask
from .importers import MeasuredDeployment, import_results
from .metrics import add_errors, error_stats, summarize
from .models import resolve_model
from .predict import ServingProblem, engines_under
from .predict_openloop import open_loop_summary, predict_open_loop
from .published import REQUIRED_COLUMNS as PUBLISHED_COLUMNS
from .published import validate_published
from .rows import DEFAULT_KV_POLICY, OPEN_LOOP_SKIP, KVPolicy, drop_duplicates, hardware_id, map_rows
from .rows import REQUIRED_COLUMNS as SERVING_COLUMNS
from .stepmodels import StepModelCache

#: Per-op table kinds recognised by their columns (all also have ``latency_ms``).
OP_TABLES: dict[str, tuple[str, ...]] = {
    "gemm": ("m", "n", "k"),
    "mla": ("mla_dtype", "kv_len"),
    "attention": ("kv_len", "num_heads", "num_key_value_heads", "head_dim"),
    "moe": ("num_experts", "topk", "inter_size"),
    "communication": ("op", "num_gpus", "message_size_bytes"),
}

#: Whole forward steps measured outside a serving engine (``benchmarks/device_ops.py``: decode_step.csv,
#: prefill_step.csv, which adds ``prefill_tokens``).
STEP_COLUMNS = ("model", "system", "batch_size", "context", "weights", "kv_cache_dtype", "latency_ms")

#: Columns that must hold numbers (empty cells allowed), by table kind.
NUMERIC_COLUMNS: dict[str, tuple[str, ...]] = {
    "serving": ("isl", "osl", "batch_size", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size",
                "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms"),
    "step": ("batch_size", "context", "prefill_tokens", "latency_ms"),
    "ops": ("latency_ms",),
}


@dataclass
class ValidationRun:
    """Result of validating one measurement table.

    Attributes
    ----------
    kind : str
        ``serving``, ``published`` or ``ops:<table>``.
    predictions : pandas.DataFrame
        One row per predicted measurement with predicted, measured and ``*_pct_error`` columns.
    skipped : pandas.DataFrame
        ``row``, ``id``, ``reason`` of every row not predicted.
    summary : dict
        JSON-ready error summary (see :func:`perfmodel.validation.metrics.summarize`); open-loop serving
        rows are summarised apart under ``open_loop``.
    open_loop : pandas.DataFrame
        Serving tables: the open-loop rows predicted by simulation
        (:mod:`perfmodel.validation.predict_openloop`), never part of :attr:`predictions`.
    """

    kind: str
    predictions: pd.DataFrame
    skipped: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)
    open_loop: pd.DataFrame = field(default_factory=pd.DataFrame)


def detect_kind(columns) -> str:
    """Table kind from its columns: ``serving``, ``published``, ``step`` or ``ops:<table>``.

    Raises
    ------
    PerfmodelError
        Columns of no known table.
    """
    cols = set(columns)
    if set(SERVING_COLUMNS) <= cols:
        return "serving"
    if set(PUBLISHED_COLUMNS) <= cols:
        return "published"
    if set(STEP_COLUMNS) <= cols:
        return "step"
    if "latency_ms" in cols:
        for name, needed in OP_TABLES.items():
            if set(needed) <= cols:
                return f"ops:{name}"
    schemas = {"the serving_measured.csv schema": SERVING_COLUMNS,
               "published_end_to_end.csv": PUBLISHED_COLUMNS, "a whole-step table": STEP_COLUMNS,
               **{f"a per-op {k} table": (*v, "latency_ms") for k, v in OP_TABLES.items()}}
    name, needed = min(schemas.items(), key=lambda kv: sum(c not in cols for c in kv[1]))
    missing = [c for c in needed if c not in cols]
    raise PerfmodelError(
        f"unrecognised measurement table: closest is {name}, which misses column(s) "
        f"{', '.join(map(repr, missing))} (found {', '.join(map(str, sorted(cols)[:12]))}"
        f"{', ...' if len(cols) > 12 else ''}); expected serving_measured.csv (needs {list(SERVING_COLUMNS)}), "
        f"published_end_to_end.csv (needs {list(PUBLISHED_COLUMNS)}), a whole-step table "
        f"(needs {list(STEP_COLUMNS)}) or a per-op table with latency_ms")


def serving_problem(df: pd.DataFrame, efficiency="calibrated", measured: bool = True,
                    progress: bool | None = False, kv_policy: KVPolicy = DEFAULT_KV_POLICY
                    ) -> tuple[ServingProblem, pd.DataFrame]:
    """Map, flag and tabulate serving rows; returns the problem and all skipped rows.

    ``measured=False``: rows without measurements (estimates); nothing is flagged or de-duplicated.
    An unknown efficiency profile name is an error here, not a skip reason of every row. ``progress``: a bar
    of the rows tabulated (:mod:`perfmodel.progress`). ``kv_policy``: the KV-cache format assumed per run
    (:class:`~perfmodel.validation.rows.KVPolicy`).
    """
    check_profile(efficiency)
    deployments, skipped = map_rows(df, kv_policy, measured=measured)
    if len(deployments):
        deployments["anomaly"] = flag_anomalies(deployments) if measured else ""
        if measured:
            deployments, duplicates = drop_duplicates(deployments)
            skipped = pd.concat([skipped, duplicates], ignore_index=True)
        deployments = deployments.rename(columns={"model_key": "model"})
    else:
        deployments = deployments.assign(anomaly=pd.Series(dtype=object), mode=pd.Series(dtype=object))
    problem = ServingProblem.build(deployments, efficiency=efficiency, cache=StepModelCache(efficiency),
                                   progress=progress) if len(deployments) else None
    if problem is None:
        return ServingProblem(deployments, skipped), skipped
    return problem, pd.concat([skipped, problem.skipped], ignore_index=True)


#: The last built problems by (content hash of the rows, profile name): comparing engine calibrations
#: on the same rows (``engines="preset"`` vs ``"calibrated"``) then maps and tabulates them once.
_PROBLEMS: dict[tuple[int, str, KVPolicy], tuple[ServingProblem, pd.DataFrame]] = {}
_PROBLEMS_KEPT = 2


def _cached_serving_problem(df: pd.DataFrame, efficiency: Any, progress: bool | None,
                            kv_policy: KVPolicy) -> tuple[ServingProblem, pd.DataFrame]:
    """:func:`serving_problem` of measured rows, reused while the rows, the (named) profile and the KV
    policy are the same."""
    try:
        key = (int(pd.util.hash_pandas_object(df, index=True).sum()), efficiency, kv_policy) \
            if isinstance(efficiency, str) else None
        hash(key)
    except TypeError:   # unhashable cells or policy: build afresh
        key = None
    if key is not None and key in _PROBLEMS:
        return _PROBLEMS[key]
    built = serving_problem(df, efficiency, progress=progress, kv_policy=kv_policy)
    if key is not None:
        while len(_PROBLEMS) >= _PROBLEMS_KEPT:
            _PROBLEMS.pop(next(iter(_PROBLEMS)))
        _PROBLEMS[key] = built
    return built


def validate_serving(df: pd.DataFrame, efficiency="calibrated", engines="calibrated",
                     include_anomalous: bool = False, progress: bool | None = False,
                     kv_policy: KVPolicy = DEFAULT_KV_POLICY) -> ValidationRun:
    """Predict measured serving rows and summarise the errors.

    Closed-loop rows are predicted by the steady state; open-loop rows (``arrival = open``,
    :mod:`perfmodel.validation.arrivals`) by simulation, summarised apart under ``summary["open_loop"]``
    and returned in :attr:`ValidationRun.open_loop` (never in the closed-loop figures).

    Parameters
    ----------
    df : pandas.DataFrame
        Rows in the ``serving_measured.csv`` schema.
    efficiency : str | Efficiency
        Per-op efficiency profile (``calibrated`` or ``datasheet``).
    engines : str | mapping
        Engine calibration profile name or path (``calibrated``; ``preset`` = uncalibrated presets),
        or a mapping backend -> :class:`~perfmodel.engine.calibration.EngineCalibration`.
    include_anomalous : bool
        Count rows flagged anomalous in the error figures.
    progress : bool | None
        A bar of the rows tabulated (:mod:`perfmodel.progress`: True always, None only when stderr is a
        terminal, False never).
    kv_policy : KVPolicy
        KV-cache format assumed per run (closed-loop rows; default
        :data:`~perfmodel.validation.rows.DEFAULT_KV_POLICY`).
    """
    problem, skipped = _cached_serving_problem(df, efficiency, progress, kv_policy)
    skipped = skipped[skipped["reason"] != OPEN_LOOP_SKIP]
    n_open = int(open_loop_mask(df).sum())
    calibrations, engines_used = _engine_calibrations(engines)
    predictions = add_errors(problem.predictions(calibrations)) if len(problem.rows) else \
        problem.rows.assign(tpot_pct_error=pd.Series(dtype=float), ttft_pct_error=pd.Series(dtype=float))
    summary = summarize(predictions, skipped, rows=len(df) - n_open, include_anomalous=include_anomalous)
    open_predictions = pd.DataFrame()
    if n_open:
        open_predictions, summary["open_loop"] = validate_open_loop(df, efficiency, calibrations, progress)
    summary["efficiency"] = str(getattr(efficiency, "name", efficiency))
    summary["efficiency_profiles"] = {hw: profile_for(hw, efficiency).name
                                      for hw in sorted(set(problem.rows.get("hardware", [])))}
    summary["engines"] = engines_used
    fitted_with = {c.fit.get("efficiency_profile") for c in calibrations.values() if c.fit} - {None}
    if fitted_with and summary["efficiency"] not in fitted_with:
        summary["note"] = (f"the engine parameters were fitted with efficiency={sorted(fitted_with)[0]!r}; "
                           f"with efficiency={summary['efficiency']!r} they are used outside their fit")
    return ValidationRun("serving", predictions, skipped, summary, open_predictions)


def validate_open_loop(df: pd.DataFrame, efficiency, calibrations, progress: bool | None = False
                       ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Simulate the open-loop rows of ``df`` (:mod:`perfmodel.validation.predict_openloop`).

    Returns the predictions and their own summary (``rows`` counts the open-loop rows only).
    """
    deployments, skipped = map_rows(df, arrival="open")
    deployments = deployments.rename(columns={"model_key": "model"})
    if len(deployments):
        predictions, not_simulated = predict_open_loop(deployments, engines_under(calibrations),
                                                       StepModelCache(efficiency), progress)
    else:   # every open-loop row skipped while mapping: no predictions, the error columns still there
        predictions, not_simulated = add_errors(deployments), skipped.iloc[:0]
    skipped = pd.concat([skipped, not_simulated], ignore_index=True)
    return predictions, open_loop_summary(predictions, skipped, int(open_loop_mask(df).sum()))


def _engine_calibrations(engines) -> tuple[dict, str]:
    """Engine calibrations and a label saying which were used (visible in the summary)."""
    if not isinstance(engines, str):
        return dict(engines), "custom"
    try:
        return load_profile(engines), engines
    except UnknownNameError:
        if engines != "calibrated":
            raise
        return load_profile("preset"), "preset (no calibrated engine profile shipped)"


def published_summary(predictions: pd.DataFrame, skipped: pd.DataFrame, rows: int) -> dict[str, Any]:
    """Error summary of published rows: per metric, and per metric by hardware and model."""
    reasons = skipped["reason"].astype(str)
    out: dict[str, Any] = {"rows": rows, "predicted": int(predictions["row"].nunique()) if len(predictions) else 0,
                           "skipped": int(len(skipped)),
                           "skipped_reasons": {k: int(v) for k, v in
                                               reasons.str.split(":", n=1).str[0].value_counts().items()}}
    for metric, sub in (predictions.groupby("metric") if len(predictions) else []):
        out[metric] = error_stats(sub["pct_error"])
        out.setdefault("by", {})[metric] = {
            g: {str(k): error_stats(s["pct_error"]) for k, s in sub.groupby(g)} for g in ("hardware", "model")}
    return out


def validate_ops(df: pd.DataFrame, efficiency="calibrated") -> ValidationRun:
    """Predict every row of a per-op table (:mod:`perfmodel.calibration.op_validation`).

    The predictions frame holds the table's columns plus ``predicted_ms``, ``error_pct`` (100 (p/m - 1))
    and ``split`` (the deterministic shape split the profiles were fitted on: ``test`` shapes are held
    out of the fit).
    """
    from ..calibration import op_validation
    from ..calibration.ops_data import table_kind, tidy

    try:
        kind = table_kind(df)
        bad = invalid_op_rows(df)
        good = df[bad == ""].copy()
        for col in (c for c in OP_NUMERIC if c in good and good[c].dtype == object):
            good[col] = pd.to_numeric(good[col])
        predicted = op_validation.predict_table(tidy(good, kind), efficiency)
    except ConfigError as exc:
        raise PerfmodelError(f"--data: {exc}") from None
    summary = op_validation.summarize(predicted)
    ok = (predicted["skip_reason"] == "").to_numpy()
    rows = predicted.assign(predicted_ms=predicted["predicted_s"] * 1e3,
                            error_pct=100.0 * (predicted["predicted_s"] / predicted["latency_s"] - 1.0))
    keep = [*df.columns, "predicted_ms", "error_pct", *(["split"] if "split" not in df.columns else [])]
    skipped = pd.concat([pd.DataFrame({"row": df.index[bad != ""], "id": kind, "reason": bad[bad != ""]}),
                         pd.DataFrame({"row": predicted.index[~ok], "id": predicted["kind"][~ok],
                                       "reason": predicted["skip_reason"][~ok]})], ignore_index=True)
    n_bad = int((bad != "").sum())
    if n_bad:
        summary["rows"] += n_bad
        summary["skipped"] += n_bad
        for reason, count in pd.Series(bad[bad != ""]).value_counts().items():
            summary["skipped_reasons"][str(reason)] = summary["skipped_reasons"].get(str(reason), 0) + int(count)
    return ValidationRun(f"ops:{summary['table']}", rows.loc[ok, keep], skipped, summary)


#: Numeric columns of the per-op tables (shape and the measurement).
OP_NUMERIC = ("m", "n", "k", "batch_size", "isl", "step", "kv_len", "num_heads", "num_key_value_heads", "head_dim",
              "window_size", "num_gpus", "message_size_bytes", "num_tokens", "hidden_size", "inter_size", "topk",
              "num_experts", "moe_tp_size", "moe_ep_size", "latency_ms")


def _plain(value):
    """A cell as a plain Python value (numpy scalars print as np.float64(...) otherwise)."""
    return value.item() if isinstance(value, np.generic) else value


def _not_allowed(name: str, raw) -> str:
    """Reason naming a measurement-table field whose value is invalid: latency must be > 0, the rest >= 0."""
    allowed = "a number > 0" if name == "latency_ms" else "a number >= 0"
    return f"{name}={_plain(raw)!r} is not {allowed}"


def invalid_op_rows(df: pd.DataFrame) -> np.ndarray:
    """Per row, '' or why it cannot be predicted: the first numeric field that is not a number >= 0
    (``latency_ms`` > 0), named with its value."""
    why = np.full(len(df), "", dtype=object)
    for col in (c for c in OP_NUMERIC if c in df.columns):
        values = pd.to_numeric(df[col], errors="coerce")
        bad = values.isna() | (values <= 0 if col == "latency_ms" else values < 0)
        for i in np.flatnonzero(bad.to_numpy() & (why == "")):
            why[i] = _not_allowed(col, df[col].iloc[i])
    return why


def step_shape(row: pd.Series) -> tuple[np.ndarray | None, str]:
    """``[batch_size, context + 1, prefill_tokens, latency_ms]`` of one step row, or None and the reason.

    ``context`` is the cached tokens before the step; the step model's context counts the new token too,
    hence + 1 for decoding sequences. A missing or empty ``prefill_tokens`` is 0.
    """
    values = {}
    for name, allow_missing in (("batch_size", False), ("context", False), ("prefill_tokens", True),
                                 ("latency_ms", False)):
        raw = row.get(name, np.nan)
        value = pd.to_numeric(pd.Series([raw]), errors="coerce").iloc[0]
        if pd.isna(value) and allow_missing and (pd.isna(raw) or str(raw).strip() == ""):
            value = 0.0
        if not np.isfinite(value) or value < 0 or (name == "latency_ms" and value <= 0):
            return None, _not_allowed(name, raw)
        values[name] = float(value)
    if values["batch_size"] == 0 and values["prefill_tokens"] == 0:
        return None, "no work: batch_size = prefill_tokens = 0"
    context = values["context"] + (1.0 if values["batch_size"] > 0 else 0.0)
    return np.array([values["batch_size"], context, values["prefill_tokens"], values["latency_ms"]]), ""


def validate_steps(df: pd.DataFrame, efficiency="calibrated", progress: bool | None = False) -> ValidationRun:
    """Predict measured whole forward steps with :meth:`perfmodel.core.step.StepModel.step_time`.

    Each row is one step on one accelerator (TP 1) with no serving engine around it (the prediction
    has no engine overheads): ``batch_size`` sequences decoding one token each after ``context``
    cached tokens, plus, where the table has ``prefill_tokens``, one prompt of that many tokens
    prefilled in the same step; ``latency_ms`` [ms] is the measured step time.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows with :data:`STEP_COLUMNS` (``prefill_tokens`` optional).
    efficiency : str or Efficiency
        Per-op efficiency profile of the step model.
    progress : bool | None
        A bar of the rows predicted (:mod:`perfmodel.progress`).

    Returns
    -------
    ValidationRun
        Predictions: the table's columns plus ``predicted_ms`` [ms] and ``error_pct`` (100 (p/m - 1));
        rows that cannot be predicted are skipped with the reason (unknown system or model, a field
        that is not a valid number, a step with no work).
    """
    check_profile(efficiency)
    rows, skipped, models = [], [], {}
    with Bar(len(df), "validate", progress, unit="row") as bar:
        for i, r in df.iterrows():
            _predict_step(i, r, efficiency, models, rows, skipped)
            bar.update()
    preds = pd.DataFrame(rows, columns=[*df.columns, "predicted_ms", "error_pct"])
    skipped = pd.DataFrame(skipped, columns=["row", "id", "reason"])

    def stats(errors) -> dict:
        st = error_stats(errors)
        return {"rows": st.pop("n"), **{k: None if v is None else round(v, 2) for k, v in st.items()}}
    groups = ("system", "model", "batch_size", "context", "prefill_tokens")
    summary = {"table": "step", "rows": int(len(df)), "predicted": int(len(preds)), "skipped": int(len(skipped)),
               "skipped_reasons": {str(k): int(v) for k, v in skipped["reason"].value_counts().items()},
               "latency": stats(preds["error_pct"].to_numpy(float)),
               "by": {col: {str(k): stats(g["error_pct"].to_numpy(float)) for k, g in preds.groupby(col)}
                      for col in groups if col in preds and preds[col].nunique() > 1} if len(preds) else {}}
    return ValidationRun("step", preds, skipped, summary)


def _predict_step(i: Any, r: pd.Series, efficiency: Any, models: dict, rows: list, skipped: list) -> None:
    """Predict one whole-step row into ``rows``, or say in ``skipped`` why it cannot be."""
    from ..core.step import StepModel

    hw = hardware_id(str(r["system"]))
    if hw is None:
        skipped.append({"row": i, "id": r["model"], "reason": f"unknown system {r['system']}"})
        return
    shape, why = step_shape(r)
    if shape is None:
        skipped.append({"row": i, "id": r["model"], "reason": why})
        return
    key = (str(r["model"]), hw, str(r["weights"]), str(r["kv_cache_dtype"]))
    try:
        if key not in models:
            models[key] = StepModel(resolve_model(key[0]), hw, weights=key[2], kv_cache=key[3],
                                    efficiency=efficiency)
    except PerfmodelError as exc:
        skipped.append({"row": i, "id": r["model"], "reason": str(exc).splitlines()[0]})
        return
    t = float(models[key].step_time(*shape[:3])) * 1e3
    rows.append({**r.to_dict(), "predicted_ms": t, "error_pct": 100.0 * (t / shape[3] - 1.0)})


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV (plain or compressed) as strings-preserving where the schema needs it.

    Raises
    ------
    SpecError
        The file cannot be read as a table with rows (see :func:`perfmodel.fileio.read_csv`), or a
        numeric column of its schema holds text (column, row and value named).
    """
    df = fileio.read_csv(path, "measurement table")
    if set(PUBLISHED_COLUMNS) <= set(df.columns):
        return fileio.read_csv(path, "measurement table", keep_default_na=False, dtype=str)
    try:
        kind = detect_kind(df.columns)
    except PerfmodelError as exc:
        raise PerfmodelError(f"{path}: {exc}") from None
    return fileio.check_numeric(df, NUMERIC_COLUMNS.get(kind.split(":")[0], ()), path)


def stage_reports(folder: Path) -> list[Path]:
    """The ``stage_N_lifecycle_metrics.json`` files of an inference-perf report folder, by stage N.

    Raises
    ------
    PerfmodelError
        The folder holds none.
    """
    found = [(int(m.group(1)), f) for f in folder.iterdir()
             if (m := re.fullmatch(r"stage_(\d+)_lifecycle_metrics\.json", f.name))]
    if not found:
        raise PerfmodelError(f"{folder} is a directory: a folder given as --data must be an inference-perf report folder with "
                             "stage_N_lifecycle_metrics.json files; found none")
    return [f for _, f in sorted(found)]


def validate_file(path: str | Path, efficiency="calibrated", engines="calibrated",
                  deployment: MeasuredDeployment | None = None, include_anomalous: bool = False,
                  progress: bool | None = False) -> ValidationRun:
    """Validate any supported measurement file (see module docstring).

    Parameters
    ----------
    path : str | Path
        CSV table, a benchmark result JSON or an inference-perf report folder (its
        ``stage_N_lifecycle_metrics.json`` files, one row per stage; both need ``deployment``).
    efficiency, engines, include_anomalous
        See :func:`validate_serving`.
    progress : bool | None
        A bar of the rows predicted: serving rows and whole-step rows (per-op and published tables are
        one vectorised pass each and draw none).
    deployment : MeasuredDeployment, optional
        Hardware / engine / layout of a benchmark result JSON.
    """
    p = Path(path)
    if p.is_dir():
        stages = stage_reports(p)
        if deployment is None:
            raise PerfmodelError(f"{p}: an inference-perf report folder needs the deployment it ran on: "
                                 "--system, --backend, --model, --tp ...")
        return validate_serving(import_results(stages, deployment), efficiency, engines, include_anomalous,
                                progress)
    if p.suffix.lower() == ".json":
        if deployment is None:
            data = fileio.read_json(p)
            if not isinstance(data, dict):
                raise PerfmodelError(f"{p}: expected a benchmark result JSON object, got {type(data).__name__}")
            raise PerfmodelError(f"{p}: a benchmark result JSON ({'keys: ' + ', '.join(list(data)[:5])}) "
                                 f"needs the deployment it ran on: --system, --backend, --tp ...")
        return validate_serving(import_results([p], deployment), efficiency, engines, include_anomalous,
                                progress)
    df = read_table(p)
    kind = detect_kind(df.columns)
    if kind == "serving":
        return validate_serving(df, efficiency, engines, include_anomalous, progress)
    if kind == "step":
        return validate_steps(df, efficiency, progress)
    if kind == "published":
        preds, skipped = validate_published(df, efficiency)
        return ValidationRun(kind, preds, skipped, published_summary(preds, skipped, len(df)))
    return validate_ops(df, efficiency)
