"""Speculative decoding: the method, its acceptance, and the time and tokens of one decode step.

A speculative step drafts ``k`` tokens per sequence (``k`` sequential draft forwards at the current
batch ``n``), verifies the ``k + 1`` tokens of every sequence in one forward of the target model
(:mod:`perfmodel.engine.speculative_draft`) and keeps the accepted prefix plus the target's own next
token. A step emits E tokens on average (:func:`expected_tokens`, from the per-position acceptance
rates in :mod:`perfmodel.engine.speculative_acceptance`), so the time per output token is
:math:`TPOT = t_{step} / E`.

Methods: ``mtp`` (the model's own multi-token-prediction layers, applied recursively for k above
their number), ``eagle`` (a one-layer draft head of the target's width), ``draft`` (a separate draft
model) and ``ngram`` (prompt / suffix lookup, no draft forward). Acceptance is a workload parameter:
given by the user or taken from the sourced table ``perfmodel/data/speculative/acceptance.csv``
(:func:`acceptance_profiles`); :attr:`SpecDecode.acceptance_source` says which.

One spelling on every command line (:func:`parse_spec_decode`)::

    off | mtp:k=3 | eagle:k=4,accept=0.7 | draft:llama-3.2-1b,k=4,accept=0.75 | ngram:k=5,accept=0.3
    (per-position rates: accept=0.9/0.7/0.5)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, unknown_name
from .speculative_acceptance import (
    METHODS,
    AcceptanceProfile,
    Method,
    acceptance_profiles,
    default_profile,
    expected_tokens,
    rates_from_lengths,
    uniform_expected_tokens,
    uniform_rate_for_length,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..core.step import StepModel

__all__ = ["METHODS", "Method", "AcceptanceProfile", "SpecDecode", "SpecStep", "acceptance_profiles",
           "as_spec_decode", "default_profile", "expected_tokens", "parse_spec_decode", "rates_from_lengths",
           "speculative_speedup", "speculative_step", "speculative_tpot", "uniform_expected_tokens",
           "uniform_rate_for_length"]
_KEYS = ("k", "accept", "model")


@dataclass(frozen=True)
class SpecDecode:
    """A speculative-decoding configuration (frozen; validated on construction).

    Parameters
    ----------
    method : {"mtp", "eagle", "draft", "ngram"}
        Draft source (see module docstring).
    k : int
        Draft tokens per step, >= 1.
    acceptance : float or sequence of float, optional
        One rate for every position or k per-position rates :math:`a_1..a_k`, each in [0, 1].
        Omitted: the method's sourced default (:func:`default_profile`); ``draft`` has none and needs it.
    draft_model : str, optional
        Draft model id, for (and only for) ``method="draft"``.
    acceptance_source : str, optional
        Where the rates come from; set automatically ("user" or the table row).

    After construction ``acceptance`` always holds k per-position rates.

    Raises
    ------
    ConfigError
        Unknown method, k < 1, rates outside [0, 1] or of the wrong count, a missing or misplaced
        draft model, or no acceptance for ``draft``.
    """

    method: Method
    k: int
    acceptance: tuple[float, ...] | float | None = None
    draft_model: str | None = None
    acceptance_source: str | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise unknown_name("speculative decoding method", str(self.method), METHODS)
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise ConfigError(f"spec_decode k: draft tokens per step must be an integer >= 1, got {self.k!r}")
        if (self.method == "draft") != (self.draft_model is not None):
            raise ConfigError("spec_decode draft_model: required for method 'draft' "
                              "(e.g. draft:llama-3.2-1b,k=4)" if self.method == "draft" else
                              f"spec_decode draft_model: only method 'draft' takes a draft model, got "
                              f"{self.draft_model!r} with method {self.method!r}")
        rates, source = self._resolve()
        object.__setattr__(self, "acceptance", rates)
        object.__setattr__(self, "acceptance_source", source)

    def _resolve(self) -> tuple[tuple[float, ...], str]:
        acc = self.acceptance
        if acc is None:
            profile = default_profile(self.method)
            if profile is None:
                raise ConfigError(f"spec_decode accept: no sourced default acceptance for method "
                                  f"{self.method!r} (it depends on the draft/target pair); give one, e.g. "
                                  f"{self.method}:{self.draft_model},k={self.k},accept=0.7")
            return profile.rates(self.k), profile.label(self.k)
        values = (acc,) if np.isscalar(acc) else tuple(acc)
        try:
            rates = tuple(float(v) for v in values)
        except (TypeError, ValueError):
            raise ConfigError(f"spec_decode accept: expected numbers in [0, 1], got {acc!r}") from None
        if len(rates) not in (1, self.k):
            raise ConfigError(f"spec_decode accept: give one rate or k={self.k} per-position rates, "
                              f"got {len(rates)}: {rates}")
        bad = [r for r in rates if not (math.isfinite(r) and 0.0 <= r <= 1.0)]
        if bad:
            raise ConfigError(f"spec_decode accept: rates must be within [0, 1], got {bad}")
        return (rates * self.k if len(rates) == 1 else rates), self.acceptance_source or "user"

    @property
    def expected_tokens(self) -> float:
        """E, the expected tokens per step [token] (:func:`expected_tokens`)."""
        return expected_tokens(self.acceptance)

    def label(self) -> str:
        """The CLI spelling of this configuration, rates included."""
        rates = "/".join(f"{a:.3g}" for a in self.acceptance)
        head = f"draft:{self.draft_model}," if self.method == "draft" else f"{self.method}:"
        return f"{head}k={self.k},accept={rates}"


def parse_spec_decode(text: str | None) -> SpecDecode | None:
    """Read the command-line spelling ``METHOD[:ITEM,...]``; ``off`` (or empty) gives None.

    Items are ``k=INT``, ``accept=RATE`` or ``accept=R1/R2/...`` (per position), and for ``draft`` the
    draft model id, bare as the first item or as ``model=ID``: ``draft:llama-3.2-1b,k=4,accept=0.7``.

    Raises
    ------
    UnknownNameError
        Unknown method (the closest ones are suggested).
    ConfigError
        A malformed or unknown item, a repeated key, a missing ``k``, or invalid values (the message
        names the part).
    """
    if text is None or not str(text).strip() or str(text).strip().lower() in ("off", "none"):
        return None
    raw = str(text).strip()
    method, _, rest = raw.partition(":")
    method = method.strip().lower()
    if method not in METHODS:
        raise unknown_name("speculative decoding method", method, (*METHODS, "off"))
    items: dict[str, str] = {}
    for pos, item in enumerate(p.strip() for p in rest.split(",") if rest.strip()):
        key, eq, value = item.partition("=")
        if not eq:
            if method == "draft" and pos == 0 and item:
                key, value = "model", item
            else:
                raise ConfigError(f"spec_decode {raw!r}: item {item!r} is not KEY=VALUE; allowed keys: "
                                  f"{', '.join(_KEYS)} (draft also takes the model id as its first item)")
        key = key.strip().lower()
        if key not in _KEYS:
            raise ConfigError(f"spec_decode {raw!r}: unknown key {key!r}; allowed: {', '.join(_KEYS)}")
        if key in items:
            raise ConfigError(f"spec_decode {raw!r}: {key!r} given twice")
        items[key] = value.strip()
    if "k" not in items:
        raise ConfigError(f"spec_decode {raw!r}: missing k (draft tokens per step), e.g. {method}:k=3")
    try:
        k = int(items["k"])
    except ValueError:
        raise ConfigError(f"spec_decode {raw!r}: k must be an integer >= 1, got {items['k']!r}") from None
    acceptance = None
    if "accept" in items:
        try:
            acceptance = tuple(float(x) for x in items["accept"].split("/"))
        except ValueError:
            raise ConfigError(f"spec_decode {raw!r}: accept must be a rate in [0, 1] or rates joined by '/', "
                              f"got {items['accept']!r}") from None
    return SpecDecode(method, k, acceptance, items.get("model"))  # type: ignore[arg-type]


_FIELDS = {"method": "method", "k": "k", "accept": "acceptance", "acceptance": "acceptance",
           "draft_model": "draft_model", "model": "draft_model", "acceptance_source": "acceptance_source"}


def as_spec_decode(value) -> SpecDecode | None:
    """Speculative decoding from a YAML / API value: None, ``"off"`` (or false: YAML reads a bare ``off``
    as false), the CLI spelling, a mapping
    (``{method: eagle, k: 4, accept: 0.7}``; ``draft_model`` or ``model`` for the draft id) or a
    :class:`SpecDecode` (returned as is).

    Raises
    ------
    ConfigError
        A mapping with unknown keys or without ``method`` / ``k``, or another type.
    """
    if value is None or isinstance(value, SpecDecode):
        return value
    if value is False:  # YAML 1.1 reads a bare `off` (or `no`, `false`) as false
        return None
    if value is True:
        raise ConfigError("spec_decode: true names no method; give one, e.g. 'mtp:k=3' or {method: eagle, k: 4}, "
                          "or 'off'")
    if isinstance(value, str):
        return parse_spec_decode(value)
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(_FIELDS))
        if unknown:
            raise ConfigError(f"spec_decode: unknown field(s) {unknown}; allowed: {', '.join(_FIELDS)}")
        missing = [f for f in ("method", "k") if f not in value]
        if missing:
            raise ConfigError(f"spec_decode: missing {', '.join(missing)} in {value!r}")
        kwargs = {_FIELDS[key]: v for key, v in value.items()}
        if len(kwargs) < len(value):
            raise ConfigError(f"spec_decode: one field given under two names in {value!r}")
        if str(kwargs["method"]).lower() == "off":
            return None
        return SpecDecode(**kwargs)
    raise ConfigError(f"spec_decode: expected 'off', a spelling like 'mtp:k=3', a mapping or a SpecDecode, "
                      f"got {type(value).__name__} {value!r}")


@dataclass(frozen=True)
class SpecStep:
    """Time and tokens of one speculative decode step (arrays over the operating points).

    ``verify_time`` is the target forward over k + 1 tokens per sequence, ``draft_time`` the k draft
    forwards [s]; ``expected_tokens`` is E [token/step].
    """

    spec: SpecDecode
    verify_time: np.ndarray
    draft_time: np.ndarray
    expected_tokens: float

    @property
    def step_time(self) -> np.ndarray:
        """:math:`t_{step} = t_{verify} + t_{draft}` [s]."""
        return self.verify_time + self.draft_time

    @property
    def tpot(self) -> np.ndarray:
        """Time per output token, :math:`t_{step} / E` [s/token]."""
        return self.step_time / self.expected_tokens


def speculative_step(target: StepModel, spec: SpecDecode, n, context, draft: StepModel | None = None,
                     ngram_time: float | None = None) -> SpecStep:
    """One speculative decode step of ``n`` sequences at ``context`` tokens (numpy broadcasting).

    Parameters
    ----------
    target : StepModel
        The served model on its hardware, layout and efficiency profile.
    spec : SpecDecode
        Method, k and acceptance.
    n : array_like
        Decoding sequences in the step.
    context : array_like
        Tokens attended by each sequence's first verified token, itself included (the decode convention
        of :meth:`StepModel.step_time`).
    draft : StepModel, optional
        The draft's cost model; built by :func:`~perfmodel.engine.speculative_draft.draft_step_model`
        when omitted (build it once and pass it in loops). Unused for ``ngram``.
    ngram_time : float, optional
        Time of one n-gram lookup step [s]; default
        :data:`~perfmodel.engine.speculative_draft.NGRAM_LOOKUP_TIME` (an assumption, see there).

    Returns
    -------
    SpecStep
        Verification and draft times [s] over the broadcast shape of ``n`` and ``context``, E, and
        ``step_time`` / ``tpot`` derived from them.

    Raises
    ------
    ConfigError
        ``mtp`` on a model without MTP layers, ``pp > 1`` or a host-resident KV cache.
    """
    from .speculative_draft import draft_step_model, draft_time, verify_time

    if draft is None and spec.method != "ngram":
        draft = draft_step_model(target, spec)
    return SpecStep(spec, verify_time(target, spec.k, n, context),
                    draft_time(spec, draft, n, context, ngram_time), spec.expected_tokens)


def speculative_tpot(target: StepModel, spec: SpecDecode, n, context, draft: StepModel | None = None):
    """Time per output token with speculation, :math:`t_{step}/E` [s] (see :func:`speculative_step`)."""
    return speculative_step(target, spec, n, context, draft).tpot


def speculative_speedup(target: StepModel, spec: SpecDecode, n, context, draft: StepModel | None = None):
    """TPOT without speculation over TPOT with it, at the same batch and context (> 1: it pays)."""
    return target.step_time(n, context) / speculative_tpot(target, spec, n, context, draft)


def speculative_static_tpot(target: StepModel, spec: SpecDecode, n, isl, osl,
                            draft: StepModel | None = None) -> np.ndarray:
    """Mean TPOT of a static batch with speculation, the bare kernel model [s/token].

    :math:`t_{step}(n, c)/E` averaged over the contexts :math:`c` = isl + 1 … isl + osl − 1 by
    Simpson's rule on the three nodes (as the plain static-batch TPOT of :func:`perfmodel.predict`).
    """
    i, o = np.asarray(isl, dtype=float), np.asarray(osl, dtype=float)
    lo = i + 1.0
    hi = np.maximum(i + o - 1.0, lo)
    t = speculative_step(target, spec, n, np.stack([lo, 0.5 * (lo + hi), hi]), draft).tpot
    return (t[0] + 4.0 * t[1] + t[2]) / 6.0


def with_workload_acceptance(engine: Any, acceptance: float | Sequence[float] | None) -> Any:
    """The engine with a workload's speculative-decoding acceptance, where it applies.

    Acceptance is a property of the text served (:attr:`perfmodel.serving.Workload.spec_acceptance`).
    It replaces the method's sourced default when the engine speculates and its spec carries no rate of
    its own; a rate given with the spec (``accept=``, ``acceptance_source == "user"``) is kept, and an
    engine that does not speculate is returned unchanged.

    Parameters
    ----------
    engine : perfmodel.engine.Engine
        Loaded engine.
    acceptance : float | sequence of float | None
        One rate or one per draft position; None leaves the engine as it is.

    Returns
    -------
    perfmodel.engine.Engine
    """
    spec = getattr(engine, "spec", None)
    if acceptance is None or spec is None or spec.acceptance_source == "user":
        return engine
    rates = [float(acceptance)] if np.isscalar(acceptance) else [float(a) for a in acceptance]
    if len(rates) not in (1, spec.k):
        raise ConfigError(f"spec_acceptance: {len(rates)} per-position rates for a spec with k = {spec.k} "
                          f"draft tokens; give one rate or {spec.k}")
    return replace(engine, spec=replace(spec, acceptance=rates[0] if len(rates) == 1 else tuple(rates),
                                        acceptance_source="workload"))
