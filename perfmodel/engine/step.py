r"""The engine-aware step time: a step model's device time with an engine's fitted step terms.

Every serving path — :func:`perfmodel.predict` with ``engine=``, the simulator, the steady state,
``max_load``, ``plan``, ``estimate`` and ``validate`` — times a forward step through
:func:`engine_step_time`, the one place where the fitted step terms (:mod:`perfmodel.engine.calibration`)
enter:

.. math:: T = T_{dev} + (g - 1)\,T_{k} + s\,\Delta_{s} + t_{layer}\,L\,[\text{work}]

with :math:`T_{dev}` the step model's device time [s], :math:`T_k` its per-kernel fixed times [s]
(the ``overhead`` parts of :class:`perfmodel.core.breakdown.StepBreakdown`, measured one kernel at a time),
:math:`g` = ``decode_kernel_scale`` for decode-only steps (replayed as CUDA graphs by the engines) and
``prefill_kernel_scale`` for steps that carry prompt tokens (launched eagerly), :math:`s` =
``small_m_tactic`` and :math:`\Delta_s` the step time of the profile's small-M variant minus
:math:`T_{dev}` (:func:`perfmodel.core.efficiency.small_m_variant`; 0 without one), and a per-layer
overhead :math:`t_{layer}` [s] over the model's L layers in steps that do any work (held at 0 by the
shipped fit). Host overheads per step and per sequence stay with the scheduler profile
(:class:`perfmodel.serving.EngineProfile`), which the simulator and the steady state add.

:class:`EngineStep` applies it to a step model call by call; the validation harness applies the same
function to tabulated parts (:meth:`perfmodel.validation.surrogate.RowTables.adjusted`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.ops import StepShape
from .calibration import EngineCalibration


def engine_step_time(device, kernels, small_m_delta, decode_only, terms: EngineCalibration, layers=0.0,
                     works=True) -> np.ndarray:
    """Step time with the engine's fitted step terms [s] (see the module docstring).

    Parameters
    ----------
    device : array_like
        Step model device time :math:`T_{dev}` [s].
    kernels : array_like
        Its per-kernel fixed part :math:`T_k` [s].
    small_m_delta : array_like
        Small-M variant minus :math:`T_{dev}` [s] (0 where the profile has no variant).
    decode_only : array_like of bool
        Steps without prompt tokens (they take ``decode_kernel_scale``).
    terms : EngineCalibration
        The engine's fitted terms.
    layers : float
        Layers of the model (for ``layer_overhead``).
    works : array_like of bool
        Steps that do any work (the per-layer overhead applies to them only).
    """
    g = np.where(decode_only, terms.decode_kernel_scale, terms.prefill_kernel_scale)
    t = np.asarray(device, float) + (g - 1.0) * np.asarray(kernels, float)
    if terms.small_m_tactic:
        t = t + terms.small_m_tactic * np.asarray(small_m_delta, float)
    if terms.layer_overhead:
        t = t + np.where(works, terms.layer_overhead * layers, 0.0)
    return t


def tokens_per_step(step_model) -> Any:
    """Mean tokens a decode step of ``step_model`` emits per sequence, E [token/step] (float or per-row
    array): the model's ``tokens_per_step`` (an :class:`EngineStep` with speculative decoding, tabulated
    rows), else 1. A decode step lasts E · TPOT, so delays counted in steps are E TPOTs long."""
    return getattr(step_model, "tokens_per_step", 1.0)


def device_parts(step_model, n, c, p, q) -> tuple[np.ndarray, np.ndarray]:
    """Device time of a step and its per-kernel fixed part [s], arrays shaped like the inputs.

    Models without a :meth:`breakdown` (closed-form stand-ins) report no per-kernel part.
    """
    n, c, p, q = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (n, c, p, q)))
    if hasattr(step_model, "breakdown"):
        shape = StepShape.make(n, c, (p > 0).astype(float), p, q)
        sums = step_model.plan_totals(shape) if hasattr(step_model, "plan_totals") else None
        if sums is not None:  # the same sums from the step model's compiled plan (a few points)
            total = np.broadcast_to(sums.total, n.shape)
            return np.array(total), np.array(np.broadcast_to(sums.overhead, n.shape)) + 0.0 * total
        parts = step_model.breakdown(shape)
        total = np.broadcast_to(np.asarray(parts.total, dtype=float), n.shape)
        kernels = sum(np.broadcast_to(np.asarray(v, dtype=float), n.shape) for v in parts.overhead.values())
        return np.array(total), np.array(kernels) + 0.0 * total
    total = np.asarray(step_model.step_time(n, c, p, q), dtype=float).reshape(n.shape)
    return total, np.zeros_like(total)


class EngineStep:
    """A step model as a serving engine runs it (see the module docstring).

    It is itself a step model (:class:`perfmodel.serving.StepModelLike`); attributes it does not define
    (``model``, ``parallel``, ``hardware``, ``precision``...) are those of the wrapped device model.

    Parameters
    ----------
    device_model : StepModelLike
        The bare kernel model (usually a :class:`perfmodel.core.step.StepModel`).
    terms : EngineCalibration
        The engine's fitted step terms.
    small_m_model : StepModelLike, optional
        The device model's small-M variant (None: no variant, :math:`\\Delta_s = 0`).
    """

    #: Marks a model that already carries engine step terms (they are never applied twice).
    engine_terms: EngineCalibration
    #: How the engine split a device's memory (:class:`perfmodel.engine.kv_memory.EngineMemory`), when
    #: its rule set ``kv_capacity_tokens``; None: the device model's capacity.
    engine_memory: Any = None

    def __init__(self, device_model: Any, terms: EngineCalibration, small_m_model: Any = None,
                 spec: Any = None) -> None:
        self.device_model = device_model
        self.engine_terms = terms
        self.small_m_model = small_m_model if terms.small_m_tactic else None
        self.spec = spec
        self.draft_model = None
        if spec is not None and spec.method != "ngram":
            from .speculative_draft import draft_step_model

            self.draft_model = draft_step_model(device_model, spec)
        self.devices = device_model.devices
        self.kv_bytes_per_token = device_model.kv_bytes_per_token
        self.kv_capacity_tokens = device_model.kv_capacity_tokens
        if self.draft_model is not None:  # the draft's weights and KV cache take KV room
            from .speculative_draft import kv_capacity_with_draft

            self.kv_capacity_tokens = kv_capacity_with_draft(device_model, spec, self.draft_model)
        model = getattr(device_model, "model", None)
        self.layers = float(getattr(model, "num_layers", 0) or 0)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("device_model", "engine_terms", "small_m_model", "spec",
                                              "draft_model", "engine_memory"):
            raise AttributeError(name)
        return getattr(self.device_model, name)

    def _engine_time(self, n, c, p, q) -> np.ndarray:
        device, kernels = device_parts(self.device_model, n, c, p, q)
        delta = 0.0
        if self.small_m_model is not None:
            delta = np.asarray(self.small_m_model.step_time(n, c, p, q), dtype=float) - device
        return engine_step_time(device, kernels, delta, p <= 0, self.engine_terms, self.layers,
                                (n > 0) | (p > 0))

    @property
    def tokens_per_step(self) -> float:
        """E, the mean tokens one decode step emits per sequence [token/step]: the speculative
        configuration's expected tokens, 1 without speculation."""
        return 1.0 if self.spec is None else float(self.spec.expected_tokens)

    def step_time(self, n_decode=0.0, mean_context=0.0, prefill_tokens=0.0, prefill_past=0.0) -> np.ndarray:
        r"""Engine-aware time of one forward step [s] (arguments as ``StepModel.step_time``).

        With speculative decoding, a step's decodes are charged per generated token: the engine's
        decode work :math:`T_{dec}(n, c)` becomes :math:`r\,T_{dec}` with
        :math:`r = (t_{verify} + t_{draft}) / (E\,T^{dev}_{dec})` from
        :func:`perfmodel.engine.speculative.speculative_step` (device times), so one simulated decode
        step stands for 1/E of a speculative step and TPOT = step time / E in every path.
        """
        n, c, p, q = np.broadcast_arrays(*(np.asarray(x, dtype=float)
                                           for x in (n_decode, mean_context, prefill_tokens, prefill_past)))
        t = self._engine_time(n, c, p, q)
        if self.spec is None or not np.any(n > 0):
            return t
        from .speculative import speculative_step

        zero = np.zeros_like(n)
        t_dec = np.where(p <= 0, t, self._engine_time(n, c, zero, zero) if np.any(p > 0) else t)
        n1 = np.maximum(n, 1.0)
        plain = np.asarray(self.device_model.step_time(n1, c, zero, zero), dtype=float)
        ratio = speculative_step(self.device_model, self.spec, n1, c, self.draft_model).tpot / plain
        return t + np.where(n > 0, (ratio - 1.0) * t_dec, 0.0)

    def __repr__(self) -> str:
        spec = f", spec_decode={self.spec.label()}" if self.spec is not None else ""
        return f"EngineStep({self.device_model!r}, {self.engine_terms.backend}{spec})"
