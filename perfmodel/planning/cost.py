"""Power and money: tokens per megawatt with a stated power basis, and $ per million tokens.

Every figure here is an *input* with units (quantity strings through :func:`perfmodel.units.to_si`)
or a visible, documented default; the basis of each result is returned with it.

Power of ``N`` devices [W], three bases:

- ``tdp``: :math:`P = N \\cdot P_{TDP}` (the accelerators only, at their rated power; an upper bound
  for the chips, a lower bound for the facility);
- ``utilisation``: :math:`P = N \\cdot \\left(P_{idle} + u\\,(P_{TDP} - P_{idle})\\right)` with
  :math:`u \\in [0, 1]` the busy fraction and :math:`P_{idle}` an input;
- ``system``: :math:`P = (N / N_{system}) \\cdot P_{system}` from a system spec's power (a rack with
  its CPUs, switches and fans, whatever boundary that spec states).

Money is in US dollars. Prices accept plain numbers (already USD per the stated unit) or strings with
an optional ``$`` or ``USD``: ``2.5``, ``"2.5/h"``, ``"$2.5 /hour"``, ``"0.08/kWh"``, ``"$30000"``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ConfigError, UnitError
from ..hardware import load_hardware
from ..hardware.schema import Accelerator, System
from ..units import Q_, to_si

PowerBasisName = Literal["tdp", "utilisation", "system"]

#: Seconds per hour [s/h].
HOUR = 3600.0
_DOLLAR = re.compile(r"\$|\busd\b", re.IGNORECASE)


def usd(value: Any, per: str | None = None, field: str = "price") -> float:
    """Parse a price in US dollars, optionally per a unit (``per="hour"`` or ``per="kWh"``).

    Parameters
    ----------
    value : float | str
        A plain number (USD, or USD per ``per``) or a string such as ``"$2.5/h"``, ``"2.5 USD/hour"``,
        ``"0.08/kWh"``, ``"$30000"``.
    per : str, optional
        The denominator unit the result is expressed in (``"hour"``, ``"kWh"``); ``None`` for a
        plain amount.
    field : str
        Name used in error messages.

    Returns
    -------
    float
        USD (per ``per``).

    Examples
    --------
    >>> usd("$2.5/h", per="hour"), usd("0.1/kWh", per="kWh"), usd("$30000")
    (2.5, 0.1, 30000.0)
    """
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        out = float(value)
    elif isinstance(value, str):
        text = _DOLLAR.sub("", value).strip()
        if text.startswith("/"):
            raise UnitError(f"{field}: no amount in {value!r}")
        try:
            q = Q_(text)
            q = q if hasattr(q, "to") else Q_(float(q), "")
            out = float(q.to(f"1/{per}" if per else "").magnitude)
        except Exception:
            want = f"USD per {per}, e.g. '2.5/{per}'" if per else "USD, e.g. '30000' or '$30000'"
            raise UnitError(f"{field}: cannot read {value!r} as {want}") from None
    else:
        raise UnitError(f"{field}: expected a number or a string, got {value!r}")
    if not np.isfinite(out) or out < 0:
        raise UnitError(f"{field}: must be finite and >= 0, got {value!r}")
    return out


@dataclass(frozen=True)
class PowerBasis:
    """How the power of a deployment is counted (see the module docstring).

    Attributes
    ----------
    kind : {"tdp", "utilisation", "system"}
        Basis name.
    device_w : float
        Rated power of one device P_TDP [W] (``tdp`` and ``utilisation``), or the system power
        P_system [W] (``system``).
    idle_w : float
        P_idle of one device [W] (``utilisation`` only).
    utilisation : float
        Busy fraction u (``utilisation`` only).
    devices_per_unit : int
        N_system for ``system``, 1 otherwise.
    source : str
        Where ``device_w`` came from (spec id and field, or "input").
    """

    kind: PowerBasisName = "tdp"
    device_w: float = 0.0
    idle_w: float = 0.0
    utilisation: float = 1.0
    devices_per_unit: int = 1
    source: str = "input"

    def power_w(self, devices: ArrayLike) -> np.ndarray:
        """Power of ``devices`` devices [W] on this basis (equations in the module docstring)."""
        n = np.asarray(devices, dtype=float)
        if self.kind == "system":
            return n / self.devices_per_unit * self.device_w
        per = self.device_w
        if self.kind == "utilisation":
            per = self.idle_w + self.utilisation * (self.device_w - self.idle_w)
        return n * per

    def describe(self) -> str:
        """One line stating the basis and its inputs (shown next to every power figure)."""
        if self.kind == "system":
            return (f"system power {self.device_w:g} W per {self.devices_per_unit} devices "
                    f"({self.source})")
        if self.kind == "utilisation":
            return (f"P_idle {self.idle_w:g} W + u {self.utilisation:g} x (TDP {self.device_w:g} W - "
                    f"P_idle) per device ({self.source})")
        return f"TDP {self.device_w:g} W per device ({self.source})"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "description": self.describe()}


def power_basis(hardware: str | Accelerator | System, kind: PowerBasisName = "tdp", *,
                tdp: Any = None, idle: Any = None, utilisation: float = 1.0,
                system_power: Any = None) -> PowerBasis:
    """Build a :class:`PowerBasis` from a hardware spec, with inputs overriding the spec.

    Parameters
    ----------
    hardware : str | Accelerator | System
        Accelerator or system id (or spec).
    kind : {"tdp", "utilisation", "system"}
        Basis.
    tdp : str | float, optional
        Device power, e.g. ``"1.8 kW"``; required when the spec has none.
    idle : str | float, optional
        P_idle per device for ``utilisation`` (e.g. ``"150 W"``); required for that basis.
    utilisation : float
        Busy fraction u in [0, 1].
    system_power : str | float, optional
        System power for ``system`` when the spec has none (e.g. ``"120 kW"``).

    Raises
    ------
    ConfigError
        A needed figure is neither in the spec nor given, or u is outside [0, 1].
    """
    spec = hardware if isinstance(hardware, (Accelerator, System)) else load_hardware(hardware)
    if kind not in ("tdp", "utilisation", "system"):
        raise ConfigError(f"power basis: expected 'tdp', 'utilisation' or 'system', got {kind!r}")
    if not 0.0 <= utilisation <= 1.0:
        raise ConfigError(f"utilisation: must be within [0, 1], got {utilisation}")
    if kind == "system":
        if not isinstance(spec, System):
            raise ConfigError(f"power basis 'system': {spec.id!r} is an accelerator; give a system id "
                              f"(e.g. gb200-nvl72) or use basis 'tdp'")
        if system_power is not None:
            return PowerBasis("system", to_si(system_power, "power", "system_power"),
                              devices_per_unit=spec.count, source="input")
        if spec.power is None:
            raise ConfigError(f"power basis 'system': {spec.id} has no power figure in its spec; pass "
                              f"system_power='120 kW' (an input) or use basis 'tdp'")
        return PowerBasis("system", spec.power.value, devices_per_unit=spec.count,
                          source=f"{spec.id}.power ({', '.join(spec.power.basis) or 'unstated basis'})")
    acc = spec if isinstance(spec, Accelerator) else load_hardware(spec.accelerator, "accelerator")
    if tdp is not None:
        device_w, source = to_si(tdp, "power", "tdp"), "input"
    elif acc.power is not None:
        device_w, source = acc.power.value, f"{acc.id}.power"
    else:
        raise ConfigError(f"power: {acc.id} has no TDP in its spec; pass tdp='1.8 kW' (an input, shown "
                          f"in the result)")
    if kind == "utilisation":
        if idle is None:
            raise ConfigError("power basis 'utilisation': pass idle='150 W' (P_idle per device)")
        idle_w = to_si(idle, "power", "idle")
        if idle_w > device_w:
            raise ConfigError(f"idle: P_idle {idle_w:g} W exceeds TDP {device_w:g} W")
        return PowerBasis("utilisation", device_w, idle_w, utilisation, source=source)
    return PowerBasis("tdp", device_w, source=source)


def tokens_per_s_per_mw(tokens_per_s: ArrayLike, power_w: ArrayLike) -> np.ndarray:
    """Throughput per megawatt :math:`\\Theta / (P / 10^6)` [tok/s/MW]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(tokens_per_s, dtype=float) / (np.asarray(power_w, dtype=float) / 1e6)


