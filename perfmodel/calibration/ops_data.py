"""Readers of the measured per-op tables (AIConfigurator ``aiconfigurator-core`` 0.12.0 extracts).

Each table is a gzipped CSV (``gemm``, ``attention_decode``, ``attention_prefill``, ``mla_decode``,
``mla_prefill``, ``nccl``, ``custom_allreduce``, ``moe``; see ``PROVENANCE.md`` beside the full
tables). :func:`read_table` returns a tidy frame in SI units: ``latency_s`` [s] (from ``latency_ms``),
``message_bytes`` [B] for collectives, plus ``accelerator`` (perfmodel id) and ``split`` (``train`` or
``test``, a deterministic 80/20 split by a hash of the row's shape key, the same for every system so a
held-out shape is held out everywhere).
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ConfigError

TABLES = ("gemm", "attention_decode", "attention_prefill", "mla_decode", "mla_prefill", "nccl",
          "custom_allreduce", "moe")

#: AIConfigurator system name -> perfmodel accelerator id (the names its databases use; any other
#: name is looked up as a shipped accelerator id or alias by :func:`accelerator_of`).
SYSTEM_TO_ACCELERATOR = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200",
                         "gb200": "gb200", "b300_sxm": "b300", "gb300": "gb300"}
#: Compute keys a per-op table can ask for (dense peaks read from the hardware spec).
COMPUTE_KEYS = ("bf16", "fp8", "fp4")
#: Table dtype name -> perfmodel compute key (selects the dense peak).
DTYPE_TO_COMPUTE = {"bfloat16": "bf16", "float16": "bf16", "half": "bf16", "fp8": "fp8",
                    "fp8_block": "fp8", "nvfp4": "fp4", "w4a16_mxfp4": "bf16", "w4a8_mxfp4_mxfp8": "fp8"}
#: Table dtype name -> format key of the fitted terms (``gemm_compute`` / ``op_params``). The MXFP4
#: MoE kernels (gpt-oss: bf16 activations on Hopper, MXFP8 on Blackwell) get their own MoE terms
#: (``moe.mxfp4_a16``, ``moe.mxfp4_a8``; see :attr:`perfmodel.precision.Precision.moe_format`).
DTYPE_TO_FORMAT = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "fp4",
                   "w4a16_mxfp4": "mxfp4_a16", "w4a8_mxfp4_mxfp8": "mxfp4_a8"}
#: Bytes per weight element (nvfp4: 4 bit + one fp8 scale per 16 elements; mxfp4: one per 32).
WEIGHT_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "fp8_block": 1.0 + 4.0 / (128 * 128), "nvfp4": 0.5625,
                "w4a16_mxfp4": 0.53125, "w4a8_mxfp4_mxfp8": 0.53125}
KV_BYTES = {"bfloat16": 2.0, "fp8": 1.0}

#: Columns of a table's shape key (the split unit); the system is deliberately not part of it.
SHAPE_KEYS = {
    "gemm": ("m", "n", "k"),
    "attention_decode": ("batch_size", "kv_len", "num_heads", "num_key_value_heads", "head_dim",
                         "window_size", "kv_cache_dtype"),
    "attention_prefill": ("batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim",
                          "window_size", "attn_dtype", "kv_cache_dtype"),
    "mla_decode": ("batch_size", "kv_len", "num_heads", "kv_cache_dtype"),
    "mla_prefill": ("batch_size", "isl", "num_heads", "kv_cache_dtype"),
    "nccl": ("op", "dtype", "num_gpus", "message_size_bytes"),
    "custom_allreduce": ("num_gpus", "message_size_bytes"),
    "moe": ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
            "moe_ep_size", "distribution"),
}
TRAIN_PERCENT = 80


@dataclass(frozen=True)
class Device:
    """Datasheet figures of one measured accelerator (dense peaks [FLOP/s], bandwidths [B/s])."""

    accelerator: str
    peaks: dict[str, float]
    bandwidth: float
    link_bandwidth: float
    sm_count: int | None
    source: str

    def peak(self, compute: str) -> float:
        """Dense peak [FLOP/s] for a compute key; ``ConfigError`` if the part has none."""
        if compute not in self.peaks:
            raise ConfigError(f"{self.accelerator}: no {compute} peak")
        return self.peaks[compute]


#: Datasheet numbers (dense) used when the hardware specs cannot be read. NVLink per direction.
DATASHEET = {
    "h100-sxm": Device("h100-sxm", {"bf16": 989e12, "fp8": 1979e12}, 3.35e12, 450e9, 132, "constants"),
    "h200-sxm": Device("h200-sxm", {"bf16": 989e12, "fp8": 1979e12}, 4.8e12, 450e9, 132, "constants"),
    "b200": Device("b200", {"bf16": 2.25e15, "fp8": 4.5e15, "fp4": 9e15}, 8.0e12, 900e9, 148,
                   "constants"),
    "gb200": Device("gb200", {"bf16": 2.5e15, "fp8": 5e15, "fp4": 1e16}, 8.0e12, 900e9, 148,
                    "constants"),
}


def accelerator_of(system: object) -> str | None:
    """Accelerator id of a table's ``system`` cell, or None when no shipped accelerator matches.

    AIConfigurator's names (:data:`SYSTEM_TO_ACCELERATOR`) first, then any shipped accelerator id or
    alias (``b300_sxm`` and ``b300-sxm`` are aliases of ``b300``).
    """
    if not isinstance(system, str) or not system.strip():
        return None
    if system in SYSTEM_TO_ACCELERATOR:
        return SYSTEM_TO_ACCELERATOR[system]
    from ..errors import PerfmodelError
    from ..hardware import load_accelerator

    try:
        return load_accelerator(system.strip()).id
    except PerfmodelError:
        return None


def device(accelerator: str) -> Device:
    """Datasheet figures for a measured accelerator: shipped hardware spec where it has them all.

    Peaks and HBM bandwidth come from ``perfmodel.load_accelerator`` when that spec exists and lists
    every compute key of :data:`DATASHEET`, and the per-direction bandwidth from its scale-up link;
    otherwise the constants of :data:`DATASHEET` (the values quoted in the project brief) are used.
    SM counts are the constants (used only by the fit); an accelerator outside :data:`DATASHEET`
    (B300, GB300...) takes every figure from its spec, with the dense peaks of :data:`COMPUTE_KEYS`
    it lists and no SM count.

    Raises
    ------
    ConfigError
        An accelerator neither in :data:`DATASHEET` nor readable from the shipped specs.
    """
    from ..hardware import load_accelerator, load_link

    base = DATASHEET.get(accelerator)
    try:
        spec = load_accelerator(accelerator)
        keys = base.peaks if base is not None else [k for k in COMPUTE_KEYS if k in spec.compute]
        peaks = {k: float(spec.peak_flops(k)) for k in keys}
        bw = float(spec.memory_bandwidth)
        port = spec.scale_up
        link_bw = float(port.bandwidth.value if port.bandwidth else load_link(port.link).bandwidth.value)
    except Exception as exc:  # spec absent or incomplete: fall back to the brief's datasheet numbers
        if base is None:
            raise ConfigError(f"accelerator {accelerator!r}: no datasheet constants and no complete "
                              f"shipped spec ({exc})") from None
        return base
    return Device(accelerator, peaks, bw, link_bw, base.sm_count if base else None, "hardware_specs")


def repo_root() -> Path:
    """The repository (or installed tree) root: two levels above this package."""
    return Path(__file__).resolve().parents[2]


def default_ops_dir() -> Path:
    """The full tables (``../shared/data/ops`` beside the repository) or the small test copies."""
    full = repo_root().parent / "shared" / "data" / "ops"
    if (full / "gemm.csv.gz").exists():
        return full
    return repo_root() / "tests" / "data" / "ops"


def table_kind(df: pd.DataFrame) -> str:
    """Recognise a per-op table from its columns."""
    cols = set(df.columns)
    if {"m", "n", "k"} <= cols:
        return "gemm"
    if "num_experts" in cols:
        return "moe"
    if "mla_dtype" in cols or "head_dim" in cols:
        family = "mla" if "mla_dtype" in cols else "attention"
        return f"{family}_{attention_phase(df)}"
    if "implementation" in cols:
        return "custom_allreduce"
    if {"op", "num_gpus", "message_size_bytes"} <= cols:
        return "nccl"
    raise ConfigError(f"unrecognised per-op table (columns {sorted(cols)})")


def attention_phase(df: pd.DataFrame) -> str:
    """``decode`` (every row ``step`` > 0: one new token over a cache) or ``prefill`` (every ``step`` = 0).

    Raises
    ------
    ConfigError
        A table mixing both kinds of rows (or without a ``step`` column).
    """
    if "step" not in df:
        raise ConfigError("attention table without a 'step' column: cannot tell decode (step > 0) rows "
                          "from prefill (step = 0) rows")
    step = pd.to_numeric(df["step"], errors="coerce")
    if step.isna().any() or (step < 0).any():
        bad = df["step"][step.isna() | (step < 0)].iloc[0]
        raise ConfigError(f"attention table: step={bad!r} is not a number >= 0 (0 = prefill, > 0 = decode)")
    isl = pd.to_numeric(df["isl"], errors="coerce") if "isl" in df else pd.Series(1, index=df.index)
    if ((step > 0) & (isl != 1)).any():
        raise ConfigError("attention table: rows with step > 0 and isl != 1 are chunked prefill over a cached "
                          "prefix, which the per-op predictors do not cover (decode rows have isl = 1)")
    if (step > 0).all():
        return "decode"
    if (step == 0).all():
        return "prefill"
    raise ConfigError(f"attention table mixes decode rows (step > 0: {int((step > 0).sum())}) and prefill "
                      f"rows (step = 0: {int((step == 0).sum())}); split it into one table per phase")


def shape_hash(df: pd.DataFrame, kind: str) -> np.ndarray:
    """Deterministic bucket 0..99 of each row's shape key (CRC-32 of ``kind|v1|v2|...``)."""
    keys = pd.Series(kind, index=df.index)
    for col in SHAPE_KEYS[kind]:
        keys = keys + "|" + df[col].astype(str)
    codes, uniques = pd.factorize(keys)
    buckets = np.array([zlib.crc32(k.encode()) % 100 for k in uniques], dtype=int)
    return buckets[codes]


