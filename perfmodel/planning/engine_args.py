"""Recorded argument schemas of serving engines, and checks of launch configurations against them.

Each engine's accepted command-line flags (name, type, choices, aliases) and the keys of its
structured options (vLLM's JSON ``--speculative-config``, TensorRT-LLM's ``--extra_llm_api_options``
YAML, a Dynamo graph manifest) are recorded by hand in ``perfmodel/data/engines/args/<engine>.yaml``
from the engine's own definitions, with the version and the source file each was read from.

:func:`check_args` parses an argument list with an :mod:`argparse` parser built from those names
(abbreviations off), so an unknown flag, a value of the wrong type or a value outside the recorded
choices raises :class:`~perfmodel.errors.ConfigError` naming it. :func:`check_keys` walks a nested
mapping against the recorded keys the same way. This is as far as a launch configuration can be
checked offline: it says nothing about whether the engine supports the combination on given hardware.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from ..errors import ConfigError, unknown_name

ENGINES = ("vllm", "sglang", "trtllm", "dynamo")
_TYPES = {"int": int, "float": float, "str": str}


@dataclass(frozen=True)
class ArgSchema:
    """One engine's recorded arguments (see the module docstring).

    Attributes
    ----------
    engine : str
        ``vllm``, ``sglang``, ``trtllm`` or ``dynamo``.
    command : tuple of str
        The launch command (``("vllm", "serve")``).
    positional : str or None
        Name of the positional argument (the model), if the command takes one.
    version, measured_versions, version_note : str
        The version read, the versions of the project's measured runs, and how they relate.
    sources : dict
        Where each part was read (file URL with the commit).
    args : dict
        Flag -> ``{type, choices?, aliases?, nargs?, keys?}``.
    data : dict
        The whole file (``json_keys``, ``yaml_keys``, ``graph_keys``, ``worker_args``...).
    """

    engine: str
    command: tuple[str, ...]
    positional: str | None
    version: str
    measured_versions: str
    version_note: str
    sources: dict[str, str]
    args: dict[str, dict[str, Any]]
    data: dict[str, Any] = field(repr=False)

    def keys(self, section: str, name: str | None = None) -> dict[str, Any]:
        """Recorded keys of a structured option: ``keys("yaml_keys")`` or ``keys("json_keys", "speculative_config")``."""
        tree = self.data.get(section) or {}
        return tree if name is None else tree[name]


@functools.cache
def load_arg_schema(engine: str) -> ArgSchema:
    """The shipped schema of ``engine`` (``perfmodel/data/engines/args/<engine>.yaml``).

    Raises
    ------
    UnknownNameError
        ``engine`` is not one of :data:`ENGINES`.
    """
    if engine not in ENGINES:
        raise unknown_name("launch engine", str(engine), ENGINES)
    text = (resources.files("perfmodel") / "data" / "engines" / "args" / f"{engine}.yaml").read_text("utf-8")
    d = yaml.safe_load(text)
    return ArgSchema(engine=d["engine"], command=tuple(d["command"]), positional=d.get("positional"),
                     version=str(d["version"]), measured_versions=str(d.get("measured_versions", "")),
                     version_note=" ".join(str(d.get("version_note", "")).split()),
                     sources=dict(d["sources"]), args=dict(d.get("args") or {}), data=d)


class _StrictParser(argparse.ArgumentParser):
    """An argparse parser that raises instead of printing usage and exiting."""

    def error(self, message: str):  # noqa: D401 - argparse hook
        raise ConfigError(f"{self.prog}: {message}")


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def build_parser(schema: ArgSchema, extra: Mapping[str, Mapping[str, Any]] | None = None,
                 positional: bool = True) -> argparse.ArgumentParser:
    """An :mod:`argparse` parser accepting exactly the recorded flags of ``schema`` (and ``extra``);
    ``positional=False`` leaves out the command's positional model argument (Dynamo workers take ``--model``)."""
    p = _StrictParser(prog=" ".join(schema.command), allow_abbrev=False, add_help=False)
    if schema.positional and positional:
        p.add_argument(schema.positional)
    for flag, spec in {**schema.args, **(extra or {})}.items():
        names = [flag, *spec.get("aliases", [])]
        dest = flag.lstrip("-").replace("-", "_")
        kind = spec["type"]
        if kind == "flag":
            p.add_argument(*names, dest=dest, action="store_true")
        elif kind == "bool":
            p.add_argument(*names, dest=dest, action=argparse.BooleanOptionalAction)
        else:
            kw: dict[str, Any] = {"dest": dest, "type": _json_object if kind == "json" else _TYPES[kind]}
            if "choices" in spec:
                kw["choices"] = [_TYPES.get(kind, str)(c) for c in spec["choices"]]
            if "nargs" in spec:
                kw["nargs"] = spec["nargs"]
            p.add_argument(*names, **kw)
    return p


def check_args(engine: str, argv: Sequence[str], extra: Mapping[str, Mapping[str, Any]] | None = None,
               positional: bool = True) -> argparse.Namespace:
    """Parse ``argv`` (the arguments after the command) with the recorded flags of ``engine``.

    JSON-valued flags whose schema names ``keys`` have their object checked with :func:`check_keys`.

    Raises
    ------
    ConfigError
        An unknown flag, a missing or ill-typed value, or a value outside the recorded choices.
    """
    schema = load_arg_schema(engine)
    ns = build_parser(schema, extra, positional).parse_args([str(a) for a in argv])
    for flag, spec in schema.args.items():
        value = getattr(ns, flag.lstrip("-").replace("-", "_"), None)
        if spec.get("keys") and value is not None:
            check_keys(value, schema.keys("json_keys", spec["keys"]), f"{engine} {flag}")
    return ns


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, list)
    return isinstance(value, Mapping)  # object, map


def check_keys(tree: Mapping[str, Any], keys: Mapping[str, Any], where: str) -> None:
    """Check a nested mapping against recorded keys: every key known, every value of its type and choices.

    ``keys`` maps a key to ``{type, choices?, keys?}``; ``type: object`` with ``keys`` recurses,
    ``type: map`` with ``values`` checks every value of a name -> object mapping.

    Raises
    ------
    ConfigError
        Naming the path (``where.key``), the value and what is allowed.
    """
    if not isinstance(tree, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {tree!r}")
    for key, value in tree.items():
        path = f"{where}.{key}"
        if key not in keys:
            raise unknown_name(f"key of {where}", str(key), keys)
        spec = keys[key]
        kind = spec["type"]
        if not _type_ok(value, kind):
            raise ConfigError(f"{path}: expected {kind}, got {value!r}")
        if "choices" in spec and value not in spec["choices"]:
            raise ConfigError(f"{path}: {value!r} is not one of {', '.join(map(str, spec['choices']))}")
        if kind == "object" and "keys" in spec:
            check_keys(value, spec["keys"], path)
        elif kind == "map" and "values" in spec:
            for name, item in value.items():
                _check_value(item, spec["values"], f"{path}.{name}")


def _check_value(value: Any, spec: Mapping[str, Any], where: str) -> None:
    if not _type_ok(value, spec["type"]):
        raise ConfigError(f"{where}: expected {spec['type']}, got {value!r}")
    if spec["type"] == "object" and "keys" in spec:
        check_keys(value, spec["keys"], where)
