"""Paths of the measurement files shipped in ``perfmodel/data/validation`` (provenance in its README)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import unknown_name

#: Shipped files by short name.
FILES = {"serving": "serving_measured.csv", "published": "published_end_to_end_clean.csv"}


def shipped_path(name: str = "serving") -> Path:
    """Path of a shipped measurement file: ``serving`` or ``published``."""
    if name not in FILES:
        raise unknown_name("shipped validation data", name, list(FILES))
    return Path(str(resources.files("perfmodel") / "data" / "validation" / FILES[name]))
