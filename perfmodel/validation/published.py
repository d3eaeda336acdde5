"""Validation against published end-to-end figures (``published_end_to_end.csv`` schema).

Only rows marked ``clean_for_validation == "Y"`` are used (known hardware, precision, parallelism,
ISL/OSL and batch, no speculative decoding). All of them are TensorRT-LLM *static-batch* runs
(``gptSessionBenchmark``: the whole batch starts together, no queueing, no HTTP front end), so they
are predicted with :func:`perfmodel.core.predict.predict`:

``ttft``
    ``TTFT_ms`` (first-token latency of a batch of ``batch_size`` prompts) vs the predicted TTFT.
``batch_latency``
    ``derived_static_batch_latency_s`` (wall time of the whole batch, prefill + OSL decode steps) vs
    the predicted E2E = TTFT + (OSL − 1)·TPOT.

Hardware: :func:`perfmodel.validation.hardware_names.parse_hardware` reads the ``hardware`` cell
(``"H200-SXM-141GB (x8)"``, ``"8xB200"``...); a row whose part it cannot read, or whose memory variant
is not the shipped part's, is skipped with what it could not read.

Formats: ``precision`` FP8 -> fp8 weights and activations, FP16 -> fp16; ``kv_cache_precision`` when
given, else FP8 KV with FP8 weights (the TensorRT-LLM performance docs of these versions state an FP8 KV
cache on Hopper/Ada) and the weight format otherwise.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..core.predict import predict
from ..errors import PerfmodelError
from .hardware_names import parse_hardware
from .models import UnsupportedModel, resolve_model
from .stepmodels import StepModelCache

#: Columns that identify a published end-to-end table.
REQUIRED_COLUMNS = ("row_id", "hardware", "model", "precision", "TP", "ISL_tokens", "OSL_tokens",
                    "batch_size", "clean_for_validation")

#: Published model names -> model ids understood by :func:`resolve_model`.
MODELS = {"GPT-J-6B": "gptj-6b", "Llama-2-7B": "llama-2-7b", "Llama-2-13B": "llama-2-13b",
          "Llama-2-70B": "llama-2-70b", "Mistral-7B": "mistral-7b", "Mixtral-8x7B": "mixtral-8x7b"}


def _number(text) -> float:
    m = re.match(r"^\s*([0-9.]+)", str(text))
    return float(m.group(1)) if m else float("nan")


def _formats(row: pd.Series) -> tuple[str, str]:
    w = {"FP8": "fp8", "FP16": "fp16", "BF16": "bf16", "FP4": "nvfp4"}.get(str(row["precision"]).upper())
    if w is None:
        raise UnsupportedModel(f"unsupported precision: {row['precision']}")
    kv_text = str(row.get("kv_cache_precision", "")).upper()
    kv = {"FP8": "fp8", "FP16": "fp16", "BF16": "bf16"}.get(kv_text, "fp8" if w == "fp8" else w)
    return w, kv


def _targets(row: pd.Series) -> list[tuple[str, float]]:
    out = []
    ttft = _number(row.get("TTFT_ms", ""))
    if np.isfinite(ttft):
        out.append(("ttft", ttft / 1e3))
    lat = _number(row.get("derived_static_batch_latency_s", ""))
    if np.isfinite(lat) and np.isfinite(_number(row.get("OSL_tokens", ""))):
        out.append(("batch_latency", lat))
    return out


def validate_published(df: pd.DataFrame, efficiency="calibrated") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Predict the clean published rows.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows in the ``published_end_to_end.csv`` schema (read with ``dtype=str``).
    efficiency : str | Efficiency
        Per-op efficiency profile.

    Returns
    -------
    predictions : pandas.DataFrame
        One row per (published row, metric): ``row_id, hardware, model, metric, measured, predicted,
        pct_error, fits``.
    skipped : pandas.DataFrame
        ``row``, ``id``, ``reason`` of rows not used (not clean, unknown hardware/model, no target).
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise PerfmodelError(f"published end-to-end rows: missing column(s) {missing}")
    cache = StepModelCache(efficiency)
    preds, skipped = [], []
    for pos, (_, row) in enumerate(df.iterrows()):
        rid = str(row["row_id"])

        def skip(reason: str, pos=pos, rid=rid) -> None:
            skipped.append({"row": pos, "id": rid, "reason": reason})

        if str(row["clean_for_validation"]).strip() != "Y":
            skip(f"not clean for validation: {row['clean_for_validation'] or '(empty)'}")
            continue
        parsed = parse_hardware(row["hardware"])
        hw = parsed.accelerator
        if hw is None:
            skip(f"unknown hardware: {parsed.problem}")
            continue
        model_id = MODELS.get(str(row["model"]).strip())
        targets = _targets(row)
        if not targets:
            skip("no TTFT or static batch latency to compare")
            continue
        try:
            if model_id is None:
                raise UnsupportedModel(f"unknown model: {row['model']}")
            resolve_model(model_id)
            w, kv = _formats(row)
            tp, pp = int(_number(row["TP"]) or 1), int(_number(row.get("PP", "")) or 1) \
                if np.isfinite(_number(row.get("PP", ""))) else 1
            sm = cache.get((model_id, hw, tp, pp, 1, 1, 0, w, None, kv))
            batch, isl = _number(row["batch_size"]), _number(row["ISL_tokens"])
            osl = _number(row["OSL_tokens"])
            osl = osl if np.isfinite(osl) else 2.0
            # published runs sometimes go past the declared context (GPT-J at 2048 + 2048): predict them
            p = predict(None, None, isl=int(isl), osl=max(int(osl), 2), batch=int(batch), step_model=sm,
                        beyond_context=True)
        except (UnsupportedModel, PerfmodelError) as exc:
            skip(str(exc))
            continue
        for metric, measured in targets:
            value = float(np.ravel(p.ttft_s if metric == "ttft" else p.e2e_s)[0])
            preds.append({"row": pos, "row_id": rid, "hardware": hw, "model": model_id, "tp": tp,
                          "batch": batch, "isl": isl, "osl": osl, "metric": metric, "measured": measured,
                          "predicted": value, "pct_error": 100.0 * (value - measured) / measured,
                          "fits": bool(np.ravel(p.fits)[0])})
    return pd.DataFrame(preds), pd.DataFrame(skipped, columns=["row", "id", "reason"])
