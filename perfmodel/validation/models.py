"""Model specs for measured rows: registry look-up, a few validation-only bridges, stated skips.

:func:`resolve_model` turns the ``model_path`` of a measured row (a Hugging Face repo id) into a
:class:`~perfmodel.modelspec.ModelSpec`, or raises :class:`UnsupportedModel` with the reason the row
cannot be predicted. Order of look-up:

1. :func:`perfmodel.modelspec.load_model` (shipped ids and HF repo ids, quantisation suffixes ignored;
   MiniMax-M2.5 is a shipped ``minimax_m2`` spec);
2. a *bridge* for checkpoints whose ``model_type`` the spec reader does not know although the
   architecture is one it does (config files shipped in ``perfmodel/data/validation/hf_configs``):

   - ``moonshotai/Kimi-K2.5`` (``kimi_k25``): a vision-language wrapper whose ``text_config`` is a
     ``kimi_k2`` (DeepSeek-V3 / MLA) decoder; the text decoder is read, the vision tower (served only
     for image inputs) is left out.
   - ``nvidia/DeepSeek-V3.1-NVFP4``: DeepSeek-V3 architecture (``deepseek_v3``).

   These bridges belong in :mod:`perfmodel.modelspec` once that reader supports the families.
3. Families with attention the core cost model does not cover are refused with that reason
   (:data:`UNSUPPORTED_ARCHITECTURES`; empty since Qwen3.5 / Qwen3-Next Gated DeltaNet hybrids and
   DeepSeek Sparse Attention models — DeepSeek-V3.2, GLM-5 — are shipped model families).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path

from ..errors import PerfmodelError, UnknownNameError
from ..modelspec import ModelSpec, load_model
from ..modelspec.hf_config import from_hf_config


class UnsupportedModel(PerfmodelError):
    """A measured row's model cannot be costed; the message is the skip reason."""


#: Repo-id fragments (lower case) of architectures the cost model does not cover, with the reason
#: (none today: Qwen3.5's Gated DeltaNet layers and GLM-5's DeepSeek Sparse Attention are modelled).
UNSUPPORTED_ARCHITECTURES: dict[str, str] = {}

#: Repo id (lower case) -> (shipped config file, how to read it) for the bridged checkpoints.
BRIDGES: dict[str, tuple[str, str]] = {
    "moonshotai/kimi-k2.5": ("moonshotai--Kimi-K2.5_config.json", "text_config"),
    "nvidia/deepseek-v3.1-nvfp4": ("nvidia--DeepSeek-V3.1-NVFP4_config.json", "as_is"),
}


def _bridge(repo_id: str, file: str, how: str) -> ModelSpec:
    root = resources.files("perfmodel") / "data" / "validation" / "hf_configs"
    config = json.loads((root / file).read_text(encoding="utf-8"))
    origin = f"perfmodel/data/validation/hf_configs/{file}"
    if how == "text_config":
        config = config["text_config"]
    model_id = repo_id.rsplit("/", 1)[-1].lower()
    return from_hf_config(config, model_id, hf_repo_id=repo_id, source=origin, origin=origin)


def resolve_model(model_path: str) -> ModelSpec:
    """Model spec of a measured row's ``model_path``.

    Ids are resolved once; a path (a config.json or a directory holding one) is read on every call
    (a user may edit the file).

    Parameters
    ----------
    model_path : str
        Hugging Face repo id (``deepseek-ai/DeepSeek-R1``), shipped id or config.json path.

    Returns
    -------
    ModelSpec

    Raises
    ------
    UnsupportedModel
        Unknown model or an attention type the cost model does not cover (message = reason).
    """
    text = str(model_path)
    if text.endswith(".json") or "\\" in text or Path(text).expanduser().exists():
        return _resolve(text)
    return _resolve_id(text)


@functools.cache
def _resolve_id(model_path: str) -> ModelSpec:
    return _resolve(model_path)


def _resolve(model_path: str) -> ModelSpec:
    key = model_path.strip().lower()
    for fragment, reason in UNSUPPORTED_ARCHITECTURES.items():
        if fragment in key:
            raise UnsupportedModel(reason)
    if key in BRIDGES:
        return _bridge(model_path.strip(), *BRIDGES[key])
    try:
        return load_model(model_path)
    except UnknownNameError as exc:  # keep the suggestions, under one "unknown model:" prefix
        detail = str(exc).removeprefix("unknown model ")
        raise UnsupportedModel(f"unknown model: {detail}") from None
    except PerfmodelError as exc:
        raise UnsupportedModel(f"model spec error: {exc}") from None


#: Quantised formats a checkpoint ships in when a row leaves the precision empty (repo id suffix or
#: architecture default); everything else defaults to bf16.
CHECKPOINT_DEFAULTS: dict[str, str] = {
    "-fp8": "fp8", "-nvfp4": "nvfp4", "-fp4": "nvfp4", "-bf16": "bf16", "deepseek-r1": "fp8_block", "deepseek-v3": "fp8_block",
    "gpt-oss": "mxfp4", "kimi-k2.5": "int4", "minimax-m2": "fp8_block",
}
#: Repo-id suffixes that name the checkpoint's format (a ``-BF16`` repo re-exports a quantised one).
SUFFIXES = ("-fp8", "-nvfp4", "-fp4", "-bf16")
#: Organisations whose ``-FP8`` checkpoints are block-scaled (128 x 128 weight blocks, as their
#: config.json ``quantization_config.weight_block_size`` says); other ``-FP8`` repos (NVIDIA
#: ModelOpt) are per-tensor.
BLOCK_FP8_ORGS = ("qwen/",)


def checkpoint_default_format(model_path: str) -> str:
    """Weight format of a checkpoint as published (``''`` precision in a row means this).

    Repo-id suffixes (``-FP8``, ``-NVFP4``, ``-BF16``) win (``-FP8`` of :data:`BLOCK_FP8_ORGS` is block-scaled);
    DeepSeek-V3/R1 and MiniMax-M2 ship block-FP8, gpt-oss MXFP4 experts, Kimi-K2.5 INT4 (W4A16)
    experts; others are bf16.
    """
    key = model_path.lower()
    if key.endswith("-fp8") and key.startswith(BLOCK_FP8_ORGS):
        return "fp8_block"
    for suffix in SUFFIXES:
        if key.endswith(suffix):
            return CHECKPOINT_DEFAULTS[suffix]
    for fragment, fmt in CHECKPOINT_DEFAULTS.items():
        if not fragment.startswith("-") and fragment in key:
            return fmt
    return "bf16"
