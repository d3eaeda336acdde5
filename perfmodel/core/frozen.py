"""Frozen dataclasses that are cheap to build: the records a step creates by the dozen per call.

``@dataclass(frozen=True)`` generates an ``__init__`` that stores each field with a call of
``object.__setattr__``; a step of a scalar :func:`perfmodel.predict` builds a few dozen
:class:`~perfmodel.core.ops.Op` and :class:`~perfmodel.core.costs.OpTime` records of 5–13 fields each. :func:`frozen` is ``dataclass(frozen=True)`` with an ``__init__`` that stores all fields
in one update of the instance dictionary: the instances are the same (fields, defaults, equality,
``repr``, ``dataclasses.replace``; assigning a field still raises ``FrozenInstanceError``).
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

T = TypeVar("T")


def frozen(cls: type[T]) -> type[T]:
    """``dataclass(frozen=True)`` with a faster ``__init__`` (fields with plain defaults only).

    Raises
    ------
    TypeError
        A field has a ``default_factory``, is keyword-only or not in ``__init__``, or the class has a
        ``__post_init__`` or ``__slots__`` (the fast ``__init__`` would not honour them).
    """
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__ or any(
            f.default_factory is not dataclasses.MISSING or f.kw_only or not f.init for f in fields):
        raise TypeError(f"frozen: {cls.__name__} needs dataclass(frozen=True) itself")
    defaults = {f"_d_{f.name}": f.default for f in fields if f.default is not dataclasses.MISSING}
    params = ", ".join(f.name if f.default is dataclasses.MISSING else f"{f.name}=_d_{f.name}" for f in fields)
    stores = ", ".join(f"{f.name}={f.name}" for f in fields)
    source = f"def __init__(self, {params}):\n    self.__dict__.update({stores})\n"
    namespace: dict = {}
    exec(source, defaults, namespace)  # noqa: S102 - source built above from the field names only
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    return cls
