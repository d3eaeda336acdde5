"""Serving-engine profiles: the scheduler knobs of vLLM, SGLang and TensorRT-LLM as data.

A profile says how an engine builds each forward step (iteration-level / continuous batching):

``policy``
    ``decode_first``: every step first carries one token for each running decode, then fills the rest
    of the token budget with prompt chunks (vLLM V1, TensorRT-LLM in-flight batching).
    ``prefill_first``: whenever prompt work can be admitted, the step is a prefill-only step and the
    running decodes wait (SGLang's default scheduler, vLLM V0 without chunked prefill).
``chunked_prefill``
    Long prompts are split into chunks that fit the per-step budget; without it a prompt is scheduled
    whole (it waits until it fits the budget).
``max_num_batched_tokens`` / ``max_num_seqs``
    Tokens per step (decodes count one each) and sequences running at once.
``kv_block_size`` / ``kv_admission``
    Paged KV cache granularity [tokens]; ``on_demand`` allocates blocks as tokens are computed and
    preempts (recompute) the newest running request when memory runs out (vLLM, SGLang);
    ``reserve_full`` admits a request only if blocks for its whole prompt + output fit, so it never
    preempts (TensorRT-LLM's GUARANTEED_NO_EVICT capacity scheduler).
``gpu_memory_utilization`` / ``mem_fraction_static`` / ``free_gpu_memory_fraction``
    The memory fraction the engine sizes its KV pool with, under the engine's own name (vLLM, SGLang,
    TensorRT-LLM; at most one): :mod:`perfmodel.engine.kv_memory`. None of them: the step model's
    ``kv_capacity_tokens`` (its ``reserve``).
``step_overhead`` / ``seq_overhead``
    Host-side time per step and per sequence in the step [s] (scheduling, sampling, detokenisation),
    added to the step model's device time. These are *assumptions* until calibrated.

Shipped presets live in ``perfmodel/data/engines/*.yaml``; copy one, edit it and load it by path.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ..errors import unknown_name
from ..hardware.registry import read_yaml
from ..spec_base import Strict, seconds, validate, validate_file

Policy = Literal["decode_first", "prefill_first"]
KVAdmission = Literal["on_demand", "reserve_full"]


#: Shown with every result computed on an engine preset (simulate, max-load, plan): what it leaves out.
PRESET_NOTE = ("engine preset: host overheads assumed, not fitted; TTFT leaves out the request's time outside "
               "the engine (front end, tokeniser: tens to hundreds of ms per engine on measured runs) and "
               "synchronised client waves. `perfmodel estimate` gives the validated closed-loop estimate "
               "(error in docs/validation.md)")


#: Memory-fraction fields, one per engine (at most one set in a profile).
MEMORY_FIELDS = ("gpu_memory_utilization", "mem_fraction_static", "free_gpu_memory_fraction")


class EngineProfile(Strict):
    """Scheduler parameters of one serving engine (all times in seconds).

    Attributes
    ----------
    name : str
        Profile id (``vllm``, ``sglang``, ``trtllm`` or a user name).
    policy : {"decode_first", "prefill_first"}
        How a step is composed (see the module docstring).
    chunked_prefill : bool
        Split prompts into chunks that fit the remaining step budget.
    max_num_batched_tokens : int
        Token budget of one step [tokens]; each running decode counts one token.
    max_num_seqs : int
        Largest number of sequences running (decoding or prefilling) at once.
    kv_block_size : int
        Tokens per KV-cache page [tokens].
    kv_admission : {"on_demand", "reserve_full"}
        KV allocation policy; ``on_demand`` preempts (recompute) when blocks run out.
    step_overhead : float
        Fixed host time added to every step [s]. Accepts ``"2 ms"``.
    seq_overhead : float
        Host time per sequence scheduled in a step [s]. Accepts ``"20 us"``.
    kv_capacity_fraction : float
        Fraction of the KV tokens (engine rule or step model) the engine may use (1.0 = all).
    gpu_memory_utilization : float, optional
        vLLM: share of the device's total memory for weights, activations and KV pool (default 0.9).
    mem_fraction_static : float or "auto", optional
        SGLang: share of total memory for weights and KV pool; ``"auto"`` = SGLang's rule by memory and
        parallel size (:func:`perfmodel.engine.kv_memory.sglang_mem_fraction`).
    free_gpu_memory_fraction : float, optional
        TensorRT-LLM: share of the memory free after weights and activations that the KV pool takes.
    backend : {"vllm", "sglang", "trtllm"} or None
        Serving engine whose terms fitted on measured runs apply to this profile
        (:class:`perfmodel.engine.Engine`); None = no fitted terms (an uncalibrated profile).
    description : str
        Free text.
    sources : dict[str, str]
        Where each default comes from (field -> URL / file and version, or "assumption").
    """

    schema_version: Literal[1] = 1
    kind: Literal["engine"] = "engine"
    name: str
    backend: Literal["vllm", "sglang", "trtllm"] | None = None
    description: str = ""
    policy: Policy = "decode_first"
    chunked_prefill: bool = True
    max_num_batched_tokens: int = Field(default=8192, ge=1)
    max_num_seqs: int = Field(default=256, ge=1)
    kv_block_size: int = Field(default=16, ge=1)
    kv_admission: KVAdmission = "on_demand"
    step_overhead: float = 0.0
    seq_overhead: float = 0.0
    kv_capacity_fraction: float = Field(default=1.0, gt=0.0, le=1.0)
    gpu_memory_utilization: float | None = Field(default=None, gt=0.0, le=1.0)
    mem_fraction_static: float | Literal["auto"] | None = None
    free_gpu_memory_fraction: float | None = Field(default=None, gt=0.0, le=1.0)
    sources: dict[str, str] = Field(default_factory=dict)

    @field_validator("step_overhead", "seq_overhead", mode="before")
    @classmethod
    def _time(cls, v: Any) -> float:
        return seconds(v, "value")

    @field_validator(*MEMORY_FIELDS, mode="before")
    @classmethod
    def _fraction_not_bool(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, bool):  # pydantic would read true as 1.0: the whole device for the KV pool
            auto = " or 'auto'" if info.field_name == "mem_fraction_static" else ""
            raise ValueError(f"must be a fraction in (0, 1]{auto}, got {v!r}")
        return v

    @model_validator(mode="after")
    def _check(self) -> EngineProfile:
        unknown = set(self.sources) - set(type(self).model_fields)
        if unknown:
            raise ValueError(f"sources: keys {sorted(unknown)} are not fields of an engine profile; "
                             f"allowed: {', '.join(sorted(type(self).model_fields))}")
        fractions = [f for f in MEMORY_FIELDS if getattr(self, f) is not None]
        if len(fractions) > 1:
            raise ValueError(f"{' and '.join(fractions)}: set at most one memory fraction (each is one engine's "
                             "rule: vLLM gpu_memory_utilization, SGLang mem_fraction_static, TensorRT-LLM "
                             "free_gpu_memory_fraction)")
        m = self.mem_fraction_static
        if isinstance(m, float) and not 0.0 < m <= 1.0:
            raise ValueError(f"mem_fraction_static: must be within (0, 1] or 'auto', got {m!r}")
        return self

    def defaults_table(self) -> list[dict[str, Any]]:
        """Rows ``{field, value, source}`` of every scheduler knob, for display and JSON output."""
        rows = []
        for name in ("policy", "chunked_prefill", "max_num_batched_tokens", "max_num_seqs",
                     "kv_block_size", "kv_admission", "step_overhead", "seq_overhead",
                     "kv_capacity_fraction", *MEMORY_FIELDS):
            rows.append({"field": name, "value": getattr(self, name),
                         "source": self.sources.get(name, "")})
        return rows


@functools.cache
def _shipped() -> dict[str, str]:
    """Text of each shipped engine profile by id (package data: read once per process)."""
    root = resources.files("perfmodel") / "data" / "engines"
    out = {}
    if root.is_dir():
        for child in root.iterdir():
            if child.name.endswith((".yaml", ".yml")):
                out[child.name.rsplit(".", 1)[0]] = child.read_text(encoding="utf-8")
    return out


@functools.cache
def _load_shipped(name: str) -> EngineProfile:
    texts = _shipped()
    return validate_file(EngineProfile, read_yaml(f"data/engines/{name}.yaml", texts[name]),
                    f"data/engines/{name}.yaml")


def list_engines() -> list[str]:
    """Ids of the shipped engine presets."""
    return sorted(_shipped())


_ALIASES = {"tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm", "trt-llm": "trtllm"}


def load_engine(name_or_path: str | Path | EngineProfile | dict | None = "vllm",
                **overrides: Any) -> EngineProfile:
    """Return an engine profile by preset id, YAML path, mapping or instance, with overrides.

    Parameters
    ----------
    name_or_path : str | Path | EngineProfile | dict | None
        ``"vllm"``, ``"sglang"``, ``"trtllm"``, a path to a YAML file, a mapping of fields or a
        profile. ``None`` means ``"vllm"``.
    **overrides
        Fields to change (validated): ``load_engine("vllm", max_num_batched_tokens=2048)``.

    Raises
    ------
    SpecError, UnknownNameError
        Invalid file or field; unknown preset (the message lists the closest ones).
    """
    if name_or_path is None:
        name_or_path = "vllm"
    if isinstance(name_or_path, EngineProfile):
        prof = name_or_path
    elif isinstance(name_or_path, dict):
        prof = validate(EngineProfile, name_or_path, "engine")
    else:
        text = str(name_or_path)
        if text.endswith((".yaml", ".yml")) or "/" in text or "\\" in text:
            prof = validate_file(EngineProfile, read_yaml(text), text)
        else:
            key = _ALIASES.get(text.lower(), text.lower())
            if key not in _shipped():
                raise unknown_name("engine profile", text, list_engines())
            prof = _load_shipped(key)
    if overrides:
        prof = prof.replace(**overrides)
    return prof

