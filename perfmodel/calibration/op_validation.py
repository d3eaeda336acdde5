"""Predict measured per-op latencies with an efficiency profile and summarise the error.

Every row of a per-op table (recognised from its columns, see
:func:`perfmodel.calibration.ops_data.table_kind`) is predicted with the cost functions of
:mod:`perfmodel.core.costs` and the datasheet figures of its accelerator, or skipped with a counted
reason. The error of a row is :math:`e = 100\\,(t_{pred}/t_{meas} - 1)` [%]; summaries give the median
and 90th percentile of :math:`|e|` and the median of e (bias; > 0 = predicted too slow).

Profiles: ``"calibrated"`` (the accelerator's shipped profile with its shape terms ``op_params``, or,
for an accelerator without measurements of its own such as B300 / GB300, its family's profile as
:func:`perfmodel.core.efficiency.profile_for` picks it; the summary names the profile used),
``"calibrated-plain"`` (same profile without ``op_params``: the scalar fields only),
``"calibrated-nokernel"`` (without the kernel-level GQA decode terms: the ``attention_decode`` form a
profile without them falls back to),
``"datasheet"`` (η = 1, no overheads), an :class:`~perfmodel.core.efficiency.Efficiency`, or a mapping
accelerator id -> Efficiency (used while fitting).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..core import comm
from ..core.attention_costs import attention_decode_time, attention_prefill_time
from ..core.costs import gemm_time, moe_time
from ..core.efficiency import DATASHEET, DECODE_KERNEL_FAMILY, Efficiency, load_profile, profile_for
from ..errors import ConfigError
from . import ops_data as od

MLA_KV_WIDTH, MLA_D_QK, MLA_D_V = 576, 576, 512        # absorbed MLA decode (DeepSeek-V3 shapes)
MLA_PREFILL_D_QK, MLA_PREFILL_D_V = 192, 128            # per-head MLA prefill (nope 128 + rope 64, v 128)
VOLUME = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
          "reduce_scatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n}
#: Column giving the secondary breakdown of each table's summary.
BY_COLUMN = {"gemm": "dtype", "attention_decode": "kv_cache_dtype", "attention_prefill": "attn_dtype",
             "mla_decode": "kv_cache_dtype", "mla_prefill": "kv_cache_dtype", "nccl": "op",
             "custom_allreduce": "num_gpus", "moe": "moe_dtype"}
Profile = str | Efficiency | Mapping[str, Efficiency]
LINK_ALPHA = 2e-6  # NVLink P2P latency of the shipped link specs [s] (datasheet collective form)


def resolve_profile(accelerator: str, profile: Profile) -> Efficiency:
    """Efficiency for an accelerator from a profile selector (see module docstring)."""
    if isinstance(profile, Efficiency):
        return profile
    if isinstance(profile, Mapping):
        return profile[accelerator]
    if profile == "datasheet":
        return DATASHEET
    if profile == "calibrated":
        return profile_for(accelerator, "calibrated")
    if profile == "calibrated-plain":
        return replace(profile_for(accelerator, "calibrated"), op_params={})
    if profile == "calibrated-nokernel":
        return without_kernel_terms(profile_for(accelerator, "calibrated"))
    return load_profile(str(profile))


def without_kernel_terms(eff: Efficiency) -> Efficiency:
    """The profile without its kernel-level GQA decode terms (:data:`DECODE_KERNEL_FAMILY`): decode
    attention then falls back to the ``attention_decode`` form."""
    return replace(eff, op_params={k: v for k, v in eff.op_params.items() if k != DECODE_KERNEL_FAMILY})


Predictor = Callable[[pd.DataFrame, Efficiency, od.Device], tuple[np.ndarray, np.ndarray]]


def _nan_skip(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full(n, np.nan), np.full(n, "", dtype=object)


def predict_gemm(g: pd.DataFrame, eff: Efficiency, dev: od.Device) -> tuple[np.ndarray, np.ndarray]:
    """GEMM rows: :func:`~perfmodel.core.costs.gemm_time` per weight format (activations bf16)."""
    pred, why = _nan_skip(len(g))
    for dtype, idx in g.groupby("dtype").indices.items():
        fmt, comp = od.DTYPE_TO_FORMAT.get(dtype), od.DTYPE_TO_COMPUTE.get(dtype)
        if fmt is None:
            why[idx] = f"unknown gemm dtype {dtype}"
        elif comp not in dev.peaks:
            why[idx] = f"no {comp} peak on {dev.accelerator}"
        else:
            x = g.iloc[idx]
            pred[idx] = gemm_time(x["m"].to_numpy(float), x["n"].to_numpy(float), x["k"].to_numpy(float),
                                  dev.peak(comp), dev.bandwidth, eff, fmt, od.WEIGHT_BYTES[dtype]).total
    return pred, why


def predict_attention_decode(g: pd.DataFrame, eff: Efficiency, dev: od.Device):
    """GQA/MHA decode: KV bytes = b · L_w · 2 H_kv d · b_kv (see ``attention_decode_time``), with the
    kernel-level terms :data:`DECODE_KERNEL_FAMILY` where the profile has them, for every head layout
    (they are fitted on all of them; the step model uses them for grouped-query attention only)."""
    hk, d = g["num_key_value_heads"].to_numpy(float), g["head_dim"].to_numpy(float)
    family = eff.decode_family()
    t = attention_decode_time(g["batch_size"], g["kv_len"], g["num_heads"], 2.0 * hk * d, d, d,
                              g["kv_cache_dtype"].map(od.KV_BYTES).to_numpy(float), dev.peak("bf16"),
                              dev.bandwidth, eff, kv_streams=hk, window=g["window_size"], family=family).total
    return np.asarray(t, dtype=float), np.full(len(g), "", dtype=object)


def predict_mla_decode(g: pd.DataFrame, eff: Efficiency, dev: od.Device):
    """MLA decode (absorbed): (512 + 64) latent elements per token shared by all heads."""
    t = attention_decode_time(g["batch_size"], g["kv_len"], g["num_heads"], MLA_KV_WIDTH, MLA_D_QK,
                              MLA_D_V, g["kv_cache_dtype"].map(od.KV_BYTES).to_numpy(float),
                              dev.peak("bf16"), dev.bandwidth, eff, family="mla_decode").total
    return np.asarray(t, dtype=float), np.full(len(g), "", dtype=object)


def predict_attention_prefill(g: pd.DataFrame, eff: Efficiency, dev: od.Device):
    """GQA/MHA causal prefill; fp8 FMHA rows use the fp8 peak."""
    fp8 = (g["attn_dtype"] == "fp8").to_numpy()
    pred, why = _nan_skip(len(g))
    for flag in (False, True):
        idx = np.flatnonzero(fp8 == flag)
        if len(idx) == 0:
            continue
        x = g.iloc[idx]
        d = x["head_dim"].to_numpy(float)
        pred[idx] = attention_prefill_time(
            x["batch_size"], x["isl"], x["num_heads"], x["num_key_value_heads"], d, d,
            dev.peak("fp8" if flag else "bf16"), dev.bandwidth, eff, window=x["window_size"],
            kv_bytes=x["kv_cache_dtype"].map(od.KV_BYTES).to_numpy(float), fp8=flag).total
    return pred, why


def predict_mla_prefill(g: pd.DataFrame, eff: Efficiency, dev: od.Device):
    """MLA prefill: per-head attention with d_qk = 192, d_v = 128 on up-projected bf16 K/V."""
    h = g["num_heads"].to_numpy(float)
    t = attention_prefill_time(g["batch_size"], g["isl"], h, h, MLA_PREFILL_D_QK, MLA_PREFILL_D_V,
                               dev.peak("bf16"), dev.bandwidth, eff, family="mla_prefill").total
    return np.asarray(t, dtype=float), np.full(len(g), "", dtype=object)


def _collective(g: pd.DataFrame, alpha: float, eta: float, link_alpha: float, dev: od.Device):
    n = g["num_gpus"].to_numpy(float)
    size = g["message_bytes"].to_numpy(float)
    pred, why = _nan_skip(len(g))
    for op, idx in g.groupby("op").indices.items():
        if op not in VOLUME:
            why[idx] = f"unsupported collective {op}"
            continue
        bw = dev.link_bandwidth * eta
        if alpha > 0:  # as the step model: one measured latency + volume / bandwidth
            pred[idx] = alpha + VOLUME[op](n[idx]) * size[idx] / bw
        else:          # datasheet: algorithmic α from the link (perfmodel.core.comm)
            fn = {"all_reduce": comm.all_reduce_time, "all_gather": comm.all_gather_time,
                  "reduce_scatter": comm.reduce_scatter_time, "alltoall": comm.all_to_all_time}[op]
            pred[idx] = fn(size[idx], n[idx], bw, link_alpha)
    return pred, why


def predict_custom_allreduce(g: pd.DataFrame, eff: Efficiency, dev: od.Device):
    """TRT-LLM custom all-reduce: :math:`\\alpha + 2(n-1)/n \\cdot S / (B_{link}\\,\\eta_{bw})`."""
    return _collective(g, eff.collective_alpha, eff.collective_bandwidth, LINK_ALPHA, dev)


def predict_nccl(g: pd.DataFrame, eff: Efficiency, dev: od.Device):
    """NCCL collectives: ``op_params['nccl']`` (alpha, bandwidth) when present, else the scalars."""
    terms = eff.op("nccl")
    return _collective(g, terms.get("alpha", eff.collective_alpha),
                       terms.get("bandwidth", eff.collective_bandwidth), LINK_ALPHA, dev)



#: Skip reason of MoE rows that are the slower of two backends measured on one shape.
SLOWER_BACKEND = "slower backend of a shape also measured with a faster one (engines pick the fastest)"


def moe_expert_load(tokens, topk, experts, ep) -> tuple[np.ndarray, np.ndarray]:
    """Routed (token, expert) pairs per EP rank and distinct local experts hit (uniform routing).

    .. math:: R = T k / EP, \\qquad E_{hit} = \\frac{E}{EP}\\left(1 - (1 - k/E)^T\\right)
    """
    t, k, e, ep = (np.asarray(x, dtype=float) for x in (tokens, topk, experts, ep))
    return t * k / ep, e / ep * (1.0 - (1.0 - k / e) ** t)


def predict_moe(g: pd.DataFrame, eff: Efficiency, dev: od.Device):
    """Fused MoE rows: :func:`~perfmodel.core.costs.moe_time` per weight format.

    Tokens T = ``num_tokens``; routed pairs and hit experts per EP rank from uniform routing
    (:func:`moe_expert_load`); per-device intermediate size ``inter_size / moe_tp_size``; gated
    (3 matrices) except the ``moe_torch_flow_nongated`` rows. Routing skew (power-law rows) is not
    modelled: the uniform expectation is used for every row. Slower backends of a shape measured
    twice (``slower_duplicate``, see :func:`perfmodel.calibration.ops_data.slower_moe_backend`) are
    skipped with that reason.
    """
    pred, why = _nan_skip(len(g))
    if "slower_duplicate" in g:
        why[g["slower_duplicate"].to_numpy(bool)] = SLOWER_BACKEND
    for dtype, idx in g.groupby("moe_dtype").indices.items():
        fmt, comp = od.DTYPE_TO_FORMAT.get(dtype), od.DTYPE_TO_COMPUTE.get(dtype)
        if fmt is None:
            why[idx] = f"unknown moe dtype {dtype}"
            continue
        if comp not in dev.peaks:
            why[idx] = f"no {comp} peak on {dev.accelerator}"
            continue
        idx = idx[why[idx] == ""]
        x = g.iloc[idx]
        routed, hit = moe_expert_load(x["num_tokens"], x["topk"], x["num_experts"], x["moe_ep_size"])
        inter = x["inter_size"].to_numpy(float) / x["moe_tp_size"].to_numpy(float)
        mats = np.where((x["kernel_source"] != "moe_torch_flow_nongated").to_numpy(), 3.0, 2.0)
        pred[idx] = moe_time(x["num_tokens"], routed, hit, x["hidden_size"], inter, mats, dev.peak(comp),
                             dev.bandwidth, eff, fmt, od.WEIGHT_BYTES[dtype]).total
    return pred, why


PREDICTORS: dict[str, Predictor] = {
    "gemm": predict_gemm, "attention_decode": predict_attention_decode,
    "attention_prefill": predict_attention_prefill, "mla_decode": predict_mla_decode,
    "mla_prefill": predict_mla_prefill, "nccl": predict_nccl, "custom_allreduce": predict_custom_allreduce,
    "moe": predict_moe,
}


def predict_table(df: pd.DataFrame, profile: Profile = "calibrated") -> pd.DataFrame:
    """Copy of a tidy table with ``predicted_s`` (NaN where skipped), ``skip_reason`` ('' if not) and
    ``profile`` (name of the efficiency profile used; '' where skipped).

    Parameters
    ----------
    df : pandas.DataFrame
        A per-op table, raw (as read from CSV) or tidy (:func:`~perfmodel.calibration.ops_data.tidy`).
    profile : str, Efficiency or mapping
        See the module docstring.
    """
    out = df if "latency_s" in df else od.tidy(df)
    out = out.copy()
    kind = str(out["kind"].iloc[0]) if len(out) else od.table_kind(df)
    pred, why = _nan_skip(len(out))
    used = np.full(len(out), "", dtype=object)
    for acc, idx in out.groupby("accelerator", dropna=False).indices.items():
        if not isinstance(acc, str):
            why[idx] = f"unknown system {out['system'].iloc[idx[0]]}"
            continue
        try:
            dev = od.device(acc)
        except ConfigError as exc:
            why[idx] = f"no datasheet figures: {exc}"
            continue
        try:
            eff = resolve_profile(acc, profile)
        except Exception as exc:  # a missing profile is reported per row, not raised
            why[idx] = f"no profile: {exc}"
            continue
        p, w = PREDICTORS[kind](out.iloc[idx], eff, dev)
        pred[idx], why[idx] = p, w
        used[idx] = eff.name
    out["predicted_s"], out["skip_reason"], out["profile"] = pred, why, used
    bad = np.isnan(pred) & (why == "")
    out.loc[bad, "skip_reason"] = "prediction not finite"
    return out


def error_stats(pred: np.ndarray, meas: np.ndarray) -> dict[str, float | int]:
    """Median and p90 of the absolute % error, median signed % error (bias), and the row count."""
    e = 100.0 * (np.asarray(pred, dtype=float) / np.asarray(meas, dtype=float) - 1.0)
    if len(e) == 0:
        return {"rows": 0, "median_abs_pct_error": float("nan"), "p90_abs_pct_error": float("nan"),
                "bias_pct": float("nan")}
    return {"rows": int(len(e)), "median_abs_pct_error": round(float(np.median(np.abs(e))), 2),
            "p90_abs_pct_error": round(float(np.percentile(np.abs(e), 90)), 2),
            "bias_pct": round(float(np.median(e)), 2)}


def summarize(pred: pd.DataFrame) -> dict:
    """Summary dict of a predicted table (see :func:`validate_table`)."""
    kind = str(pred["kind"].iloc[0]) if len(pred) else "unknown"
    ok = pred["skip_reason"] == ""
    done = pred[ok]
    reasons = pred.loc[~ok, "skip_reason"].value_counts().to_dict()
    by_col = BY_COLUMN.get(kind, "system")
    by = {}
    for col in ("system", by_col, "split"):
        if col in done:
            by[col] = {str(k): error_stats(v["predicted_s"].to_numpy(), v["latency_s"].to_numpy())
                       for k, v in done.groupby(col)}
    profiles = {str(k): str(v) for k, v in done.groupby("system")["profile"].first().items()} \
        if "profile" in done else {}
    return {"table": kind, "rows": int(len(pred)), "predicted": int(ok.sum()), "profiles": profiles,
            "skipped": int((~ok).sum()), "skipped_reasons": {str(k): int(v) for k, v in reasons.items()},
            "latency": error_stats(done["predicted_s"].to_numpy(), done["latency_s"].to_numpy()),
            "by": by}


def validate_table(table: pd.DataFrame | str | Path, profile: Profile = "calibrated",
                   split: str | None = None) -> dict:
    """Predict every row of a per-op table and summarise the latency error.

    Parameters
    ----------
    table : DataFrame or path
        A per-op table (raw or tidy) or the path of one (``*.csv.gz``).
    profile : str, Efficiency or mapping
        ``"calibrated"``, ``"calibrated-plain"``, ``"calibrated-nokernel"``, ``"datasheet"``, a profile name,
        an Efficiency, or a mapping accelerator id -> Efficiency.
    split : {"train", "test"} or None
        Restrict to one side of the deterministic shape split (None = all rows).

    Returns
    -------
    dict
        ``{"table", "rows", "predicted", "profiles": {system: profile name}, "skipped",
        "skipped_reasons": {reason: count},
        "latency": {"median_abs_pct_error", "p90_abs_pct_error", "bias_pct", "rows"},
        "by": {"system": {...}, <dtype-like column>: {...}, "split": {...}}}``.
    """
    if isinstance(table, (str, Path)):
        table = pd.read_csv(table)
    df = table if "latency_s" in table else od.tidy(table)
    if split is not None:
        df = df[df["split"] == split]
    return summarize(predict_table(df, profile))
