"""A deployment bound to specs: the model, each pool's hardware and step models, and the links.

Built once per deployment (spec lookups, layout checks, FFN-pool memory placement); predictions
over many operating points reuse it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..core.efficiency import profile_for
from ..core.step import StepModel
from ..errors import ConfigError, PerfmodelError
from ..formats import resolve_formats
from ..hardware import load_link
from ..modelspec import ModelSpec, load_model
from ..precision import Precision
from .lpu_memory import ffn_pool_memory, spilled_accelerator
from .pools import Pool, attention_layout, ffn_layout, full_layout, layout_label, resolve_pool
from .power import pool_power
from .schema import Deployment
from .split import ExchangeLink


class DeploymentPlan:
    """Resolved deployment (see module docstring).

    Attributes
    ----------
    deployment : Deployment
    model : ModelSpec
    precision : Precision
    pools : dict[str, Pool]
    mode : str
    prefill_sm : StepModel
        Full layout of the prefill pool.
    decode_sm : StepModel | None
        Full layout of the decode pool (modes without an attention–FFN split).
    attention_sm, ffn_sm : StepModel | None
        Attention layout of the decode-attention pool and FFN layout of the decode-FFN pool (split).
    kv_link, activation_link : ExchangeLink | None
        Links carrying the KV cache (P/D) and the per-layer activations (split).
    power : dict[str, PoolPower]
    assumptions : list[str]
    """

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = dep = deployment
        try:
            self.model: ModelSpec = load_model(dep.model)
        except PerfmodelError as exc:
            raise type(exc)(f"model: {exc}") from None
        p = dep.precision
        weights, kv_cache = resolve_formats(dep.model, self.model, p.weights, p.kv_cache)
        self.precision = Precision.of(weights, p.activations, kv_cache)
        self.pools = {name: resolve_pool(dep, name) for name in dep.pools}
        self.mode = dep.mode
        placement = dep.placement
        assert placement is not None
        self.prefill_pool = self.pools[placement.prefill]
        self.attention_pool = self.pools[placement.decode_attention]
        self.ffn_pool = self.pools[placement.decode_ffn]
        self.split = self.attention_pool is not self.ffn_pool
        self.assumptions: list[str] = []
        for pool in self.pools.values():
            self.assumptions.extend(pool.assumptions)

        self.prefill_sm = self._step_model(self.prefill_pool, full_layout(self.prefill_pool, self.model))
        self.decode_sm = self.attention_sm = self.ffn_sm = None
        self.ffn_memory = None
        if not self.split:
            pool = self.attention_pool
            self.decode_sm = (self.prefill_sm if pool is self.prefill_pool
                              else self._step_model(pool, full_layout(pool, self.model)))
        else:
            self.attention_sm = self._step_model(self.attention_pool,
                                                 attention_layout(self.attention_pool, self.model))
            fpool = self.ffn_pool
            par = ffn_layout(fpool, self.model)
            self.ffn_memory = ffn_pool_memory(self.model, par, self.precision, fpool.accelerator,
                                              fpool.spec.reserve, fpool.spec.spill, 0.0, fpool.name)
            acc = fpool.accelerator
            if self.ffn_memory.spill_bytes > 0:
                acc = spilled_accelerator(acc, self.ffn_memory.bandwidth)
                self.assumptions.append(
                    f"{fpool.name}: {self.ffn_memory.spill_bytes / 1e9:.3g} GB of FFN weights per device spill "
                    f"to ddr; weight reads run at {self.ffn_memory.bandwidth / 1e12:.4g} TB/s (blend)")
            self.ffn_sm = self._step_model(fpool, par, acc)
        self.kv_link = self._link("kv_transfer")
        self.activation_link = self._link("activations")
        self.power = {n: pool_power(n, pl.accelerator, pl.count, pl.system, pl.spec.power_per_device)
                      for n, pl in self.pools.items()}
        self.assumptions.extend(pw.note for pw in self.power.values())

    # ------------------------------------------------------------------ construction helpers
    def _step_model(self, pool: Pool, par, accelerator=None) -> StepModel:
        o = self.deployment.options
        acc = accelerator or pool.accelerator
        try:
            eff = profile_for(acc.id, pool.efficiency)
            if pool.spec.collective_alpha is not None:
                eff = replace(eff, collective_alpha=pool.spec.collective_alpha)
            return StepModel(self.model, acc, tp=par.tp, pp=par.pp, ep=par.ep,
                             dp_attention=par.dp_attention, moe_tp=par.moe_tp,
                             weights=self.precision.weights.name, activations=self.precision.activations.name,
                             kv_cache=self.precision.kv_cache.name, efficiency=eff,
                             reserve=pool.spec.reserve, expert_imbalance=o.expert_imbalance)
        except PerfmodelError as exc:
            raise type(exc)(f"pools.{pool.name}: {exc}") from None

    def _link(self, what: str) -> ExchangeLink | None:
        pair = self.deployment.exchanges().get(what)
        if pair is None:
            return None
        key, spec = self.deployment.link_between(*pair)
        bw, alpha, name = spec.bandwidth, spec.alpha, key
        if spec.link is not None:
            try:
                shipped = load_link(spec.link)
            except PerfmodelError as exc:
                raise type(exc)(f"links.{key}.link: {exc}") from None
            bw = shipped.bandwidth.value if bw is None else bw
            alpha = shipped.alpha.value if alpha is None else alpha
            name = f"{key} ({shipped.id})"
        assert bw is not None and alpha is not None
        self.assumptions.append(f"link {key}: {bw / 1e9:.4g} GB/s per direction per device, alpha "
                                f"{alpha * 1e6:.4g} us per message" + (f" ({spec.note})" if spec.note else ""))
        return ExchangeLink(bandwidth=bw, alpha=alpha, name=name)

    # ------------------------------------------------------------------ sizes
    @property
    def decode_replicas(self) -> int:
        """Decode instances: replicas of the decode pool, or 1 for a split (one attention+FFN instance)."""
        return 1 if self.split else self.attention_pool.replicas

    @property
    def prefill_replicas(self) -> int:
        return self.prefill_pool.replicas

    @property
    def devices(self) -> int:
        """Devices of all pools."""
        return sum(p.count for p in self.pools.values())

    @property
    def decode_devices(self) -> int:
        """Devices of one decode instance (attention + FFN pools for a split)."""
        if self.split:
            return self.attention_pool.count + self.ffn_pool.count
        return self.attention_pool.replica_devices

    def prefill_prompts(self, batch: np.ndarray) -> np.ndarray:
        """Prompts per prefill replica when every decode instance starts ``batch`` sequences at once.

        .. math:: n_{pre} = \\lceil B \\cdot R_{dec} / R_{pre} \\rceil
        """
        return np.ceil(np.asarray(batch, dtype=float) * self.decode_replicas / self.prefill_replicas)

    def layout_labels(self) -> dict[str, str]:
        """Layout label of every pool (by role)."""
        out = {}
        for name, pool in self.pools.items():
            if self.split and pool is self.ffn_pool:
                assert self.ffn_sm is not None
                out[name] = layout_label(self.ffn_sm.parallel, "ffn", self.model)
            elif self.split and pool is self.attention_pool and pool is not self.prefill_pool:
                assert self.attention_sm is not None
                out[name] = layout_label(self.attention_sm.parallel, "attention", self.model)
            else:
                label = layout_label(full_layout(pool, self.model), "full", self.model)
                out[name] = f"{pool.replicas}x {label}" if pool.replicas > 1 else label
        return out

    def kv_send_recv_bytes(self, n_prompts, batch, isl) -> tuple[np.ndarray, np.ndarray]:
        """KV bytes per sending (prefill) and per receiving (decode-attention) device [B].

        Senders spread the unique KV of their ``n_prompts`` prompts evenly over the prefill replica's
        devices; each receiver gets what it holds: its ``batch / dp_attention`` sequences' KV in its
        layout (GQA heads split over tp, MLA latent replicated on every tp rank).
        """
        from ..core.memory import kv_bytes_per_token_device

        unique = np.asarray(n_prompts, float) * np.asarray(isl, float) * self.model.kv_bytes_per_token(
            self.precision.kv_cache)
        send = unique / self.prefill_pool.replica_devices
        sm = self.attention_sm if self.split else self.decode_sm
        assert sm is not None
        par = sm.parallel
        recv = (np.asarray(batch, float) / par.dp_attention) * kv_bytes_per_token_device(
            self.model, par, self.precision, np.asarray(isl, float))
        return send, recv


def check_positive_int(name: str, value) -> int:
    """A positive whole number, or a ConfigError naming ``name``."""
    if isinstance(value, bool) or not float(value).is_integer() or value < 1 or not math.isfinite(value):
        raise ConfigError(f"{name}: must be a positive integer, got {value!r}")
    return int(value)
