"""The StepModel cache behind ``predict`` (perfmodel.core.step_cache): reuse without stale answers."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.core import step_cache
from perfmodel.testing import make_accelerator


def test_equal_arguments_reuse_one_step_model_and_give_the_uncached_answer():
    a = step_cache.cached_step_model("llama-3.1-8b", "h100-sxm", tp=1, weights="fp8")
    b = step_cache.cached_step_model("llama-3.1-8b", "H100", tp=1, weights="fp8")  # alias: same spec object
    assert a is b
    assert step_cache.cached_step_model("llama-3.1-8b", "h100-sxm", tp=2, weights="fp8") is not a
    fresh = pm.StepModel("llama-3.1-8b", "h100-sxm", tp=1, weights="fp8")
    cached = pm.predict("llama-3.1-8b", "h100-sxm", tp=1, weights="fp8", isl=2048, osl=256, batch=[1, 8])
    direct = pm.predict(None, None, isl=2048, osl=256, batch=[1, 8], step_model=fresh)
    for field in ("ttft_s", "tpot_s", "e2e_s", "memory_used_bytes_per_device"):
        np.testing.assert_array_equal(getattr(cached, field), getattr(direct, field))


def test_a_number_of_another_type_is_another_key():
    """``tp=2.0`` and ``tp=True`` are refused as without a cache, though ``tp=2`` and ``tp=1`` are cached."""
    step_cache.cached_step_model("llama-3.1-8b", "h100-sxm", tp=2)
    step_cache.cached_step_model("llama-3.1-8b", "h100-sxm", tp=1)
    with pytest.raises(pm.ConfigError, match="tp: must be a positive integer, got 2.0"):
        pm.predict("llama-3.1-8b", "h100-sxm", tp=2.0)
    with pytest.raises(pm.ConfigError, match="tp: must be a positive integer, got True"):
        pm.predict("llama-3.1-8b", "h100-sxm", tp=True)


def test_a_model_file_edited_between_calls_is_read_again(tmp_path):
    data = json.loads(resources.files("perfmodel").joinpath("data/models/llama-3.1-8b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    first = pm.predict(str(path), "h100-sxm", isl=1024, osl=128, batch=4)
    data["config"]["num_hidden_layers"] = 16
    path.write_text(json.dumps(data))
    second = pm.predict(str(path), "h100-sxm", isl=1024, osl=128, batch=4)
    assert float(second.tpot_s) < 0.75 * float(first.tpot_s)


def test_objects_are_keyed_by_identity_and_the_cache_is_bounded():
    gpu = make_accelerator()
    assert step_cache.cached_step_model("llama-3.1-8b", gpu) is step_cache.cached_step_model("llama-3.1-8b", gpu)
    other = make_accelerator(bandwidth="4 TB/s")
    faster = step_cache.cached_step_model("llama-3.1-8b", other)
    assert faster.bandwidth == 2 * step_cache.cached_step_model("llama-3.1-8b", gpu).bandwidth
    for k in range(step_cache.MAX_ENTRIES + 5):
        step_cache.cached_step_model("llama-3.1-8b", "h100-sxm", reserve=0.01 * (k % 90))
    assert len(step_cache._entries) == step_cache.MAX_ENTRIES
    step_cache.clear()
    assert not step_cache._entries


def test_a_hardware_file_edited_between_calls_is_read_again(tmp_path):
    """By path and by the id the file registered: the edited bandwidth is used, not a cached step model
    (or its cached decode-attention constants) of the old file."""
    text = resources.files("perfmodel.hardware_specs").joinpath("accelerators/h100-sxm.yaml").read_text()
    text = text.replace("id: h100-sxm", "id: step-cache-test-gpu").replace(
        "aliases: [h100, h100-sxm5, h100_sxm, h100-80gb]", "aliases: []")
    path = tmp_path / "gpu.yaml"
    path.write_text(text)
    first = pm.predict("llama-3.1-8b", str(path), isl=1024, osl=128, batch=4)
    assert float(first.tpot_s) == float(pm.predict("llama-3.1-8b", "step-cache-test-gpu", isl=1024, osl=128,
                                                   batch=4).tpot_s)
    assert "value: 3.35 TB/s" in text
    path.write_text(text.replace("value: 3.35 TB/s", "value: 6.7 TB/s"))
    by_path = pm.predict("llama-3.1-8b", str(path), isl=1024, osl=128, batch=4)
    by_id = pm.predict("llama-3.1-8b", "step-cache-test-gpu", isl=1024, osl=128, batch=4)
    assert float(by_path.tpot_s) < 0.75 * float(first.tpot_s)
    assert float(by_id.tpot_s) == float(by_path.tpot_s)


def test_names_find_step_models_only_for_shipped_specs(tmp_path):
    """Shipped ids (and aliases) are also keyed by the names as given; a file named by its path, even a
    copy of a shipped one with the same id, is read again and never found by name."""
    step_cache.clear()
    a = step_cache.cached_step_model("llama-3.1-8b", "h100-sxm", tp=1, weights=None)
    assert step_cache.cached_step_model("llama-3.1-8b", "h100-sxm", tp=1, weights=None) is a
    assert step_cache.cached_step_model("llama-3.1-8b", "H100", tp=1, weights=None) is a  # alias: same spec
    assert step_cache.cached_step_model("llama-3.1-8b", "h100-sxm", tp=1, weights="bf16") is a  # the default
    assert len(step_cache._by_name) == 3
    assert step_cache.cached_step_model("llama-3.1-8b", "h100-sxm", tp=2, weights=None) is not a
    text = resources.files("perfmodel.hardware_specs").joinpath("accelerators/h100-sxm.yaml").read_text()
    assert "value: 3.35 TB/s" in text
    path = tmp_path / "h100-copy.yaml"  # keeps the shipped id: used as given, not registered
    path.write_text(text.replace("value: 3.35 TB/s", "value: 6.7 TB/s"))
    shipped = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=128, batch=4)
    faster = pm.predict("llama-3.1-8b", str(path), isl=1024, osl=128, batch=4)
    assert float(faster.tpot_s) < 0.75 * float(shipped.tpot_s)
    path.write_text(text)
    assert float(pm.predict("llama-3.1-8b", str(path), isl=1024, osl=128, batch=4).tpot_s) == float(shipped.tpot_s)
    assert not any(str(path) in key for key in step_cache._by_name)


def test_another_efficiency_profile_gives_its_own_answer():
    """An edited profile object is another key: its answer, not the cached one of the shipped profile;
    and the shipped one's answer is unchanged after it."""
    from dataclasses import replace

    sm = step_cache.cached_step_model("llama-3.1-8b", "h100-sxm")
    before = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=512, batch=4)
    slower_memory = replace(sm.efficiency, memory=sm.efficiency.memory / 2, op_params={})
    edited = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=512, batch=4, efficiency=slower_memory)
    assert float(edited.tpot_s) > 1.5 * float(before.tpot_s)
    assert edited.config["efficiency"] == before.config["efficiency"]  # same name, other values
    after = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=512, batch=4)
    assert float(after.tpot_s) == float(before.tpot_s)
    datasheet = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=512, batch=4, efficiency="datasheet")
    assert float(datasheet.tpot_s) < float(before.tpot_s)
