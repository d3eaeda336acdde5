"""The plan's screen costs prompts at their best-case prefix reuse, so its floors and bounds stay bounds."""

from __future__ import annotations

import pytest

import perfmodel as pm
from perfmodel.planning.screen import floor_reason, idle_floors, screening_lengths

BASE = {"arrival": {"rate": "2/s"}, "isl": 8192, "osl": 128, "requests": 50}


def test_screening_lengths_take_off_the_optimistic_hit_rate():
    assert screening_lengths(pm.load_workload(BASE)) == (8192, 128)
    assert screening_lengths(pm.load_workload({**BASE, "prefix_hit_rate": 0.5})) == (4096, 128)
    shared = pm.load_workload({**BASE, "prefix": {"tokens": 7936, "pool": 4}})
    assert screening_lengths(shared)[0] == pytest.approx(8192 - 7936)   # I (1 - S/I) = I - S


def test_a_prefix_cached_workload_is_not_pruned_on_an_uncached_ttft_floor():
    sm = pm.StepModel("llama-3.1-8b", "h100-sxm")
    cached_floor, _ = idle_floors(sm, *screening_lengths(pm.load_workload({**BASE, "prefix": {"tokens": 7936,
                                                                                             "pool": 4}})))
    uncached_floor, _ = idle_floors(sm, 8192, 128)
    assert cached_floor < 0.2 * uncached_floor
    slo = pm.SLO(ttft=f"{(cached_floor + uncached_floor) / 2} s")   # reachable only with the cache
    assert floor_reason(uncached_floor, 0.0, 128, slo) is not None
    assert floor_reason(cached_floor, 0.0, 128, slo) is None
