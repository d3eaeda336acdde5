"""Measured serving rows (``serving_measured.csv`` schema) -> deployments the model can predict.

One row is one closed-loop benchmark: ``C`` clients, each sending a request of ``isl`` prompt tokens and
``osl`` output tokens as soon as its previous one finished. :func:`map_rows` returns two tables:

``deployments``
    one row per predictable measurement with the replica layout, formats and the concurrency *per
    replica* (closed loops on identical replicas are independent, so each replica sees its share);
``skipped``
    ``row``, ``id`` and ``reason`` for every row that cannot be predicted (never silently dropped).

Mapping rules (documented in ``docs/validation.md``):

- ``system`` -> accelerator id (:data:`SYSTEMS`, or any shipped accelerator id); one GPU type per run.
- ``model_path`` -> model spec (:func:`perfmodel.validation.models.resolve_model`).
- weights: ``gemm_quant_mode`` (``fp8``/``fp8_block`` -> fp8, ``nvfp4`` -> nvfp4, ``int4_wo`` -> int4
  weight-only), else ``precision``, else the checkpoint's own format; ``fp8`` of a block-scaled FP8
  checkpoint is ``fp8_block`` and ``fp4`` of an MXFP4 checkpoint (gpt-oss) is ``mxfp4``. Activations
  follow fp8/NVFP4 weights where the accelerator has that tensor-core format; MXFP4 weights run
  with MXFP8 activations on Blackwell (TensorRT-LLM's default MoE backend for gpt-oss); FP4 weights on
  Hopper (no FP4 peak) run as weight-only (bf16 activations).
- KV cache: :func:`kv_cache_format` (policy chosen from checkpoints and the data; see :class:`KVPolicy`).
- ``agg``: replica = ``tp × pp × attention_dp`` GPUs; ``batch_size`` is the concurrency per attention-DP
  rank, so the replica runs ``batch_size × attention_dp`` requests; empty/0 degrees mean 1. A MoE
  model's ``tp_size`` that does not divide its attention heads (DeepSeek-R1 on 12–72 GB200 GPUs) is
  run with attention DP over those GPUs (:func:`perfmodel.core.parallel.attention_layout`); the
  request count is unchanged.
- ``disagg``: mapped only when the pools' worker counts and batch sizes are recorded, or recovered
  from the run's launch config (:func:`perfmodel.validation.disagg_layouts.fill_layout`); the decode
  replica runs ``decode_batch_size × decode_attention_dp`` requests, the prefill pool sees the same
  request rate spread over ``prefill_num_workers`` replicas.
- Optional ``spec_decode``, ``prefix_hit_rate`` and ``prefix_caching`` columns: speculative decoding
  and prefix caching (:mod:`perfmodel.validation.features`); absent or empty means off, unless a rule
  of :mod:`perfmodel.validation.source_rules` reads the speculation from the row's public source
  (``spec_decode_rule`` names it; ``source_flag`` says why a row is flagged by such a rule).
- Optional arrival columns (:mod:`perfmodel.validation.arrivals`): a row with ``arrival = open`` is an
  open-loop run at a request rate. :func:`map_rows` maps closed-loop rows by default and skips open
  ones with the reason (the closed-loop steady state must not answer for them); ``arrival="open"``
  maps only the open ones, for :mod:`perfmodel.validation.predict_openloop`.
- A measurement listed twice (same model, system, engine, lengths, TTFT and TPOT under two ids) is
  kept once (:func:`drop_duplicates`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.parallel import Parallel, attention_layout
from ..errors import PerfmodelError
from ..hardware import load_accelerator
from ..precision import serving_activations
from .arrivals import current_arrival_columns, open_loop_mask, row_arrival
from .cells import degree as _degree
from .cells import number as _float
from .disagg_layouts import fill_layout
from .features import row_features
from .hardware_names import parse_hardware
from .models import UnsupportedModel, checkpoint_default_format, resolve_model
from .source_rules import apply_source_rules, harness_lengths

#: ``system`` column -> accelerator id.
SYSTEMS: dict[str, str] = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200", "gb200": "gb200"}

#: ``gemm_quant_mode`` / ``precision`` values -> weight format.
WEIGHT_FORMATS: dict[str, str] = {
    "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "nvfp4", "fp4": "nvfp4", "int4_wo": "int4", "int4": "int4",
    "w4a16": "int4", "bf16": "bf16", "fp16": "fp16", "mxfp4": "mxfp4",
}

#: User-facing precision names -> ``gemm_quant_mode`` / ``moe_quant_mode`` values of the schema
#: ('' for anything else: the checkpoint's own format).
QUANT_MODE_OF_PRECISION: dict[str, str] = {"fp4": "nvfp4", "nvfp4": "nvfp4", "fp8": "fp8", "fp8_block": "fp8_block",
                                           "int4": "int4_wo", "int4_wo": "int4_wo"}

#: Columns a file must have to be read as measured serving runs.
REQUIRED_COLUMNS = ("model_path", "system", "backend", "mode", "isl", "osl", "batch_size", "tp_size",
                    "silicon_ttft_ms", "silicon_tpot_ms")

LAYOUT_KEYS = ("tp", "pp", "dp", "ep", "moe_tp")


@dataclass(frozen=True)
class KVPolicy:
    """Which KV-cache format each engine used (the measured CSV does not record it).

    Attributes
    ----------
    quantized_kv_backends : tuple[str, ...]
        Engines that store the KV cache in FP8 whenever the weights are FP8 or FP4.
    quantized_kv_weights : tuple[str, ...]
        Weight formats whose checkpoints carry an FP8 KV cache in every engine.
    model_dtype_kv : tuple[tuple[str, str], ...]
        (engine, accelerator id) pairs whose runs keep the KV cache in the model dtype (bf16,
        ``--kv-cache-dtype auto``) for weights outside ``quantized_kv_weights``: a launch recipe that
        passes no KV format, e.g. ``(("vllm", "h100-sxm"),)``. Default: none.

    Notes
    -----
    Default: FP8 KV with FP8 or NVFP4 weights in all three engines, bf16 otherwise. Reasons: NVIDIA
    ModelOpt FP8/NVFP4 checkpoints declare ``kv_cache_quant_algo: FP8`` in ``hf_quant_config.json``
    (e.g. nvidia/Llama-3.1-70B-Instruct-FP8, nvidia/DeepSeek-V3.1-NVFP4) and TensorRT-LLM, vLLM and
    SGLang honour it; and on the public rows the bf16 alternative for vLLM/SGLang FP8 runs makes the KV
    cache cap the decode batch of long-context runs whose measured TTFT shows no such wait (e.g.
    Llama-3.1-70B FP8 on one B200 at C = 64, 1024/8192: 0.38 s measured, 76 s predicted with bf16 KV),
    and gives larger TPOT and TTFT errors overall (``docs/validation.md``). ``model_dtype_kv`` is the
    alternative ``scripts/kv_cliff_band.py`` measures for vLLM on H100 (section "Capacity cliffs").
    """

    quantized_kv_backends: tuple[str, ...] = ("trtllm", "vllm", "sglang")
    quantized_kv_weights: tuple[str, ...] = ("nvfp4",)
    model_dtype_kv: tuple[tuple[str, str], ...] = ()


DEFAULT_KV_POLICY = KVPolicy()


def kv_cache_format(backend: str, weights: str, policy: KVPolicy = DEFAULT_KV_POLICY,
                    hardware: str | None = None) -> str:
    """KV-cache format assumed for a run.

    FP8 when the weights are in ``policy.quantized_kv_weights``, or the engine is in
    ``policy.quantized_kv_backends``, (engine, ``hardware``) is not in ``policy.model_dtype_kv`` and
    the weights are fp8/nvfp4/mxfp4; bf16 otherwise (weight-only int4 and bf16 checkpoints keep
    ``--kv-cache-dtype auto`` = the model dtype). See :class:`KVPolicy`.
    """
    if weights in policy.quantized_kv_weights:
        return "fp8"
    if (backend, hardware) in policy.model_dtype_kv:
        return "bf16"
    if backend in policy.quantized_kv_backends and weights in ("fp8", "fp8_block", "nvfp4", "mxfp4"):
        return "fp8"
    return "bf16"


def hardware_id(system: str) -> str | None:
    """Accelerator id of a ``system`` cell: the CSV names (:data:`SYSTEMS`), else whatever part
    :func:`~perfmodel.validation.hardware_names.parse_hardware` reads (shipped ids and aliases,
    ``"8xB200"``, ``"H200-SXM-141GB (x8)"``...); None when it reads none."""
    if system in SYSTEMS:
        return SYSTEMS[system]
    return parse_hardware(system).accelerator if system else None


def silicon_concurrency(source: str) -> float:
    """Total client concurrency from a provenance string (``silicon_concurrency=N``), NaN if absent."""
    m = re.search(r"silicon_concurrency=(\d+)", str(source))
    return float(m.group(1)) if m else float("nan")


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value).strip()


def _formats(row: dict, hardware: str, policy: KVPolicy) -> tuple[str, str, str]:
    raw = _text(row.get("gemm_quant_mode")) or _text(row.get("precision"))
    return serving_formats(row["model_path"], hardware, row["backend"], raw, policy)


def serving_formats(model_path: str, hardware: str, backend: str, precision: str,
                    policy: KVPolicy = DEFAULT_KV_POLICY) -> tuple[str, str, str]:
    """(weights, activations, KV cache) formats an engine runs ``precision`` of a checkpoint with.

    ``precision`` '' is the checkpoint's own format; FP8 follows the checkpoint's block scaling and FP4
    its MXFP4 experts; the activations follow the weights (:func:`perfmodel.precision.serving_activations`);
    the KV cache follows :func:`kv_cache_format`. Used for measured rows and by ``perfmodel.estimate``.

    Raises
    ------
    ValueError
        ``precision`` is not a known weight format.
    """
    checkpoint = checkpoint_default_format(model_path)
    weights = WEIGHT_FORMATS.get(precision.lower()) if precision else checkpoint
    if weights is None:
        raise ValueError(f"unknown weight format {precision!r}")
    if weights == "fp8" and checkpoint == "fp8_block":
        weights = "fp8_block"   # the FP8 checkpoint of this model is block-scaled
    elif weights == "nvfp4" and checkpoint == "mxfp4":
        weights = "mxfp4"       # the FP4 checkpoint of this model is MXFP4 (gpt-oss)
    activations = serving_activations(weights, "fp4" in load_accelerator(hardware).compute)
    return weights, activations, kv_cache_format(backend, weights, policy, load_accelerator(hardware).id)


def _layout(model, tp, pp, dp, ep, moe_tp) -> dict[str, int]:
    """Validated layout; MoE degrees ignored for dense models, moe_tp derived when inconsistent; a
    tp that does not divide a MoE model's heads runs attention DP (:func:`attention_layout`)."""
    if model.moe is None:
        ep, moe_tp = 1, 0
    tp, dp = attention_layout(model, tp, dp)
    par = Parallel.build(model, tp=tp, pp=pp, ep=ep, dp_attention=dp, moe_tp=moe_tp or None)
    return {"tp": par.tp, "pp": par.pp, "dp": par.dp_attention, "ep": par.ep, "moe_tp": par.moe_tp}


