"""The format vocabulary every command and function shares: names, defaults and list syntax.

Names: ``weights`` (``--weights``), ``kv_cache`` (``--kv-cache``) and ``activations``
(``--activations``) where a path takes it; a format is a :data:`perfmodel.precision.DTYPES` name or
alias. Where a call searches or sweeps formats, ``weights`` is a list (``"fp8,bf16"`` or
``["fp8", "bf16"]``). The older spellings ``precision`` / ``precisions`` (``--precision``) still work
for one release and warn (:func:`renamed`).

Default rule, the same everywhere (``None`` or ``''`` asks for it):

- **weights**: the checkpoint's own format (:func:`checkpoint_format`): ``fp8_block`` for
  DeepSeek-V3/R1 and MiniMax-M2, ``mxfp4`` for gpt-oss, ``int4`` for Kimi-K2.5, the format a Hugging
  Face repo id ends in (``-FP8``, ``-NVFP4``, ``-BF16``), else ``bf16``;
- **KV cache**: ``fp8`` when the weights are FP8 or FP4 (``fp8``, ``fp8_block``, ``nvfp4``/``fp4``,
  ``mxfp4``), else ``bf16`` (:func:`default_kv_cache`). This is the rule the validation maps measured
  runs with (:class:`perfmodel.validation.rows.KVPolicy`, the same for vLLM, SGLang and TensorRT-LLM):
  NVIDIA ModelOpt FP8/NVFP4 checkpoints declare an FP8 KV cache and the engines honour it, and the
  bf16 alternative gives larger errors on the measured rows (``docs/validation.md``);
- **activations**: from the weights (:meth:`perfmodel.precision.Precision.of`).
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from .deprecation import DEPRECATED, renamed  # noqa: F401 (re-exported: callers import them from here)
from .errors import ConfigError

#: The default rule in words, for help texts and docs/cli.md (concept -> default).
DEFAULTS = {
    "weights": "the checkpoint's own format (fp8_block for DeepSeek-V3/R1, mxfp4 for gpt-oss, a repo id's "
               "-FP8/-NVFP4 suffix), else bf16",
    "kv_cache": "fp8 with fp8/fp8_block/nvfp4/mxfp4 weights, else bf16",
    "activations": "from the weights",
    "decode_weights": "the prefill pool's",
}

#: Weight formats whose checkpoints are served with an FP8 KV cache (canonical names).
QUANTIZED_KV_WEIGHTS = frozenset({"fp8", "fp8_block", "nvfp4", "fp4", "mxfp4"})


def checkpoint_format(model: Any, spec: Any = None) -> str:
    """Weight format a model's checkpoint is published in.

    Parameters
    ----------
    model : str or ModelSpec
        Model id, Hugging Face repo id, config.json path or a spec.
    spec : ModelSpec, optional
        The resolved spec of ``model`` (loaded when not given and ``model`` is a string).

    Returns
    -------
    str
        A repo id or folder ending in a format suffix (``org/name-FP8``) decides, as for measured rows
        (:func:`perfmodel.validation.models.checkpoint_default_format`); otherwise the spec's id (or its
        Hugging Face repo id); ``bf16`` for a model that cannot be resolved.
    """
    if isinstance(model, str):
        suffixed = _suffixed_repo(model)
        if suffixed:
            return _checkpoint_of(suffixed, None)
        if spec is None:
            from .errors import PerfmodelError
            from .modelspec import load_model

            try:
                spec = load_model(model)
            except PerfmodelError:
                return _checkpoint_of(model, None)
    else:
        spec = model if spec is None else spec
    return _checkpoint_of(spec.id, getattr(spec, "hf_repo_id", None))


@functools.lru_cache(maxsize=1024)
def _suffixed_repo(model: str) -> str:
    """``org/name`` of a repo id or folder path that ends in a format suffix (``-FP8``), else ''."""
    from .validation.models import SUFFIXES

    parts = [p for p in model.replace("\\", "/").lower().split("/") if p and not p.endswith(".json")]
    repo = "/".join(parts[-2:])
    return repo if repo.endswith(SUFFIXES) else ""


@functools.lru_cache(maxsize=1024)
def _checkpoint_of(name: str, hf_repo_id: str | None) -> str:
    """:func:`~perfmodel.validation.models.checkpoint_default_format` of a name, else of its repo id."""
    from .validation.models import checkpoint_default_format

    own = checkpoint_default_format(name)
    return checkpoint_default_format(hf_repo_id) if own == "bf16" and hf_repo_id else own


def default_kv_cache(weights: str) -> str:
    """KV-cache format used when none is given: ``fp8`` for FP8/FP4 weights, else ``bf16``.

    Parameters
    ----------
    weights : str
        Weight format (name or alias).
    """
    from .precision import dtype  # imported here: the CLI's help texts read this module

    return "fp8" if dtype(weights, "weights").name in QUANTIZED_KV_WEIGHTS else "bf16"


def resolve_formats(model: Any, spec: Any, weights: str | None, kv_cache: str | None) -> tuple[str, str]:
    """(weights, kv_cache) with the default rule applied to the ones not given (``None`` or ``''``).

    Parameters
    ----------
    model : str or ModelSpec
        What the caller named the model by (a repo id's format suffix counts).
    spec : ModelSpec
        Its resolved spec.
    weights, kv_cache : str or None
        Formats asked for; ``None`` or ``''`` = the default (module docstring).
    """
    w = str(weights).strip() if weights is not None else ""
    w = w or checkpoint_format(model, spec)
    kv = str(kv_cache).strip() if kv_cache is not None else ""
    return w, kv or default_kv_cache(w)


def format_list(value: Any, field: str = "weights") -> list[str | None]:
    """Formats to search or sweep: ``"fp8,bf16"``, ``["fp8", "bf16"]``, one name, or ``None`` / ``''``
    (``[None]``: the default rule).

    Raises
    ------
    ConfigError
        An entry that is not a string.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return [None]
    items = value.split(",") if isinstance(value, str) else list(value)
    out: list[str | None] = []
    for item in items:
        if item is not None and not isinstance(item, str):
            raise ConfigError(f"{field}: expected format names (e.g. 'fp8,bf16'), got {item!r}")
        out.append(item.strip() or None if item is not None else None)
    return out or [None]


def note_renamed_flag(command: str, old: str, new: str) -> None:
    """One stderr line saying a deprecated flag was used and its new name."""
    print(f"perfmodel {command}: note: {old} is deprecated, use {new}", file=sys.stderr)
