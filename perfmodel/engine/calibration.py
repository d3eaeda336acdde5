"""Engine-level calibration parameters and the calibration profile file that stores them.

Global parameters per serving engine (backend), fitted on measured serving runs
(:mod:`perfmodel.calibration.engine_fit`) — not per model, accelerator or row; kernel efficiencies come from
the per-accelerator profiles (:mod:`perfmodel.core.efficiency`). Fitted (:data:`FITTED`):

``decode_kernel_scale`` [-]
    factor on the step model's per-kernel fixed times (its ``kernel_overhead`` terms, measured one
    kernel at a time) in decode-only steps, which the engines replay as CUDA graphs;
``prefill_kernel_scale`` [-]
    the same factor in steps that carry prompt tokens, which the engines launch eagerly from Python
    (per-kernel CPU launch cost); both also absorb kernels the op model does not list (activation
    quantisation, RoPE and KV-cache writes, MoE routing and token permutation);
``small_m_tactic`` [-]
    share, 0 to 1, of the small-M penalty of the isolated-kernel FP4 GEMM tables that the engine's
    own (autotuned) FP4 GEMMs avoid: the step time moves that share of the way to the profile's
    small-M variant (:func:`perfmodel.core.efficiency.small_m_variant`). It only acts where the
    profile has such a variant (NVFP4 on B200 / GB200);
``request_overhead`` [s]
    fixed time a request spends outside the engine's steps: HTTP front end, tokenisation, routing,
    returning the first token. It is part of the measured TTFT, and in a closed loop the request is
    not in the engine meanwhile, so it enters :func:`perfmodel.serving.steady_state` as client
    think time and is added to its TTFT;
``sync_fraction`` [-]
    how synchronised the closed loop's arrivals are, 0 (spread over the decode steps, the steady
    state) to 1 (every request arrives with its wave): weight of the wave prefill wait of
    :mod:`perfmodel.serving.waves` added to the TTFT;
``first_token_steps`` [-]
    decode steps, 0 to 3, between a prompt's last prefill step and its first token reaching the
    client, added to the TTFT as that many mean decode steps, k · E · TPOT (E the tokens a step emits
    per sequence: speculative decoding's expected tokens, 1 without): engines that overlap scheduling
    with the GPU (TensorRT-LLM's overlap scheduler, vLLM's async scheduling) return each step's
    tokens one step late, and streaming or detokenisation may batch a few more. Fitted values at the
    bound also stand for TTFT that grows with load faster than the closed form's queueing;
``prefill_dp_lockstep`` [-]
    share, 0 to 1, of a full step that a prefill-only step of an attention-DP prefill replica (P/D
    disaggregation) costs when it holds fewer prompts m than ranks S: the step takes
    t(m) + φ·(t(S) − t(m)) (:func:`perfmodel.serving.steady_disagg.lockstep_prefill_time`).
    0 is the step model's even split (the ranks share the work of m prompts); 1 is a step that lasts as
    long as one with a prompt on every rank (the ranks step together, each waiting for the slowest).
    Only P/D rows with ``prefill_attention_dp`` > 1 constrain it; the preset 0 leaves every other
    prediction as it was.

Held at :data:`FIXED` (still stored, and usable by hand): ``step_overhead`` [s] and
``seq_overhead`` [s/seq] — the engine profile's host time per step and per sequence — and
``layer_overhead`` [s/layer], an alternative per-layer form of the kernel term. Started at their preset
0, on the lower bound, the fit never moved them (the trust-region solver leaves a parameter that starts
on a bound; :data:`perfmodel.calibration.engine_fit.INTERIOR_START` now starts them inside). The data
do not want a per-sequence term: with ``seq_overhead`` held at a value and every fitted parameter
refitted on all rows (2026-12-02), the fit's loss rises from 0 for each engine — vLLM 53.2 (0), 53.6
(10 µs/seq), 55.7 (30 µs/seq); SGLang 74.9 (0), 78.5 (20 µs/seq); TensorRT-LLM 130.9 (0), 137.3
(20 µs/seq) — the kernel scales giving way (vLLM ``prefill_kernel_scale`` 2.85 → 2.00 at 10 µs/seq)
while the large-batch TPOT overshoots. So they are not fitted; see ``docs/validation.md``.

Profiles live in ``perfmodel/data/engines_fit/<name>.yaml`` (kept apart from
``perfmodel/data/calibration/``, whose every file is read as a per-accelerator efficiency profile)
with their provenance: data file and hash, date, efficiency profile used, fit and cross-validated
errors.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError, unknown_name
from ..fileio import read_yaml
from .profile import EngineProfile, load_engine

#: ``backend`` column -> shipped engine preset.
ENGINE_OF_BACKEND = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm"}

#: Parameters: name -> (lower bound, upper bound, typical scale) [s, except sync_fraction].
PARAMETERS: dict[str, tuple[float, float, float]] = {
    "step_overhead": (0.0, 0.05, 1e-3),
    "seq_overhead": (0.0, 2e-3, 1e-5),
    "layer_overhead": (0.0, 1e-3, 1e-5),
    "decode_kernel_scale": (0.0, 5.0, 0.1),
    "prefill_kernel_scale": (0.0, 20.0, 0.5),
    "small_m_tactic": (0.0, 1.0, 0.1),
    "request_overhead": (1e-3, 1.0, 1e-2),
    "sync_fraction": (0.0, 1.0, 0.1),
    "first_token_steps": (0.0, 3.0, 0.1),
    "prefill_dp_lockstep": (0.0, 1.0, 0.1),
}
#: Parameters without a unit.
DIMENSIONLESS = ("decode_kernel_scale", "prefill_kernel_scale", "small_m_tactic", "sync_fraction",
                 "prefill_dp_lockstep")
#: The parameters fitted.
FITTED: tuple[str, ...] = ("decode_kernel_scale", "prefill_kernel_scale", "small_m_tactic", "request_overhead",
                           "sync_fraction", "first_token_steps", "prefill_dp_lockstep")
#: Parameters held fixed in the fit (see module docstring); the rest start from the presets.
FIXED: dict[str, float] = {"step_overhead": 0.0, "seq_overhead": 0.0, "layer_overhead": 0.0}
#: Lower bound of ``request_overhead``: a request crosses at least an HTTP hop and the tokeniser.
MIN_REQUEST_OVERHEAD = PARAMETERS["request_overhead"][0]


@dataclass(frozen=True)
class EngineCalibration:
    """Fitted engine-level parameters of one backend (see module docstring) [s]."""

    backend: str
    step_overhead: float
    seq_overhead: float
    layer_overhead: float = 0.0
    decode_kernel_scale: float = 1.0
    prefill_kernel_scale: float = 1.0
    small_m_tactic: float = 0.0
    request_overhead: float = MIN_REQUEST_OVERHEAD
    sync_fraction: float = 0.0
    first_token_steps: float = 0.0
    prefill_dp_lockstep: float = 0.0
    fit: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def preset(cls, backend: str) -> EngineCalibration:
        """The shipped engine preset's (uncalibrated) overheads, minimum request overhead."""
        eng = load_engine(ENGINE_OF_BACKEND[backend])
        return cls(backend, eng.step_overhead, eng.seq_overhead)

    def engine(self) -> EngineProfile:
        """Engine profile: the backend's preset with the fitted overheads."""
        return load_engine(ENGINE_OF_BACKEND[self.backend], step_overhead=self.step_overhead,
                           seq_overhead=self.seq_overhead)

    def ttft_added(self, tpot, tokens_per_step=1.0):
        """Time the steady state's TTFT leaves out [s]: R + k · E · TPOT.

        R the request overhead, k ``first_token_steps`` and E the tokens one decode step emits per
        sequence (``tokens_per_step``; speculative decoding's expected tokens, 1 without): the first
        token comes k engine steps late, and a step lasts E TPOTs.
        """
        return self.request_overhead + self.first_token_steps * tokens_per_step * tpot

    def values(self) -> dict[str, float]:
        """Parameter name -> value."""
        return {k: float(getattr(self, k)) for k in PARAMETERS}

    def with_values(self, values: dict[str, float]) -> EngineCalibration:
        """Copy with parameters replaced."""
        return EngineCalibration(self.backend, **{**self.values(), **values})


