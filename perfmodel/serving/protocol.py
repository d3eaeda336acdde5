"""What the simulator needs from a cost model, and how it gets one.

Any object with these four members can drive the serving simulator (duck typing, checked at run time):

``step_time(n_decode, mean_context, prefill_tokens, prefill_past=0)``
    Device time [s] of one forward step of a replica that runs ``n_decode`` decoding sequences (mean KV
    context ``mean_context`` tokens) plus ``prefill_tokens`` new prompt tokens (a chunk whose prompt
    already has ``prefill_past`` tokens cached). Broadcasts over numpy arrays.
``kv_bytes_per_token``
    Bytes of KV cache per token per replica [B].
``kv_capacity_tokens``
    KV tokens that fit per replica after weights and reserve [tokens].
``devices``
    Accelerators per replica.

:class:`perfmodel.core.step.StepModel` is the first-principles implementation; the stand-ins in
:mod:`perfmodel.serving.stand_in` give closed-form step times for tests and what-ifs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ConfigError


@runtime_checkable
class StepModelLike(Protocol):
    """Structural type of a per-replica step-time model (see the module docstring)."""

    kv_bytes_per_token: float
    kv_capacity_tokens: int
    devices: int

    def step_time(self, n_decode: ArrayLike, mean_context: ArrayLike, prefill_tokens: ArrayLike,
                  prefill_past: ArrayLike = 0) -> Any:
        ...


_MEMBERS = ("step_time", "kv_bytes_per_token", "kv_capacity_tokens", "devices")


def resolve_step_model(spec: Any) -> StepModelLike:
    """Return a step model from an instance or from ``StepModel`` keyword arguments.

    Parameters
    ----------
    spec : StepModelLike | Mapping
        An object with the four members, or a mapping such as
        ``{"model": "llama-3.1-8b", "hardware": "h100-sxm", "tp": 1}`` passed to
        :class:`perfmodel.core.step.StepModel`.

    Raises
    ------
    ConfigError
        The object lacks a member.
    """
    if isinstance(spec, Mapping):
        from ..core.step import StepModel

        return StepModel(**dict(spec))
    missing = [m for m in _MEMBERS if not hasattr(spec, m)]
    if missing:
        raise ConfigError(f"step model: {type(spec).__name__} lacks {', '.join(missing)}; a step model "
                          f"needs {', '.join(_MEMBERS)} (see perfmodel.serving.protocol)")
    if not np.all(np.asarray(spec.kv_capacity_tokens, dtype=float) > 0):
        raise ConfigError(f"step model: kv_capacity_tokens must be > 0, got {spec.kv_capacity_tokens!r} "
                          f"(the weights may not fit)")
    return spec
