"""perfmodel: first-principles LLM inference performance on GPUs, LPUs and the links between them.

Layers (as in the design notes): plain numpy functions (:mod:`perfmodel.core.roofline`), spec-bound
objects (:class:`StepModel`), and composers (:func:`predict`, serving, planning).
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

if TYPE_CHECKING:  # the public names; imported on first use (perfmodel._lazy), seen by type checkers and docs
    from .core.comm import (
        all_gather_time,
        all_reduce_time,
        all_to_all_time,
        p2p_time,
        reduce_scatter_time,
        round_trips_time,
    )
    from .core.efficiency import DATASHEET, Efficiency, load_profile, profile_for
    from .core.predict import Prediction, predict
    from .core.roofline import crossover_tokens, e2e_latency, message_time, offload_pays, roofline_time
    from .core.step import StepModel
    from .dataflow import DataflowModel, best_layout, predict_dataflow, search_layouts
    from .deployment import (
        Deployment,
        DeploymentPrediction,
        load_deployment,
        min_devices_for_weights,
        offload_analysis,
        pd_balance,
        predict_deployment,
        scaling_curve,
    )
    from .engine.engine import Engine
    from .errors import ConfigError, PerfmodelError, SpecError, UnitError, UnknownNameError
    from .hardware import list_hardware, load_accelerator, load_hardware, load_link
    from .modelspec import ModelSpec, list_models, load_model
    from .planning import (
        TotalCost,
        check_claim,
        output_crossover,
        pareto_front,
        plan,
        power_basis,
        sweep,
        sweep_deployments,
        tokens_per_s_per_mw,
        usd_per_million_tokens,
    )
    from .precision import Precision, dtype
    from .serving import (
        SLO,
        EngineProfile,
        Workload,
        load_engine,
        load_workload,
        max_load,
        simulate,
        steady_state,
    )
    from .serving.estimate import PrefillPool, estimate
    from .units import Q_, to_si, ureg

__version__ = "0.1.0"

__all__ = [
    "DATASHEET", "ConfigError", "Deployment", "DeploymentPrediction", "load_deployment",
    "min_devices_for_weights", "offload_analysis", "pd_balance", "predict_deployment", "scaling_curve", "Efficiency", "ModelSpec", "PerfmodelError", "Precision", "Prediction",
    "Q_", "SpecError", "StepModel", "UnitError", "UnknownNameError", "all_gather_time", "all_reduce_time",
    "all_to_all_time", "crossover_tokens", "dtype", "e2e_latency", "list_hardware", "list_models",
    "load_accelerator", "load_hardware", "load_link", "load_model", "load_profile", "message_time",
    "offload_pays", "p2p_time", "predict", "profile_for", "reduce_scatter_time", "roofline_time",
    "round_trips_time", "to_si", "ureg",
    # statically scheduled SRAM / dataflow machines
    "DataflowModel", "best_layout", "predict_dataflow", "search_layouts",
    # serving
    "SLO", "Engine", "EngineProfile", "PrefillPool", "Workload", "estimate", "load_engine", "load_workload", "max_load", "simulate", "steady_state",
    # planning
    "TotalCost", "check_claim", "output_crossover", "pareto_front", "plan", "power_basis", "sweep",
    "sweep_deployments", "tokens_per_s_per_mw", "usd_per_million_tokens",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
