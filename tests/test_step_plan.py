"""The compiled op plan (``perfmodel.core.plan``) gives what ``StepModel.breakdown`` gives, bit for bit.

The plan forms a few-point step's totals, bounds, exposed communication and decode-attention time from
affine columns (GEMMs, memory-only ops) and the other ops' own builders; a scalar ``predict`` uses it
from a step model's second call on. Checked here on a grid of operating points for dense, MLA + MoE,
sliding-window, hybrid (recurrent) and pipelined / expert-parallel layouts, and against stale reuse.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.core import plan as plan_module
from perfmodel.core.ops import StepShape
from perfmodel.core.plan import StepPlan

CASES = [
    ("llama-3.1-8b", "h100-sxm", {}),                                          # dense GQA
    ("llama-3.1-70b", "h100-sxm", {"tp": 8}),                                  # TP all-reduces
    ("deepseek-v3", "h200-sxm", {"tp": 8, "weights": "fp8"}),                  # MLA + MoE
    ("deepseek-v3", "b200", {"dp_attention": 8, "ep": 8, "weights": "fp8"}),   # attention DP, EP all-to-all
    ("gpt-oss-120b", "b200", {"weights": "mxfp4"}),                            # sliding-window layers
    ("qwen3.5-397b-a17b", "b200", {"tp": 4, "weights": "fp8"}),               # Gated DeltaNet hybrid + MoE
    ("nemotron-h-56b", "h100-sxm", {"tp": 2}),                                 # recurrent, FFN-only layers
    ("llama-3.1-8b", "h100-sxm", {"tp": 2, "pp": 2}),                          # micro-batched decodes
    ("qwen3-30b-a3b", "b200", {"tp": 2, "ep": 2}),                             # MoE over EP ranks
    ("llama-2-7b", "a100-sxm", {"efficiency": "datasheet"}),                   # plain roofline forms
]


def _grid(seed: int) -> list[StepShape]:
    """Stacked shapes as ``predict`` forms them (prefill row, decode rows at three contexts) for random
    points, and mixed steps (decodes and prefill chunks together) of up to 64 rows."""
    rng = np.random.default_rng(seed)
    shapes = []
    for _ in range(6):
        b, i, o = float(rng.integers(1, 300)), float(rng.integers(1, 30000)), float(rng.integers(1, 4000))
        lo, hi = i + 1.0, max(i + o - 1.0, i + 1.0)
        shapes.append(StepShape.make(n_decode=[0, b, b, b], context=[0, 0.5 * (lo + hi), lo, hi],
                                     n_prefill=[b, 0, 0, 0], chunk=[i, 0, 0, 0]))
    n = 64
    shapes.append(StepShape.make(n_decode=rng.integers(0, 512, n), context=rng.integers(1, 60000, n),
                                 n_prefill=rng.integers(0, 4, n), chunk=rng.integers(1, 16384, n)))
    return shapes


@pytest.mark.parametrize("model, hw, kw", CASES)
def test_plan_equals_the_breakdown_on_a_grid(model, hw, kw):
    sm = pm.StepModel(model, hw, **kw)
    plan = sm.plan
    assert isinstance(plan, StepPlan)
    assert plan.gemm is not None and plan.memory is not None  # the affine columns are in use
    for shape in _grid(7):
        ref, got = sm.breakdown(shape), plan.totals(shape)
        np.testing.assert_array_equal(got.total, ref.total)
        np.testing.assert_array_equal(got.bound(), ref.bound())
        np.testing.assert_array_equal(got.context, ref.context_total())
        np.testing.assert_array_equal(got.comm, ref.comm_total)


@pytest.mark.parametrize("model, hw, kw", CASES[:5])
def test_scalar_predict_with_the_plan_equals_the_reference(model, hw, kw):
    """The first call of a step model takes the breakdown, later ones the plan: the same numbers, and
    the same per-op breakdown when it is asked for."""
    sm = pm.StepModel(model, hw, **kw)
    args = dict(isl=3000, osl=700, batch=24, step_model=sm)
    first = pm.predict(None, None, **args)
    assert "plan" not in sm.__dict__
    second = pm.predict(None, None, **args)
    assert sm.__dict__["plan"] is not None
    for f in ("ttft_s", "tpot_s", "prefill_bound", "decode_bound"):
        assert getattr(second, f) == getattr(first, f), f
    assert second.breakdown().equals(first.breakdown())


def test_an_edited_spec_or_profile_gets_its_own_plan():
    """Plans live on their step model: a copy of a spec or profile with other values never reuses one."""
    base = pm.StepModel("llama-3.1-8b", "h100-sxm")
    spec = replace(base.model, intermediate_size=base.model.intermediate_size * 2)
    eff = replace(base.efficiency, kernel_overhead=base.efficiency.kernel_overhead * 3 + 1e-6,
                  step_overhead=base.efficiency.step_overhead + 1e-4)
    shape = _grid(3)[0]
    want = base.plan.totals(shape).total
    for edited in (pm.StepModel(spec, "h100-sxm"), pm.StepModel("llama-3.1-8b", "h100-sxm", efficiency=eff)):
        got = edited.plan.totals(shape).total
        assert edited.plan is not base.plan
        assert np.all(got > want)
        np.testing.assert_array_equal(got, edited.breakdown(shape).total)
    # through predict's cache of step models: each edited profile object is its own key
    p = [pm.predict("llama-3.1-8b", "h100-sxm", isl=2000, osl=100, batch=4, efficiency=e) for e in (eff, eff)]
    eff2 = replace(eff, step_overhead=eff.step_overhead + 1e-3)
    q = [pm.predict("llama-3.1-8b", "h100-sxm", isl=2000, osl=100, batch=4, efficiency=e) for e in (eff2, eff2)]
    assert p[0].tpot_s == p[1].tpot_s and q[0].tpot_s == q[1].tpot_s
    assert q[1].tpot_s - p[1].tpot_s == pytest.approx(1e-3, rel=1e-9)


def test_no_plan_where_it_does_not_apply_or_does_not_reproduce(monkeypatch):
    assert pm.StepModel("llama-3.1-70b", "h100-sxm", tp=4, kv_host_fraction=0.25).plan is None
    assert pm.StepModel("llama-3.1-8b", "h100-sxm").plan is not None
    # a GEMM's FLOP coefficient one part in 10^15 off: the check against the breakdown refuses the plan
    right = plan_module._as_gemm

    def off(op, sources, act_bytes):
        g = right(op, sources, act_bytes)
        return g if g is None else (g[0], g[1] * (1.0 + 1e-15), *g[2:])

    monkeypatch.setattr(plan_module, "_as_gemm", off)
    assert pm.StepModel("llama-3.1-8b", "h100-sxm").plan is None


def test_a_step_model_with_a_plan_pickles_without_it():
    """Step models travel to worker processes (planning.executor): the plan is formed again there."""
    import pickle

    sm = pm.StepModel("llama-3.1-8b", "h100-sxm")
    assert sm.plan is not None
    copy = pickle.loads(pickle.dumps(sm))
    assert "plan" not in copy.__dict__
    shape = _grid(5)[0]
    np.testing.assert_array_equal(copy.plan.totals(shape).total, sm.plan.totals(shape).total)


def test_a_prediction_pickles_with_its_parts():
    import pickle

    sm = pm.StepModel("deepseek-v3", "h200-sxm", tp=8, weights="fp8")
    p = [pm.predict(None, None, isl=1000, osl=100, batch=3, step_model=sm) for _ in range(2)][1]
    copy = pickle.loads(pickle.dumps(p))
    assert copy.breakdown().equals(p.breakdown()) and copy.ttft_s == p.ttft_s
