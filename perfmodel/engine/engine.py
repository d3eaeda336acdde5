"""One serving engine: scheduler knobs plus the terms fitted on measured runs, with their provenance.

An :class:`Engine` is what every serving path takes (``engine=``): its :attr:`Engine.profile` holds the
scheduler knobs (token budget, sequence limit, policy, chunking, KV admission; each with a source) and
its :attr:`Engine.terms` the fitted step- and request-level terms (:mod:`perfmodel.engine.calibration`):

- step terms enter every step time through :class:`perfmodel.engine.step.EngineStep`;
- request terms enter every TTFT through :meth:`Engine.ttft_added`: the request's time outside the
  engine's steps, ``request_overhead`` (front end, tokeniser, routing) plus ``first_token_steps``
  decode steps before the first token reaches the client, :math:`\\Delta_{TTFT} = t_{req} + k_1\\,\\mathrm{TPOT}`.

Names: ``vllm``, ``sglang``, ``trtllm`` (and ``vllm-2k``) are the shipped profiles *with* the fitted
terms of their backend; ``vllm-preset``, ``sglang-preset``, ``trtllm-preset`` are the same scheduler
knobs with the uncalibrated preset overheads and no fitted terms (only when asked for by name). A YAML
profile of the user gets the fitted terms of its ``backend`` field, none without one. Every result says
which it used (:meth:`Engine.describe`).
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError, UnknownNameError, unknown_name
from .calibration import EngineCalibration, load_profile
from .kv_memory import EngineMemory, engine_memory, pool_tokens_with_draft
from .profile import EngineProfile, list_engines, load_engine
from .step import EngineStep

#: Suffix of the uncalibrated variants of the shipped profiles.
PRESET_SUFFIX = "-preset"
#: The shipped engine calibration profile.
DEFAULT_CALIBRATION = "calibrated"


@dataclass(frozen=True)
class Engine:
    """A serving engine: scheduler profile, fitted terms and where they came from.

    Attributes
    ----------
    profile : EngineProfile
        Scheduler knobs and host overheads per step / per sequence [s].
    terms : EngineCalibration
        Fitted step and request terms (for an uncalibrated engine: the neutral values).
    calibrated : bool
        Whether :attr:`terms` were fitted on measurements.
    source : str
        Where the terms came from (profile file, fit date, data hash, cross-validated error), or why
        there are none.
    spec : SpecDecode, optional
        Speculative decoding (:mod:`perfmodel.engine.speculative`); None = off.
    """

    profile: EngineProfile
    terms: EngineCalibration
    calibrated: bool
    source: str
    spec: Any = None

    @property
    def name(self) -> str:
        """Profile name, with ``-preset`` for uncalibrated variants of the shipped profiles."""
        return self.profile.name if self.calibrated or self.profile.backend is None else \
            f"{self.profile.name}{PRESET_SUFFIX}"

    @property
    def label(self) -> str:
        """One line saying which engine and which terms a result used."""
        spec = f"; speculative decoding {self.spec.label()} ({self.spec.acceptance_source})" if self.spec else ""
        return f"{self.name} ({'fitted terms: ' if self.calibrated else ''}{self.source}{spec})"

    # -- loading -------------------------------------------------------------------------------
    @classmethod
    def load(cls, name: str | Path | EngineProfile | Engine | dict | None = "vllm",
             calibration: str = DEFAULT_CALIBRATION, spec_decode: Any = None, **overrides: Any) -> Engine:
        """An engine by name, YAML path, profile or mapping, with scheduler overrides and speculation.

        Parameters
        ----------
        name : str | Path | EngineProfile | Engine | dict | None
            ``vllm`` (default), ``sglang``, ``trtllm``, ``vllm-2k``, an uncalibrated ``<name>-preset``,
            a profile YAML path, a profile or its fields.
        calibration : str
            Engine calibration profile for the fitted terms: ``calibrated`` (shipped) or a YAML path
            written by ``perfmodel.calibration.engine_calibrate``.
        spec_decode : str | SpecDecode | mapping, optional
            Speculative decoding, e.g. ``"mtp:k=3"``, ``"eagle:k=4,accept=0.7"``, ``"off"``; None keeps
            the engine's (off for a name).
        **overrides
            Scheduler fields to change, e.g. ``max_num_batched_tokens=2048``.

        Raises
        ------
        UnknownNameError, SpecError, ConfigError
            Unknown name (closest ones suggested), invalid file or field.
        """
        if not overrides and _shipped_name(name) and _shipped_name(calibration):
            engine = _load_shipped(cls, name, calibration)  # files are not read again: shipped data
        else:
            engine = cls._load(name, calibration, **overrides)
        if spec_decode is None:
            return engine
        from .speculative import as_spec_decode

        return replace(engine, spec=as_spec_decode(spec_decode))

    @classmethod
    def _load(cls, name: Any, calibration: str, **overrides: Any) -> Engine:
        """:meth:`load` without speculative decoding."""
        if isinstance(name, Engine):
            return name if not overrides else replace(name, profile=name.profile.replace(**overrides))
        text = None if isinstance(name, (EngineProfile, dict)) or name is None else str(name)
        if text is not None and text.lower().endswith(PRESET_SUFFIX):
            base = text[: -len(PRESET_SUFFIX)]
            try:
                profile = load_engine(base, **overrides)
            except UnknownNameError:
                raise unknown_name("engine", text, engine_names()) from None
            backend = profile.backend
            if backend is None:
                raise ConfigError(f"engine: {text!r}: profile {base!r} has no backend, so it has no fitted "
                                  "terms to leave out; use its plain name")
            return cls(profile, replace(EngineCalibration.preset(backend), request_overhead=0.0), False,
                       "uncalibrated preset: host overheads assumed, no fitted terms")
        try:
            profile = load_engine(name, **overrides)
        except UnknownNameError:
            raise unknown_name("engine", text, engine_names()) from None
        if profile.backend is None:
            return cls(profile, EngineCalibration(profile.name, profile.step_overhead, profile.seq_overhead,
                                                  request_overhead=0.0), False,
                       "no fitted terms: the profile names no backend")
        fitted = load_profile(calibration)[profile.backend]
        if not fitted.fit:
            return cls(profile, fitted, False, f"calibration {calibration!r} has no fit for {profile.backend}")
        profile = profile.replace(step_overhead=fitted.step_overhead, seq_overhead=fitted.seq_overhead)
        return cls(profile, fitted, True, _provenance(calibration, fitted))

    # -- what the serving paths use ------------------------------------------------------------
    def step(self, step_model: Any) -> Any:
        """The engine-aware step model of ``step_model`` (unchanged if it already carries terms)."""
        if getattr(step_model, "engine_terms", None) is not None:
            return step_model
        served = EngineStep(step_model, self.terms,
                            _small_m_model(step_model) if self.terms.small_m_tactic else None, self.spec)
        mem = engine_memory(step_model, self.profile, self.spec is not None and self.spec.method != "ngram")
        if mem is not None:  # the engine's own pool, less what a draft model puts in it
            served.kv_capacity_tokens = int(pool_tokens_with_draft(mem, self.spec, served.draft_model,
                                                                   step_model.parallel.dp_attention))
            served.engine_memory = mem
        return served

    def memory(self, step_model: Any) -> EngineMemory | None:
        """How this engine splits the memory of one device of ``step_model`` (None: no memory rule or
        not a first-principles step model; :mod:`perfmodel.engine.kv_memory`)."""
        return engine_memory(getattr(step_model, "device_model", step_model), self.profile,
                             self.spec is not None and self.spec.method != "ngram")

    def ttft_added(self, tpot, tokens_per_step=None):
        """Time a client's TTFT adds to the engine's [s]: ``request_overhead + first_token_steps · E · TPOT``,
        E the tokens a decode step emits per sequence (default: this engine's speculative decoding's
        expected tokens, 1 without)."""
        if tokens_per_step is None:
            tokens_per_step = 1.0 if self.spec is None else float(self.spec.expected_tokens)
        return self.terms.ttft_added(tpot, tokens_per_step)

    @property
    def request_overhead(self) -> float:
        """Time a request spends outside the engine's steps before its prefill can start [s]."""
        return self.terms.request_overhead

    def describe(self) -> dict[str, Any]:
        """Everything a result should say about its engine (for JSON output and tables)."""
        return {**self.profile.model_dump(), "name": self.name, "calibrated": self.calibrated,
                "source": self.source, "terms": self.terms.values(), "defaults": self.profile.defaults_table(),
                "spec_decode": None if self.spec is None else {
                    "spec": self.spec.label(), "expected_tokens_per_step": self.spec.expected_tokens,
                    "acceptance_source": self.spec.acceptance_source}}


