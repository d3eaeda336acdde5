"""Step models of the deployments in a validation run: one per distinct configuration, cached.

A validation run of 3,000 measured rows touches ~200 distinct (model, accelerator, layout, formats)
combinations; :class:`StepModelCache` builds each :class:`~perfmodel.core.step.StepModel` once per
efficiency profile. The cache is an instance (no module-level state): create one per run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from ..core.efficiency import small_m_variant
from ..core.step import StepModel
from ..errors import PerfmodelError
from .models import resolve_model

#: Columns of a deployments table that identify the step model of its (decode or only) pool.
CONFIG_COLUMNS = ("model_path", "hardware", "tp", "pp", "dp", "ep", "moe_tp", "weights", "activations",
                  "kv_cache")
#: The same for the prefill pool of disaggregated rows.
PREFILL_COLUMNS = ("model_path", "hardware", "p_tp", "p_pp", "p_dp", "p_ep", "p_moe_tp", "weights",
                   "activations", "kv_cache")
#: Columns that identify a disaggregated configuration: both pools and their replica counts.
DISAGG_COLUMNS = tuple(dict.fromkeys((*CONFIG_COLUMNS, *PREFILL_COLUMNS, "p_workers", "d_workers")))


def pool_keys(row) -> tuple[tuple, tuple]:
    """(decode or only pool, prefill pool) step-model keys of one deployments row (a mapping)."""
    return tuple(row[c] for c in CONFIG_COLUMNS), tuple(row[c] for c in PREFILL_COLUMNS)


class StepModelCache:
    """Build-once store of step models keyed by configuration and efficiency profile.

    Parameters
    ----------
    efficiency : str | Efficiency
        Profile passed to every :class:`StepModel` (``"calibrated"``, ``"datasheet"``, ...).
    """

    def __init__(self, efficiency="calibrated") -> None:
        self.efficiency = efficiency
        self._models: dict[tuple, StepModel | PerfmodelError] = {}
        self._variants: dict[tuple, StepModel | None] = {}

    def get(self, key: tuple) -> StepModel:
        """Step model of a key ordered as :data:`CONFIG_COLUMNS`.

        Raises
        ------
        PerfmodelError
            The configuration cannot be built (the error is cached too).
        """
        hit = self._models.get(key)
        if hit is None:
            try:
                hit = _build(key, self.efficiency)
            except PerfmodelError as exc:
                hit = exc
            self._models[key] = hit
        if isinstance(hit, PerfmodelError):
            raise hit
        return hit

    def small_m_variant(self, key: tuple) -> StepModel | None:
        """The step model of ``key`` without its FP4 GEMMs' small-M penalty, or None when the profile
        has nothing to vary (see :func:`perfmodel.core.efficiency.small_m_variant`)."""
        if key not in self._variants:
            base = self.get(key)
            eff = small_m_variant(base.efficiency, base.precision.matmul_format)
            self._variants[key] = None if eff is None else _build(key, eff)
        return self._variants[key]

    def __len__(self) -> int:
        return len(self._models)


def _build(key: tuple, efficiency) -> StepModel:
    model_path, hardware, tp, pp, dp, ep, moe_tp, w, a, kv = key
    return StepModel(resolve_model(model_path), hardware, tp=int(tp), pp=int(pp), ep=int(ep),
                     dp_attention=int(dp), moe_tp=int(moe_tp) or None, weights=w, activations=a, kv_cache=kv,
                     efficiency=efficiency)


def config_groups(df: pd.DataFrame, columns=CONFIG_COLUMNS) -> Iterator[tuple[tuple, pd.DataFrame]]:
    """Yield ``(key, rows)`` per distinct configuration (key ordered as ``columns``)."""
    if df.empty:
        return
    for key, rows in df.groupby(list(columns), sort=False, dropna=False):
        yield tuple(key), rows