def tidy(df: pd.DataFrame, kind: str | None = None) -> pd.DataFrame:
    """Add SI columns, the accelerator id and the train/test split to a raw table (copy)."""
    kind = kind or table_kind(df)
    out = df.copy()
    out["kind"] = kind
    out["latency_s"] = out["latency_ms"].astype(float) * 1e-3
    names = out["system"].unique()
    out["accelerator"] = out["system"].map({n: accelerator_of(n) for n in names})
    if "message_size_bytes" in out:
        out["message_bytes"] = out["message_size_bytes"].astype(float)
    out["split"] = np.where(shape_hash(out, kind) < TRAIN_PERCENT, "train", "test")
    if kind == "moe":
        out["slower_duplicate"] = slower_moe_backend(out)
    return out


def slower_moe_backend(df: pd.DataFrame) -> np.ndarray:
    """Rows of MoE shapes measured with several backends that are not the fastest one (bool array).

    On B200/GB200 some NVFP4 shapes are measured with both the CUTLASS and the min-latency fused MoE
    (median 0.6x the CUTLASS time); an engine picks its MoE backend per shape, so the slower duplicate
    is not what a served step runs: it is skipped (with that reason) in validation and left out of
    the fit. Gated and non-gated (ReLU2) rows are different FFNs and are compared apart.
    """
    key = ["system", "moe_dtype", *SHAPE_KEYS["moe"]]
    gated = (df["kernel_source"] != "moe_torch_flow_nongated").rename("gated")
    order = df.assign(gated=gated).sort_values("latency_s", kind="stable")
    slower = order.duplicated(subset=[*key, "gated"], keep="first")
    return slower.reindex(df.index).to_numpy()


