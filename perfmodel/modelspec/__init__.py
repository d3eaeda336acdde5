"""Model architectures: the :class:`ModelSpec` schema, reading HF ``config.json`` files, shipped
models, and derived parameter / weight / KV-cache sizes."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (perfmodel._lazy)
    from .derived import (
        kv_bytes_per_token,
        kv_cache_bytes,
        kv_cache_bytes_by_group,
        kv_elems_per_token_per_layer,
        params_active,
        params_breakdown,
        params_total,
        state_bytes_per_sequence,
        weight_bytes,
    )
    from .hf_config import SUPPORTED_FAMILIES, from_hf_config
    from .registry import list_models, load_model, load_model_file
    from .schema import LayerGroup, MLAShape, ModelSpec, MoEShape, RecurrentShape, SparseAttentionShape

__all__ = [
    "SUPPORTED_FAMILIES", "LayerGroup", "MLAShape", "ModelSpec", "MoEShape", "RecurrentShape",
    "SparseAttentionShape", "from_hf_config",
    "kv_bytes_per_token", "kv_cache_bytes", "kv_cache_bytes_by_group", "kv_elems_per_token_per_layer",
    "list_models", "load_model", "load_model_file", "params_active", "params_breakdown", "params_total",
    "state_bytes_per_sequence", "weight_bytes",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
