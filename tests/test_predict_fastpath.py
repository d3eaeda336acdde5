"""The scalar fast path of ``predict`` (issue 21) gives what the op-by-op, vectorised definition gives.

A few operating points are costed with the step's GEMMs stacked in one pass, the decode steps at
Simpson's end contexts as extra rows of the same breakdown, and the tile-row boundaries of the wave
term in blocks; more points take the op-by-op path. Both must agree bit for bit.
"""

from __future__ import annotations

import math
from importlib import resources

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.core import step as step_module
from perfmodel.core.breakdown import StackedRow
from perfmodel.core.costs import TILE, _wave_eta, wave_monotone_eta
from perfmodel.engine.engine import Engine, _small_m_model
from perfmodel.engine.prefill import prefill_batch_time, prefix_step_time


@pytest.mark.parametrize("model, hw, kw", [
    ("llama-3.1-70b", "h100-sxm", {"tp": 8}),
    ("deepseek-v3", "h200-sxm", {"tp": 8, "weights": "fp8"}),
    ("qwen3-next-80b-a3b", "b200", {"tp": 2, "weights": "nvfp4"}),
    ("gpt-oss-120b", "b200", {"weights": "mxfp4"}),  # sliding-window layers, MXFP4 experts
    ("deepseek-v3", "b200", {"dp_attention": 8, "ep": 8, "weights": "fp8"}),  # all-to-all messages
    ("llama-3.1-8b", "h100-sxm", {"tp": 2, "pp": 2}),  # decodes split into micro-batches
    ("llama-3.1-70b", "h100-sxm", {"tp": 4, "pp": 2, "kv_host_fraction": 0.25}),  # ends costed apart
    ("nemotron-h-56b", "h100-sxm", {"tp": 2}),  # recurrent and FFN-only layers
    ("llama-2-7b", "a100-sxm", {"efficiency": "datasheet"}),  # the plain roofline forms
])
def test_scalar_predicts_equal_the_vectorised_call(model, hw, kw):
    """Points one by one (stacked GEMMs, end contexts as rows) against one call over more than
    ``STACK_POINTS`` distinct batches (op by op, Simpson's ends costed apart): identical."""
    n = step_module.STACK_POINTS + 6
    batch = np.arange(1, n + 1) * 3
    isl = 100 + 37 * np.arange(n)
    osl = 20 + 11 * np.arange(n)
    sm = pm.StepModel(model, hw, **kw)
    whole = pm.predict(None, None, isl=isl, osl=osl, batch=batch, step_model=sm)
    for j in (0, 7, n - 1):
        one = pm.predict(None, None, isl=int(isl[j]), osl=int(osl[j]), batch=int(batch[j]), step_model=sm)
        for f in ("ttft_s", "tpot_s", "prefill_bound", "decode_bound"):
            assert np.ravel(getattr(one, f))[0] == getattr(whole, f)[j], (f, j)


@pytest.mark.parametrize("model, hw, kw", [
    ("llama-3.1-8b", "h100-sxm", {}),
    ("deepseek-v3", "h200-sxm", {"tp": 8, "weights": "fp8"}),  # smooth maxima of several exponents, MoE
    ("gpt-oss-120b", "b200", {"weights": "mxfp4"}),
])
def test_breakdown_parts_do_not_depend_on_the_stacking(model, hw, kw):
    """A step over 64 points (GEMMs and memory ops stacked, sums over (ops, points) matrices) and over
    65 (op by op, sums in loops): the same totals, bounds and per-class parts, bit for bit."""
    sm = pm.StepModel(model, hw, **kw)
    n = np.arange(1.0, 66.0)
    shapes = [pm.core.ops.StepShape.make(n_decode=n[:k], context=1000.0 + 37.0 * n[:k], n_prefill=n[:k] % 2,
                                         chunk=300.0 * n[:k]) for k in (64, 65)]
    small, large = (sm.breakdown(s) for s in shapes)
    assert isinstance(small.ops[0][1], StackedRow) and small._stack() is not None
    assert not isinstance(large.ops[0][1], StackedRow) and large._stack() is None
    np.testing.assert_array_equal(small.total, large.total[:64])
    np.testing.assert_array_equal(small.bound(), large.bound()[:64])
    assert set(small.bound()) == {"compute", "memory"}  # both branches of the comparison are exercised
    for parts in ("op_total", "compute", "memory", "overhead"):
        for cls, v in getattr(small, parts).items():
            np.testing.assert_array_equal(v, getattr(large, parts)[cls][:64])


def test_one_rank_count_costs_collectives_as_arrays_of_counts():
    """The step model's messages (one rank count, plain numbers) and arrays of counts: the same times."""
    from perfmodel.core import comm

    size = np.array([0.0, 1e3, 2.5e5, 3e7, 1e9])
    for n in (1, 2, 3, 8, 12, 64, 72):
        for fn in (comm.all_reduce_time, comm.all_gather_time, comm.reduce_scatter_time, comm.all_to_all_time):
            one = fn(size, n, 450e9, 3e-6)
            np.testing.assert_array_equal(one, fn(size, np.full(size.shape, n), 450e9, 3e-6), err_msg=fn.__name__)
            assert one.shape == size.shape