def read_table(kind: str, root: str | Path | None = None) -> pd.DataFrame:
    """Read ``<root>/<kind>.csv.gz`` as a tidy frame (see :func:`tidy`)."""
    if kind not in TABLES:
        raise ConfigError(f"table: expected one of {TABLES}, got {kind!r}")
    path = Path(root or default_ops_dir()) / f"{kind}.csv.gz"
    if not path.exists():
        raise ConfigError(f"{path}: per-op table not found")
    return tidy(pd.read_csv(path), kind)


def file_digest(path: str | Path) -> str:
    """First 16 hex digits of the file's SHA-256 (for provenance)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def sample_tables(src: str | Path, dst: str | Path, rows: int = 3000, seed: int = 0) -> dict[str, int]:
    """Write a deterministic sample (at most ``rows`` per table, spread evenly over the systems) of
    every per-op table in ``src`` to ``dst`` (gzipped CSV, original columns). Returns rows written."""
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    written = {}
    for kind in TABLES:
        df = pd.read_csv(src / f"{kind}.csv.gz")
        per = rows // df["system"].nunique()
        parts = [g.sample(min(len(g), per), random_state=seed) for _, g in df.groupby("system")]
        out = pd.concat(parts).sort_index()
        out.to_csv(dst / f"{kind}.csv.gz", index=False, compression={"method": "gzip", "mtime": 0})
        written[kind] = len(out)
    return written
