"""Heterogeneous placement: pools of devices, prefill/decode disaggregation, attention–FFN split.

Load a deployment (:func:`load_deployment`), predict it (:func:`predict_deployment`), size an SRAM
FFN pool (:func:`min_devices_for_weights`), balance prefill and decode pools (:func:`pd_balance`),
see whether an attention–FFN split pays (:func:`offload_analysis`) and how TP/EP scale
(:func:`scaling_curve`). The modelling rules are in each module's docstring and in
``docs/placement.md``.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (perfmodel._lazy)
    from .balance import PDBalance, pd_balance
    from .disagg import kv_transfer_time
    from .load import load_deployment
    from .lpu_memory import min_devices_for_weights, part_weight_bytes
    from .offload import OffloadAnalysis, offload_analysis
    from .placement import DeploymentPlan
    from .power import PoolPower, pool_power
    from .predict import predict_deployment
    from .result import DeploymentPrediction, PoolResult
    from .scaling import scaling_curve
    from .schema import Deployment, LinkSpec, Options, PlacementSpec, PoolSpec, PrecisionSpec
    from .split import ExchangeLink, exchange_message, pipelined_layers_time, split_step

__all__ = [
    "Deployment", "DeploymentPlan", "DeploymentPrediction", "ExchangeLink", "LinkSpec", "OffloadAnalysis",
    "Options", "PDBalance", "PlacementSpec", "PoolPower", "PoolResult", "PoolSpec", "PrecisionSpec",
    "exchange_message", "kv_transfer_time", "load_deployment", "min_devices_for_weights",
    "offload_analysis", "part_weight_bytes", "pd_balance", "pipelined_layers_time", "pool_power",
    "predict_deployment", "scaling_curve", "split_step",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
