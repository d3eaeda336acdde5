"""``perfmodel hardware``: list shipped hardware specs and show one (shipped id, alias or YAML path)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import UnknownNameError
from .output import add_list_show, emit, format_table

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
        "memory_capacity_bytes": spec.memory_capacity, "memory_bandwidth_bytes_per_s": spec.memory_bandwidth,
    }
    row.update({f"{c}_flops_per_s": _peak(spec, c) for c in LISTED_FORMATS})
    row["power_w"] = spec.tdp
    row["scale_up"] = spec.scale_up.link if spec.scale_up else None
    return row


def _link_row(spec: Link) -> dict[str, Any]:
    return {"bandwidth_bytes_per_s": spec.bandwidth.value, "alpha_s": spec.alpha.value,
            "alpha_basis": spec.alpha_basis, "topology": spec.topology}


def _system_row(spec: System) -> dict[str, Any]:
    return {"status": spec.status, "accelerator": spec.accelerator, "count": spec.count,
            "scale_up": spec.scale_up, "scale_up_domain": spec.scale_up_domain,
            "scale_out": spec.scale_out, "power_w": spec.power.value if spec.power else None}


def summary_row(spec: HardwareSpec) -> dict[str, Any]:
    """One ``hardware list`` row: id, kind, name and the main figures in SI units, named with their unit
    (``_bytes``, ``_bytes_per_s``, ``_flops_per_s``, ``_s``, ``_w``)."""
    from ..hardware.schema import Accelerator, Link

    row: dict[str, Any] = {"id": spec.id, "kind": spec.kind, "name": spec.name}
    if isinstance(spec, Accelerator):
        row.update(_accelerator_row(spec))
    elif isinstance(spec, Link):
        row.update(_link_row(spec))
    else:
        row.update(_system_row(spec))
    return row


def _human(value: float | None, unit: str) -> str | None:
    """Display an SI value; byte counts cited in binary units (192 GiB) are shown that way (None stays
    None: the table shows "—")."""
    from ..units import fmt

    if value is None:
        return None
    if unit == "B" and value >= 2**30 and value % 2**30 == 0 and value % 1e9 != 0:
        return f"{value / 2**30:g} GiB"
    return fmt(value, unit)


#: table columns per kind: (row key, header, SI unit for display or None for text)
TABLE_COLUMNS: dict[str, list[tuple[str, str, str | None]]] = {
    "accelerator": [("id", "id", None), ("status", "status", None), ("memory", "memory", None),
                    ("memory_capacity_bytes", "capacity", "B"), ("memory_bandwidth_bytes_per_s", "bandwidth", "B/s"),
                    ("bf16_flops_per_s", "bf16", "FLOP/s"), ("fp8_flops_per_s", "fp8", "FLOP/s"),
                    ("fp4_flops_per_s", "fp4", "FLOP/s"), ("power_w", "power", "W"), ("scale_up", "scale_up", None),
                    ("name", "name", None)],
    "link": [("id", "id", None), ("bandwidth_bytes_per_s", "bandwidth/dir", "B/s"), ("alpha_s", "alpha", "s"),
             ("alpha_basis", "alpha_basis", None), ("topology", "topology", None), ("name", "name", None)],
    "system": [("id", "id", None), ("status", "status", None), ("accelerator", "accelerator", None),
               ("count", "count", None), ("scale_up", "scale_up", None), ("scale_out", "scale_out", None),
               ("power_w", "power", "W"), ("name", "name", None)],
}


def _table(kind: str, rows: list[dict[str, Any]]) -> str:
    columns = TABLE_COLUMNS[kind]
    shown = [{header: (_human(r.get(key), unit) if unit else r.get(key)) for key, header, unit in columns}
             for r in rows]
    why = {header: "the spec does not list this figure (perfmodel does not derive it)"
           for _, header, unit in columns if unit}
    return format_table(shown, [header for _, header, _ in columns], why=why)


def _list(args: argparse.Namespace) -> int:
    from ..hardware import list_hardware

    rows = [summary_row(s) for s in list_hardware(args.kind)]
    emit(args.format, table=lambda: _list_table(args.kind, rows), rows=rows)
    return 0


def _list_table(only: str | None, rows: list[dict[str, Any]]) -> None:
    for i, kind in enumerate(k for k in KINDS if only in (None, k)):
        print(("\n" if i else "") + f"{kind}s:")
        print(_table(kind, [r for r in rows if r["kind"] == kind]))
    print("\nDense peaks (bf16 falls back to fp16); bandwidths per direction; "
          "see 'perfmodel hardware show ID' for sources.")


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
    figures = list(iter_figures(spec))
    rows = [{"figure": path, "value": fig.value, "unit": DIMENSIONS[fig.dimension][0], "basis": ", ".join(fig.basis),
             "source": fig.source} for path, fig in figures]
    emit(args.format, table=lambda: _show_table(spec, figures), rows=rows,
         document={"units": "si", **spec.model_dump(mode="json")})  # the JSON loads back as a spec file
    return 0


def _show_table(spec: HardwareSpec, figures: list) -> None:
    from ..units import DIMENSIONS

    print(format_table([{"field": k, "value": v} for k, v in _header_rows(spec) if v is not None]))
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
