"""The one strict pydantic base of the declarative specs (engine profiles, workloads, SLOs, claims,
deployments, dataflow architectures) and its shared validation plumbing.

Every spec is a frozen pydantic v2 model with ``extra="forbid"``; quantities are converted once, at
validation, to float64 SI with :func:`perfmodel.units.to_si`. Validation errors are re-raised as
:class:`perfmodel.errors.SpecError` naming the origin (file or call), the field, the value and what is
allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import SpecError
from .hardware.registry import read_yaml
from .hardware.schema import format_validation_error
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
