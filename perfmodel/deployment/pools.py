"""Resolving a deployment's pools: hardware specs, assumed peaks, and the parallel layout of each role.

Layouts (see :mod:`perfmodel.core.parallel` for the conventions):

- *full* (prefill, aggregated, decode of a P/D decode pool): the pool's ``tp × dp_attention × pp``
  per replica, ``count / (tp·dp_attention·pp)`` replicas.
- *attention* (decode attention of an attention–FFN split): every device of the pool is a rank of the
  single decode instance, ``tp`` wide, so ``dp_attention = count / tp`` and the step's sequences are
  spread evenly over the attention-DP ranks; ``pp`` must be 1.
- *ffn* (decode FFN of a split): all ``count`` devices form one expert/tensor-parallel group; the
  routed experts are split ``ep`` ways and each expert ``moe_tp`` ways (``ep·moe_tp = count``), dense
  FFNs and shared experts are tensor-split over all ``count`` devices, and tokens arriving from the
  attention pool are spread evenly over them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.parallel import Parallel
from ..errors import ConfigError, PerfmodelError
from ..hardware import Accelerator, System, load_accelerator, load_hardware
from ..hardware.schema import Flops
from ..modelspec import ModelSpec
from .schema import Deployment, PoolSpec


@dataclass(frozen=True)
class Pool:
    """One resolved pool.

    Attributes
    ----------
    name : str
    spec : PoolSpec
    accelerator : Accelerator
        The device spec, with any ``assumed_compute`` peaks added (basis ``assumed``).
    system : System | None
        The system the pool was named after, if any (for its power figure).
    roles : tuple[str, ...]
        Roles placed on the pool.
    count : int
        Devices in the pool.
    efficiency : str
        Efficiency profile name used for this pool.
    assumptions : tuple[str, ...]
        Human-readable statements of what was assumed for this pool.
    """

    name: str
    spec: PoolSpec
    accelerator: Accelerator
    system: System | None
    roles: tuple[str, ...]
    count: int
    efficiency: str
    assumptions: tuple[str, ...] = ()

    @property
    def ffn_only(self) -> bool:
        """True when the pool runs decode FFN/MoE and nothing else."""
        return self.roles == ("decode_ffn",)

    @property
    def replica_devices(self) -> int:
        """Devices per replica of the full layout (tp·dp_attention·pp)."""
        s = self.spec
        return s.tp * s.dp_attention * s.pp

    @property
    def replicas(self) -> int:
        """Replicas of the full layout in the pool."""
        return self.count // self.replica_devices


def _with_assumed_compute(acc: Accelerator, peaks: dict[str, float], where: str) -> Accelerator:
    if not peaks:
        return acc
    clash = sorted(k for k in peaks if k in acc.compute)
    if clash:
        raise ConfigError(f"{where}.assumed_compute: {acc.id} already publishes {', '.join(clash)} "
                          f"({', '.join(f'{acc.compute[k].value:.4g} FLOP/s' for k in clash)}); "
                          f"assumed_compute only adds peaks the spec lacks")
    compute = dict(acc.compute)
    for k, v in peaks.items():
        compute[k] = Flops(value=v, basis=["assumed"], note="deployment assumption (not in the spec)")
    return acc.model_copy(update={"compute": compute})


def resolve_pool(dep: Deployment, name: str) -> Pool:
    """Resolve pool ``name`` of a deployment (hardware lookup, defaults, layout checks)."""
    spec = dep.pools[name]
    where = f"pools.{name}"
    try:
        found = load_hardware(spec.hardware)
        acc = load_accelerator(found)
    except PerfmodelError as exc:
        raise type(exc)(f"{where}.hardware: {exc}") from None
    system = found if isinstance(found, System) else None
    roles = dep.roles(name)
    per_replica = spec.tp * spec.dp_attention * spec.pp
    count = spec.count or (system.count if system else None)
    if count is None:
        if roles == ("decode_ffn",):
            raise ConfigError(f"{where}.count: required for a pool that runs decode FFN "
                              f"(how many {acc.id} hold the FFN weights?)")
        count = per_replica
    if roles == ("decode_ffn",):
        if (spec.tp, spec.dp_attention, spec.pp) != (1, 1, 1):
            raise ConfigError(f"{where}: runs only decode FFN, where all {count} devices form one "
                              f"expert/tensor-parallel group; tp/dp_attention/pp do not apply (got tp="
                              f"{spec.tp}, dp_attention={spec.dp_attention}, pp={spec.pp}); set ep / moe_tp")
    elif count % per_replica:
        raise ConfigError(f"{where}.count: {count} devices is not a whole number of replicas of "
                          f"tp*dp_attention*pp = {per_replica}")
    acc = _with_assumed_compute(acc, spec.assumed_compute, where)
    notes = [f"{name}: {acc.id} {k} peak assumed {v / 1e15:.4g} PFLOP/s (not in the spec)"
             for k, v in spec.assumed_compute.items()]
    if spec.collective_alpha is not None:
        notes.append(f"{name}: every collective inside the pool costs {spec.collective_alpha * 1e6:.4g} us "
                     f"+ volume / bandwidth (collective_alpha)")
    if spec.note:
        notes.append(f"{name}: {spec.note}")
    return Pool(name=name, spec=spec, accelerator=acc, system=system, roles=roles, count=count,
                efficiency=spec.efficiency or dep.efficiency, assumptions=tuple(notes))


def _build(where: str, model: ModelSpec, **kw) -> Parallel:
    try:
        return Parallel.build(model, **kw)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def full_layout(pool: Pool, model: ModelSpec) -> Parallel:
    """Replica layout for prefill, aggregated serving and P/D decode."""
    s = pool.spec
    return _build(f"pools.{pool.name}", model, tp=s.tp, pp=s.pp, dp_attention=s.dp_attention,
                  ep=s.ep or 1, moe_tp=s.moe_tp)


def attention_layout(pool: Pool, model: ModelSpec) -> Parallel:
    """Decode-attention layout of a split: tp wide, every device an attention-DP rank."""
    s = pool.spec
    where = f"pools.{pool.name}"
    if s.pp != 1:
        raise ConfigError(f"{where}.pp: decode attention of an attention–FFN split needs pp = 1, got {s.pp}")
    if pool.count % s.tp:
        raise ConfigError(f"{where}.count: {pool.count} is not a multiple of tp = {s.tp}")
    dp = pool.count // s.tp
    ep = s.ep if (s.ep and model.moe and (s.tp * dp) % s.ep == 0 and model.moe.num_experts % s.ep == 0) else 1
    return _build(where, model, tp=s.tp, dp_attention=dp, ep=ep)


def ffn_layout(pool: Pool, model: ModelSpec) -> Parallel:
    """Decode-FFN layout of a split: one ``count``-wide group (see the module docstring)."""
    s, n = pool.spec, pool.count
    where = f"pools.{pool.name}"
    if model.moe is None:
        if (s.ep or 1) != 1:
            raise ConfigError(f"{where}.ep: {model.id} is dense (no experts); use ep=1")
        return _build(where, model, tp=1, dp_attention=n, ep=1)
    ep = s.ep or (n // s.moe_tp if s.moe_tp else math.gcd(n, model.moe.num_experts))
    moe_tp = s.moe_tp or n // ep
    if ep * moe_tp != n:
        raise ConfigError(f"{where}: ep*moe_tp = {ep}*{moe_tp} must equal count = {n}")
    return _build(where, model, tp=1, dp_attention=n, ep=ep, moe_tp=moe_tp)


def layout_label(par: Parallel, role: str, model: ModelSpec) -> str:
    """Short label of a layout: ``tp8``, ``tp8-adp9`` or, for an FFN group, ``ep64-mtp1`` / ``ffn-tp128``."""
    if role == "ffn":
        return f"ep{par.ep}-mtp{par.moe_tp_eff}" if model.moe is not None else f"ffn-tp{par.group}"
    return par.label()