@dataclass(frozen=True)
class TotalCost:
    """A simple total-cost-of-ownership model giving USD per device-hour.

    .. math::
        C_h = \\left(\\frac{C_{buy}}{T_{life}}\\,(1 + s_{net}) + \\frac{P\\,\\mathrm{PUE}\\,c_E}{1000}
        \\right)(1 + s_{ops})

    with :math:`C_{buy}` the purchase price per device [USD], :math:`T_{life}` the amortisation
    lifetime [h], :math:`s_{net}` network equipment as a share of the purchase price, P the device
    power [W] (from a :class:`PowerBasis`), PUE the facility's power usage effectiveness, :math:`c_E`
    the electricity price [USD/kWh] and :math:`s_{ops}` operations (staff, space, support) as a share
    of the hourly hardware + energy cost. No interest or residual value.

    Attributes
    ----------
    purchase_usd : float
        C_buy per device [USD].
    lifetime_h : float
        T_life [h] (``"4 yr"`` is 35,064 h; Julian years).
    energy_usd_per_kwh : float
        c_E [USD/kWh].
    pue : float
        PUE [-] (≥ 1).
    network_share, operations_share : float
        s_net and s_ops [-].
    """

    purchase_usd: float
    lifetime_h: float
    energy_usd_per_kwh: float
    pue: float = 1.3
    network_share: float = 0.15
    operations_share: float = 0.10
    inputs: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, purchase: Any, lifetime: Any = "4 yr", energy_price: Any = "0.08/kWh", pue: float = 1.3,
           network_share: float = 0.15, operations_share: float = 0.10) -> TotalCost:
        """Build from inputs with units (``purchase="$30000"``, ``lifetime="4 yr"``,
        ``energy_price="0.08/kWh"``). The defaults are assumptions, shown in :meth:`as_dict`."""
        if pue < 1:
            raise ConfigError(f"pue: must be >= 1, got {pue}")
        for name, v in (("network_share", network_share), ("operations_share", operations_share)):
            if v < 0:
                raise ConfigError(f"{name}: must be >= 0, got {v}")
        return cls(usd(purchase, None, "purchase"), to_si(lifetime, "time", "lifetime") / HOUR,
                   usd(energy_price, "kWh", "energy_price"), pue, network_share, operations_share,
                   {"purchase": purchase, "lifetime": lifetime, "energy_price": energy_price, "pue": pue,
                    "network_share": network_share, "operations_share": operations_share})

    def usd_per_device_hour(self, device_power_w: ArrayLike) -> np.ndarray:
        """C_h [USD/h] per device at power ``device_power_w`` [W] (equation above)."""
        capex = self.purchase_usd / self.lifetime_h * (1.0 + self.network_share)
        energy = np.asarray(device_power_w, dtype=float) * self.pue * self.energy_usd_per_kwh / 1000.0
        return (capex + energy) * (1.0 + self.operations_share)

    def as_dict(self) -> dict[str, Any]:
        return {"purchase_usd": self.purchase_usd, "lifetime_h": self.lifetime_h,
                "energy_usd_per_kwh": self.energy_usd_per_kwh, "pue": self.pue,
                "network_share": self.network_share, "operations_share": self.operations_share}


