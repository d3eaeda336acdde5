"""Fit the efficiency profiles ``perfmodel/data/calibration/<accelerator>.yaml`` to per-op latencies.

Per system, parameters minimise the robust least-squares norm of the log ratio
:math:`r = \\ln(t_{pred}/t_{meas})` (soft-L1 with scale 0.1, i.e. quadratic up to about 10 % relative
error) over the TRAINING rows of the deterministic 80/20 shape-hash split
(:func:`perfmodel.calibration.ops_data.shape_hash`), with ``scipy.optimize.least_squares``; the
held-out rows are only predicted. Two forms are fitted:

``plain``
    The scalar fields the step model uses today: ``gemm_m_half``, ``memory``, ``kernel_overhead``
    and ``gemm_compute.bf16`` (bf16 GEMMs), then ``gemm_compute`` of the other formats with those
    fixed, from their large GEMMs; ``attention_compute`` (prefill attention, GQA + MLA,
    with ``memory`` and ``kernel_overhead`` fixed); ``attention_memory`` (decode attention, GQA + MLA);
    ``collective_alpha`` and ``collective_bandwidth`` (TRT-LLM custom all-reduce). The attention η
    are fitted with a free per-call overhead that is then dropped (it is not a scalar field), so the
    plain form under-predicts small attention calls unless the caller adds the family's
    ``op_params[...]["kernel_overhead"]``.
``extended``
    ``op_params`` shape terms per op family (see :mod:`perfmodel.core.costs`): per GEMM format,
    decode attention (GQA, MLA), prefill attention (GQA, MLA), the fused MoE block per format
    (:func:`perfmodel.core.costs.moe_time`) and NCCL. The cost functions use them
    whenever a profile carries them.
``kernel-level GQA decode`` (``op_params["attention_decode.kernel"]``)
    The decode-attention terms plus TensorRT-LLM's kernel paths, work units, split-KV and occupancy
    (:func:`perfmodel.core.attention_costs.attention_decode_time`). Per-op prediction and the step model use
    them where a profile has them (:meth:`perfmodel.core.efficiency.Efficiency.decode_family`); the
    plain ``attention_decode`` terms stay as the fallback. Why the step model switched, with the
    serving and own-measurement errors of both forms: docs/calibration.md.

``step_overhead`` stays 0 (engine-level, fitted elsewhere). Run::

    python -m perfmodel.calibration.fit_ops --out perfmodel/data/calibration
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy.optimize import least_squares

from ..core.efficiency import DECODE_KERNEL_FAMILY, Efficiency
from . import ops_data as od
from .op_validation import PREDICTORS, error_stats, without_kernel_terms

MAX_FIT_ROWS = 3000   # training rows per (system, fit group), sampled with a fixed seed
MAX_GROUP = 32        # query heads per KV head above which the decode kernel re-reads the KV
LARGE_M = 2048        # GEMMs with M and sqrt(NK) at least this set the plain η of fp8/fp4 formats
US = 1e-6

# (parameter path, lower, upper, start). Paths: field, field.key, or op_params/<family>/<key>.
GEMM_PLAIN = [("gemm_m_half", 0.0, 4096.0, 64.0), ("memory", 0.05, 1.0, 0.8),
              ("kernel_overhead", 0.0, 50 * US, 4 * US)]
GEMM_EXT = [("compute", 0.01, 1.0, 0.7), ("m_half", 0.0, 4096.0, 64.0), ("memory", 0.05, 1.0, 0.8),
            ("kernel_overhead", 0.0, 50 * US, 4 * US), ("quant_bytes", 0.0, 16.0, 2.0),
            ("wave", 0.0, 1.0, 0.3), ("overlap", 1.0, 20.0, 2.0)]
DECODE_EXT = [("memory", 0.05, 1.0, 0.8), ("compute", 1e-3, 1.0, 0.1),
              ("kernel_overhead", 0.0, 50 * US, 8 * US), ("min_tokens", 1.0, 1024.0, 64.0),
              ("head_bytes", 0.0, 1000.0, 10.0), ("overlap", 1.0, 20.0, 2.0)]
#: Kernel-level GQA/MHA decode form: the terms above plus work units, split-KV, occupancy and the
#: kernel paths (see ``attention_decode_time``)
DECODE_KERNEL_EXT = DECODE_EXT + [
    ("unit_cost", 0.0, 20 * US, 1 * US), ("unit_cost_group", 0.0, 20 * US, 1 * US),
    ("unit_cost_group_fp8", 0.0, 20 * US, 1 * US), ("kernel_overhead_fp8", 0.0, 50 * US, 6 * US),
    ("unit_half", 0.0, 64.0, 1.0), ("split_cost", 0.0, 30 * US, 3 * US),
    ("split_window", 0.0, 1.0, 0.5), ("memory_head", 0.05, 1.0, 0.8), ("memory_head_fp8", 0.05, 1.0, 0.8),
    ("reread_fraction", 0.0, 1.0, 0.5), ("split_chunk", 32.0, 8192.0, 512.0), ("split_fill", 0.25, 16.0, 2.0)]
#: Candidate KV lengths from which the decode kernel runs a split-KV reduction pass; each system keeps
#: the one with the lowest training median error (a kernel heuristic that differs by architecture:
#: 2026-11-30, H100 10.35 / 10.16 / 10.57 %, H200 9.86 / 9.79 / 9.96 %, B200 5.23 / 5.18 / 5.18 %,
#: GB200 5.47 / 5.78 / 5.17 %)
SPLIT_TOKENS = (128, 256, 512)
DECODE_NFEV = 400     # the kernel-level decode form has 18 parameters
PREFILL_EXT = [("compute", 0.01, 1.0, 0.6), ("compute_fp8", 0.01, 1.0, 0.5),
               ("head_dim_half", 0.0, 1024.0, 64.0), ("tile_cost", 0.0, 1e-6, 1e-8),
               ("memory", 0.01, 1.0, 0.3), ("kernel_overhead", 0.0, 50 * US, 10 * US),
               ("overlap", 1.0, 20.0, 2.0)]
MOE_EXT = [("compute", 0.01, 1.0, 0.5), ("m_half", 0.0, 4096.0, 32.0), ("memory", 0.05, 1.0, 0.7),
           ("overlap", 1.0, 20.0, 2.0), ("token_bytes", 0.0, 512.0, 4.0), ("pair_bytes", 0.0, 64.0, 4.0),
           ("expert_overhead", 0.0, 20 * US, 0.5 * US), ("kernel_overhead", 0.0, 200 * US, 20 * US)]
FAMILY_OF = {"gemm": "gemm", "attention_decode": "decode attention", "mla_decode": "decode attention",
             "attention_prefill": "prefill attention", "mla_prefill": "prefill attention",
             "custom_allreduce": "custom all-reduce", "nccl": "nccl", "moe": "moe"}


def with_params(eff: Efficiency, values: dict[str, float]) -> Efficiency:
    """Copy of ``eff`` with parameters set by path (``memory``, ``gemm_compute.bf16``,
    ``op_params/gemm.bf16/m_half``)."""
    kw: dict = {}
    ops = {k: dict(v) for k, v in eff.op_params.items()}
    comp = dict(eff.gemm_compute)
    for path, v in values.items():
        if path.startswith("op_params/"):
            _, fam, key = path.split("/")
            ops.setdefault(fam, {})[key] = float(v)
        elif path.startswith("gemm_compute."):
            comp[path.split(".", 1)[1]] = float(v)
        else:
            kw[path] = float(v)
    return replace(eff, gemm_compute=comp, op_params=ops, **kw)


def _fit_rows(df: pd.DataFrame, group: str | None, max_rows: int) -> pd.DataFrame:
    train = df[df["split"] == "train"]
    if group is None:
        return train.sample(min(len(train), max_rows), random_state=0).sort_index()
    parts = [g.sample(min(len(g), max_rows), random_state=0) for _, g in train.groupby(group)]
    return pd.concat(parts).sort_index()


def fit(eff: Efficiency, dev: od.Device, data: list[tuple[str, pd.DataFrame]],
        specs: list[tuple[str, float, float, float]], max_nfev: int = 200) -> Efficiency:
    """Least-squares fit of the parameters ``specs`` on rows ``data`` [(table kind, rows), ...]."""
    paths = [s[0] for s in specs]
    lo, hi = np.array([s[1] for s in specs]), np.array([s[2] for s in specs])
    x0 = np.clip(np.array([s[3] for s in specs]), lo, hi)
    scale = np.maximum(np.abs(x0), (hi - lo) * 1e-3)
    meas = [np.log(rows["latency_s"].to_numpy(float)) for _, rows in data]

    def resid(x: np.ndarray) -> np.ndarray:
        trial = with_params(eff, dict(zip(paths, x, strict=True)))
        out = [np.log(np.maximum(PREDICTORS[kind](rows, trial, dev)[0], 1e-12)) - m
               for (kind, rows), m in zip(data, meas, strict=True)]
        return np.concatenate(out)

    res = least_squares(resid, x0, bounds=(lo, hi), x_scale=scale, loss="soft_l1", f_scale=0.1,
                        max_nfev=max_nfev)
    # values pinned at a bound within 1e-6 of its range are written as the bound (clean profiles)
    x = np.where(res.x - lo < 1e-6 * (hi - lo), lo, np.where(hi - res.x < 1e-6 * (hi - lo), hi, res.x))
    return with_params(eff, {p: float(f"{v:.4g}") for p, v in zip(paths, x, strict=True)})


def _op(prefix: str, specs, skip=()) -> list:
    """Parameter specs of an op_params family (``op_params/<prefix>/<key>``)."""
    return [(f"op_params/{prefix}/{n}", lo, hi, x0) for n, lo, hi, x0 in specs if n not in skip]


def fit_system(system: str, tables: dict[str, pd.DataFrame], max_rows: int = MAX_FIT_ROWS) -> Efficiency:
    """Fit the plain and extended parameters of one AIConfigurator system (see module docstring)."""
    acc = od.SYSTEM_TO_ACCELERATOR[system]
    dev = od.device(acc)
    t = {k: v[v["system"] == system] for k, v in tables.items()}
    eff = Efficiency(name=acc)
    gemm = t["gemm"]
    fmts = sorted({od.DTYPE_TO_FORMAT[d] for d in gemm["dtype"].unique()})
    # -- plain GEMM: M½, η_m and t_k from bf16 (t_k is charged to every kernel of a step, and the
    #    fp8/fp4 rows include on-the-fly activation quantisation kernels), then η per other format
    #    from its large GEMMs (M >= LARGE_M, where η_c,max is what matters)
    bf16 = gemm[gemm["dtype"] == "bfloat16"]
    eff = fit(eff, dev, [("gemm", _fit_rows(bf16, None, max_rows))],
              [("gemm_compute.bf16", 0.01, 1.0, 0.6)] + GEMM_PLAIN)
    low = gemm[(gemm["dtype"] != "bfloat16") & (gemm["m"] >= LARGE_M) & (gemm["n"] * gemm["k"] >= LARGE_M**2)]
    eff = fit(eff, dev, [("gemm", _fit_rows(low, "dtype", max_rows))],
              [(f"gemm_compute.{f}", 0.01, 1.0, 0.6) for f in fmts if f != "bf16"])
    eff = with_params(eff, {"gemm_compute.default": eff.gemm_compute["bf16"]})
    # -- plain attention: η_ac from prefill (GQA + MLA), then η_am from decode (GQA + MLA), each
    #    with its own per-call overhead (attention kernels cost 3-4x a GEMM's t_k); that overhead is
    #    not a scalar field (the extended op_params carry it), so only the η are kept
    over = [("kernel_overhead", 0.0, 50 * US, 8 * US)]
    pre = [(k, _fit_rows(t[k], None, max_rows)) for k in ("attention_prefill", "mla_prefill")]
    got = fit(eff, dev, pre, [("attention_compute", 0.01, 1.0, 0.5)] + over)
    eff = with_params(eff, {"attention_compute": got.attention_compute})
    dec = [(k, _fit_rows(t[k], None, max_rows)) for k in ("attention_decode", "mla_decode")]
    got = fit(eff, dev, dec, [("attention_memory", 0.01, 1.0, 0.5)] + over)
    eff = with_params(eff, {"attention_memory": got.attention_memory})
    # -- custom all-reduce (the collective serving uses)
    ar = t["custom_allreduce"]
    eff = fit(eff, dev, [("custom_allreduce", ar[ar["split"] == "train"])],
              [("collective_alpha", 0.1 * US, 50 * US, 5 * US), ("collective_bandwidth", 0.05, 1.0, 0.7)])
    # -- extended: per GEMM format
    for dtype in sorted(gemm["dtype"].unique()):
        fmt = od.DTYPE_TO_FORMAT[dtype]
        eff = with_params(eff, {f"op_params/gemm.{fmt}/slots": dev.sm_count})
        rows = _fit_rows(gemm[gemm["dtype"] == dtype], None, max_rows)
        eff = fit(eff, dev, [("gemm", rows)], _op(f"gemm.{fmt}", GEMM_EXT,
                                                   skip=("quant_bytes",) if fmt == "bf16" else ()))
    # -- extended: decode attention (GQA with the group rule; MLA), prefill (GQA, MLA)
    eff = with_params(eff, {"op_params/attention_decode/max_group": MAX_GROUP})
    for kind in ("attention_decode", "mla_decode"):
        eff = fit(eff, dev, [(kind, _fit_rows(t[kind], None, max_rows))], _op(kind, DECODE_EXT))
    # -- kernel-level GQA decode form (preferred by the step model and per-op prediction; the form
    #    above stays as the fallback of profiles without it)
    kernel, dec = DECODE_KERNEL_FAMILY, t["attention_decode"]
    train, rows = dec[dec["split"] == "train"], _fit_rows(dec, None, max_rows)
    best = None
    for split_tokens in SPLIT_TOKENS:
        trial = with_params(eff, {f"op_params/{kernel}/max_group": MAX_GROUP,
                                  f"op_params/{kernel}/slots": dev.sm_count,
                                  f"op_params/{kernel}/split_tokens": split_tokens})
        trial = fit(trial, dev, [("attention_decode", rows)], _op(kernel, DECODE_KERNEL_EXT), max_nfev=DECODE_NFEV)
        err = error_stats(PREDICTORS["attention_decode"](train, trial, dev)[0],
                          train["latency_s"].to_numpy())["median_abs_pct_error"]
        if best is None or err < best[0]:
            best = (err, trial)
    eff = best[1]
    eff = fit(eff, dev, [("attention_prefill", _fit_rows(t["attention_prefill"], "attn_dtype", max_rows))],
              _op("attention_prefill", PREFILL_EXT))
    eff = fit(eff, dev, [("mla_prefill", _fit_rows(t["mla_prefill"], None, max_rows))],
              _op("mla_prefill", PREFILL_EXT, skip=("compute_fp8", "head_dim_half")))
    # -- extended: fused MoE per format (MXFP4 weights with bf16 or MXFP8 activations apart)
    moe = t["moe"][~t["moe"]["slower_duplicate"].to_numpy(bool)]
    fmt_of = moe["moe_dtype"].map(od.DTYPE_TO_FORMAT)
    for fmt in sorted(fmt_of.dropna().unique()):
        rows = _fit_rows(moe[fmt_of == fmt], None, max_rows)
        eff = fit(eff, dev, [("moe", rows)], _op(f"moe.{fmt}", MOE_EXT, skip=("m_half",)))
    nccl = t["nccl"]
    nccl = nccl[(nccl["op"] == "all_reduce") & (nccl["split"] == "train")]
    eff = fit(eff, dev, [("nccl", nccl)], [("op_params/nccl/alpha", 0.1 * US, 100 * US, 10 * US),
                                           ("op_params/nccl/bandwidth", 0.05, 1.0, 0.7)])
    return eff


def evaluate(eff: Efficiency, system: str, tables: dict[str, pd.DataFrame]) -> dict:
    """Errors per table: calibrated (with op_params), plain (without) and datasheet, train and test."""
    acc = od.SYSTEM_TO_ACCELERATOR[system]
    dev = od.device(acc)
    forms = {"calibrated": eff, "plain": replace(eff, op_params={}), "datasheet": Efficiency()}
    out: dict = {}
    for kind, df in tables.items():
        rows = df[df["system"] == system]
        if rows.empty:
            continue
        entry = {}
        # decode attention: also the fallback form (without the kernel-level terms)
        extra = {"nokernel": without_kernel_terms(eff)} if kind == "attention_decode" else {}
        for form, e in {**forms, **extra}.items():
            pred, why = PREDICTORS[kind](rows, e, dev)
            ok = why == ""
            entry[form] = {split: error_stats(pred[ok & (rows["split"] == split).to_numpy()],
                                              rows["latency_s"].to_numpy()[ok & (rows["split"] == split)
                                                                          .to_numpy()])
                           for split in ("train", "test")}
        entry["skipped"] = int((~ok).sum())
        out[kind] = entry
    return out


def _short(stats: dict) -> str:
    return f"{stats['median_abs_pct_error']:.1f}/{stats['p90_abs_pct_error']:.1f}"


def profile_document(eff: Efficiency, system: str, tables: dict[str, pd.DataFrame], errors: dict,
                     data_dir: Path, date: str) -> dict:
    """The YAML document of one profile: ``name``, ``parameters``, ``provenance``."""
    acc = od.SYSTEM_TO_ACCELERATOR[system]
    dev = od.device(acc)
    params = {"gemm_compute": dict(eff.gemm_compute), "gemm_m_half": eff.gemm_m_half,
              "memory": eff.memory, "attention_compute": eff.attention_compute,
              "attention_memory": eff.attention_memory, "kernel_overhead": eff.kernel_overhead,
              "collective_alpha": eff.collective_alpha,
              "collective_bandwidth": eff.collective_bandwidth, "step_overhead": 0.0,
              "op_params": {k: dict(v) for k, v in sorted(eff.op_params.items())}}
    held = "; ".join(f"{k} {_short(v['calibrated']['test'])}"
                     + (f" (without kernel terms {_short(v['nokernel']['test'])})" if "nokernel" in v else "")
                     for k, v in errors.items())
    files = {}
    for kind, df in tables.items():
        rows = df[df["system"] == system]
        files[f"{kind}.csv.gz"] = {"sha256_16": od.file_digest(data_dir / f"{kind}.csv.gz"),
                                   "rows": int(len(rows)), "train": int((rows["split"] == "train").sum()),
                                   "test": int((rows["split"] == "test").sum())}
    summary = (f"Fitted {date} to AIConfigurator (aiconfigurator-core 0.12.0) per-op measurements of "
               f"{system} (TensorRT-LLM 1.3.0rc20 kernels, NCCL 2.29.2) on the training side of an 80/20 "
               f"shape-hash split; held-out median/p90 |error| % with op_params: {held}")
    return {
        "name": acc,
        "parameters": params,
        "provenance": {
            "summary": summary,
            "date": date,
            "method": ("scipy.optimize.least_squares, soft-L1 (scale 0.1) on ln(pred/meas) over training "
                       f"rows (<= {MAX_FIT_ROWS} per fit group, sampled with seed 0); see "
                       "perfmodel/calibration/fit_ops.py and docs/calibration.md"),
            "datasheet": {"peaks_flops": dev.peaks, "hbm_bandwidth": dev.bandwidth,
                          "link_bandwidth_per_direction": dev.link_bandwidth, "sm_count": dev.sm_count,
                          "source": dev.source},
            "data": {"dir": "shared/data/ops (see its PROVENANCE.md)", "system": system, "files": files},
            "errors_pct": errors,
            "collectives": {"custom_allreduce": {"alpha_s": eff.collective_alpha,
                                                 "bandwidth_fraction": eff.collective_bandwidth},
                            "nccl_all_reduce": {"alpha_s": eff.op("nccl").get("alpha"),
                                                "bandwidth_fraction": eff.op("nccl").get("bandwidth")}},
            "notes": ["step_overhead is engine-level and left 0 here.",
                      "gemm_compute.fp8 is per-tensor FP8; fp8_block (128x128 block scales) is separate.",
                      "moe.<format> terms are fitted on the fused MoE tables (fastest backend per shape); "
                      "routing skew is not modelled."],
        },
    }


def load_tables(data_dir: Path) -> dict[str, pd.DataFrame]:
    """Every per-op table of ``data_dir`` as a tidy frame, by table kind."""
    return {k: od.read_table(k, data_dir) for k in od.TABLES}


def fit_all(data_dir: str | Path | None = None, max_rows: int = MAX_FIT_ROWS,
            systems: list[str] | None = None) -> dict[str, Efficiency]:
    """Fitted Efficiency per accelerator id (no files written)."""
    tables = load_tables(Path(data_dir or od.default_ops_dir()))
    systems = systems or sorted(tables["gemm"]["system"].unique())
    return {od.SYSTEM_TO_ACCELERATOR[s]: fit_system(s, tables, max_rows) for s in systems}


def main(argv: list[str] | None = None) -> int:
    """Command line: fit every system of the tables and write one profile YAML per accelerator."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=None, help="folder of the per-op *.csv.gz tables")
    ap.add_argument("--out", type=Path, default=Path("perfmodel/data/calibration"))
    ap.add_argument("--max-rows", type=int, default=MAX_FIT_ROWS)
    ap.add_argument("--date", default=os.environ.get("CALIBRATION_DATE", dt.date.today().isoformat()))
    args = ap.parse_args(argv)
    data_dir = Path(args.data or od.default_ops_dir())
    tables = load_tables(data_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    for system in sorted(tables["gemm"]["system"].unique()):
        eff = fit_system(system, tables, args.max_rows)
        errors = evaluate(eff, system, tables)
        doc = profile_document(eff, system, tables, errors, data_dir, args.date)
        path = args.out / f"{doc['name']}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False, width=110))
        print(f"{path}: held-out median/p90 % " + ", ".join(
            f"{k} {_short(v['calibrated']['test'])} (plain {_short(v['plain']['test'])})"
            for k, v in errors.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
