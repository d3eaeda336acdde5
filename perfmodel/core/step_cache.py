"""Reuse of :class:`~perfmodel.core.step.StepModel` objects between calls with the same arguments.

Building a StepModel resolves the model and hardware, the parallel layout, the formats and the
efficiency profile; a scalar :func:`~perfmodel.predict` spends a noticeable share of its time there.
:func:`cached_step_model` keeps the most recently used ones (at most :data:`MAX_ENTRIES`).

The key cannot go stale: the model and hardware are resolved first (a shipped id gives the same
immutable spec object on every call; a file is read again and gives a new object, hence a new key)
and keyed by object identity, with the objects held by the entry so that their identities are not
reused; any other argument that is not a number, a string or None (an
:class:`~perfmodel.core.efficiency.Efficiency`) is keyed the same way. Specs and profiles are frozen
and a StepModel is not changed after construction, so a cached one gives the answers a new one would.

Resolving the names costs a scalar ``predict`` about 5 % of its time, so a call that names both the
model and the hardware by strings that resolved to *shipped* specs (read once from the package, never
from a file a user may edit) is also found by those strings and the other arguments as given
(:data:`_by_name`); names of files and of specs registered from files always take the path above.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..formats import resolve_formats
from ..hardware import load_accelerator
from ..modelspec import load_model
from .step import StepModel, check_system_size

#: Most StepModels kept (least recently used dropped first).
MAX_ENTRIES = 64

_entries: OrderedDict[tuple, tuple[tuple, StepModel]] = OrderedDict()
#: The same StepModels by the names and arguments as given, for shipped model and hardware ids only.
_by_name: OrderedDict[tuple, StepModel] = OrderedDict()
_lock = threading.Lock()


def _key(value: Any) -> tuple[str, Any]:
    """Strings, numbers and None by type and value (``tp=2.0`` is not ``tp=2``), anything else by identity."""
    if value is None or isinstance(value, (str, int, float)):
        return type(value).__name__, value
    return "id", id(value)


def cached_step_model(model, hardware, **options: Any) -> StepModel:
    """A :class:`StepModel` for these arguments, built once and reused while it stays in the cache.

    Parameters
    ----------
    model, hardware
        As for :class:`StepModel`; resolved first and keyed by the identity of the spec objects.
    **options
        The other keyword arguments of :class:`StepModel`.

    Returns
    -------
    StepModel
        Shared between calls with equal arguments: do not modify it.
    """
    name_key = _name_key(model, hardware, options)
    if name_key is not None:
        sm = _by_name.get(name_key)
        if sm is not None:
            return sm
    check_system_size(hardware, options.get("tp", 1), options.get("pp", 1), options.get("dp_attention", 1))
    model_spec, accelerator = load_model(model), load_accelerator(hardware)
    if not options.get("weights") or not options.get("kv_cache"):  # a repo id's format suffix counts
        options["weights"], options["kv_cache"] = resolve_formats(model, model_spec, options.get("weights"),
                                                                  options.get("kv_cache"))
    key = (id(model_spec), id(accelerator), *((name, _key(v)) for name, v in sorted(options.items())))
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            _entries.move_to_end(key)
        sm = entry[1] if entry is not None else None
    if sm is None:
        sm = StepModel(model_spec, accelerator, **options)
    with _lock:  # the entry holds what is keyed by identity, so that no identity is reused meanwhile
        _entries[key] = ((model_spec, accelerator, tuple(options.values())), sm)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
        if name_key is not None and _shipped(model_spec, hardware):
            _by_name[name_key] = sm
            while len(_by_name) > MAX_ENTRIES:
                _by_name.popitem(last=False)
    return sm


def _name_key(model: Any, hardware: Any, options: dict[str, Any]) -> tuple | None:
    """The key of :data:`_by_name`: both names and every option's type and value, or None when an
    argument is not a string (model, hardware) or not a string, number or None (the options)."""
    if type(model) is not str or type(hardware) is not str:
        return None
    key = [model, hardware]
    for name, value in options.items():
        if value is not None and type(value) not in (str, int, float, bool):
            return None
        key += (name, type(value), value)
    return tuple(key)


def _shipped(model_spec, hardware: str) -> bool:
    """Whether the model (resolved already) is a spec shipped with the package and the hardware name is a
    shipped id or alias: names that give the same objects on every call (no file is read here)."""
    from ..hardware.registry import _catalogue as hardware_catalogue
    from ..hardware.registry import _looks_like_path
    from ..modelspec.registry import _catalogue as model_catalogue

    if model_catalogue()[0].get(model_spec.id) is not model_spec:
        return False
    specs, aliases = hardware_catalogue()
    key = hardware.strip()  # as load_hardware looks a name up (a name that looks like a path is a file)
    return not _looks_like_path(key) and (key in specs or key.lower() in aliases)


def clear() -> None:
    """Drop every cached StepModel."""
    with _lock:
        _entries.clear()
        _by_name.clear()