def _wave_brute(m: float, n: float, eta_max: float, m_half: float, wave: float, slots: float) -> float:
    """The definition: M over the running maximum of u at M and at every row boundary below it."""
    n_tiles = math.ceil(n / TILE)
    m = max(m, 1.0)

    def u(x):
        return x / float(_wave_eta(np.float64(x), np.float64(n_tiles), eta_max, m_half, wave, slots))

    rows = math.ceil(m / TILE)
    return m / max([u(m)] + [u(TILE * r) for r in range(1, rows)])


def test_wave_monotone_eta_blocks_equal_the_definition():
    rng = np.random.default_rng(3)
    m = np.concatenate([rng.integers(1, 5000, 6000), [1, 127, 128, 129, 256, 257]]).astype(float)
    args = (0.82, 40.0, 0.6, 132.0)
    whole = wave_monotone_eta(m, 1024.0, *args)    # 6006 points: one boundary per pass
    few = np.concatenate([wave_monotone_eta(m[k:k + 3], 1024.0, *args) for k in range(0, m.size, 3)])
    np.testing.assert_array_equal(whole, few)
    brute = [_wave_brute(x, 1024.0, *args) for x in m[::50]]
    np.testing.assert_allclose(whole[::50], brute, rtol=1e-15)


def test_prefix_step_time_stacks_its_three_prefixes():
    """Negative prefixes (several prompts side by side) extrapolated from the same stacked call."""
    sm = pm.StepModel("llama-3.1-8b", "h100-sxm")
    p = np.array([4096.0, 8192.0, 2048.0])
    q = np.array([-1000.0, 500.0, 0.0])
    got = prefix_step_time(sm, 0.0, 0.0, p, q)
    t0, t1 = sm.step_time(0.0, 0.0, p, 0.0), sm.step_time(0.0, 0.0, p, p)
    tq = sm.step_time(0.0, 0.0, p, np.maximum(q, 0.0))
    want = np.where(q >= 0, tq, np.maximum(t0 + q * (t1 - t0) / np.maximum(p, 1.0), 0.0))
    np.testing.assert_array_equal(got, want)


class _RowsOnly:
    """A step model taking arrays of its own length only, as the validation's per-row tables do."""

    def __init__(self, step_model, rows: int) -> None:
        self.step_model, self.rows = step_model, rows

    def step_time(self, n, c, p, q=0.0):
        args = [np.asarray(x, dtype=float) for x in (n, c, p, q)]
        assert all(a.shape in ((), (self.rows,)) for a in args), [a.shape for a in args]
        return self.step_model.step_time(*args)


def test_step_models_without_stacking_get_their_own_shapes():
    sm = pm.StepModel("llama-3.1-8b", "h100-sxm")
    rows = _RowsOnly(sm, 3)
    p, q = np.array([4096.0, 8192.0, 2048.0]), np.array([-1000.0, 500.0, 0.0])
    np.testing.assert_array_equal(prefix_step_time(rows, 0.0, 0.0, p, q), prefix_step_time(sm, 0.0, 0.0, p, q))
    eng = Engine.load("vllm").profile
    isl, m = np.array([20000.0, 3000.0, 9000.0]), np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(prefill_batch_time(rows, eng, isl, m), prefill_batch_time(sm, eng, isl, m))


def test_shipped_engines_are_built_once_and_files_are_read_again(tmp_path):
    assert Engine.load("vllm") is Engine.load("vllm")
    assert Engine.load("vllm-preset") is not Engine.load("vllm")
    assert Engine.load("vllm", max_num_batched_tokens=2048).profile.max_num_batched_tokens == 2048
    text = resources.files("perfmodel").joinpath("data/engines/vllm.yaml").read_text()
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    first = Engine.load(str(path))
    path.write_text(text.replace("max_num_batched_tokens: 8192", "max_num_batched_tokens: 4096"))
    assert first.profile.max_num_batched_tokens == 8192
    assert Engine.load(str(path)).profile.max_num_batched_tokens == 4096


def test_the_small_m_variant_is_built_once_per_step_model():
    sm = pm.StepModel("llama-3.1-70b", "b200", tp=2, weights="nvfp4")
    variant = _small_m_model(sm)
    assert variant is _small_m_model(sm) and variant.efficiency.op("gemm.fp4")["m_half"] == 0.0
    assert _small_m_model(pm.StepModel("llama-3.1-70b", "b200", tp=2, weights="nvfp4")) is not variant
    assert _small_m_model(pm.StepModel("llama-3.1-8b", "h100-sxm")) is None