def _pool(row: dict, prefix: str) -> tuple[int, ...]:
    """(tp, pp, dp, ep, moe_tp) of a pool; an empty or 0 ``moe_tp_size`` is 0, derived by
    :meth:`~perfmodel.core.parallel.Parallel.build` as tp × dp / ep (the MoE layers split by TP over the
    devices EP leaves: vLLM without expert parallelism shards its experts over the whole TP × DP group),
    not 1."""
    tp, pp, dp, ep = (_degree(row.get(f"{prefix}{k}")) for k in
                      ("tp_size", "pp_size", "attention_dp_size", "moe_ep_size"))
    mtp = _degree(row.get(f"{prefix}moe_tp_size")) if _float(row.get(f"{prefix}moe_tp_size")) >= 1 else 0
    return tp, pp, dp, ep, mtp


class Skip(Exception):
    """A row cannot be mapped; ``args[0]`` is the reason."""


def _map_one(row: dict, policy: KVPolicy, open_loop: bool = False) -> dict:
    system = _text(row.get("system"))
    hardware = hardware_id(system)
    if hardware is None:
        raise Skip(f"unknown system: {system or '(empty)'}")
    try:
        model = resolve_model(_text(row["model_path"]))
    except UnsupportedModel as exc:
        raise Skip(str(exc)) from None
    try:
        weights, act, kv = _formats(row, hardware, policy)
    except ValueError as exc:
        raise Skip(str(exc)) from None
    total = silicon_concurrency(row.get("silicon_data_source", ""))
    row, missing = fill_layout(row)   # disagg rows without worker counts: their launch config's layout
    row, documented = apply_source_rules(row)
    try:
        features = row_features(row)
    except ValueError as exc:
        raise Skip(f"feature: {exc}") from None
    out = {"hardware": hardware, "model_key": model.id, "weights": weights, "activations": act,
           "kv_cache": kv, "total_concurrency": total, **features, **documented, **harness_lengths(row)}
    mode = _text(row.get("mode")) or "agg"
    if mode == "agg":
        tp, pp, dp, ep, mtp = _pool(row, "")
        batch = _float(row.get("batch_size"))
        pool = ("agg layout", tp, pp, dp, ep, mtp)
    elif mode == "disagg":
        if missing:
            raise Skip(missing)
        tp, pp, dp, ep, mtp = _pool(row, "decode_")
        batch = _float(row.get("decode_batch_size"))
        pool = ("decode pool layout", tp, pp, dp, ep, mtp)
        ptp, ppp, pdp, pep, pmtp = _pool(row, "prefill_")
        try:
            p = _layout(model, ptp, ppp, pdp, pep, pmtp)
        except PerfmodelError as exc:
            raise Skip(f"invalid prefill pool layout: {exc}") from None
        out.update({f"p_{k}": v for k, v in p.items()})
        out["p_workers"] = _degree(row["prefill_num_workers"])
        out["d_workers"] = _degree(row["decode_num_workers"])
    else:
        raise Skip(f"unknown mode: {mode}")
    if open_loop:   # requests arrive at a rate: no client count
        try:
            out.update(row_arrival(row))
        except ValueError as exc:
            raise Skip(f"open loop: {exc}") from None
        batch = float("nan")
    elif not np.isfinite(batch) or batch < 1:
        raise Skip("concurrency per worker (batch_size) missing")
    try:
        out.update(_layout(model, *pool[1:]))
    except PerfmodelError as exc:
        raise Skip(f"invalid {pool[0]}: {exc}") from None
    # batch_size is per recorded attention-DP rank; attention DP inferred for uneven heads does not
    # change how many requests the run sent
    out["concurrency"] = batch * pool[3]
    return out


