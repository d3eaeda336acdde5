"""Loading hardware specs: shipped ids (``perfmodel/hardware_specs/**/*.yaml``) or user files."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any

from .. import fileio
from ..errors import SpecError, unknown_name
from .schema import Accelerator, HardwareSpec, Link, System, parse_spec


def read_yaml(path: str | Path, text: str | None = None) -> Any:
    """Read YAML safely (no Python object construction) with errors naming the file and line.

    See :func:`perfmodel.fileio.read_yaml` (duplicate keys, directories, binary files are errors).
    """
    return fileio.read_yaml(path, text)


def _shipped_files() -> list[tuple[str, str]]:
    root = resources.files("perfmodel.hardware_specs")
    out = []

    def walk(node: Any, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith((".yaml", ".yml")):
                out.append((f"{prefix}{child.name}", child.read_text(encoding="utf-8")))

    walk(root, "")
    return sorted(out)


@functools.lru_cache(maxsize=1)
def _catalogue() -> tuple[dict[str, HardwareSpec], dict[str, str]]:
    """All shipped specs by id, plus an alias -> id map. Read once; specs are immutable."""
    specs: dict[str, HardwareSpec] = {}
    aliases: dict[str, str] = {}
    for name, text in _shipped_files():
        spec = parse_spec(read_yaml(f"hardware_specs/{name}", text), f"hardware_specs/{name}", from_file=True)
        if spec.id in specs:
            raise SpecError(f"hardware_specs/{name}: duplicate id {spec.id!r}")
        specs[spec.id] = spec
        for a in spec.aliases:
            aliases[a.lower()] = spec.id
    return specs, aliases


def list_hardware(kind: str | None = None) -> list[HardwareSpec]:
    """Shipped specs, optionally filtered by ``kind`` (accelerator, link, system)."""
    specs = list(_catalogue()[0].values())
    if kind is not None:
        if kind not in ("accelerator", "link", "system"):
            raise SpecError(f"kind: expected accelerator, link or system, got {kind!r}")
        specs = [s for s in specs if s.kind == kind]
    return sorted(specs, key=lambda s: (s.kind, s.id))


def _looks_like_path(name: str) -> bool:
    return name.endswith((".yaml", ".yml")) or "/" in name or "\\" in name


#: User spec files loaded in this process, by id: once ``my-gpu.yaml`` has been read, ``"my-gpu"`` names it
#: wherever a hardware name is accepted (sweeps, plans, prices, power bases). Shipped ids always win.
_USER_SPECS: dict[str, HardwareSpec] = {}
#: The file behind each of those ids and its (mtime [ns], size [B]) when read: a file the user has edited
#: since is read again when its id is next used.
_USER_FILES: dict[str, tuple[Path, tuple[int, int] | None]] = {}


def _stamp(path: Path) -> tuple[int, int] | None:
    """(mtime [ns], size [B]) of a file, None if it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _remember(spec: HardwareSpec, path: Path) -> None:
    """Register a user file's spec under its id, unless a shipped spec has that id or alias."""
    specs, aliases = _catalogue()
    key = spec.id.lower()
    if spec.id in specs or key in aliases:
        return  # a modified copy of a shipped file: the object is used as given, its id keeps naming the shipped one
    _USER_SPECS[key] = spec
    _USER_FILES[key] = (path, _stamp(path))


def _remembered(key: str) -> HardwareSpec:
    """The spec a user file registered under ``key``, read again if the file changed since."""
    spec = _USER_SPECS[key]
    path, stamp = _USER_FILES.get(key, (None, None))
    if path is None or _stamp(path) == stamp:
        return spec
    try:
        fresh = load_hardware(path)  # reads and registers it again
    except SpecError as exc:
        raise SpecError(f"hardware {key!r} was read from a file that has changed since: {exc}") from None
    if fresh.id.lower() != key:
        _USER_SPECS.pop(key, None)
        _USER_FILES.pop(key, None)
        raise SpecError(f"hardware {key!r}: {path} named it when it was read, but now names {fresh.id!r}")
    return fresh


def load_hardware(name_or_path: str | Path | HardwareSpec, kind: str | None = None) -> HardwareSpec:
    """Return a hardware spec by shipped id, alias (case-insensitive) or path to a YAML file.

    Parameters
    ----------
    name_or_path : str | Path | HardwareSpec
        ``"h100-sxm"``, ``"H100"`` (alias), ``"path/to/my-gpu.yaml"``, or a spec (returned as is). A file
        read once is then also found by its id (``"my-gpu"``) in this process, unless a shipped spec has
        that id, and read again if it has changed since (modification time or size); a spec passed as
        an object is not registered.
    kind : str, optional
        Require this kind (``accelerator``, ``link`` or ``system``).

    Raises
    ------
    UnknownNameError
        Unknown id; the message suggests the closest shipped ids.
    SpecError
        Invalid file, or a spec of another kind than requested.
    """
    if isinstance(name_or_path, (Accelerator, Link, System)):
        spec = name_or_path
    elif isinstance(name_or_path, Path) or _looks_like_path(str(name_or_path)):
        spec = parse_spec(read_yaml(name_or_path), str(name_or_path), from_file=True)
        _remember(spec, Path(name_or_path).expanduser().absolute())
    else:
        specs, aliases = _catalogue()
        key = str(name_or_path).strip()
        ident = key if key in specs else aliases.get(key.lower(), key.lower())
        if ident in specs:
            spec = specs[ident]
        elif key.lower() in _USER_SPECS:
            spec = _remembered(key.lower())
        else:
            pool = [s.id for s in specs.values() if kind is None or s.kind == kind]
            pool += [s.id for s in _USER_SPECS.values() if kind is None or s.kind == kind]
            raise unknown_name(kind or "hardware", key, pool)
    if kind is not None and spec.kind != kind:
        raise SpecError(f"{spec.id!r} is a {spec.kind}, expected a {kind}")
    return spec


def load_accelerator(name: str | Path | Accelerator) -> Accelerator:
    """Like :func:`load_hardware` with ``kind='accelerator'``; a system id gives its accelerator."""
    spec = load_hardware(name)
    if isinstance(spec, System):
        spec = load_hardware(spec.accelerator, "accelerator")
    if not isinstance(spec, Accelerator):
        raise SpecError(f"{spec.id!r} is a {spec.kind}, expected an accelerator or a system")
    return spec


def load_link(name: str | Path | Link) -> Link:
    """Like :func:`load_hardware` with ``kind='link'``."""
    spec = load_hardware(name, "link")
    assert isinstance(spec, Link)
    return spec
