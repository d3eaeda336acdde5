"""Planning: sweeps, Pareto fronts, capacity plans, cost and power, crossovers and vendor-claim checks.

Layer 3 of perfmodel (composers over :func:`perfmodel.predict`, :mod:`perfmodel.serving` and
:mod:`perfmodel.deployment`); see ``docs/planning.md`` for the equations, defaults and a worked
vendor-claim analysis.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (perfmodel._lazy)
    from .claims import Claim, ClaimCheck, check_claim, list_claims, load_claim
    from .cost import (
        PowerBasis,
        TotalCost,
        power_basis,
        tokens_per_s_per_mw,
        usd,
        usd_per_hour,
        usd_per_million_tokens,
    )
    from .crossover import (
        agent_chain,
        chain_time,
        completion_time,
        max_concurrency_for_speed,
        output_crossover,
        prefill_bottleneck_isl,
    )
    from .executor import map_tasks, serving_sweep
    from .launch import LaunchConfig, LaunchSpec, launch_config
    from .pareto import AXIS_LABELS, axis_label, pareto_front, pareto_mask, plot_fronts, plot_pareto
    from .plan import Candidate, PlanResult, enumerate_candidates, plan
    from .sweep import COLUMNS as SWEEP_COLUMNS
    from .sweep import sweep, sweep_deployments

__all__ = [
    "AXIS_LABELS", "Candidate", "Claim", "ClaimCheck", "LaunchConfig", "LaunchSpec", "PlanResult", "PowerBasis", "SWEEP_COLUMNS", "TotalCost", "agent_chain",
    "axis_label", "chain_time", "check_claim", "completion_time", "enumerate_candidates", "launch_config", "list_claims",
    "load_claim", "map_tasks",
    "max_concurrency_for_speed", "output_crossover", "pareto_front", "pareto_mask", "plan", "plot_fronts",
    "plot_pareto", "power_basis", "prefill_bottleneck_isl", "serving_sweep", "sweep", "sweep_deployments", "tokens_per_s_per_mw",
    "usd", "usd_per_hour", "usd_per_million_tokens",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