#: Skip reason of an open-loop row met by the closed-loop mapping.
OPEN_LOOP_SKIP = ("open loop: scored by simulation (perfmodel.validation.predict_openloop), not by the "
                  "closed-loop steady state")


def map_rows(df: pd.DataFrame, kv_policy: KVPolicy = DEFAULT_KV_POLICY, measured: bool = True,
             arrival: str = "closed") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Map measured serving rows to predictable deployments.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows in the ``serving_measured.csv`` schema (see ``data/validation/README.md``).
    kv_policy : KVPolicy
        KV-cache format assumption per engine.
    measured : bool
        Require positive measured TTFT and TPOT (default); False maps deployments to be predicted
        only (for example a deployment to estimate), whose ``measured_*`` are then NaN.
    arrival : {"closed", "open"}
        Map the closed-loop rows (default; open-loop rows are skipped with :data:`OPEN_LOOP_SKIP`) or
        only the open-loop rows (closed ones are left out, not listed), which then carry the fields
        of :func:`~perfmodel.validation.arrivals.row_arrival` and a NaN ``concurrency``.

    Returns
    -------
    deployments : pandas.DataFrame
        Input columns kept (``row`` = input position) plus ``hardware``, ``model_key``, formats,
        layout (``tp pp dp ep moe_tp``; disagg prefill pool ``p_*``, worker counts), ``concurrency``
        per replica, ``total_concurrency``, ``measured_ttft_mean_s``, ``measured_tpot_mean_s`` and the serving
        features of :func:`~perfmodel.validation.features.row_features` (off where not recorded).
    skipped : pandas.DataFrame
        ``row``, ``id``, ``reason`` for every row that cannot be predicted.
    """
    df = current_arrival_columns(df, "measured serving rows")
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise PerfmodelError(f"measured serving rows: missing column(s) {missing}; expected the "
                             f"serving_measured.csv schema (see perfmodel/data/validation/README.md)")
    if arrival not in ("closed", "open"):
        raise PerfmodelError(f"map_rows: arrival={arrival!r}; allowed: 'closed', 'open'")
    mapped, skipped = [], []
    is_open = open_loop_mask(df)
    for pos, row in enumerate(df.to_dict("records")):
        rid = _text(row.get("id")) or str(pos)
        if is_open[pos] != (arrival == "open"):
            if is_open[pos]:
                skipped.append({"row": pos, "id": rid, "reason": OPEN_LOOP_SKIP})
            continue
        ttft, tpot = _float(row.get("silicon_ttft_ms")), _float(row.get("silicon_tpot_ms"))
        try:
            if measured and not (np.isfinite(ttft) and np.isfinite(tpot) and ttft > 0 and tpot > 0):
                raise Skip("measured TTFT/TPOT missing or non-positive")
            rec = _map_one(row, kv_policy, open_loop=bool(is_open[pos]))
        except Skip as exc:
            skipped.append({"row": pos, "id": rid, "reason": str(exc.args[0])})
            continue
        rec.update(row=pos, id=rid, measured_ttft_mean_s=ttft / 1e3, measured_tpot_mean_s=tpot / 1e3)
        mapped.append(rec)
    keep = [c for c in ("backend", "backend_version", "model_path", "system", "mode", "isl", "osl",
                        "precision") if c in df.columns]
    dep = pd.DataFrame(mapped)
    if len(dep):
        dep = dep.join(df[keep].reset_index(drop=True), on="row")
        dep["isl"] = dep["isl"].astype(float)
        dep["osl"] = dep["osl"].astype(float)
        # the lengths the harness ran (its mean draw, source_rules.harness_lengths), the recorded kept
        dep["isl_recorded"], dep["osl_recorded"] = dep["isl"], dep["osl"]
        dep["isl"] = dep["isl_mean"].where(dep["isl_mean"].notna(), dep["isl"])
        dep["osl"] = dep["osl_mean"].where(dep["osl_mean"].notna(), dep["osl"])
        dep = dep.drop(columns=["isl_mean", "osl_mean"])
    return dep, pd.DataFrame(skipped, columns=["row", "id", "reason"])


#: Columns that identify one measurement: the same values under two ids are one run listed twice. The
#: model id is not part of it: 93 DeepSeek-R1 rows repeat DeepSeek-V3 rows (same architecture) to the
#: last digit of both TTFT and TPOT, which two separate runs cannot do.
DUPLICATE_KEY = ("system", "backend", "isl", "osl", "measured_ttft_mean_s", "measured_tpot_mean_s")


def drop_duplicates(deployments: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Keep one copy of measurements listed more than once (the public CSV merges several dumps).

    The copy kept is the first one not flagged anomalous (``anomaly`` column, if present), else the
    first; the others are returned as skipped rows with the id of the copy kept.
    """
    if deployments.empty:
        return deployments, pd.DataFrame(columns=["row", "id", "reason"])
    flagged = deployments["anomaly"].astype(bool) if "anomaly" in deployments else \
        pd.Series(False, index=deployments.index)
    # one measurement whatever lengths a harness rule runs it at (source_rules.harness_lengths)
    key = [f"{k}_recorded" if f"{k}_recorded" in deployments else k for k in DUPLICATE_KEY]
    order = deployments.assign(_flag=flagged.to_numpy()).sort_values(["_flag", "row"], kind="stable")
    dup = order.duplicated(key, keep="first")
    first = order[~dup].set_index(key)["id"]
    skipped = [{"row": r["row"], "id": r["id"],
                "reason": f"duplicate: same measurement as {first.loc[tuple(r[k] for k in key)]}"}
               for _, r in order[dup].iterrows()]
    kept = deployments.loc[sorted(order.index[~dup], key=lambda i: deployments.at[i, "row"])]
    return _documented_harness(kept, order[dup], key), pd.DataFrame(skipped, columns=["row", "id", "reason"])


