"""Every fit: the efficiency profiles against measured per-op latencies, and the serving engines'
terms against measured serving runs.

* :mod:`~perfmodel.calibration.ops_data` reads the per-op tables (SI units, accelerator ids, split);
* :mod:`~perfmodel.calibration.fit_ops` fits the profiles ``perfmodel/data/calibration/*.yaml``
  (``python -m perfmodel.calibration.fit_ops --out perfmodel/data/calibration``);
* :mod:`~perfmodel.calibration.op_validation` predicts each measured row with a profile and
  summarises the error;
* :mod:`~perfmodel.calibration.engine_fit` fits the engine terms (:mod:`perfmodel.engine.calibration`)
  on measured serving runs and cross-validates them; :mod:`~perfmodel.calibration.engine_calibrate`
  does it end to end and writes ``perfmodel/data/engines_fit/*.yaml`` with provenance.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (perfmodel._lazy)
    from .ops_data import (
        DTYPE_TO_COMPUTE,
        DTYPE_TO_FORMAT,
        SYSTEM_TO_ACCELERATOR,
        TABLES,
        default_ops_dir,
        device,
        read_table,
        table_kind,
        tidy,
    )

__all__ = ["DTYPE_TO_COMPUTE", "DTYPE_TO_FORMAT", "SYSTEM_TO_ACCELERATOR", "TABLES", "default_ops_dir",
           "device", "read_table", "table_kind", "tidy"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
