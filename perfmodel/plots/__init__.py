"""Figures of perfmodel results, in one style (:mod:`perfmodel.plots.style`).

Every function takes an optional ``ax=`` (or a sequence of axes for multi-panel figures), draws with
unit-bearing axis labels and returns the Axes or Figure. Import costs matplotlib only when used.

==========================  =======================================================================
function                    shows
==========================  =======================================================================
:func:`roofline_chart`      device roofs per format and memory level, ops of a step placed on them
:func:`latency_breakdown`   compute / memory / overhead / communication per op class, per phase
:func:`memory_budget`       weights, KV cache, workspace vs capacity; max concurrency at a context
:func:`pareto_front`        two rates to maximise (tok/s per user vs per device), with the front
:func:`slo_vs_load`         TTFT / TPOT percentiles and goodput against load
:func:`completion_time`     E2E against output length for configurations, crossovers marked
:func:`predicted_vs_measured` log-log predictions vs measurements with ±10 % / ±25 % bands
:func:`demo_figures`        the figures ``perfmodel demo`` writes
==========================  =======================================================================

Titles describe themselves: under each headline, the model, hardware (or deployment) and layout, weight
and KV-cache formats, ISL/OSL and serving engine are read from the data drawn
(:mod:`perfmodel.plots.titles`). Throughput axes take ``normalize="device" | "gpu" | "mw" |
"dollar" | "user"`` (:mod:`perfmodel.plots.normalize`); point labels are placed not to overlap
(:mod:`perfmodel.plots.labels`).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (perfmodel._lazy)
    from .breakdown import breakdown_parts, latency_breakdown
    from .curves import completion_time, pareto_front, pareto_mask, predicted_vs_measured, slo_vs_load
    from .demo import demo_figures, metric_vs_batch
    from .labels import place_labels
    from .memory import memory_budget, memory_table
    from .normalize import normalized_rate
    from .roofline import phase_ops, phase_shape, roofline_chart
    from .style import column_label, has_unit
    from .titles import describe

__all__ = [
    "breakdown_parts", "column_label", "completion_time", "demo_figures", "describe", "has_unit",
    "latency_breakdown", "memory_budget", "memory_table", "metric_vs_batch", "normalized_rate", "pareto_front",
    "pareto_mask", "phase_ops", "phase_shape", "place_labels", "predicted_vs_measured", "roofline_chart",
    "slo_vs_load",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
