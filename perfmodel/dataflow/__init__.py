"""Statically scheduled SRAM / dataflow machines (Groq LPU and LP30, Cerebras WSE-3, SambaNova SN40L).

:mod:`.arch` (what each architecture does, sourced, one fitted parameter), :mod:`.memory` (per-chip
memory by tier, sharded tables, explicit spill), :mod:`.step` (pipelined decode and prefill, no
kernel-launch terms), :mod:`.layout` (fastest layout for a chip count), :mod:`.speculative` (a separate
draft model on the same chips, a what-if), :mod:`.public` (public per-user speeds, the fit of η),
:mod:`.releases` (whether one η with speculative decoding serves two software releases).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (perfmodel._lazy)
    from .arch import DataflowArch, is_dataflow, list_archs, load_arch
    from .layout import best_layout, search_layouts
    from .memory import ChipMemory, chip_memory
    from .step import DataflowModel, DataflowPrediction, predict_dataflow

__all__ = ["ChipMemory", "DataflowArch", "DataflowModel", "DataflowPrediction", "best_layout", "chip_memory",
           "is_dataflow", "list_archs", "load_arch", "predict_dataflow", "search_layouts"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
