"""Power of a pool, from published figures only, so that tokens/s per MW can be reported.

Order of precedence for a pool of N devices:

1. ``power_per_device`` given in the deployment: :math:`P = N \\cdot p_{user}` (basis ``user``);
2. the pool is named after a system whose spec has a power figure: the system's power prorated,
   :math:`P = P_{system} \\cdot N / N_{system}` (its figure's basis, e.g. ``third-party``);
3. the accelerator's TDP: :math:`P = N \\cdot TDP` (accelerators only: host CPUs, network, cooling
   and power conversion are excluded);
4. otherwise unknown (``None``) with a note naming the missing figure: nothing is invented.

Tokens per megawatt: :math:`\\text{tok/s/MW} = \\text{output tok/s} / (P / 10^6)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hardware import Accelerator, System


@dataclass(frozen=True)
class PoolPower:
    """Power of a pool [W] (``None`` when unknown), its basis and an explanatory note."""

    watts: float | None
    basis: str
    note: str


def pool_power(name: str, accelerator: Accelerator, count: int, system: System | None = None,
               power_per_device: float | None = None) -> PoolPower:
    """Power drawn by a pool of ``count`` devices (see the module docstring for the rules)."""
    if power_per_device is not None:
        return PoolPower(count * power_per_device, "user",
                         f"{name}: {count} x {power_per_device:.4g} W (power_per_device given in the deployment)")
    if system is not None and system.power is not None:
        basis = ",".join(system.power.basis) or "unstated"
        return PoolPower(system.power.value * count / system.count, f"system ({basis})",
                         f"{name}: {system.id} power {system.power.value / 1e3:.4g} kW x {count}/{system.count} "
                         f"devices (basis: {basis})")
    if accelerator.tdp is not None:
        return PoolPower(count * accelerator.tdp, "device TDP",
                         f"{name}: {count} x {accelerator.tdp:.4g} W {accelerator.id} TDP (accelerators only: "
                         f"host, network and cooling excluded)")
    return PoolPower(None, "unknown",
                     f"{name}: {accelerator.id} has no published power figure; give "
                     f"pools.{name}.power_per_device to report tokens/s per MW")


def total_power(powers: list[PoolPower]) -> float | None:
    """Sum of pool powers [W]; ``None`` if any pool's power is unknown."""
    if any(p.watts is None for p in powers):
        return None
    return float(sum(p.watts for p in powers))  # type: ignore[misc]
