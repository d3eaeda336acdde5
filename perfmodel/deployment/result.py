"""Result of :func:`~perfmodel.deployment.predict_deployment`: metrics per operating point and per pool.

Keys of :meth:`DeploymentPrediction.records` are those of the core
:meth:`perfmodel.core.predict.Prediction.records` plus ``mode``, ``prefill_s`` (prefill alone),
``kv_transfer_s`` (exposed KV transfer, P/D), ``comm_s_per_token`` (exchange between pools on the
decode critical path per output token: TPOT minus TPOT with a free link), ``collective_s_per_token``
(collectives inside pools on the critical path, attributed after the exchange, so that the two sum
to at most TPOT), ``micro_batches``, ``power_w``, ``output_tokens_per_s_per_mw`` (``None`` where power is unknown),
``assumptions`` and ``pools``: ``{name: {hardware, roles, layout, devices, memory_fits, fit_reason,
memory_used_bytes_per_device, memory_capacity_bytes, busy_fraction, power_w, power_basis}}``.
The per-device memory keys at top level are those of the decode-attention pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..plain import plain
from ..precision import label_fields
from .power import PoolPower

#: Engine of every deployment result: deployments are not run through a serving engine.
BARE_ENGINE = "none (bare kernel model)"


@dataclass
class PoolResult:
    """One pool's figures (arrays over operating points where they vary).

    ``busy_fraction`` is the share of the static batch's E2E during which the pool runs ops for it
    (waiting on links and collectives not counted).
    """

    name: str
    hardware: str
    roles: tuple[str, ...]
    layout: str
    devices: int
    memory_fits: np.ndarray
    fit_reason: np.ndarray
    memory_used_bytes_per_device: np.ndarray
    memory_capacity_bytes: float
    busy_fraction: np.ndarray
    power: PoolPower

    FIELDS = ("memory_fits", "fit_reason", "memory_used_bytes_per_device", "busy_fraction")


@dataclass
class DeploymentPrediction:
    """Predicted metrics of a deployment over operating points (SI units; see module docstring)."""

    mode: str
    columns: dict[str, np.ndarray]
    pools: dict[str, PoolResult]
    config: dict[str, Any]
    assumptions: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict, repr=False)

    COLUMNS = (
        "batch", "isl", "osl", "ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "decode_tokens_per_s",
        "total_tokens_per_s", "per_user_tokens_per_s", "output_tokens_per_s_per_device", "fits", "fit_reason",
        "weights_bytes_per_device", "kv_bytes_per_device", "memory_used_bytes_per_device",
        "max_batch_at_context", "prefill_bound", "decode_bound", "prefill_s", "kv_transfer_s",
        "comm_s_per_token", "collective_s_per_token", "output_tokens_per_s_per_mw",
    )
    CONFIG_KEYS = ("model", "hardware", "devices", "parallel", "precision", "efficiency", "mode",
                   "micro_batches", "power_w", "spec_decode", "prefix_hit_rate")

    def __getattr__(self, name: str) -> Any:
        cols = self.__dict__.get("columns", {})
        if name in cols:
            return cols[name]
        from ..metrics_vocabulary import DEPRECATED_ATTRIBUTES, deprecated_attribute

        if name in DEPRECATED_ATTRIBUTES and DEPRECATED_ATTRIBUTES[name] in cols:
            return cols[deprecated_attribute("DeploymentPrediction", name)]
        raise AttributeError(name)

    @property
    def devices(self) -> int:
        return int(self.config["devices"])

    def _shape(self) -> tuple[int, ...]:
        return np.broadcast_shapes(*(np.shape(v) for v in self.columns.values()))

    def to_dataframe(self) -> pd.DataFrame:
        """One row per operating point; per-pool columns are named ``<pool>.<field>``."""
        shape = self._shape()
        df = pd.DataFrame({c: np.broadcast_to(self.columns[c], shape).ravel() for c in self.COLUMNS})
        for k in self.CONFIG_KEYS:
            df[k] = self.config[k]
        df["engine"] = BARE_ENGINE
        for name, pool in self.pools.items():
            for f in PoolResult.FIELDS:
                df[f"{name}.{f}"] = np.broadcast_to(getattr(pool, f), shape).ravel()
        return df

    def records(self) -> list[dict[str, Any]]:
        """JSON-ready dicts, one per operating point (plain Python types; non-finite → None)."""
        shape = self._shape()
        flat = {c: np.broadcast_to(self.columns[c], shape).ravel() for c in self.COLUMNS}
        pools = {n: {f: np.broadcast_to(getattr(p, f), shape).ravel() for f in PoolResult.FIELDS}
                 for n, p in self.pools.items()}
        out = []
        for k in range(int(np.prod(shape))):
            rec: dict[str, Any] = {c: plain(flat[c][k]) for c in self.COLUMNS}
            for c in ("batch", "isl", "osl"):
                rec[c] = int(rec[c])
            rec.update({c: plain(self.config[c]) for c in self.CONFIG_KEYS if c != "precision"})
            rec.update(label_fields(self.config["precision"]))
            rec["efficiency_fallback"] = bool(self.config["efficiency_fallback"])
            rec["basis"] = self.config["basis"]
            rec["engine"] = BARE_ENGINE
            rec["assumptions"] = list(self.assumptions)
            rec["pools"] = {
                n: {"hardware": p.hardware, "roles": list(p.roles), "layout": p.layout, "devices": p.devices,
                    "memory_fits": bool(pools[n]["memory_fits"][k]), "fit_reason": str(pools[n]["fit_reason"][k]),
                    "memory_used_bytes_per_device": plain(pools[n]["memory_used_bytes_per_device"][k]),
                    "memory_capacity_bytes": plain(p.memory_capacity_bytes),
                    "busy_fraction": plain(pools[n]["busy_fraction"][k]),
                    "power_w": plain(p.power.watts), "power_basis": p.power.basis}
                for n, p in self.pools.items()}
            out.append(rec)
        return out

    def __repr__(self) -> str:
        c = self.config
        lines = [f"DeploymentPrediction: {c['model']} ({c['precision']}), mode {self.mode}, "
                 f"{c['devices']} devices; TTFT excludes queueing"]
        for p in self.pools.values():
            watts = "unknown" if p.power.watts is None else f"{p.power.watts / 1e3:.4g} kW"
            fit = "fits" if bool(np.all(p.memory_fits)) else "DOES NOT FIT at some points"
            lines.append(f"  pool {p.name}: {p.devices}x {p.hardware} [{p.layout}] roles "
                         f"{'+'.join(p.roles)}; memory {fit}; power {watts}")
        from ..tables import UNFIT_WHY_PY, points_table

        metrics = ["ttft_s", "tpot_s", "per_user_tokens_per_s", "output_tokens_per_s_per_device", "comm_s_per_token",
                   "kv_transfer_s"]
        lines.append(points_table(self.records(), ["batch", "isl", "osl", *metrics, "fits"], metrics,
                                  UNFIT_WHY_PY))
        return "\n".join(lines)


