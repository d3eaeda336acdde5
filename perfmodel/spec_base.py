"""The one strict pydantic base of the declarative specs (hardware, engine profiles, workloads, SLOs,
claims, deployments, dataflow architectures) and its shared validation plumbing.

Every spec is a frozen pydantic v2 model with ``extra="forbid"``; quantities are converted once, at
validation, to float64 SI with :func:`perfmodel.units.to_si`. Validation errors are re-raised as
:class:`perfmodel.errors.SpecError` naming the origin (file or call), the field, the value and what is
allowed.
"""

from __future__ import annotations

import difflib
import types
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import SpecError
from .fileio import read_yaml
from .units import to_si, units_required

M = TypeVar("M", bound=BaseModel)


class Strict(BaseModel):
    """Base of every declarative spec: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def replace(self: M, **changes: Any) -> M:
        """Return a validated copy with ``changes`` applied (quantity strings accepted).

        Raises
        ------
        SpecError
            A changed field is invalid or unknown.
        """
        data = {name: getattr(self, name) for name in type(self).model_fields}
        data.update(changes)
        return validate(type(self), data, f"{type(self).__name__}.replace()")


def seconds(value: Any, field: str) -> float:
    """Convert ``value`` (``"2 ms"``, ``0.002``, a pint Quantity) to seconds [s]."""
    return to_si(value, "time", field)


def optional_seconds(value: Any, field: str) -> float | None:
    """Like :func:`seconds` but passes ``None`` through (an absent limit)."""
    return None if value is None else seconds(value, field)


def validate(model: type[M], data: Any, origin: str) -> M:
    """Validate ``data`` into ``model``; raise :class:`SpecError` with readable messages."""
    if isinstance(data, model):
        return data
    if data is None:
        raise SpecError(f"{origin}: empty specification; expected a mapping of {model.__name__} fields")
    if not isinstance(data, dict):
        raise SpecError(f"{origin}: expected a mapping of {model.__name__} fields, got "
                        f"{type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{origin}: " + format_validation_error(exc, model)) from None


def load_yaml_spec(model: type[M], path: str | Path) -> M:
    """Read a YAML file and validate it into ``model`` (errors name the file; quantities need units)."""
    return validate_file(model, read_yaml(path), str(path))


def validate_file(model: type[M], data: Any, origin: str) -> M:
    """Like :func:`validate` for the content of a file: a bare number for a quantity is an error."""
    with units_required():
        return validate(model, data, origin)


def _unwrap(annotation: Any) -> Any:
    """Strip ``Optional[...]`` and ``Annotated[...]`` from a field annotation."""
    while get_origin(annotation) in (Annotated, Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) != 1 and get_origin(annotation) is not Annotated:
            return annotation
        annotation = args[0]
    return annotation


def _allowed_keys(model: type[BaseModel], path: tuple[Any, ...]) -> list[str]:
    """Keys allowed in the mapping at ``path`` (a pydantic error location) below ``model``.

    Parameters
    ----------
    model : type[BaseModel]
        The root schema (a hardware spec, a deployment, an engine profile...).
    path : tuple
        Location of the mapping, e.g. ``("memory", "hbm")``; dict keys are stepped over.

    Returns
    -------
    list[str]
        Field names (aliases where set) of the model found there; empty if the path leads elsewhere.
    """
    node: Any = model
    parts = list(path)
    while parts:
        if not (isinstance(node, type) and issubclass(node, BaseModel)):
            return []
        field = node.model_fields.get(str(parts.pop(0)))
        if field is None:
            return []
        node = _unwrap(field.annotation)
        if get_origin(node) is dict and parts:
            parts.pop(0)  # the dict key (e.g. 'hbm' in memory.hbm)
            node = _unwrap(get_args(node)[1])
    if isinstance(node, type) and issubclass(node, BaseModel):
        return [f.alias or name for name, f in node.model_fields.items()]
    return []


def _unknown_key_message(key: str, allowed: list[str]) -> str:
    msg = f"unknown key {key!r} (typo?)"
    if allowed:
        near = difflib.get_close_matches(key, allowed, n=1, cutoff=0.7)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        msg += f"{hint}; allowed keys: {', '.join(allowed)}"
    return msg


#: At most this many problems of one file are reported (a file of 200k typos answers in a line).
MAX_PROBLEMS = 10


def _short(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_validation_error(exc: Any, model: type[BaseModel] | None = None) -> str:
    """Turn a pydantic ValidationError into one line per problem: ``field.path: message``.

    With ``model`` (the root schema), unknown keys are reported with the allowed ones and the closest.
    """
    lines = []
    errors = exc.errors(include_url=False, include_context=False)
    for err in errors[:MAX_PROBLEMS]:
        parts = [p for p in err["loc"] if p != "[key]"]
        loc = ".".join(str(p) for p in parts if p != "value" or len(parts) == 1)
        msg = err["msg"]
        for prefix in ("Value error, ", "Assertion failed, "):
            msg = msg.removeprefix(prefix)
        if err["type"] == "extra_forbidden":
            key = str(err["loc"][-1])
            msg = _unknown_key_message(key, _allowed_keys(model, err["loc"][:-1]) if model else [])
        elif err["type"] in ("literal_error", "enum"):
            msg = f"{msg}; got {_short(err.get('input'))}"
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"] not in ("value_error", "assertion_error") and "input" in err \
                and not isinstance(err["input"], (dict, list)):
            msg = f"{msg}; got {_short(err['input'])}"  # name the offending value
        # our unit errors already start with "value: "; keep the field path instead
        msg = msg.removeprefix("value: ")
        lines.append(f"{loc}: {msg}" if loc else msg)
    if len(errors) > MAX_PROBLEMS:
        lines.append(f"and {len(errors) - MAX_PROBLEMS} more problem(s)")
    return "; ".join(lines)
