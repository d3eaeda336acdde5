"""Hop counts of chip-to-chip networks and the collectives that follow them.

A link may declare a topology (``fully-connected``, ``dragonfly``, ``torus-2d``, ``torus-3d``,
``mesh-2d``, ``mesh-3d``) and a per-hop latency :math:`\\alpha_h` (the link's ``hop_alpha``, else
its ``alpha``). A collective over n ranks then costs its dependent steps times the hops each step
crosses, plus its volume over the per-device injection bandwidth B (per direction, all ports):

==================  =====================================  ======================  =============
topology            ranks laid out as                      diameter D              mean hops h̄
==================  =====================================  ======================  =============
fully-connected     one group, a direct link per pair      1                       1
dragonfly (g)       groups of g fully connected, one        1 (n ≤ g), else 3       see below
                    global link between each pair of        (local, global, local)
                    groups
torus-kd            most compact k-D block of n ranks,     Σ ⌊d_i/2⌋                Σ t(d_i)·n/(n−1)
                    wrap-around in each dimension
mesh-kd             same block, no wrap-around             Σ (d_i − 1)              Σ m(d_i)·n/(n−1)
==================  =====================================  ======================  =============

with the mean ring distance :math:`t(d) = \\frac{1}{d}\\sum_{j=0}^{d-1}\\min(j, d-j)` and the mean
line distance :math:`m(d) = (d^2 - 1)/(3d)` (both over ordered pairs including a rank with itself,
hence the factor n/(n−1)). In a dragonfly of n > g ranks a pair in the same group (probability
(g−1)/(n−1)) is 1 hop apart, any other pair 3.

Collectives (S the payload per rank [B]):

- **all-reduce**: direct topologies (fully connected, dragonfly) run a two-shot reduce-scatter +
  all-gather, 2 dependent steps of D hops: :math:`2 D \\alpha_h + 2\\frac{n-1}{n} \\bar h S/B`
  (each byte crosses h̄ links on average, and the links a rank injects into carry it);
  tori and meshes run one ring per dimension (bucket algorithm), :math:`\\sum_i 2 (d_i - 1)` one-hop
  steps: :math:`2\\sum_i (d_i-1)\\,\\alpha_h + 2\\frac{n-1}{n} S/B`.
- **all-gather / reduce-scatter**: half the steps of the all-reduce, half its volume.
- **all-to-all**: one step of D hops; every byte travels h̄ hops on average:
  :math:`D\\alpha_h + \\frac{n-1}{n}\\bar h\\, S/B`.
- **point-to-point** between neighbours (a pipeline hand-off): :math:`\\alpha_h + S/B`.

``switched`` links (GPU scale-up domains) do not use this module: :mod:`perfmodel.core.comm` keeps
their algorithms unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ConfigError

KINDS = ("fully-connected", "dragonfly", "torus-2d", "torus-3d", "mesh-2d", "mesh-3d")


@dataclass(frozen=True)
class Topology:
    """A chip network: its kind, the group size of a dragonfly and the latency of one hop [s]."""

    kind: str
    hop_alpha: float
    group: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"topology: expected one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "dragonfly" and (self.group is None or self.group < 2):
            raise ConfigError(f"topology: a dragonfly needs group_size >= 2, got {self.group!r}")
        if not self.hop_alpha >= 0:
            raise ConfigError(f"hop_alpha: must be >= 0 s, got {self.hop_alpha}")

    @property
    def dims(self) -> int:
        """Dimensions of a torus or mesh (0 for direct networks)."""
        return int(self.kind[-2]) if self.kind[:4] in ("toru", "mesh") else 0


@lru_cache(maxsize=4096)
def block_shape(n: int, k: int) -> tuple[int, ...]:
    """Most compact k-D block of ``n`` ranks: the factorisation with the smallest largest side.

    Ties go to the smallest sum of sides; sides are returned in descending order.
    Example: 16 ranks in 2-D -> (4, 4); 12 -> (4, 3); 8 in 3-D -> (2, 2, 2); 7 in 2-D -> (7, 1).
    """
    if n < 1 or k < 1:
        raise ConfigError(f"block_shape: need n >= 1 and k >= 1, got n={n}, k={k}")
    if k == 1:
        return (n,)
    best: tuple[int, ...] | None = None
    for d in range(1, n + 1):
        if n % d:
            continue
        rest = block_shape(n // d, k - 1)
        cand = tuple(sorted((d, *rest), reverse=True))
        if best is None or (cand[0], sum(cand)) < (best[0], sum(best)):
            best = cand
    assert best is not None
    return best


def _ring_mean(d: int) -> float:
    return sum(min(j, d - j) for j in range(d)) / d


def _line_mean(d: int) -> float:
    return (d * d - 1) / (3.0 * d)


def diameter(topo: Topology, n: int) -> int:
    """Largest hop count between two of ``n`` ranks (0 for one rank)."""
    if n <= 1:
        return 0
    if topo.kind == "fully-connected":
        return 1
    if topo.kind == "dragonfly":
        return 1 if n <= topo.group else 3
    shape = block_shape(n, topo.dims)
    if topo.kind.startswith("torus"):
        return sum(d // 2 for d in shape)
    return sum(d - 1 for d in shape)


def mean_hops(topo: Topology, n: int) -> float:
    """Mean hop count between two distinct ranks of ``n`` (0 for one rank)."""
    if n <= 1:
        return 0.0
    if topo.kind == "fully-connected":
        return 1.0
    if topo.kind == "dragonfly":
        if n <= topo.group:
            return 1.0
        local = (topo.group - 1) / (n - 1)
        return local * 1.0 + (1.0 - local) * 3.0
    shape = block_shape(n, topo.dims)
    per_dim = _ring_mean if topo.kind.startswith("torus") else _line_mean
    return sum(per_dim(d) for d in shape) * n / (n - 1)


def ring_steps(topo: Topology, n: int) -> int:
    """One-hop steps of an all-reduce on a torus / mesh: :math:`\\sum_i 2(d_i - 1)`."""
    if n <= 1:
        return 0
    return sum(2 * (d - 1) for d in block_shape(n, topo.dims))


def _check(n: int) -> int:
    if int(n) != n or n < 1:
        raise ConfigError(f"ranks: must be a positive integer, got {n!r}")
    return int(n)


def all_reduce_time(size: ArrayLike, n: int, bandwidth: float, topo: Topology) -> np.ndarray:
    """All-reduce of ``size`` bytes per rank over ``n`` ranks of a topology [s] (module docstring)."""
    n = _check(n)
    s = np.asarray(size, dtype=float)
    if n == 1:
        return np.zeros_like(s)
    frac = 2.0 * (n - 1) / n
    if topo.dims:
        return ring_steps(topo, n) * topo.hop_alpha + frac * s / bandwidth
    return 2.0 * diameter(topo, n) * topo.hop_alpha + frac * mean_hops(topo, n) * s / bandwidth


def all_gather_time(size: ArrayLike, n: int, bandwidth: float, topo: Topology) -> np.ndarray:
    """All-gather (or reduce-scatter) producing ``size`` bytes per rank [s]: half an all-reduce."""
    return 0.5 * all_reduce_time(size, n, bandwidth, topo)


def all_to_all_time(size: ArrayLike, n: int, bandwidth: float, topo: Topology) -> np.ndarray:
    """All-to-all of ``size`` bytes per rank [s]: :math:`D\\alpha_h + \\frac{n-1}{n}\\bar h S/B`."""
    n = _check(n)
    s = np.asarray(size, dtype=float)
    if n == 1:
        return np.zeros_like(s)
    return diameter(topo, n) * topo.hop_alpha + (n - 1) / n * mean_hops(topo, n) * s / bandwidth


def p2p_time(size: ArrayLike, bandwidth: float, topo: Topology, hops: int = 1) -> np.ndarray:
    """A message over ``hops`` hops [s]: :math:`h\\,\\alpha_h + S/B` (cut-through, one serialisation)."""
    return hops * topo.hop_alpha + np.asarray(size, dtype=float) / bandwidth


def collective_time(kind: str, size: ArrayLike, n: int, bandwidth: float, topo: Topology) -> np.ndarray:
    """Dispatch by collective kind (``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all``,
    ``p2p``) [s]."""
    if kind == "all_reduce":
        return all_reduce_time(size, n, bandwidth, topo)
    if kind in ("all_gather", "reduce_scatter"):
        return all_gather_time(size, n, bandwidth, topo)
    if kind == "all_to_all":
        return all_to_all_time(size, n, bandwidth, topo)
    if kind == "p2p":
        return p2p_time(size, bandwidth, topo)
    raise ConfigError(f"collective: expected all_reduce, all_gather, reduce_scatter, all_to_all or p2p, "
                      f"got {kind!r}")

