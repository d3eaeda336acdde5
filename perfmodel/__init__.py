"""perfmodel: first-principles LLM inference performance on GPUs, LPUs and the links between them."""

from .errors import ConfigError, PerfmodelError, SpecError, UnitError, UnknownNameError
from .hardware import list_hardware, load_accelerator, load_hardware, load_link
from .precision import Precision, dtype
from .units import Q_, to_si, ureg

__version__ = "0.1.0"

__all__ = [
    "ConfigError", "PerfmodelError", "Precision", "Q_", "SpecError", "UnitError", "UnknownNameError",
    "dtype", "list_hardware", "load_accelerator", "load_hardware", "load_link", "to_si", "ureg",
]