def presets() -> dict[str, EngineCalibration]:
    """Uncalibrated settings of every backend (shipped presets)."""
    return {b: EngineCalibration.preset(b) for b in ENGINE_OF_BACKEND}


def fit_start() -> dict[str, EngineCalibration]:
    """Starting points of the fit: the presets with :data:`FIXED` applied."""
    return {b: c.with_values(FIXED) for b, c in presets().items()}


def _root():
    return resources.files("perfmodel") / "data" / "engines_fit"


def list_profiles() -> list[str]:
    """Names of the shipped engine calibration profiles."""
    root = _root()
    try:
        return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))
    except FileNotFoundError:
        return []


def profile_from_dict(data: dict, origin: str) -> dict[str, EngineCalibration]:
    """Engine calibrations from a profile mapping (the file's content)."""
    if not isinstance(data, dict) or data.get("kind") != "engine_calibration":
        got = "an empty file" if data is None else (
            f"kind {data.get('kind')!r}" if isinstance(data, dict) else type(data).__name__)
        raise SpecError(f"{origin}: expected a mapping with kind: engine_calibration, got {got}")
    out = {}
    for backend, entry in (data.get("engines") or {}).items():
        if backend not in ENGINE_OF_BACKEND:
            raise unknown_name(f"{origin}: backend", backend, list(ENGINE_OF_BACKEND))
        params = {}
        for k in PARAMETERS:
            if k not in entry:
                continue
            lo, hi, _ = PARAMETERS[k]
            try:
                v = float(entry[k])
            except (TypeError, ValueError):
                v = float("nan")
            if not lo <= v <= hi:
                raise SpecError(f"{origin}: engines.{backend}.{k}: must be a number within [{lo:g}, {hi:g}], "
                                f"got {entry[k]!r}")
            params[k] = v
        extra = set(entry) - set(PARAMETERS) - {"fit"}
        if extra:
            raise SpecError(f"{origin}: engines.{backend}: unknown field(s) {sorted(extra)}; allowed: "
                            f"{sorted(PARAMETERS)} and fit")
        base = EngineCalibration.preset(backend).values()
        out[backend] = EngineCalibration(backend, **{**base, **params}, fit=dict(entry.get("fit", {})))
    return out


