"""Reading Hugging Face ``config.json`` fields: typed, checked access and the pieces the family readers
share (base sizes, attention heads, sliding windows, merging identical layers).

:mod:`perfmodel.modelspec.hf_config` (families) and :mod:`perfmodel.modelspec.hf_hybrid` (recurrent
hybrids) build on it. Missing, non-positive or contradictory fields raise
:class:`perfmodel.errors.SpecError` naming the field and the value.
"""

from __future__ import annotations

from typing import Any

from ..checks import MAX_COUNT
from ..errors import SpecError
from .schema import LayerGroup

_MISSING = object()


class _Reader:
    """Typed access to one config dictionary; errors name ``origin`` and the (prefixed) key."""

    def __init__(self, cfg: dict[str, Any], origin: str, prefix: str = "") -> None:
        self.cfg, self.origin, self.prefix = cfg, origin, prefix

    def fail(self, message: str) -> SpecError:
        return SpecError(f"{self.origin}: {message}")

    def name(self, key: str) -> str:
        return f"'{self.prefix}{key}'"

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        value = self.cfg.get(key)
        return default if value is None else value

    def int(self, key: str, default: Any = _MISSING, *, minimum: int = 1) -> Any:
        """A required (or defaulted) integer ``>= minimum``; JSON null counts as absent."""
        value = self.cfg.get(key)
        if value is None:
            if default is _MISSING:
                raise self.fail(f"missing {self.name(key)}")
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{self.name(key)} must be an integer, got {value!r}")
        if value < minimum:
            kind = "positive" if minimum == 1 else f">= {minimum}"
            raise self.fail(f"{self.name(key)} must be {kind}, got {value}")
        if value > MAX_COUNT:
            raise self.fail(f"{self.name(key)} must be at most {MAX_COUNT}, got {str(value)[:40]}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(f"{self.name(key)} must be true or false, got {value!r}")
        return value

    def int_list(self, key: str, length: int | None = None) -> list[int] | None:
        value = self.cfg.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                  for v in value):
            raise self.fail(f"{self.name(key)} must be a list of integers, got {value!r}")
        if length is not None and len(value) != length:
            raise self.fail(f"{self.name(key)} has {len(value)} entries, "
                            f"'{self.prefix}num_hidden_layers' is {length}")
        return value


# ---------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------
def _attention_heads(r: _Reader, hidden: int, *, heads_key: str = "num_attention_heads") -> dict:
    """Query/KV heads and head_dim with the divisibility checks of GQA."""
    heads = r.int(heads_key)
    kv = r.int("num_key_value_heads", heads)
    if heads % kv:
        raise r.fail(f"{r.name(heads_key)} ({heads}) is not divisible by "
                     f"{r.name('num_key_value_heads')} ({kv})")
    if r.has("head_dim"):
        head_dim = r.int("head_dim")
    else:
        if hidden % heads:
            raise r.fail(f"{r.name('hidden_size')} ({hidden}) is not divisible by {r.name(heads_key)} "
                         f"({heads}) and no 'head_dim' is given")
        head_dim = hidden // heads
    return dict(num_attention_heads=heads, num_kv_heads=kv, head_dim=head_dim, v_head_dim=head_dim,
                attention="gqa")


def _base(r: _Reader, hidden_key: str = "hidden_size", layers_key: str = "num_hidden_layers") -> dict:
    hidden = r.int(hidden_key)
    fields = dict(hidden_size=hidden, num_layers=r.int(layers_key), vocab_size=r.int("vocab_size"),
                  tie_word_embeddings=r.flag("tie_word_embeddings", False))
    max_pos = r.int("max_position_embeddings", None)
    if max_pos is not None:
        fields["max_position_embeddings"] = max_pos
    return fields


def _check_top_k(r: _Reader, top_k: int, k_key: str, experts: int, e_key: str) -> None:
    if top_k > experts:
        raise r.fail(f"{r.name(k_key)} ({top_k}) exceeds {r.name(e_key)} ({experts})")


def _windows_from_layer_types(r: _Reader, n: int, sliding: int | None, chunk: int | None
                              ) -> list[int | None] | None:
    """Per-layer window from ``layer_types`` (newer transformers configs), or None if absent."""
    types = r.get("layer_types")
    if types is None:
        return None
    if not isinstance(types, list) or len(types) != n:
        got = len(types) if isinstance(types, list) else repr(types)
        raise r.fail(f"{r.name('layer_types')} must list one type per layer ({n}), got {got}")
    allowed = {"full_attention": None, "sliding_attention": sliding, "chunked_attention": chunk}
    out: list[int | None] = []
    for i, t in enumerate(types):
        if t not in allowed:
            raise r.fail(f"{r.name('layer_types')}[{i}] is {t!r}; supported: {', '.join(allowed)}")
        if t != "full_attention" and allowed[t] is None:
            key = "sliding_window" if t == "sliding_attention" else "attention_chunk_size"
            raise r.fail(f"{r.name('layer_types')}[{i}] is {t!r} but {r.name(key)} is missing")
        out.append(allowed[t])
    return out


def _qwen_windows(r: _Reader, n: int) -> list[int | None]:
    """Qwen2/3: sliding window only if ``use_sliding_window``, on layers >= ``max_window_layers``."""
    sliding = r.int("sliding_window", None)
    typed = _windows_from_layer_types(r, n, sliding, None)
    if typed is not None:
        return typed
    if not r.flag("use_sliding_window", False) or sliding is None:
        return [None] * n
    first = r.int("max_window_layers", 0, minimum=0)
    return [sliding if i >= first else None for i in range(n)]


def _merge(layers: list[tuple]) -> tuple[LayerGroup, ...]:
    """Count identical (ffn, window[, mixer]) layers, in order of first appearance."""
    counts: dict[tuple, int] = {}
    for key in layers:
        counts[key] = counts.get(key, 0) + 1
    return tuple(LayerGroup(c, *key) for key, c in counts.items())