def engine_names() -> list[str]:
    """Names :meth:`Engine.load` accepts besides paths: the shipped profiles and their ``-preset`` forms."""
    names = list_engines()
    return names + [f"{n}{PRESET_SUFFIX}" for n in names]


def _shipped_name(name: Any) -> bool:
    """Whether ``name`` names shipped data (an id, not a path, whose file may change between calls)."""
    return isinstance(name, str) and not name.endswith((".yaml", ".yml")) and "/" not in name and "\\" not in name


@functools.lru_cache(maxsize=32)
def _load_shipped(cls: type, name: str, calibration: str) -> Engine:
    """:meth:`Engine._load` of a shipped engine id under a shipped calibration, built once (it is frozen)."""
    return cls._load(name, calibration)


#: Small-M variants by step model (weakly keyed: a variant lives as long as its step model).
_small_m_variants: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _small_m_model(step_model: Any) -> Any:
    """The step model's small-M variant (:func:`perfmodel.core.efficiency.small_m_variant`), or None.

    Built once per step model: a :class:`~perfmodel.core.step.StepModel` is not changed after
    construction, so its variant is too.
    """
    from ..core.efficiency import small_m_variant

    with_eff = getattr(step_model, "with_efficiency", None)
    if with_eff is None:
        return None
    try:
        return _small_m_variants[step_model]
    except (KeyError, TypeError):  # TypeError: not weakly referenceable (then it is not kept)
        pass
    eff = small_m_variant(step_model.efficiency, step_model.precision.matmul_format)
    variant = None if eff is None else with_eff(eff)
    try:
        _small_m_variants[step_model] = variant
    except TypeError:
        pass
    return variant


def _provenance(calibration: str, terms: EngineCalibration) -> str:
    path = calibration if str(calibration).endswith((".yaml", ".yml")) else \
        f"perfmodel/data/engines_fit/{calibration}.yaml"
    rows = (terms.fit or {}).get("rows")
    return f"{path}{f', fitted on {rows} measured runs' if rows else ''}; error in docs/validation.md"
