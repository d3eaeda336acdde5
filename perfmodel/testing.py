"""Helpers for pinning what-ifs in tests and notebooks (like ``xarray.testing``).

``tiny_model`` and ``make_accelerator`` build small specs whose costs can be checked by hand;
``assert_prediction_close`` compares two predictions field by field with a relative tolerance.
"""

from __future__ import annotations

import numpy as np

from .hardware.schema import Accelerator, parse_spec
from .modelspec.schema import LayerGroup, ModelSpec


def tiny_model(**overrides) -> ModelSpec:
    """A 2-layer dense GQA model (h = 64, 4 query / 2 KV heads of 16, FFN 128, vocab 256)."""
    fields = dict(
        id="tiny", family="llama", hidden_size=64, num_layers=2, vocab_size=256,
        num_attention_heads=4, num_kv_heads=2, head_dim=16, v_head_dim=16, attention="gqa",
        intermediate_size=128, ffn_matrices=3, layer_groups=(LayerGroup(count=2, ffn="dense"),),
    )
    fields.update(overrides)
    return ModelSpec(**fields)


def make_accelerator(bandwidth="2 TB/s", bf16="500 TFLOP/s", capacity="80 GB", **extra) -> Accelerator:
    """An accelerator spec as a user file would give it (quantity strings, no sources)."""
    data = {
        "kind": "accelerator", "id": "test-gpu", "name": "Test GPU",
        "memory": {"hbm": {"capacity": capacity, "bandwidth": bandwidth}},
        "compute": {"bf16": bf16},
        "scale_up": {"link": "nvlink4", "domain": 8},
    }
    data.update(extra)
    spec = parse_spec(data, "test")
    assert isinstance(spec, Accelerator)
    return spec


def assert_prediction_close(actual, expected, rtol: float = 1e-9,
                            fields=("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s")) -> None:
    """Assert two :class:`~perfmodel.core.predict.Prediction` objects agree on ``fields``."""
    for f in fields:
        np.testing.assert_allclose(getattr(actual, f), getattr(expected, f), rtol=rtol, err_msg=f)
