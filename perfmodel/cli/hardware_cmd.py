"""``perfmodel hardware``: list shipped hardware specs and show one (shipped id, alias or YAML path)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import UnknownNameError
from .output import add_list_show, format_table, print_json

if TYPE_CHECKING:  # the specs (pydantic, pint) are imported by the functions that run: `--help` stays light
    from ..hardware.schema import Accelerator, HardwareSpec, Link, Port, System

KINDS = ("accelerator", "link", "system")
#: Compute formats summarised by ``hardware list``.
LISTED_FORMATS = ("bf16", "fp8", "fp4")


def _peak(spec: Accelerator, compute: str) -> float | None:
    """Dense peak [FLOP/s] or None when the file has no such entry (fp16 stands in for bf16)."""
    try:
        return spec.peak_flops(compute)
    except UnknownNameError:
        return None


def _accelerator_row(spec: Accelerator) -> dict[str, Any]:
    row: dict[str, Any] = {
        "vendor": spec.vendor, "status": spec.status, "memory": spec.main_memory,
        "memory_capacity": spec.memory_capacity, "memory_bandwidth": spec.memory_bandwidth,
    }
    row.update({f"{c}_flops": _peak(spec, c) for c in LISTED_FORMATS})
    row["power"] = spec.tdp
    row["scale_up"] = spec.scale_up.link if spec.scale_up else None
    return row


def _link_row(spec: Link) -> dict[str, Any]:
    return {"bandwidth": spec.bandwidth.value, "alpha": spec.alpha.value,
            "alpha_basis": spec.alpha_basis, "topology": spec.topology}


def _system_row(spec: System) -> dict[str, Any]:
    return {"status": spec.status, "accelerator": spec.accelerator, "count": spec.count,
            "scale_up": spec.scale_up, "scale_up_domain": spec.scale_up_domain,
            "scale_out": spec.scale_out, "power": spec.power.value if spec.power else None}


def summary_row(spec: HardwareSpec) -> dict[str, Any]:
    """One ``hardware list`` row: id, kind, name and the main figures in SI units (B, B/s, FLOP/s, s, W)."""
    from ..hardware.schema import Accelerator, Link

    row: dict[str, Any] = {"id": spec.id, "kind": spec.kind, "name": spec.name}
    if isinstance(spec, Accelerator):
        row.update(_accelerator_row(spec))
    elif isinstance(spec, Link):
        row.update(_link_row(spec))
    else:
        row.update(_system_row(spec))
    return row


def _human(value: float | None, unit: str) -> str:
    """Display an SI value; byte counts cited in binary units (192 GiB) are shown that way."""
    from ..units import fmt

    if value is None:
        return ""
    if unit == "B" and value >= 2**30 and value % 2**30 == 0 and value % 1e9 != 0:
        return f"{value / 2**30:g} GiB"
    return fmt(value, unit)


#: table columns per kind: (row key, header, SI unit for display or None for text)
TABLE_COLUMNS: dict[str, list[tuple[str, str, str | None]]] = {
    "accelerator": [("id", "id", None), ("status", "status", None), ("memory", "memory", None),
                    ("memory_capacity", "capacity", "B"), ("memory_bandwidth", "bandwidth", "B/s"),
                    ("bf16_flops", "bf16", "FLOP/s"), ("fp8_flops", "fp8", "FLOP/s"),
                    ("fp4_flops", "fp4", "FLOP/s"), ("power", "power", "W"), ("scale_up", "scale_up", None),
                    ("name", "name", None)],
    "link": [("id", "id", None), ("bandwidth", "bandwidth/dir", "B/s"), ("alpha", "alpha", "s"),
             ("alpha_basis", "alpha_basis", None), ("topology", "topology", None), ("name", "name", None)],
    "system": [("id", "id", None), ("status", "status", None), ("accelerator", "accelerator", None),
               ("count", "count", None), ("scale_up", "scale_up", None), ("scale_out", "scale_out", None),
               ("power", "power", "W"), ("name", "name", None)],
}


def _table(kind: str, rows: list[dict[str, Any]]) -> str:
    columns = TABLE_COLUMNS[kind]
    shown = [{header: (_human(r.get(key), unit) if unit else r.get(key)) for key, header, unit in columns}
             for r in rows]
    return format_table(shown, [header for _, header, _ in columns])


def _list(args: argparse.Namespace) -> int:
    from ..hardware import list_hardware

    rows = [summary_row(s) for s in list_hardware(args.kind)]
    if args.format == "json":
        print_json(rows)
        return 0
    for i, kind in enumerate(k for k in KINDS if args.kind in (None, k)):
        print(("\n" if i else "") + f"{kind}s:")
        print(_table(kind, [r for r in rows if r["kind"] == kind]))
    print("\nDense peaks (bf16 falls back to fp16); bandwidths per direction; "
          "see 'perfmodel hardware show ID' for sources.")
    return 0


def _port_text(port: Port) -> str:
    from ..hardware import load_hardware
    from ..units import fmt

    link = load_hardware(port.link, "link")
    bandwidth = port.bandwidth.value if port.bandwidth else link.bandwidth.value
    origin = "override" if port.bandwidth else "link"
    domain = f", domain {port.domain}" if port.domain else ""
    return f"{port.link}: {fmt(bandwidth, 'B/s')} per direction ({origin}){domain}"


def _header_rows(spec: HardwareSpec) -> list[tuple[str, Any]]:
    from ..hardware.schema import Accelerator, Link, System

    rows: list[tuple[str, Any]] = [("id", spec.id), ("kind", spec.kind), ("name", spec.name)]
    if spec.aliases:
        rows.append(("aliases", ", ".join(spec.aliases)))
    if isinstance(spec, (Accelerator, System)):
        rows.append(("status", spec.status))
    if isinstance(spec, Accelerator):
        rows += [(name, _port_text(port)) for name in ("scale_up", "scale_out", "host_link")
                 if (port := getattr(spec, name)) is not None]
    elif isinstance(spec, Link):
        rows += [("alpha_basis", spec.alpha_basis), ("topology", spec.topology), ("scope", spec.scope)]
    else:
        rows += [("accelerator", f"{spec.count} x {spec.accelerator}"), ("scale_up", spec.scale_up),
                 ("scale_up_domain", spec.scale_up_domain), ("scale_out", spec.scale_out)]
    return rows


def _show(args: argparse.Namespace) -> int:
    from ..hardware import load_hardware
    from ..hardware.schema import iter_figures
    from ..units import DIMENSIONS

    spec = load_hardware(args.spec)
    if args.format == "json":
        print_json({"units": "si", **spec.model_dump(mode="json")})  # loads back as a spec file
        return 0
    print(format_table([{"field": k, "value": v} for k, v in _header_rows(spec) if v is not None]))
    figures = list(iter_figures(spec))
    rows = [{"figure": path, "value": _human(fig.value, DIMENSIONS[fig.dimension][0]),
             "basis": ", ".join(fig.basis), "source": fig.source or "(none)"} for path, fig in figures]
    print()
    print(format_table(rows, ["figure", "value", "basis", "source"]))
    notes = [(path, fig.note) for path, fig in figures if fig.note]
    if notes or spec.notes:
        print()
    for path, note in notes:
        print(f"note on {path}: {note}")
    if spec.notes:
        print(f"notes: {spec.notes}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``hardware list`` and ``hardware show`` to the top-level parser."""
    p_list = add_list_show(
        subparsers, "hardware", help="list shipped hardware specs or show one",
        description="Accelerators, links and systems with sourced figures.",
        list_help="shipped accelerators, links and systems with their main figures",
        show_help="one spec: every figure in SI units with its basis and source", show_arg="spec",
        show_arg_help="shipped id or alias (h100-sxm, H100), or path to a spec YAML file",
        list_func=_list, show_func=_show)
    p_list.add_argument("--kind", choices=KINDS, default=None, help="only this kind")
