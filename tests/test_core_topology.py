"""Hop counts and collectives on declared topologies (hand-computed), and GPU links unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.core import topology as tp
from perfmodel.core.ops import Message
from perfmodel.errors import ConfigError, SpecError
from perfmodel.hardware.schema import parse_spec

US = 1e-6


@pytest.mark.parametrize(("n", "k", "shape"), [(16, 2, (4, 4)), (12, 2, (4, 3)), (8, 3, (2, 2, 2)),
                                               (7, 2, (7, 1)), (64, 3, (4, 4, 4)), (1, 2, (1, 1))])
def test_block_shape(n, k, shape):
    assert tp.block_shape(n, k) == shape


def test_hop_counts_by_hand():
    fc = tp.Topology("fully-connected", 1 * US)
    assert tp.diameter(fc, 8) == 1 and tp.mean_hops(fc, 8) == 1.0
    df = tp.Topology("dragonfly", 1 * US, group=8)
    assert tp.diameter(df, 8) == 1 and tp.mean_hops(df, 8) == 1.0
    # 64 ranks in groups of 8: 7 of the 63 peers are local (1 hop), 56 are 3 hops away
    assert tp.diameter(df, 64) == 3
    assert math.isclose(tp.mean_hops(df, 64), (7 * 1 + 56 * 3) / 63)
    # 4x4 torus: ring distances 0,1,2,1 -> mean 1 per dimension; over distinct pairs 2 * 16/15
    t2 = tp.Topology("torus-2d", 1 * US)
    assert tp.diameter(t2, 16) == 4
    assert math.isclose(tp.mean_hops(t2, 16), 2 * 16 / 15)
    assert tp.ring_steps(t2, 16) == 12
    # 4x4 mesh: line distances over 16 ordered pairs sum to 20 -> 1.25 per dim; diameter 3+3
    m2 = tp.Topology("mesh-2d", 1 * US)
    assert tp.diameter(m2, 16) == 6
    assert math.isclose(tp.mean_hops(m2, 16), 2 * 1.25 * 16 / 15)
    # 2x2x2 torus: each dimension a ring of 2 (mean 0.5), diameter 3
    t3 = tp.Topology("torus-3d", 1 * US)
    assert tp.diameter(t3, 8) == 3 and math.isclose(tp.mean_hops(t3, 8), 1.5 * 8 / 7)
    assert tp.diameter(t3, 1) == 0 and tp.mean_hops(t3, 1) == 0.0


def test_collectives_by_hand():
    bw, s = 100e9, 1e6  # 100 GB/s per direction, 1 MB per rank
    df = tp.Topology("dragonfly", 0.5 * US, group=8)
    # 64 ranks: 2 steps of 3 hops at 0.5 us + 2*63/64 * h * S/B
    h = (7 + 56 * 3) / 63
    assert math.isclose(float(tp.all_reduce_time(s, 64, bw, df)), 3e-6 + 2 * 63 / 64 * h * 1e-5)
    assert math.isclose(float(tp.all_gather_time(s, 64, bw, df)), 0.5 * (3e-6 + 2 * 63 / 64 * h * 1e-5))
    assert math.isclose(float(tp.all_to_all_time(s, 64, bw, df)), 1.5e-6 + 63 / 64 * h * 1e-5)
    t2 = tp.Topology("torus-2d", 1 * US)
    # 4x4 torus: 12 one-hop steps, ring volume 2*15/16 S/B
    assert math.isclose(float(tp.all_reduce_time(s, 16, bw, t2)), 12e-6 + 2 * 15 / 16 * 1e-5)
    assert float(tp.all_reduce_time(s, 1, bw, t2)) == 0.0
    assert math.isclose(float(tp.p2p_time(s, bw, t2, hops=3)), 3e-6 + 1e-5)


def test_more_ranks_never_fewer_hops():
    for topo in (tp.Topology("dragonfly", US, group=8), tp.Topology("torus-3d", US),
                 tp.Topology("mesh-2d", US)):
        d = [tp.diameter(topo, n) for n in (1, 2, 4, 8, 16, 64, 256)]
        assert d == sorted(d)


def test_bad_topology():
    with pytest.raises(ConfigError, match="dragonfly needs group_size"):
        tp.Topology("dragonfly", US)
    with pytest.raises(ConfigError, match="expected one of"):
        tp.Topology("star", US)
    link = {"kind": "link", "id": "x", "name": "x", "bandwidth": "10 GB/s", "alpha": "1 us",
            "alpha_basis": "assumed", "topology": "dragonfly"}
    with pytest.raises(SpecError, match="group_size"):
        parse_spec(link)
    with pytest.raises(SpecError, match="group_size"):
        parse_spec({**link, "topology": "torus-2d", "group_size": 4})


def test_step_model_uses_the_link_topology():
    """A TP all-reduce over 8 LP30 (one fully connected group of the dragonfly) costs 2 hops of 1 us
    plus its volume; the same over 64 chips crosses 3 hops per step."""
    sm = pm.StepModel("llama-3.1-8b", "groq-lp30", tp=8, weights="fp8", efficiency="datasheet")
    bw = sm.link_bandwidth
    s = 1e6
    got = float(sm._message_time(Message("x", "all_reduce", s, 8)))
    assert math.isclose(got, 2 * 1e-6 + 2 * 7 / 8 * s / bw)
    got64 = float(sm._message_time(Message("x", "all_reduce", s, 64)))
    h = (7 + 56 * 3) / 63
    assert math.isclose(got64, 2 * 3e-6 + 2 * 63 / 64 * h * s / bw)


def test_gpu_scale_up_is_unchanged():
    """Switched NVLink keeps the flat algorithms of core.comm (no topology model)."""
    sm = pm.StepModel("llama-3.1-70b", "h100-sxm", tp=8, efficiency="datasheet")
    assert sm.network is None
    s = np.array([1e3, 1e8])
    want = pm.core.comm.all_reduce_time(s, 8, sm.link_bandwidth, sm.link_alpha)
    assert np.allclose(sm._message_time(Message("x", "all_reduce", s, 8)), want, rtol=0, atol=0)
