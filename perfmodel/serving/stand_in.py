"""Closed-form step models for tests, queueing checks and quick what-ifs.

They satisfy :class:`perfmodel.serving.protocol.StepModelLike` without the core cost model:

- :class:`ConstantStepModel`: every step takes the same time (a deterministic server: M/D/1 checks);
- :class:`LinearStepModel`: time affine in tokens and in attention work;
- :class:`RooflineStepModel`: a one-line roofline of a dense transformer, ``max(F/P, D/B) + t0``,
  with a preset for Llama-3.1-8B in BF16 on one H100-SXM. It is a *stand-in*, not the project's cost
  model (:mod:`perfmodel.core.step`): no per-op breakdown, no efficiency curves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


def _shape(*xs: ArrayLike) -> np.ndarray:
    return np.broadcast_arrays(*[np.asarray(x, dtype=float) for x in xs])[0]


@dataclass(frozen=True)
class ConstantStepModel:
    """Every step takes ``seconds`` [s], whatever it contains."""

    seconds: float = 0.01
    kv_capacity_tokens: int = 10**9
    kv_bytes_per_token: float = 1.0
    devices: int = 1

    def step_time(self, n_decode: ArrayLike, mean_context: ArrayLike, prefill_tokens: ArrayLike,
                  prefill_past: ArrayLike = 0) -> np.ndarray:
        return np.full_like(_shape(n_decode, mean_context, prefill_tokens, prefill_past), self.seconds)


@dataclass(frozen=True)
class LinearStepModel:
    """Step time affine in the work of the step.

    .. math:: t = t_0 + a\\,(n + p) + b\\,\\left(n\\,c + p\\,(q + p/2)\\right)

    with n decodes of mean context c and a prefill chunk of p tokens after q cached ones.

    Attributes
    ----------
    base : float
        t0, fixed time of a step [s].
    per_token : float
        a, time per token processed [s/token].
    per_attention : float
        b, time per (query token, cached token) attention pair [s].
    """

    base: float = 0.005
    per_token: float = 2e-5
    per_attention: float = 0.0
    kv_capacity_tokens: int = 10**9
    kv_bytes_per_token: float = 131072.0
    devices: int = 1

    def step_time(self, n_decode: ArrayLike, mean_context: ArrayLike, prefill_tokens: ArrayLike,
                  prefill_past: ArrayLike = 0) -> np.ndarray:
        n, c, p, q = (np.asarray(x, dtype=float) for x in (n_decode, mean_context, prefill_tokens,
                                                           prefill_past))
        return self.base + self.per_token * (n + p) + self.per_attention * (n * c + p * (q + p / 2))


@dataclass(frozen=True)
class RooflineStepModel:
    """Roofline of one step of a dense decoder-only transformer on one replica.

    .. math::
        F &= 2 N_p (n + p) + 4 L d \\left(n c + p (q + p/2)\\right) \\\\
        D &= W + \\beta \\left(n c + q + p\\right) \\\\
        t &= \\max\\left(\\frac{F}{P \\eta_c}, \\frac{D}{B \\eta_m}\\right) + t_0

    F [FLOP]: weight GEMMs (2 FLOP per parameter per token) and attention (QK and PV, 2 FLOP each per
    pair per hidden unit); D [B]: weights read once per step plus the KV cache read (decodes, cached
    prefix) and written (new tokens); β = KV bytes per token.

    Attributes
    ----------
    params : float
        Parameters N_p [-]. weight_bytes : float, W [B]. layers, d_model : int.
    kv_bytes_per_token : float
        β [B/token]. peak_flops [FLOP/s], bandwidth [B/s], eta_compute, eta_memory [-].
    memory_bytes : float
        Device memory per replica [B]; ``kv_capacity_tokens = (mem_fraction · memory − W) / β``.
    overhead : float
        t0, fixed device time per step (kernel launches) [s].
    """

    params: float = 8.03e9
    weight_bytes: float = 16.06e9
    layers: int = 32
    d_model: int = 4096
    kv_bytes_per_token: float = 131072.0
    peak_flops: float = 989e12
    bandwidth: float = 3.35e12
    eta_compute: float = 0.7
    eta_memory: float = 0.85
    memory_bytes: float = 80e9
    mem_fraction: float = 0.9
    overhead: float = 2e-4
    devices: int = 1

    @classmethod
    def llama_8b_h100(cls) -> RooflineStepModel:
        """Llama-3.1-8B, BF16 weights and KV cache, one H100-SXM (80 GB, 989 TFLOP/s, 3.35 TB/s)."""
        return cls()

    @property
    def kv_capacity_tokens(self) -> int:
        free = self.mem_fraction * self.memory_bytes - self.weight_bytes
        return int(max(free, 0.0) // self.kv_bytes_per_token)

    def step_time(self, n_decode: ArrayLike, mean_context: ArrayLike, prefill_tokens: ArrayLike,
                  prefill_past: ArrayLike = 0) -> np.ndarray:
        n, c, p, q = (np.asarray(x, dtype=float) for x in (n_decode, mean_context, prefill_tokens,
                                                           prefill_past))
        flops = 2.0 * self.params * (n + p) + 4.0 * self.layers * self.d_model * (n * c + p * (q + p / 2))
        data = self.weight_bytes + self.kv_bytes_per_token * (n * c + q + p)
        t = np.maximum(flops / (self.peak_flops * self.eta_compute), data / (self.bandwidth * self.eta_memory))
        return t + self.overhead
