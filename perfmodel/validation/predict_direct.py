"""Measured rows with speculative decoding or a prefix-cache hit rate: predicted on the step model.

The tabulated step times of :mod:`perfmodel.validation.surrogate` are those of the plain decode step
and of prompts computed in full. Rows that recorded speculative decoding or a hit rate
(:mod:`perfmodel.validation.features`) are instead predicted by :func:`perfmodel.serving.steady_state`
on their configuration's :class:`~perfmodel.core.step.StepModel`, under the row's engine with its
speculation (:class:`perfmodel.engine.EngineStep`: decode steps charged per generated token, the
draft's memory out of the KV capacity) and the row's hit rate. One call per configuration, engine and
speculation; the engine's fitted terms are those under evaluation, as for the tabulated rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..engine.engine import Engine
from ..engine.speculative import parse_spec_decode
from ..errors import PerfmodelError
from ..serving import steady_state
from .predict_disagg import NO_KV_REASON
from .stepmodels import CONFIG_COLUMNS, StepModelCache, config_groups


@dataclass
class DirectBatch:
    """Rows of one configuration, backend and speculation: positions and the closed loop's inputs."""

    positions: np.ndarray
    step_model: Any
    spec_text: str
    concurrency: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    schedulers: np.ndarray
    prefix_hit_rate: np.ndarray
    #: Per-rank token budget of the row's launch [tokens]; NaN: the engine profile's.
    token_budget: np.ndarray | None = None

    def solve(self, engine: Engine, iterations: int):
        """Steady state of the rows under ``engine`` (its terms) with this batch's speculation."""
        spec = parse_spec_decode(self.spec_text) if self.spec_text != "off" else None
        own = np.full(len(self.positions), np.nan) if self.token_budget is None else self.token_budget
        budget = np.where(np.isfinite(own), own, float(engine.profile.max_num_batched_tokens))
        return steady_state(self.step_model, self.concurrency, self.isl, self.osl,
                            engine=replace(engine, spec=spec), iterations=iterations,
                            schedulers=self.schedulers, prefix_hit_rate=self.prefix_hit_rate,
                            max_num_batched_tokens=budget)

    def subset(self, keep: np.ndarray, new_position: np.ndarray) -> DirectBatch | None:
        """The rows whose ``keep`` flag (by position) is set, renumbered; None when none is kept."""
        mask = keep[self.positions]
        if not mask.any():
            return None
        return DirectBatch(new_position[self.positions[mask]], self.step_model, self.spec_text,
                           self.concurrency[mask], self.isl[mask], self.osl[mask], self.schedulers[mask],
                           self.prefix_hit_rate[mask],
                           None if self.token_budget is None else self.token_budget[mask])


def direct_batches(rows: pd.DataFrame, cache: StepModelCache) -> tuple[list[dict], list[dict]]:
    """Inputs of one :class:`DirectBatch` per configuration, backend and speculation.

    Returns
    -------
    batches : list of dict
        ``index`` (row labels), ``backend`` and the :class:`DirectBatch` fields except ``positions``.
    skipped : list of dict
        ``row``, ``id``, ``reason`` of rows whose step model cannot be built or holds no KV cache.
    """
    out, skipped = [], []
    if rows.empty:
        return out, skipped
    for key, group in config_groups(rows, (*CONFIG_COLUMNS, "backend", "spec_decode_text")):
        try:
            sm = cache.get(key[:-2])
            ok = float(sm.kv_capacity_tokens) > 0
            reason = NO_KV_REASON
        except PerfmodelError as exc:
            ok, reason = False, f"step model error: {exc}"
        if not ok:
            skipped += [{"row": r, "id": i, "reason": reason} for r, i in zip(group["row"], group["id"], strict=True)]
            continue
        out.append({"index": group.index.to_numpy(), "backend": key[-2], "step_model": sm,
                    "spec_text": key[-1], "concurrency": group["concurrency"].to_numpy(float),
                    "isl": group["isl"].to_numpy(float), "osl": group["osl"].to_numpy(float),
                    "schedulers": group["dp"].to_numpy(float),
                    "prefix_hit_rate": group["prefix_hit_rate"].to_numpy(float),
                    "token_budget": (group["max_num_batched_tokens"].to_numpy(float)
                                     if "max_num_batched_tokens" in group else None)})
    return out, skipped
