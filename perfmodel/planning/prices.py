"""Dated public list prices of cloud GPU instances (``perfmodel/data/prices/cloud_list_prices.yaml``).

A list price is what a provider's price page said on a date, **not what you pay**: committed-use,
reserved, spot and negotiated prices are lower, and storage, egress and taxes are extra. Every row
names its page (``source``), the date the stored copy was read (``seen``) and, where the page gives one,
the date of its prices (``as_of``).

Price per device-hour of a row [USD/h]:

.. math::
    p_{dev} = \\frac{p_{instance}}{N_{devices}}

:func:`default_list_price` picks, for an accelerator, the lowest :math:`p_{dev}` among the rows (of one
provider if asked); plans report the row they used.
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

import yaml

from ..errors import PerfmodelError, SpecError, unknown_name

#: Wording shown next to every figure taken from this table.
LIST_PRICE_CAVEAT = "list price, not what you pay"
_REQUIRED = ("id", "provider", "instance", "accelerator", "count", "usd_per_hour", "source", "seen")
_OPTIONAL = ("as_of", "note")


@dataclass(frozen=True)
class ListPrice:
    """One instance's public on-demand list price.

    Attributes
    ----------
    id, provider, instance : str
        Row id (unique), provider and instance name as the page gives it.
    accelerator : str
        Shipped accelerator id of the instance's devices.
    count : int
        Devices in the instance :math:`N_{devices}`.
    usd_per_hour : float
        Instance price :math:`p_{instance}` [USD/h].
    source : str
        URL of the page the price was read from.
    seen : str
        ISO date the page (a stored copy) was read.
    as_of : str | None
        Date the page gives for its prices, if any.
    note : str | None
        Caveats (approximate figures, form factor, conflicts).
    """

    id: str
    provider: str
    instance: str
    accelerator: str
    count: int
    usd_per_hour: float
    source: str
    seen: str
    as_of: str | None = None
    note: str | None = None

    @property
    def usd_per_device_hour(self) -> float:
        """:math:`p_{dev} = p_{instance} / N_{devices}` [USD per device-hour]."""
        return self.usd_per_hour / self.count

    def describe(self) -> str:
        """One line: price per device-hour, the row, its date and the caveat."""
        when = f"as of {self.as_of}, " if self.as_of else ""
        return (f"${self.usd_per_device_hour:.4g}/device-h from {self.provider} {self.instance} "
                f"(row {self.id}, {when}seen {self.seen}; {LIST_PRICE_CAVEAT})")

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "usd_per_device_hour": self.usd_per_device_hour, "basis": LIST_PRICE_CAVEAT}


def _iso(value: Any, field: str, origin: str) -> str:
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()[:10]
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise SpecError(f"{origin}: {field}: expected a date (YYYY-MM-DD), got {value!r}")


def parse_list_prices(data: Any, origin: str = "list prices") -> list[ListPrice]:
    """Validate a list-price table (the YAML mapping) into :class:`ListPrice` rows.

    Raises
    ------
    SpecError
        Names the row and field: a missing field, an unknown key, a non-positive price or count, a
        source that is not a URL, a ``seen`` that is not an ISO date, a duplicate id, or an
        accelerator id that is not shipped.
    """
    from ..hardware import load_hardware

    if not isinstance(data, Mapping) or data.get("kind") != "list_prices" or not isinstance(data.get("rows"), list):
        raise SpecError(f"{origin}: expected a mapping with 'kind: list_prices' and a list 'rows'")
    if data.get("currency", "USD") != "USD":
        raise SpecError(f"{origin}: currency: only USD is supported, got {data.get('currency')!r}")
    rows: list[ListPrice] = []
    seen_ids: set[str] = set()
    for k, raw in enumerate(data["rows"]):
        where = f"{origin}: rows[{k}]"
        if not isinstance(raw, Mapping):
            raise SpecError(f"{where}: expected a mapping, got {type(raw).__name__}")
        where = f"{origin}: row {raw.get('id', k)!r}"
        missing = [f for f in _REQUIRED if raw.get(f) in (None, "")]
        if missing:
            raise SpecError(f"{where}: missing {', '.join(missing)} (every row needs {', '.join(_REQUIRED)})")
        extra = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
        if extra:
            raise SpecError(f"{where}: unknown key(s) {extra}; allowed: {', '.join(_REQUIRED + _OPTIONAL)}")
        price, count = raw["usd_per_hour"], raw["count"]
        if isinstance(price, bool) or not isinstance(price, (int, float)) or not price > 0:
            raise SpecError(f"{where}: usd_per_hour: must be a number > 0 (USD per instance-hour), got {price!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise SpecError(f"{where}: count: must be an integer >= 1 (devices per instance), got {count!r}")
        if not str(raw["source"]).startswith(("http://", "https://")):
            raise SpecError(f"{where}: source: must be the URL of the price page, got {raw['source']!r}")
        seen = _iso(raw["seen"], "seen", where)
        try:
            _dt.date.fromisoformat(seen)
        except ValueError:
            raise SpecError(f"{where}: seen: expected an ISO date YYYY-MM-DD, got {seen!r}") from None
        acc = load_hardware(str(raw["accelerator"]), "accelerator").id
        if raw["id"] in seen_ids:
            raise SpecError(f"{where}: duplicate id")
        seen_ids.add(raw["id"])
        rows.append(ListPrice(str(raw["id"]), str(raw["provider"]), str(raw["instance"]), acc, int(count),
                              float(price), str(raw["source"]), seen,
                              _iso(raw["as_of"], "as_of", where) if raw.get("as_of") is not None else None,
                              raw.get("note")))
    return rows


@functools.cache
def _shipped() -> tuple[ListPrice, ...]:
    path = resources.files("perfmodel") / "data" / "prices" / "cloud_list_prices.yaml"
    return tuple(parse_list_prices(yaml.safe_load(path.read_text(encoding="utf-8")),
                                   "data/prices/cloud_list_prices.yaml"))


def list_prices(accelerator: str | None = None, provider: str | None = None) -> list[ListPrice]:
    """Shipped list-price rows, optionally for one accelerator (id, alias, a system's accelerator) and/or
    provider (case-insensitive), cheapest per device-hour first. A name without a spec has no rows."""
    from ..hardware import load_hardware
    from ..hardware.schema import System

    rows = list(_shipped())
    if provider is not None:
        providers = sorted({r.provider for r in rows})
        if provider.lower() not in {p.lower() for p in providers}:
            raise unknown_name("list-price provider", provider, providers)
        rows = [r for r in rows if r.provider.lower() == provider.lower()]
    if accelerator is not None:
        try:
            spec = load_hardware(accelerator)
        except PerfmodelError:  # a name no spec answers to has no rows
            return []
        acc = spec.accelerator if isinstance(spec, System) else spec.id
        rows = [r for r in rows if r.accelerator == acc]
    return sorted(rows, key=lambda r: (r.usd_per_device_hour, r.id))


def default_list_price(accelerator: str, provider: str | None = None) -> ListPrice | None:
    """The lowest list price per device-hour for ``accelerator`` (of ``provider`` if given), or None."""
    rows = list_prices(accelerator, provider)
    return rows[0] if rows else None


def list_price_by_id(row_id: str) -> ListPrice:
    """A shipped row by its id; an unknown id raises an error listing the closest ones."""
    rows = {r.id: r for r in _shipped()}
    if row_id not in rows:
        raise unknown_name("list-price row", row_id, sorted(rows))
    return rows[row_id]


def check_provider(provider: str | None) -> None:
    """Raise :class:`~perfmodel.errors.UnknownNameError` unless ``provider`` has rows (None passes)."""
    if provider is not None:
        list_prices(provider=provider)


__all__ = ["LIST_PRICE_CAVEAT", "ListPrice", "check_provider", "default_list_price", "list_price_by_id",
           "list_prices", "parse_list_prices"]
