"""Expert parallelism that does not divide the expert count: ceil(E/ep) experts on the busiest rank
(perfmodel/core/parallel.py), hand-computed on DeepSeek-R1 (256 experts, top-8, H 7168, I 2048, 3 matrices)."""

from __future__ import annotations

import pytest

import perfmodel as pm
from perfmodel.core.memory import ffn_weight_elems
from perfmodel.core.ops import StepShape, moe_work
from perfmodel.core.parallel import Parallel
from perfmodel.modelspec import load_model

R1 = load_model("deepseek-r1")
MOE = R1.layer_groups[1]


def test_dividing_ep_is_unchanged():
    par = Parallel.build(R1, tp=1, dp_attention=8, ep=8)
    assert par.experts_ep(256) == 8.0            # exactly ep: 32 experts per rank
    assert ffn_weight_elems(R1, MOE, par) == 32 * 3 * 7168 * 2048 + 3 * 7168 * 2048 / 8 + 7168 * 256


@pytest.mark.parametrize(("ep", "busiest"), [(48, 6), (24, 11), (3, 86)])
def test_uneven_ep_charges_the_busiest_rank(ep, busiest):
    """48 ranks: 256 = 5 x 48 + 16, so 16 ranks hold 6 experts and the step waits for them."""
    par = Parallel.build(R1, tp=1, dp_attention=ep, ep=ep)
    assert par.moe_tp_eff == 1
    assert par.experts_ep(256) == pytest.approx(256 / busiest, rel=1e-15)
    assert ffn_weight_elems(R1, MOE, par) == pytest.approx(
        busiest * 3 * 7168 * 2048 + 3 * 7168 * 2048 / ep + 7168 * 256, rel=1e-12)
    # 100 tokens: 800 routed pairs, busiest / 256 of them on the busiest rank (uniform routing)
    work, e_hit = moe_work(R1, par, StepShape.make(n_decode=100, context=1000))
    assert float(work.routed) == pytest.approx(800 * busiest / 256, rel=1e-12)
    assert float(work.hit) == pytest.approx(float(e_hit) * busiest / 256, rel=1e-12)


def test_uneven_ep_step_model_builds():
    """The wide-EP decode layout of the measured SGLang GB200 rows (48 GPUs, attention DP) now builds."""
    sm = pm.StepModel("deepseek-r1", "gb200", tp=1, dp_attention=48, ep=48, weights="fp8_block", kv_cache="fp8")
    assert sm.kv_capacity_tokens > 0 and float(sm.step_time(n_decode=48 * 32, mean_context=1536)) > 0


def test_nonsense_layouts_are_still_refused():
    mixtral = load_model("mixtral-8x7b")   # 8 experts
    with pytest.raises(pm.ConfigError, match="ep=16 exceeds mixtral-8x7b's 8 experts"):
        Parallel.build(mixtral, tp=1, dp_attention=16, ep=16)
    with pytest.raises(pm.ConfigError, match=r"ep=3 must divide tp\*dp_attention=8"):
        Parallel.build(R1, tp=8, ep=3)
