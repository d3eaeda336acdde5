"""Serving under load: continuous-batching simulation, open and closed loop, SLOs and goodput.

>>> from perfmodel.serving import simulate, Workload, SLO
>>> from perfmodel.serving.stand_in import RooflineStepModel
>>> w = Workload.fixed(1024, 256, rate=4.0, slo={"ttft": "2 s", "tpot": "50 ms"})
>>> res = simulate(RooflineStepModel.llama_8b_h100(), w, engine="vllm", requests=200, seed=1)
>>> res.summary()["completed"]
200

See ``docs/serving.md`` for the definitions, the scheduler model and the engine presets.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (perfmodel._lazy)
    from ..engine.profile import EngineProfile, list_engines, load_engine
    from .protocol import StepModelLike
    from .result import SimulationResult
    from .reuse import expected_hit_rate
    from .search import LoadSearch, max_load
    from .simulator import Disaggregated, simulate
    from .steady_disagg import steady_state_disagg
    from .steady_state import steady_state
    from .workload import SLO, Workload, load_workload

__all__ = [
    "SLO", "Disaggregated", "EngineProfile", "LoadSearch", "SimulationResult", "StepModelLike", "Workload",
    "expected_hit_rate", "list_engines", "load_engine", "load_workload", "max_load", "simulate", "steady_state",
    "steady_state_disagg",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
