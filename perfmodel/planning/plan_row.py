"""What the sizing of aggregated and P/D plan candidates shares: the ranked row of a sized candidate
(simulation summary, power and cost) and the step tables its simulations reuse."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .cost import tokens_per_s_per_mw
from .engine_space import engine_columns
from .screen import hourly_cost


def plan_row(task: Mapping[str, Any], summary: Mapping[str, Any], name: str, devices: int,
             sizing: Mapping[str, Any]) -> dict[str, Any]:
    """The ranked row of a sized candidate: its simulation summary, power [W] and cost [USD/h] of ``devices``.

    ``sizing`` holds the layout-specific fields (replicas, or P/D worker counts); the deployment name
    gets the speculative-decoding label when the engine has one and the engine variant's label
    (``task["variant"]``: engine and knobs, when searched); the row carries the engine's name and knob
    values (:func:`perfmodel.planning.engine_space.engine_columns`).
    """
    c, eng = task["candidate"], task["engine"]
    power_w = float(c.power.power_w(devices)) if c.power is not None else float("nan")
    cost = hourly_cost(c, devices, task["tco"])
    out_tps = summary["output_tokens_per_s"]
    spec = eng.spec.label() if eng.spec is not None else "off"
    label = task.get("variant")
    return {"deployment": name + (f" + {spec}" if eng.spec is not None else "") + (f" [{label}]" if label else ""),
            "hardware": c.hardware, **c.layout, "spec_decode": spec, **engine_columns(eng), **sizing, "devices": devices, "offered_requests_per_s": task["rate"],
            "goodput_requests_per_s": summary["goodput_requests_per_s"],
            "slo_attainment": summary["slo_attainment"], "ttft_mean_s": summary.get("ttft_mean_s"),
            "tpot_mean_s": summary.get("tpot_mean_s"), "ttft_p95_s": summary.get("ttft_p95_s"),
            "tpot_p95_s": summary.get("tpot_p95_s"), "output_tokens_per_s": out_tps, "power_w": power_w,
            "power_basis": c.power.describe() if c.power is not None else "not given",
            "cost_per_hour": cost, "price_source": c.price_source if np.isfinite(cost) else "not given",
            "output_tokens_per_s_per_mw": float(tokens_per_s_per_mw(out_tps, power_w)),
            "usd_per_m_output_all_in": cost / 3600.0 * 1e6 / out_tps if out_tps > 0 else float("nan")}


def step_tables(task: Mapping[str, Any]) -> dict:
    """The step tables a candidate's simulations reuse (:func:`perfmodel.serving.simulate`'s
    ``timer_cache``): the plan's shared dict when it runs in this process (candidates that share a step
    model share its tables), else a new one per candidate."""
    shared = task.get("timer_cache")
    return shared if shared is not None else {}
