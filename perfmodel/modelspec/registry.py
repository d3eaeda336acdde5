"""Loading model specs: shipped ids, Hugging Face repo ids, or a path to a ``config.json``.

Shipped configs live in ``perfmodel/data/models/<id>.json`` in the wrapper format
``{"model", "hf_repo_id", "source": {...}, "config": {verbatim HF config.json}}`` (provenance in that
folder's README). A Hugging Face repo id resolves case-insensitively to the shipped id of the same
architecture: the organisation, a ``Meta-`` prefix, and ``-Instruct``/``-Chat``/``-Base``/``-hf`` and
quantisation suffixes (``-FP8``, ``-NVFP4``...) are ignored, so ``nvidia/Llama-3.1-70B-Instruct-FP8``
is ``llama-3.1-70b``.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any

from .. import fileio
from ..errors import SpecError, unknown_name
from .hf_config import from_hf_config
from .schema import ModelSpec

_DATA_DIR = ("data", "models")

#: Name tokens dropped when matching a repo id: chat/instruct variants and quantised checkpoints
#: share the architecture (and so the spec) of the base model.
_IGNORED_TOKENS = frozenset({
    "instruct", "chat", "base", "hf", "fp8", "nvfp4", "fp4", "mxfp4", "int4", "int8", "w4a16", "w8a8",
    "awq", "gptq", "bf16", "fp16", "dynamic", "static", "pertensor", "block",
})

#: Other checkpoints with a config.json identical in every field the spec reads.
_EXTRA_ALIASES = {
    "llama-3.3-70b": "llama-3.1-70b",
    "deepseek-r1-0528": "deepseek-r1",
    "deepseek-v3-0324": "deepseek-v3",
    "kimi-k2-0905": "kimi-k2",
}


def alias_key(name: str) -> str:
    """Normalised lookup key of an id or repo id (lower case, org and variant suffixes dropped).

    >>> alias_key("nvidia/Meta-Llama-3.1-70B-Instruct-FP8")
    'llama-3.1-70b'
    """
    tail = name.strip().lower().rsplit("/", 1)[-1].replace("_", "-")
    tokens = [t for t in tail.split("-") if t and t not in _IGNORED_TOKENS]
    if len(tokens) > 1 and tokens[0] == "meta":
        tokens = tokens[1:]
    return "-".join(tokens)


def _read_json(path: Path | str, text: str | None = None) -> Any:
    """Parse a config.json (errors name the file; see :func:`perfmodel.fileio.read_json`)."""
    return fileio.read_json(path, text, what="JSON file (config.json)")


def _unwrap(data: Any, origin: str) -> tuple[dict, dict]:
    """Split a wrapper file into (config, metadata); a plain config.json has empty metadata."""
    if not isinstance(data, dict):
        raise SpecError(f"{origin}: expected a JSON object, got {type(data).__name__}")
    if "config" in data and "model_type" not in data:
        if not isinstance(data["config"], dict):
            raise SpecError(f"{origin}: 'config' must be a JSON object (the HF config.json)")
        return data["config"], data
    return data, {}


def _source_text(meta: dict) -> str | None:
    src = meta.get("source")
    if isinstance(src, dict):
        return src.get("url") or src.get("path")
    return src if isinstance(src, str) else None


def _clean_repo_id(value: Any) -> str | None:
    if not isinstance(value, str) or "/" not in value:
        return None
    return value.split()[0]  # one shared file annotates the id: "org/name (file named ...)"


def _spec_from_data(data: Any, id: str, origin: str, fallback_source: str | None = None) -> ModelSpec:
    config, meta = _unwrap(data, origin)
    repo = _clean_repo_id(meta.get("hf_repo_id")) or _clean_repo_id(config.get("_name_or_path"))
    return from_hf_config(config, id, hf_repo_id=repo, source=_source_text(meta) or fallback_source,
                          origin=origin)


@functools.lru_cache(maxsize=1)
def _catalogue() -> tuple[dict[str, ModelSpec], dict[str, str]]:
    """Shipped specs by id and alias key -> id. Read once; specs are immutable."""
    root = resources.files("perfmodel").joinpath(*_DATA_DIR)
    specs: dict[str, ModelSpec] = {}
    aliases: dict[str, str] = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        model_id = entry.name[: -len(".json")]
        origin = "perfmodel/data/models/" + entry.name
        data = _read_json(origin, entry.read_text(encoding="utf-8"))
        spec = _spec_from_data(data, model_id, origin)
        specs[model_id] = spec
        for name in (model_id, data.get("model"), spec.hf_repo_id):
            if isinstance(name, str):
                aliases.setdefault(alias_key(name), model_id)
    for key, model_id in _EXTRA_ALIASES.items():
        aliases.setdefault(key, model_id)
    return specs, aliases


def list_models() -> list[str]:
    """Shipped model ids, sorted."""
    return sorted(_catalogue()[0])


def _looks_like_path(name: str) -> bool:
    return (name.endswith(".json") or name.startswith((".", "~", "/")) or name.count("/") > 1
            or "\\" in name)


def _config_path(path: Path) -> Path:
    return path / "config.json" if path.is_dir() else path


def _id_from_path(path: Path, meta_model: Any) -> str:
    if isinstance(meta_model, str) and meta_model:
        return meta_model
    if path.name == "config.json":
        return path.parent.name or "config"
    stem = path.stem
    return stem[: -len("_config")] if stem.endswith("_config") else stem


def load_model_file(path: str | Path) -> ModelSpec:
    """Read a ``config.json`` (plain HF format or the shipped wrapper format) from disk.

    A directory is read as ``<dir>/config.json``. The id is the wrapper's ``model`` or, for a
    plain config, the folder name (``.../Llama-3.1-8B/config.json``) or file stem.
    """
    file = _config_path(Path(path).expanduser())
    origin = str(file)
    data = _read_json(file)
    meta_model = data.get("model") if isinstance(data, dict) and "config" in data else None
    return _spec_from_data(data, _id_from_path(file, meta_model), origin, fallback_source=origin)


def load_model(id_or_path: str | Path | ModelSpec) -> ModelSpec:
    """Return a model spec by shipped id, Hugging Face repo id or path to a ``config.json``.

    Parameters
    ----------
    id_or_path : str, Path or ModelSpec
        ``"llama-3.1-70b"``, ``"meta-llama/Llama-3.1-70B-Instruct"`` (case-insensitive; quantised
        ``-FP8``/``-NVFP4`` repos map to their base), or a path to a JSON file / a folder holding
        ``config.json``. A ModelSpec is returned unchanged.

    Raises
    ------
    UnknownNameError
        Unknown id; the message suggests the closest shipped ids.
    SpecError
        File not found, not JSON, or an invalid / unsupported config.
    """
    if isinstance(id_or_path, ModelSpec):
        return id_or_path
    if isinstance(id_or_path, Path):
        return load_model_file(id_or_path)
    if not isinstance(id_or_path, str) or not id_or_path.strip():
        raise SpecError(f"model: expected an id, repo id or path, got {id_or_path!r}")
    name = id_or_path.strip()
    specs, aliases = _catalogue()
    if _looks_like_path(name):
        return load_model_file(name)
    model_id = name if name in specs else aliases.get(alias_key(name))
    if model_id is not None:
        return specs[model_id]
    if Path(name).expanduser().exists():
        return load_model_file(name)
    raise unknown_name("model", name, specs)
