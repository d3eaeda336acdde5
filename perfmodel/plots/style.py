"""The one visual style of perfmodel's figures: rc settings, colours and unit-bearing axis labels.

Every plotting function runs inside :func:`styled` so that figures look the same whether they come
from the demo, a notebook or the docs. Colours carry meaning across figures: the same bound
(compute / memory / overhead / communication) and the same op class always get the same colour.
Axis labels always end with a unit in brackets (``"TPOT [ms]"``); :func:`column_label` derives one
from a DataFrame column name using the package's suffix conventions (``_s``, ``_bytes``,
``_per_s``...).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

F = TypeVar("F", bound=Callable[..., Any])

#: rc settings applied while a perfmodel figure is drawn.
RC: dict[str, Any] = {
    "figure.figsize": (6.4, 4.2),
    "figure.dpi": 100,
    "font.size": 9.5,
    "axes.titlesize": 10.5,
    "axes.titleweight": "bold",
    "axes.labelsize": 9.5,
    "axes.grid": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "legend.fontsize": 8.5,
    "legend.frameon": False,
    "lines.linewidth": 1.8,
    "lines.markersize": 5.5,
    "savefig.bbox": "tight",
}

#: Qualitative palette for series without a fixed meaning (deployments, configurations).
PALETTE = ("#1f5fa8", "#d9791a", "#2f9e5a", "#b8323a", "#7a4fb0", "#8c6d31", "#c2508f", "#4a9bb0",
           "#6b6b6b", "#a6a61e")

#: Colours of the parts of an op's time (same in every figure).
PART_COLORS = {
    "compute": "#1f5fa8",
    "memory": "#d9791a",
    "overhead": "#8f8f8f",
    "communication": "#b8323a",
}

#: Colours of latency percentiles (distinct hues, none the red of SLO limits), line styles as a second cue.
PERCENTILE_COLORS = {"p50": "#1f5fa8", "p90": "#2f9e5a", "p95": "#d9791a", "p99": "#7a4fb0"}

#: Colours of op classes (roofline points) and memory-budget parts.
CLASS_COLORS = {
    "attention_proj": "#1f5fa8",
    "attention": "#7a4fb0",
    "ffn": "#2f9e5a",
    "moe": "#4a9bb0",
    "elementwise": "#8f8f8f",
    "embedding_head": "#c2508f",
    "weights": "#1f5fa8",
    "kv_cache": "#d9791a",
    "workspace": "#8f8f8f",
}

#: Known column names -> axis label with unit.
COLUMN_LABELS = {
    "batch": "batch [sequences]",
    "isl": "input length [tok]",
    "osl": "output length [tok]",
    "load": "load [req/s]",
    "rate_rps": "arrival rate [req/s]",
    "arrival_rate_rps": "arrival rate [req/s]",
    "request_rate": "arrival rate [req/s]",
    "concurrency": "concurrent requests [req]",
    "goodput_requests_per_s": "goodput [req/s]",
    "requests_per_s": "throughput [req/s]",
    "slo_attainment": "SLO attainment [fraction]",
    "per_user_tokens_per_s": "output tokens/s per user [tok/s]",
    "output_tokens_per_s_per_device": "output tokens/s per device [tok/s/device]",
    "decode_tokens_per_s_per_device": "decode tokens/s per device [tok/s/device]",
    "decode_tokens_per_s_per_gpu": "decode tokens/s per GPU [tok/s/GPU]",
    "decode_tokens_per_s": "decode tokens/s, all devices [tok/s]",
    "output_tokens_per_s": "output tokens/s, all devices [tok/s]",
    "input_tokens_per_s": "input tokens/s, all devices [tok/s]",
    "total_tokens_per_s": "input+output tokens/s, all devices [tok/s]",
    "output_tokens_per_s_per_mw": "output tokens/s per MW [tok/s/MW]",
    "devices": "devices [count]",
}

_SUFFIX_UNITS = (
    ("_tokens_per_s", "tok/s"),
    ("_per_s", "1/s"),
    ("_rps", "req/s"),
    ("_bytes", "B"),
    ("_flops", "FLOP/s"),
    ("_w", "W"),
    ("_s", "s"),
)
_UNIT_IN_BRACKETS = re.compile(r"\[[^\]]+\]")

#: Scale factors for time units accepted by ``unit=`` arguments.
TIME_UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6}


def styled(func: F) -> F:
    """Decorator: draw inside :data:`RC` so every artist gets the package style."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with mpl.rc_context(RC):
            result = func(*args, **kwargs)
            # Jupyter's inline backend turns interactive mode on lazily, at the first figure, i.e.
            # inside this context; leaving the context would switch it off again and hide later figures.
            interactive = mpl.is_interactive()
        mpl.interactive(interactive)
        return result

    return wrapper  # type: ignore[return-value]


def get_axes(ax: Axes | None = None, figsize: tuple[float, float] | None = None) -> tuple[Figure, Axes]:
    """The figure and axes to draw on: ``ax`` if given, else a new figure with one axes."""
    if ax is not None:
        return ax.figure, ax  # type: ignore[return-value]
    fig, new = plt.subplots(figsize=figsize or RC["figure.figsize"], layout="constrained")
    return fig, new


def has_unit(label: str) -> bool:
    """Whether an axis label carries a unit in brackets (``"TTFT [s]"``)."""
    return bool(_UNIT_IN_BRACKETS.search(label or ""))


def column_label(column: str, override: str | None = None) -> str:
    """Axis label with a unit for a DataFrame column.

    Parameters
    ----------
    column : str
        Column name; known names and the suffixes ``_tokens_per_s`` [tok/s], ``_per_s`` [1/s],
        ``_rps`` [req/s], ``_bytes`` [B], ``_s`` [s] are understood.
    override : str, optional
        Label given by the caller; returned as is when it already has a unit in brackets.

    Returns
    -------
    str
        ``"<name> [unit]"``; ``"<name> [-]"`` for a dimensionless column of unknown meaning.
    """
    if override:
        return override if has_unit(override) else f"{override} [-]"
    if column in COLUMN_LABELS:
        return COLUMN_LABELS[column]
    for suffix, unit in _SUFFIX_UNITS:
        if column.endswith(suffix):
            return f"{column[: -len(suffix)].replace('_', ' ')} [{unit}]"
    return f"{column.replace('_', ' ')} [-]"


def time_scale(unit: str) -> float:
    """Factor from seconds to ``unit`` (``s``, ``ms``, ``us``)."""
    if unit not in TIME_UNITS:
        raise ValueError(f"unit: expected one of {sorted(TIME_UNITS)}, got {unit!r}")
    return TIME_UNITS[unit]


def series_colors(names: Iterable[Any]) -> dict[Any, str]:
    """A stable colour per series name, in order of first appearance."""
    out: dict[Any, str] = {}
    for name in names:
        if name not in out:
            out[name] = PALETTE[len(out) % len(PALETTE)]
    return out


def si_format(value: float, unit: str) -> str:
    """``1.2e12, "FLOP/s"`` -> ``"1.2 TFLOP/s"`` (decimal prefixes)."""
    for factor, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"
