"""Memory fit of a model replica: devices, weight and KV bytes, recurrent state and KV capacity.

:class:`ReplicaMemory` is the part of :class:`~perfmodel.core.step.StepModel` that states what the
replica holds, from the per-device figures of :mod:`perfmodel.core.memory` for its ``model``,
``parallel`` layout, ``precision``, ``hardware`` memory and ``reserve``.
"""

from __future__ import annotations

import functools

from .memory import (
    kv_bytes_per_token_device,
    max_sequences,
    state_bytes_per_sequence_device,
    weights_per_device,
)


class ReplicaMemory:
    """Memory figures of a :class:`~perfmodel.core.step.StepModel` (a mixin)."""

    @property
    def devices(self) -> int:
        """Devices per replica."""
        return self.parallel.devices

    @functools.cached_property
    def weights_per_device(self) -> float:
        """Weight bytes on the most loaded device [B] (formed once: the step model does not change)."""
        return weights_per_device(self.model, self.parallel, self.precision)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token of context for the whole replica (all devices) [B]."""
        per_dev = float(kv_bytes_per_token_device(self.model, self.parallel, self.precision, 1.0,
                                                  state=False))
        return per_dev * self.parallel.group * self.parallel.pp / self.parallel.dp_attention

    @property
    def state_bytes_per_sequence(self) -> float:
        """Recurrent state one sequence holds on the replica (all devices) [B]; 0 without recurrent
        layers. Fixed per sequence, independent of its length, and not part of ``kv_bytes_per_token``
        or ``kv_capacity_tokens``: a caller admitting n sequences needs n times this as well."""
        per_dev = state_bytes_per_sequence_device(self.model, self.parallel)
        return per_dev * self.parallel.group * self.parallel.pp / self.parallel.dp_attention

    @property
    def kv_capacity_tokens(self) -> int:
        """KV tokens that fit per replica after weights, workspace and reserve (full-attention count;
        recurrent state excluded, see :attr:`state_bytes_per_sequence`)."""
        n = max_sequences(self.model, self.parallel, self.precision, self.hardware.memory_capacity, 1.0,
                          self.reserve, state=False)
        return int(n)
