"""Throughput normalised the way the reader compares it: per device, per GPU, per MW, per dollar, per user.

A rate column of a result frame (``output_tokens_per_s``, ``decode_tokens_per_s``, ``goodput_requests_per_s``...)
is the throughput of everything the row describes: one replica for :func:`perfmodel.predict`, all
replicas of a sweep row, all pools of a deployment. Dividing it by the right quantity of the same row
gives

=============  ===============================================  =====================================
``normalize``  value                                            needs the column
=============  ===============================================  =====================================
``"device"``   :math:`R / n_{dev}` (every chip, of any kind)    ``devices``
``"gpu"``      :math:`R / n_{gpu}` (HBM or GDDR accelerators)   ``gpus``, or ``devices`` when every
                                                                row's ``hardware`` is one such device
``"mw"``       :math:`R / (P / 10^6)` with P in W               ``power_w``
``"dollar"``   :math:`3600\\,R / c` with c in USD/h: units per   ``usd_per_hour``
               dollar spent
``"user"``     :math:`R / n_{seq}` (concurrent sequences)       ``sequences`` (a sweep's dp × batch),
                                                                else ``concurrency`` (clients), else
                                                                ``batch`` (× ``dp``)
``None``       :math:`R` as it is
=============  ===============================================  =====================================

In a mixed deployment (GPUs and SRAM LPUs) "per device" counts every chip and "per GPU" only the
GPUs; the two differ by the LPU count, which is why ``"gpu"`` refuses rows that mix device kinds
unless the frame says how many of the devices are GPUs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ConfigError

#: Rate columns that can be normalised: column -> (name, counted unit).
RATE_COLUMNS = {
    "output_tokens_per_s": ("output tokens/s", "tok"),
    "decode_tokens_per_s": ("decode tokens/s", "tok"),
    "total_tokens_per_s": ("input+output tokens/s", "tok"),
    "input_tokens_per_s": ("input tokens/s", "tok"),
    "goodput_requests_per_s": ("goodput", "req"),
    "requests_per_s": ("throughput", "req"),
}
#: Accepted ``normalize`` values and how the axis label reads.
NORMALIZE = {"device": "per device", "gpu": "per GPU", "mw": "per MW", "dollar": "per US dollar",
             "user": "per user", None: ""}


def normalized_rate(df: pd.DataFrame, column: str, normalize: str | None) -> tuple[pd.Series, str]:
    """A rate column divided by the devices, GPUs, megawatts, dollars or users of each row.

    Parameters
    ----------
    df : pandas.DataFrame
        Result rows (see the module table for the columns each choice needs).
    column : str
        A rate of the whole row (:data:`RATE_COLUMNS`), in tok/s or req/s.
    normalize : {"device", "gpu", "mw", "dollar", "user"} or None
        What to divide by (None: the rate as it is; any column is then accepted).

    Returns
    -------
    (pandas.Series, str)
        The values and an axis label with their unit, e.g. ``"output tokens/s per GPU [tok/s/GPU]"``.

    Raises
    ------
    ConfigError
        Unknown ``normalize``, a column that is not a whole-row rate, or rows that lack the devices,
        power or price the choice needs (the rows are named).
    """
    if normalize not in NORMALIZE:
        raise ConfigError(f"normalize: expected one of {sorted(k for k in NORMALIZE if k)} or None, "
                          f"got {normalize!r}")
    if column not in df.columns:
        raise ConfigError(f"{column!r}: not a column of the frame (columns: {list(df.columns)})")
    rate = df[column].astype(float)
    if normalize is None:
        from .style import column_label

        return rate, column_label(column)
    if column not in RATE_COLUMNS:
        raise ConfigError(f"normalize={normalize!r}: {column!r} is not a rate of a whole row; expected one of "
                          f"{sorted(RATE_COLUMNS)} (or normalize=None to draw {column!r} as it is)")
    name, unit = RATE_COLUMNS[column]
    if normalize == "device":
        return rate / _need(df, "devices", normalize, rate), f"{name} per device [{unit}/s/device]"
    if normalize == "gpu":
        return rate / _gpus(df, rate), f"{name} per GPU [{unit}/s/GPU]"
    if normalize == "mw":
        return rate / (_need(df, "power_w", normalize, rate) / 1e6), f"{name} per MW [{unit}/s/MW]"
    if normalize == "dollar":
        per_unit = name.replace("tokens/s", "tokens")
        return (3600.0 * rate / _need(df, "usd_per_hour", normalize, rate),
                f"{per_unit} per US dollar [{unit}/USD]")
    return rate / _users(df, rate), f"{name} per user [{unit}/s/user]"


def _need(df: pd.DataFrame, col: str, normalize: str, rate: pd.Series) -> pd.Series:
    """Column ``col`` as floats, positive and finite wherever ``rate`` is finite."""
    if col not in df.columns:
        raise ConfigError(f"normalize={normalize!r} needs a {col!r} column, which the frame lacks "
                          f"(columns: {list(df.columns)}); {_HINTS.get(col, '')}".rstrip("; "))
    vals = pd.to_numeric(df[col], errors="coerce").astype(float)
    bad = np.isfinite(rate) & ~(np.isfinite(vals) & (vals > 0))
    if bad.any():
        who = _row_names(df[bad])
        raise ConfigError(f"normalize={normalize!r}: {col!r} is missing or not positive for {who}; "
                          f"{_HINTS.get(col, '')}".rstrip("; "))
    return vals


_HINTS = {
    "power_w": "power comes from the hardware's TDP (sweep(power=...)) or a deployment's "
               "power_per_device; hardware without a published TDP has none",
    "usd_per_hour": "pass prices to sweep(price=...) or a total-cost model (tco=...)",
    "devices": "predict, sweep and deployment frames carry it",
}


def _gpus(df: pd.DataFrame, rate: pd.Series) -> pd.Series:
    if "gpus" in df.columns:
        return _need(df, "gpus", "gpu", rate)
    devices = _need(df, "devices", "gpu", rate)
    if "hardware" not in df.columns:
        raise ConfigError("normalize='gpu' needs a 'gpus' column, or 'hardware' and 'devices' columns to "
                          "count GPUs from")
    kinds = {hw: _memory_kind(str(hw)) for hw in df["hardware"].unique()}
    other = {hw: kind for hw, kind in sorted(kinds.items()) if kind not in GPU_MEMORIES}
    if other:
        what = ", ".join(f"{hw} ({kind})" for hw, kind in other.items())
        raise ConfigError(f"normalize='gpu': hardware {what} is not a device with {' or '.join(GPU_MEMORIES)} "
                          "main memory, so 'devices' does not count GPUs; add a 'gpus' column with the GPU "
                          "count of each row, or use normalize='device' (every chip) or 'mw'")
    return devices


#: Main-memory kinds of the devices ``normalize="gpu"`` counts as GPUs from the ``devices`` column.
GPU_MEMORIES = ("hbm", "gddr")


def _memory_kind(hardware: str) -> str:
    """Main memory kind (``"hbm"``, ``"gddr"``, ``"sram"``...) of a hardware id or file; ``"mixed"`` for
    ``"a+b"`` rows, ``"not in the catalogue"`` for a name that cannot be loaded. Not cached here: the
    registry re-reads an edited hardware file."""
    if "+" in hardware:
        return "mixed"
    from ..errors import PerfmodelError
    from ..hardware import load_accelerator

    try:
        return str(load_accelerator(hardware).main_memory)
    except (PerfmodelError, OSError):
        return "not in the catalogue"


def _users(df: pd.DataFrame, rate: pd.Series) -> pd.Series:
    # a sweep frame names its dp x batch "sequences" (a frame saved before the rename, "concurrency")
    for column in ("sequences", "concurrency"):
        if column in df.columns:
            return _need(df, column, "user", rate)
    batch = _need(df, "batch", "user", rate)
    return batch * (pd.to_numeric(df["dp"]).astype(float) if "dp" in df.columns else 1.0)


def _row_names(rows: pd.DataFrame, most: int = 4) -> str:
    """Rows named by their deployment or hardware (and batch) for error messages."""
    key = next((c for c in ("deployment", "hardware", "model") if c in rows.columns), None)
    names = list(dict.fromkeys(str(v) for v in rows[key])) if key else [str(i) for i in rows.index]
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return f"{len(rows)} row(s) ({key or 'index'}: {', '.join(names[:most])}{more})"