def usd_per_hour(devices: ArrayLike, price: Any = None, tco: TotalCost | None = None,
                 device_power_w: ArrayLike | None = None) -> np.ndarray:
    """Hourly cost of ``devices`` devices [USD/h]: from a device-hour price or a :class:`TotalCost`.

    Parameters
    ----------
    devices : array_like
        Device count.
    price : str | float, optional
        USD per device-hour (``"2.5/h"`` or ``2.5``).
    tco : TotalCost, optional
        Used when ``price`` is not given; needs ``device_power_w`` [W per device].
    """
    n = np.asarray(devices, dtype=float)
    if price is not None:
        return n * usd(price, "hour", "price")
    if tco is None or device_power_w is None:
        raise ConfigError("cost: give price= (USD per device-hour) or tco= with device_power_w=")
    return n * tco.usd_per_device_hour(device_power_w)


def usd_per_million_tokens(cost_per_hour: ArrayLike, input_tokens_per_s: ArrayLike,
                           output_tokens_per_s: ArrayLike, input_time_share: ArrayLike
                           ) -> dict[str, np.ndarray]:
    """USD per million input and output tokens, splitting the cost by the time each phase takes.

    .. math::
        c_{in} = \\frac{10^6\\, C_h\\, f_{in}}{3600\\, \\Theta_{in}}, \\qquad
        c_{out} = \\frac{10^6\\, C_h\\, (1 - f_{in})}{3600\\, \\Theta_{out}}, \\qquad
        c_{out}^{all} = \\frac{10^6\\, C_h}{3600\\, \\Theta_{out}}

    with :math:`C_h` [USD/h], Θ the input and output token rates [tok/s] and :math:`f_{in}` the share
    of device time spent on prefill (for a static batch TTFT / E2E). ``c_out_all`` charges everything
    to output tokens (the usual "$ per million output tokens").

    Returns
    -------
    dict
        ``usd_per_m_input``, ``usd_per_m_output``, ``usd_per_m_output_all_in``.
    """
    c = np.asarray(cost_per_hour, dtype=float) / HOUR * 1e6
    f = np.asarray(input_time_share, dtype=float)
    if np.any((f < 0) | (f > 1)):
        raise ConfigError("input_time_share: must be within [0, 1]")
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"usd_per_m_input": c * f / np.asarray(input_tokens_per_s, dtype=float),
                "usd_per_m_output": c * (1.0 - f) / np.asarray(output_tokens_per_s, dtype=float),
                "usd_per_m_output_all_in": c / np.asarray(output_tokens_per_s, dtype=float)}
