"""Layout search: the fastest (tp, pp, replicas) that fits a chip count.

For ``devices`` chips every layout with tp·pp·replicas = devices is tried, tp a divisor of the
attention heads (on a dataflow machine also a multiple of them that divides heads × head_dim),
pp ≤ layers; a layout is kept when its most loaded
chip fits at the requested batch and lengths. The fastest is the one with the highest per-user
speed (1/TPOT); ties go to the higher throughput. GPU layouts (``perfmodel.StepModel``) are searched
the same way over tp·pp by :func:`search_layouts` with ``execution="gpu"``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..modelspec import load_model


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _tp_ok(model, tp: int, kind: str) -> bool:
    heads = model.num_attention_heads
    if heads % tp == 0:
        return True
    # a compiled schedule may also cut heads' width (see perfmodel.dataflow.step.dataflow_parallel)
    return kind == "dataflow" and tp % heads == 0 and (heads * model.head_dim) % tp == 0


def _candidates(model, devices: int, max_tp: int | None, kind: str) -> list[tuple[int, int, int]]:
    out = []
    for tp in _divisors(devices):
        if not _tp_ok(model, tp, kind) or (max_tp is not None and tp > max_tp):
            continue
        for pp in _divisors(devices // tp):
            if pp > model.num_layers:
                continue
            out.append((tp, pp, devices // (tp * pp)))
    return out


def search_layouts(model, hardware: str, devices: int, isl: int = 1024, osl: int = 128, batch: int = 1,
                   weights: str | None = None, activations: str | None = None, kv_cache: str | None = None,
                   max_tp: int | None = None, execution: str = "auto", efficiency="calibrated",
                   stream_efficiency: float | None = None) -> pd.DataFrame:
    """Every layout of ``devices`` chips at one operating point, fastest first.

    Parameters
    ----------
    model : str
    hardware : str
        A dataflow architecture (or its accelerator id), or any accelerator for ``execution="gpu"``.
    devices : int
        Chips to use (all of them: replicas = devices / (tp·pp)).
    isl, osl, batch : int
        One operating point; ``batch`` sequences per replica.
    max_tp : int, optional
        Upper bound on tp.
    execution : "auto" | "dataflow" | "gpu"
        ``auto``: dataflow when ``hardware`` has a dataflow architecture.
    efficiency :
        GPU step model only (as in :func:`perfmodel.predict`).
    stream_efficiency : float, optional
        Dataflow only: override of the architecture's fitted η.

    Returns
    -------
    pandas.DataFrame
        Columns tp, pp, replicas, fits, tpot_s, per_user_tokens_per_s, output_tokens_per_s,
        fit_reason; fitting layouts first, then by per-user speed.
    """
    from .arch import is_dataflow

    if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
        raise ConfigError(f"devices: must be a positive integer, got {devices!r}")
    spec = load_model(model)
    kind = ("dataflow" if is_dataflow(hardware) else "gpu") if execution == "auto" else execution
    if kind not in ("dataflow", "gpu"):
        raise ConfigError(f"execution: expected 'auto', 'dataflow' or 'gpu', got {execution!r}")
    rows = []
    for tp, pp, reps in _candidates(spec, devices, max_tp, kind):
        try:
            rows.append({"tp": tp, "pp": pp, "replicas": reps,
                         **_evaluate(kind, spec, hardware, tp, pp, reps, isl, osl, batch, weights,
                                     activations, kv_cache, efficiency, stream_efficiency)})
        except ConfigError:
            continue  # e.g. a tp that the experts do not divide
    if not rows:
        raise ConfigError(f"no layout of {devices} chips is valid for {spec.id}")
    df = pd.DataFrame(rows)
    return df.sort_values(["fits", "per_user_tokens_per_s", "output_tokens_per_s"],
                          ascending=[False, False, False]).reset_index(drop=True)


def _evaluate(kind, spec, hardware, tp, pp, reps, isl, osl, batch, weights, activations, kv_cache, eff,
              eta=None):
    if kind == "dataflow":
        from .step import predict_dataflow

        p = predict_dataflow(spec, hardware, tp=tp, pp=pp, isl=isl, osl=osl, batch=batch, weights=weights,
                             activations=activations, kv_cache=kv_cache, replicas=reps, stream_efficiency=eta)
        c = p.columns
        return {"fits": bool(np.ravel(c["fits"])[0]), "tpot_s": float(np.ravel(c["tpot_s"])[0]),
                "per_user_tokens_per_s": float(np.ravel(c["per_user_tokens_per_s"])[0]),
                "output_tokens_per_s": float(np.ravel(c["output_tokens_per_s"])[0]),
                "fit_reason": str(np.ravel(c["fit_reason"])[0])}
    from ..core.predict import predict

    p = predict(spec, hardware, tp=tp, pp=pp, isl=isl, osl=osl, batch=batch, weights=weights,
                activations=activations, kv_cache=kv_cache, efficiency=eff)
    df = p.to_dataframe().iloc[0]
    return {"fits": bool(df["fits"]), "tpot_s": float(df["tpot_s"]),
            "per_user_tokens_per_s": 1.0 / float(df["tpot_s"]),
            "output_tokens_per_s": reps * float(df["output_tokens_per_s"]),
            "fit_reason": str(df.get("fit_reason", ""))}


def best_layout(model, hardware: str, devices: int, **kwargs) -> dict:
    """The fastest layout of ``devices`` chips that fits (see :func:`search_layouts`).

    Raises
    ------
    ConfigError
        No layout fits; the message gives the closest one's reason.
    """
    df = search_layouts(model, hardware, devices, **kwargs)
    best = df.iloc[0]
    if not best["fits"]:
        raise ConfigError(f"no layout of {devices} x {hardware} fits {model}: best tried "
                          f"tp{best['tp']}-pp{best['pp']}: {best['fit_reason']}")
    return best.to_dict()
