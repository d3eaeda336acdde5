"""``perfmodel models``: list shipped model architectures and show one (id, repo id or config path)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from .output import add_list_show, emit, format_table

if TYPE_CHECKING:  # the specs (pydantic) are imported by the functions that run: `--help` stays light
    from ..modelspec import ModelSpec

#: KV-cache format of the ``kv_bytes_per_token`` figure shown.
SHOWN_KV_CACHE = "bf16"


def _moe_summary(spec: ModelSpec) -> dict[str, Any] | None:
    if spec.moe is None:
        return None
    return {
        "num_experts": spec.moe.num_experts,
        "top_k": spec.moe.top_k,
        "expert_intermediate_size": spec.moe.expert_intermediate_size,
        "num_shared_experts": spec.moe.num_shared_experts,
        "dense_layers": sum(g.count for g in spec.groups if g.ffn == "dense"),
    }


def model_summary(spec: ModelSpec) -> dict[str, Any]:
    """The fields ``models show`` prints, as plain JSON-able values."""
    from ..modelspec import kv_bytes_per_token, params_active, params_total, state_bytes_per_sequence
    from ..modelspec.derived import params_breakdown

    mla = None
    if spec.mla is not None:
        mla = {"q_lora_rank": spec.mla.q_lora_rank, "kv_lora_rank": spec.mla.kv_lora_rank,
               "qk_nope_head_dim": spec.mla.qk_nope_head_dim,
               "qk_rope_head_dim": spec.mla.qk_rope_head_dim, "v_head_dim": spec.mla.v_head_dim}
    return {
        "id": spec.id,
        "family": spec.family,
        "hf_repo_id": spec.hf_repo_id,
        "params_total": params_total(spec),
        "params_active": params_active(spec),
        "kv_bytes_per_token": kv_bytes_per_token(spec, SHOWN_KV_CACHE),
        "kv_cache": SHOWN_KV_CACHE,
        "num_layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "vocab_size": spec.vocab_size,
        "attention": spec.attention,
        "num_attention_heads": spec.num_attention_heads,
        "num_kv_heads": spec.num_kv_heads,
        "head_dim": spec.head_dim,
        "v_head_dim": spec.v_head_dim,
        "intermediate_size": spec.intermediate_size,
        "mla": mla,
        "moe": _moe_summary(spec),
        "layer_groups": [{"count": g.count, "ffn": g.ffn, "window": g.window, "mixer": g.mixer}
                         for g in spec.groups],
        "sparse_attention": asdict(spec.sparse_attention) if spec.sparse_attention else None,
        "recurrent": asdict(spec.recurrent) if spec.recurrent else None,
        "state_bytes_per_sequence": state_bytes_per_sequence(spec),
        "tie_word_embeddings": spec.tie_word_embeddings,
        "max_position_embeddings": spec.max_position_embeddings,
        "params_breakdown": params_breakdown(spec),
        "source": spec.source,
        "notes": list(spec.notes),
    }


def _billions(n: int) -> str:
    return f"{n / 1e9:.2f} B"


def _list(args: argparse.Namespace) -> int:
    from ..modelspec import kv_bytes_per_token, list_models, load_model, params_active, params_total

    rows = []
    for model_id in list_models():
        spec = load_model(model_id)
        rows.append({"id": spec.id, "family": spec.family, "hf_repo_id": spec.hf_repo_id,
                     "params_total": params_total(spec), "params_active": params_active(spec),
                     "attention": spec.attention, "moe": spec.moe is not None,
                     "kv_bytes_per_token": kv_bytes_per_token(spec, SHOWN_KV_CACHE)})
    emit(args.format, table=lambda: _list_table(rows), rows=rows)
    return 0


def _list_table(rows: list[dict[str, Any]]) -> None:
    table = [{**r, "params_total": _billions(r["params_total"]),
              "params_active": _billions(r["params_active"]),
              "kv_B_per_token": f"{r.pop('kv_bytes_per_token'):,.0f}"} for r in rows]
    print(format_table(table, ["id", "family", "attention", "params_total", "params_active",
                               "kv_B_per_token", "hf_repo_id"]))
    print(f"\nKV bytes per token in {SHOWN_KV_CACHE}, all layers, before any sliding-window cap.")


def _show(args: argparse.Namespace) -> int:
    from ..modelspec import load_model

    info = model_summary(load_model(args.model))
    emit(args.format, table=lambda: _show_table(info), rows=[info], document=info)
    return 0


def _show_table(info: dict[str, Any]) -> None:
    moe = info["moe"]
    rows = [
        ("id", info["id"]), ("family", info["family"]), ("hf_repo_id", info["hf_repo_id"]),
        ("params_total", f"{info['params_total']:,} ({_billions(info['params_total'])})"),
        ("params_active", f"{info['params_active']:,} ({_billions(info['params_active'])})"),
        (f"kv_bytes_per_token ({SHOWN_KV_CACHE})", f"{info['kv_bytes_per_token']:,.0f}"),
        ("num_layers", info["num_layers"]), ("hidden_size", info["hidden_size"]),
        ("vocab_size", info["vocab_size"]), ("attention", info["attention"]),
        ("num_attention_heads", info["num_attention_heads"]), ("num_kv_heads", info["num_kv_heads"]),
        ("head_dim", info["head_dim"]), ("v_head_dim", info["v_head_dim"]),
        ("intermediate_size", info["intermediate_size"]),
    ]
    if info["mla"]:
        rows.append(("mla", ", ".join(f"{k}={v}" for k, v in info["mla"].items())))
    rows.append(("moe", ", ".join(f"{k}={v}" for k, v in moe.items()) if moe else "none"))
    groups = "; ".join(f"{g['count']} x {g['ffn']}" + (f" window {g['window']}" if g["window"] else "")
                       + (" recurrent" if g["mixer"] == "recurrent" else "") for g in info["layer_groups"])
    for key in ("sparse_attention", "recurrent"):
        if info[key]:
            rows.append((key, ", ".join(f"{k}={v}" for k, v in info[key].items())))
    if info["state_bytes_per_sequence"]:
        rows.append(("state_bytes_per_sequence", f"{info['state_bytes_per_sequence']:,.0f}"))
    rows += [("layer_groups", groups), ("max_position_embeddings", info["max_position_embeddings"]),
             ("source", info["source"])]
    rows += [("note", n) for n in info["notes"]]
    print(format_table([{"field": k, "value": v} for k, v in rows]))


def register(subparsers: Any) -> None:
    """Add ``models list`` and ``models show`` to the top-level parser."""
    add_list_show(
        subparsers, "models", help="list shipped model architectures or show one",
        description="Model architectures read from HF config.json files.",
        list_help="shipped model ids with parameter counts and KV size",
        show_help="one model: shapes, parameters, KV bytes, layer groups", show_arg="model",
        show_arg_help="shipped id, Hugging Face repo id, or path to a config.json",
        list_func=_list, show_func=_show)