def load_profile(name_or_path: str = "calibrated") -> dict[str, EngineCalibration]:
    """Engine calibrations by shipped profile name or YAML path; missing backends get presets.

    ``"preset"`` returns the uncalibrated presets. A YAML path is read on every call (a user may edit
    the file between calls); shipped profiles are read once.
    """
    if name_or_path == "preset":
        return presets()
    text = str(name_or_path)
    if text.endswith((".yaml", ".yml")):
        fitted = profile_from_dict(read_yaml(text, what="engine calibration profile"), text)
    else:
        fitted = _shipped_profile(text)
    return {**presets(), **fitted}


@functools.cache
def _shipped_profile(name: str) -> dict[str, EngineCalibration]:
    if name not in list_profiles():
        raise unknown_name("engine calibration profile", name, list_profiles() + ["preset"])
    origin = f"perfmodel/data/engines_fit/{name}.yaml"
    return profile_from_dict(read_yaml(origin, (_root() / f"{name}.yaml").read_text(encoding="utf-8")), origin)


def profile_to_dict(calibrations: dict[str, EngineCalibration], provenance: dict[str, Any],
                    cross_validation: dict[str, Any] | None = None, name: str = "calibrated") -> dict:
    """Mapping written to a profile file (parameters, per-backend fit residuals, provenance)."""
    engines = {}
    for b, c in sorted(calibrations.items()):
        entry = {k: float(v) for k, v in c.values().items()}
        if c.fit:
            entry["fit"] = c.fit
        engines[b] = entry
    out = {"schema_version": 1, "kind": "engine_calibration", "name": name,
           "parameters": {k: {"unit": "-" if k in DIMENSIONLESS else "s", "bounds": list(v[:2])}
                          for k, v in PARAMETERS.items()},
           "provenance": provenance, "engines": engines}
    if cross_validation:
        out["cross_validation"] = cross_validation
    return out


def save_profile(path: str | Path, data: dict) -> None:
    """Write a profile mapping as YAML."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(yaml.safe_dump(data, sort_keys=False, width=110), encoding="utf-8")


def as_dict(c: EngineCalibration) -> dict[str, Any]:
    """Plain mapping of one calibration (for JSON output)."""
    return asdict(c)