#: Columns :func:`perfmodel.validation.source_rules.harness_lengths` sets (with the lengths run).
HARNESS_COLUMNS = ("harness", "isl", "osl")


def _documented_harness(kept: pd.DataFrame, dropped: pd.DataFrame, key: list) -> pd.DataFrame:
    """``kept`` with the harness of a dropped copy whose source documents it, where its own does not:
    one measurement ran under one harness (db-dump rows repeat InferenceX runs, for instance)."""
    if "harness" not in kept or dropped.empty:
        return kept
    known = dropped[dropped["harness"].fillna("") != ""].drop_duplicates(key).set_index(key)
    if known.empty:
        return kept
    kept = kept.copy()
    unknown = kept["harness"].fillna("") == ""
    at = pd.MultiIndex.from_frame(kept.loc[unknown, key])
    hit = at.isin(known.index)
    rows = kept.index[unknown][hit]
    for c in HARNESS_COLUMNS:
        kept.loc[rows, c] = known.loc[at[hit], c].to_numpy()
    return kept


def reason_category(reason: str) -> str:
    """Short category of a skip reason (the text before the first colon), for counts."""
    return reason.split(":", 1)[0].strip()


def measurement_coverage(rows_read: int, predicted: int, skipped: pd.DataFrame) -> dict:
    """Share of the distinct measurements that were predicted.

    A duplicate row (:func:`drop_duplicates`) is one measurement listed again under another id, so the
    distinct measurements are ``rows_read − duplicates``, and each has exactly one row that is not a
    duplicate. Coverage = predicted / distinct.

    Parameters
    ----------
    rows_read : int
        Rows in the measured file.
    predicted : int
        Rows predicted (no duplicates among them).
    skipped : DataFrame
        The skipped rows with their ``reason``.

    Returns
    -------
    dict
        ``rows``, ``duplicates``, ``distinct``, ``predicted``, ``coverage_rows`` (predicted / rows read)
        and ``coverage_distinct`` (predicted / distinct), the last two as fractions.
    """
    reasons = skipped["reason"] if len(skipped) else pd.Series([], dtype=str)
    duplicates = int(reasons.map(reason_category).eq("duplicate").sum())
    distinct = rows_read - duplicates
    if not 0 <= predicted <= distinct:
        raise ValueError(f"predicted = {predicted} rows must lie in [0, distinct = {distinct}] "
                         f"({rows_read} read − {duplicates} duplicates)")
    return {"rows": rows_read, "duplicates": duplicates, "distinct": distinct, "predicted": predicted,
            "coverage_rows": predicted / rows_read if rows_read else float("nan"),
            "coverage_distinct": predicted / distinct if distinct else float("nan")}
