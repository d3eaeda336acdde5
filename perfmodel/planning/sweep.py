"""Cartesian sweeps of the analytic model: hardware × model × layout × precision × load × lengths.

:func:`sweep` groups the product by what a :class:`~perfmodel.core.step.StepModel` depends on
(model, hardware, tp, pp, ep, dp_attention, precision) and makes **one** vectorised
:func:`~perfmodel.core.predict.predict` call per group over all (batch, ISL, OSL) points; data-parallel
replicas (``dp``) only scale the group's results. A layout that cannot run (TP not dividing the heads,
EP on a dense model, a format the chip lacks) is kept as rows with ``valid = False`` and the reason,
never an exception, so one bad corner does not hide the rest of the table.

The load of a row is ``batch`` (sequences of the static batch on each replica) and ``sequences`` =
dp · batch (all replicas; not ``concurrency``, which names closed-loop clients in the glossary).
Metrics per row (SI units; see :mod:`perfmodel.core.predict` for their definitions, static batch, no
queueing): ``ttft_s``, ``tpot_s``, ``e2e_s``, ``per_user_tokens_per_s`` = 1/TPOT,
``output_tokens_per_s`` = dp · batch · OSL / E2E (all replicas), ``output_tokens_per_s_per_device``,
``power_w`` and ``output_tokens_per_s_per_mw`` on the stated ``power_basis``, and with a price or a
:class:`~perfmodel.planning.cost.TotalCost` the hourly cost, USD per million tokens and
``output_tokens_per_usd`` = 3600 · output tokens/s / (USD/h).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.predict import predict
from ..core.step import StepModel
from ..errors import ConfigError, PerfmodelError
from ..formats import DEPRECATED, format_list, renamed, resolve_formats
from ..hardware import load_hardware
from ..modelspec import ModelSpec, load_model
from ..precision import Precision
from ..progress import Bar
from ._frame import FrameBuilder
from .cost import (
    HOUR,
    PowerBasis,
    TotalCost,
    power_basis,
    tokens_per_s_per_mw,
    usd_per_hour,
    usd_per_million_tokens,
)

if TYPE_CHECKING:   # pandas is imported where a frame is made (perfmodel.planning imports this module)
    import pandas as pd

#: Column order of :func:`sweep` results.
COLUMNS = [
    "model", "hardware", "tp", "pp", "ep", "dp_attention", "dp", "devices", "precision", "efficiency",
    "batch", "sequences", "isl", "osl", "ttft_s", "tpot_s", "e2e_s", "per_user_tokens_per_s",
    "output_tokens_per_s", "input_tokens_per_s", "output_tokens_per_s_per_device", "fits", "valid", "reason",
    "prefill_bound", "decode_bound", "memory_used_bytes_per_device", "power_w", "output_tokens_per_s_per_mw",
    "power_basis", "usd_per_hour", "usd_per_m_input", "usd_per_m_output", "usd_per_m_output_all_in",
    "output_tokens_per_usd", "basis",
]


def _seq(name: str, value: Any) -> list:
    if value is None:
        return [None]
    if isinstance(value, (str, Mapping, ModelSpec)) or not isinstance(value, Iterable):
        return [value]
    out = list(value)
    if not out:
        raise ConfigError(f"{name}: must not be empty")
    return out


def _precision_kwargs(p: Any, kv_cache: str | None, spec: ModelSpec) -> dict[str, Any]:
    """Formats of one sweep entry, the default rule (:mod:`perfmodel.formats`) filling what is not given."""
    if isinstance(p, Mapping):
        unknown = set(p) - {"weights", "activations", "kv_cache"}
        if unknown:
            raise ConfigError(f"weights: unknown keys {sorted(unknown)}; use weights, activations, kv_cache")
        w, a, kv = p.get("weights"), p.get("activations"), p.get("kv_cache", kv_cache)
    else:
        w, a, kv = (None if p is None else str(p)), None, kv_cache
    try:
        w, kv = resolve_formats(spec, spec, w, kv)
    except PerfmodelError:  # an unknown format: StepModel names it, the row says why
        pass
    return {"weights": w, "activations": a, "kv_cache": kv}


def _precision_label(pkw: dict[str, Any]) -> str:
    try:
        return Precision.of(**pkw).label()
    except PerfmodelError:
        return f"w:{pkw['weights']} a:{pkw['activations']} kv:{pkw['kv_cache']}"


def _per_hardware(value: Any, hw_id: str) -> Any:
    """A per-hardware input: a mapping keyed by hardware id, or one value for all."""
    if isinstance(value, Mapping):
        return value.get(hw_id)
    return value


def _power(hw: Any, kind: str, tdp: Any, idle: Any, utilisation: float) -> tuple[PowerBasis | None, str]:
    """Power basis of a hardware spec, inputs keyed by its id; an unavailable basis is described, not raised."""
    try:
        pb = power_basis(hw, kind, tdp=_per_hardware(tdp, hw.id), idle=_per_hardware(idle, hw.id),
                         utilisation=utilisation)
    except PerfmodelError as exc:
        return None, f"unavailable: {exc}"
    return pb, pb.describe()


def _grid(batch, sequences, isl, osl) -> tuple[np.ndarray, ...]:
    if (batch is None) == (sequences is None):
        raise ConfigError("sweep: give exactly one of batch= (sequences per replica) or sequences= "
                          "(sequences over all dp replicas)")
    load = np.atleast_1d(np.asarray(batch if batch is not None else sequences, dtype=float))
    g = np.meshgrid(load, np.atleast_1d(np.asarray(isl, dtype=float)),
                    np.atleast_1d(np.asarray(osl, dtype=float)), indexing="ij")
    return tuple(x.ravel() for x in g)


def sweep(models: Any, hardware: Any, *, tp: Any = 1, pp: Any = 1, ep: Any = 1, dp_attention: Any = 1,
          dp: Any = 1, weights: Any = None, kv_cache: str | None = None, batch: Any = None,
          sequences: Any = None, isl: Any = 1024, osl: Any = 128, efficiency: str = "calibrated",
          reserve: float = 0.10, power: str = "tdp", tdp: Any = None, idle: Any = None,
          utilisation: float = 1.0, price: Any = None, tco: TotalCost | None = None,
          progress: bool | None = False, precision: Any = DEPRECATED,
          concurrency: Any = DEPRECATED) -> pd.DataFrame:
    """Evaluate the analytic model over the cartesian product of the arguments.

    Parameters
    ----------
    models, hardware : str or sequence
        Model ids and accelerator / system ids or hardware YAML paths (``"my-gpu.yaml"``); unknown
        names raise (a typo is not a sweep result).
    tp, pp, ep, dp_attention, dp : int or sequence of int
        Layouts to try; ``dp`` is the number of data-parallel replicas.
    weights : str, mapping or sequence, optional
        Weight formats (``"fp8"``, ``"fp8,bf16"``, ``["fp8", "bf16"]``) or mappings
        ``{"weights": "fp8", "kv_cache": "fp8"}``; default: the checkpoint's own format
        (:mod:`perfmodel.formats`).
    kv_cache : str, optional
        KV-cache format where an entry does not set one (default: fp8 for FP8/FP4 weights, else bf16).
    batch, sequences : int or array_like
        Exactly one: sequences per replica, or sequences over all replicas (``batch = sequences /
        dp``; points where dp does not divide it are flagged invalid).
    isl, osl : int or array_like
        Prompt and output lengths [tokens].
    efficiency : str
        ``calibrated`` or ``datasheet``.
    reserve : float
        Memory fraction left unused when checking fit.
    power : {"tdp", "utilisation", "system"}
        Power basis (:mod:`perfmodel.planning.cost`); ``tdp``, ``idle`` (per device) and
        ``utilisation`` are inputs, a mapping ``{hardware id: value}`` or one value for all.
    price : str, float or mapping, optional
        USD per device-hour (``"2.5/h"``), or a mapping by hardware id.
    tco : TotalCost, optional
        Total-cost model used where no price is given (needs a power basis).
    progress : bool or None
        A bar of the (model, hardware, precision, layout) groups done (:mod:`perfmodel.progress`: True
        always, None only when stderr is a terminal, False never).
    precision :
        Deprecated old name of ``weights`` (warns).
    concurrency :
        Deprecated old name of ``sequences`` (warns; ``concurrency`` names closed-loop clients).

    Returns
    -------
    pandas.DataFrame
        One row per point, columns :data:`COLUMNS` (SI units, categorical strings). ``valid`` is False
        for layouts that cannot run (``reason`` says why; metrics NaN); ``fits`` is False also when
        weights + KV cache exceed memory (metrics still computed).

    Examples
    --------
    >>> df = sweep("llama-3.1-8b", ["h100-sxm", "h200-sxm"], tp=[1, 3], batch=[1, 16], isl=2048, osl=256)
    >>> sorted(df.loc[~df.valid, "tp"].unique())
    [3]
    """
    weights = renamed("weights", weights, "precision", precision, "sweep")
    sequences = renamed("sequences", sequences, "concurrency", concurrency, "sweep")
    formats = format_list(weights) if weights is None or isinstance(weights, str) else _seq("weights", weights)
    model_specs = [m if isinstance(m, ModelSpec) else load_model(m) for m in _seq("models", models)]
    # resolve each name once (ids, aliases, or user YAML files) and pass the spec itself on
    hw_specs = {spec.id: spec for spec in (load_hardware(h) for h in _seq("hardware", hardware))}
    load, isl_v, osl_v = _grid(batch, sequences, isl, osl)
    out = FrameBuilder(COLUMNS)
    layouts = list(itertools.product(_seq("tp", tp), _seq("pp", pp), _seq("ep", ep),
                                     _seq("dp_attention", dp_attention)))
    dps = [int(d) for d in _seq("dp", dp)]
    groups = list(itertools.product(model_specs, hw_specs, formats, layouts))
    opts = {"kv_cache": kv_cache, "efficiency": efficiency, "reserve": reserve, "power": power, "tdp": tdp,
            "idle": idle, "utilisation": utilisation, "price": price, "tco": tco}
    with Bar(len(groups), "sweep", progress, unit="config") as bar:
        for mdl, hw, prec, layout in groups:
            _sweep_group(out, mdl, hw_specs[hw], prec, layout, dps, (load, isl_v, osl_v),
                         sequences is not None, opts)
            bar.update()
    return out.build()


def _sweep_group(out: FrameBuilder, mdl: ModelSpec, hw_spec: Any, prec: Any, layout: tuple, dps: list[int],
                 grid: tuple[np.ndarray, ...], is_total: bool, opts: dict[str, Any]) -> None:
    """Rows of one (model, hardware, precision, layout) group: one vectorised predict per batch split."""
    t, p, e, a = layout
    load, isl_v, osl_v = grid
    n = load.size
    pb, pdesc = _power(hw_spec, opts["power"], opts["tdp"], opts["idle"], opts["utilisation"])
    pkw = _precision_kwargs(prec, opts["kv_cache"], mdl)
    ident = {"model": mdl.id, "hardware": hw_spec.id, "tp": t, "pp": p, "ep": e, "dp_attention": a,
             "efficiency": opts["efficiency"], "power_basis": pdesc}
    try:
        sm = StepModel(mdl, hw_spec, tp=int(t), pp=int(p), ep=int(e), dp_attention=int(a),
                       efficiency=opts["efficiency"], reserve=opts["reserve"], **pkw)
    except PerfmodelError as exc:
        label = _precision_label(pkw)
        for d in dps:
            _add_invalid(out, n, {**ident, "dp": d, "precision": label}, load, isl_v, osl_v, is_total, str(exc))
        return
    cache: dict[bytes, Any] = {}
    for d in dps:
        b = load / d if is_total else load
        whole = b == np.round(b)
        bb = np.where(whole & (b >= 1), b, 1.0)
        key = bb.tobytes()
        if key not in cache:
            cache[key] = predict(None, None, isl=isl_v, osl=osl_v, batch=bb, step_model=sm)
        _add_valid(out, {**ident, "dp": d}, cache[key], b, whole & (b >= 1), d, pb, opts["price"], opts["tco"])


def _nan(n: int) -> np.ndarray:
    return np.full(n, np.nan)


def _add_invalid(out: FrameBuilder, n: int, ident: dict, load, isl, osl, is_total: bool, reason: str) -> None:
    d = ident["dp"]
    batch = load / d if is_total else load
    nan = _nan(n)
    out.add(n, {**ident, "devices": np.nan, "batch": batch, "sequences": batch * d, "isl": isl, "osl": osl,
                **{c: nan for c in ("ttft_s", "tpot_s", "e2e_s", "per_user_tokens_per_s", "output_tokens_per_s",
                                    "input_tokens_per_s", "output_tokens_per_s_per_device",
                                    "memory_used_bytes_per_device", "power_w", "output_tokens_per_s_per_mw",
                                    "usd_per_hour", "usd_per_m_input", "usd_per_m_output",
                                    "usd_per_m_output_all_in", "output_tokens_per_usd")},
                "fits": np.zeros(n, bool), "valid": np.zeros(n, bool), "reason": reason,
                "prefill_bound": "", "decode_bound": "", "basis": "invalid"})


def _add_valid(out: FrameBuilder, ident: dict, pred, batch: np.ndarray, ok: np.ndarray, dp: int,
               pb: PowerBasis | None, price: Any, tco: TotalCost | None) -> None:
    n = batch.size
    devices = pred.devices * dp
    bad = ~ok
    def masked(x: np.ndarray) -> np.ndarray:
        return np.where(bad, np.nan, x) if bad.any() else x
    out_tps = masked(pred.output_tokens_per_s * dp)
    in_tps = masked(pred.batch * pred.isl / pred.e2e_s * dp)
    reason = pred.fit_reason if not pred.fits.all() else ""
    if bad.any():
        reason = np.where(bad, f"sequences not a positive multiple of dp={dp}", reason)
    power_w = pb.power_w(devices) if pb is not None else np.nan
    cost = _cost(devices, ident["hardware"], pb, price, tco, in_tps, out_tps, pred.ttft_s / pred.e2e_s)
    out.add(n, {**ident, "devices": devices, "precision": pred.config["precision"], "batch": batch,
                "sequences": batch * dp, "isl": pred.isl, "osl": pred.osl, "ttft_s": masked(pred.ttft_s),
                "tpot_s": masked(pred.tpot_s), "e2e_s": masked(pred.e2e_s),
                "per_user_tokens_per_s": masked(pred.per_user_tokens_per_s), "output_tokens_per_s": out_tps,
                "input_tokens_per_s": in_tps, "output_tokens_per_s_per_device": out_tps / devices,
                "fits": pred.fits & ok, "valid": ok, "reason": reason, "prefill_bound": pred.prefill_bound,
                "decode_bound": pred.decode_bound,
                "memory_used_bytes_per_device": pred.memory_used_bytes_per_device,
                "power_w": power_w, "output_tokens_per_s_per_mw": tokens_per_s_per_mw(out_tps, power_w), **cost,
                "basis": pred.config["basis"]})


def _cost(devices: int, hw: str, pb: PowerBasis | None, price: Any, tco: TotalCost | None,
          in_tps: np.ndarray, out_tps: np.ndarray, share: np.ndarray) -> dict[str, Any]:
    p = _per_hardware(price, hw)
    if p is None and (tco is None or pb is None):
        return {"usd_per_hour": np.nan, "usd_per_m_input": np.nan, "usd_per_m_output": np.nan,
                "usd_per_m_output_all_in": np.nan, "output_tokens_per_usd": np.nan}
    per_dev_w = float(pb.power_w(1)) if pb is not None else None
    hourly = float(usd_per_hour(devices, price=p, tco=tco, device_power_w=per_dev_w))
    return {"usd_per_hour": hourly, **usd_per_million_tokens(hourly, in_tps, out_tps, share),
            "output_tokens_per_usd": out_tps * HOUR / hourly}


def sweep_deployments(deployments: Any, *, batch: Any = 1, isl: Any = 1024, osl: Any = 128) -> pd.DataFrame:
    """Evaluate placements (aggregated, P/D-disaggregated, attention–FFN split) over a load grid.

    Parameters
    ----------
    deployments : mapping name -> deployment, or sequence of deployments
        Deployment YAML paths, mappings or :class:`perfmodel.deployment.Deployment` objects.
    batch, isl, osl : int or array_like
        Cartesian product of sequences per decode instance, prompt and output lengths.

    Returns
    -------
    pandas.DataFrame
        :meth:`perfmodel.deployment.DeploymentPrediction.to_dataframe` rows (one vectorised
        :func:`~perfmodel.deployment.predict_deployment` call per deployment) with a ``deployment``
        column; a deployment that cannot be built gives one row with ``valid`` False and the reason.
    """
    import pandas as pd

    from ..deployment import predict_deployment

    items = deployments.items() if isinstance(deployments, Mapping) else (
        (str(k), d) for k, d in enumerate(_seq("deployments", deployments)))
    b, i, o = _grid(batch, None, isl, osl)
    frames = []
    for name, dep in items:
        try:
            df = predict_deployment(dep, isl=i, osl=o, batch=b).to_dataframe()
            df.insert(0, "deployment", name)
            df["valid"], df["reason"] = True, df["fit_reason"]
        except PerfmodelError as exc:
            df = pd.DataFrame({"deployment": [name], "valid": [False], "fits": [False], "reason": [str(exc)]})
        frames.append(df)
    return pd.concat(frames, ignore_index=True)
