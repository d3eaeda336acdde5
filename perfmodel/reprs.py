"""HTML representations for notebooks: specs as tables with units and sources."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from .units import fmt

#: SI unit shown for each figure dimension.
UNIT = {"bytes": "B", "bandwidth": "B/s", "flops": "FLOP/s", "time": "s", "power": "W", "dimensionless": ""}


def table_html(title: str, rows: list[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    """A small HTML table (values escaped)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<p><b>{html.escape(title)}</b></p><table><tr>{head}</tr>{body}</table>"


def spec_html(spec: Any, figures: Iterable[tuple[str, Any]]) -> str:
    """Every sourced figure of a hardware spec: value with unit, basis and a source link.

    ``figures`` are its ``(path, figure)`` pairs (:func:`perfmodel.hardware.schema.iter_figures`).
    """
    rows = []
    for path, fig in figures:
        src = (f'<a href="{html.escape(fig.source)}">source</a>' if fig.source else "<i>no source</i>")
        rows.append((html.escape(path), fmt(fig.value, UNIT.get(fig.dimension, "")),
                     html.escape(", ".join(fig.basis)), src, html.escape(fig.note or "")))
    title = f"{spec.kind} {spec.id}: {spec.name}" + (f" ({spec.status})" if hasattr(spec, "status") else "")
    return table_html(title, rows, ("figure", "value", "basis", "source", "note"))


def model_html(spec: Any) -> str:
    """Shapes and derived sizes of a model spec."""
    moe = spec.moe
    rows = [
        ("family", html.escape(spec.family)), ("layers", spec.num_layers), ("hidden size", spec.hidden_size),
        ("attention", f"{spec.attention}, {spec.num_attention_heads} query / {spec.num_kv_heads} KV heads "
                      f"of {spec.head_dim}"),
        ("parameters total / active", f"{spec.params_total() / 1e9:.2f} B / {spec.params_active() / 1e9:.2f} B"),
        ("KV cache per token (bf16)", fmt(spec.kv_bytes_per_token("bf16"), "B")),
        ("MoE", f"{moe.num_experts} experts, top-{moe.top_k}, {moe.num_shared_experts} shared" if moe else "dense"),
        ("layer groups", html.escape(", ".join(f"{g.count}× {g.ffn}" + (f" window {g.window}" if g.window else "")
                                               + (" recurrent" if g.mixer == "recurrent" else "")
                                               for g in spec.layer_groups))),
    ]
    return table_html(f"model {spec.id}", rows, ("", ""))
