"""Hardware specs: accelerators, links and systems, with sources."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (perfmodel._lazy)
    from .registry import list_hardware, load_accelerator, load_hardware, load_link, read_yaml
    from .schema import Accelerator, Figure, Link, MemoryLevel, Port, System, parse_spec

__all__ = [
    "Accelerator", "Figure", "Link", "MemoryLevel", "Port", "System", "list_hardware",
    "load_accelerator", "load_hardware", "load_link", "parse_spec", "read_yaml",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
