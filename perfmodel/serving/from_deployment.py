"""Serving pools from a deployment file (:mod:`perfmodel.deployment`): aggregated or P/D-disaggregated.

An aggregated deployment gives one step model and its replica count; a prefill/decode-disaggregated one
gives a :class:`~perfmodel.serving.simulator.Disaggregated` pair whose KV link is the deployment's
``kv_transfer`` link. The link's bandwidth is per device and per direction, and the prefill replica's
devices send their shares of the KV cache in parallel, so one request's transfer gets
``bandwidth × devices per prefill replica``. Attention–FFN split deployments are not simulated here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError


def pools_from_deployment(source: str | Path | Any) -> tuple[Any, int]:
    """Return ``(step_model or Disaggregated, replicas)`` for :func:`perfmodel.serving.simulate`.

    Parameters
    ----------
    source : str | Path | Deployment
        Deployment YAML path or loaded deployment.

    Raises
    ------
    ConfigError
        The deployment splits attention and FFN across pools.
    """
    from ..deployment import load_deployment
    from ..deployment.placement import DeploymentPlan

    dep = load_deployment(source)
    plan = DeploymentPlan(dep)
    if getattr(plan, "split", False):
        raise ConfigError(f"--deployment: mode {plan.mode!r} splits attention and FFN across pools; the "
                          f"serving simulator handles aggregated and prefill/decode-disaggregated "
                          f"deployments only")
    if plan.mode == "aggregated" or plan.prefill_pool is plan.attention_pool:
        return plan.decode_sm, int(plan.decode_replicas)
    from .simulator import Disaggregated

    link = plan.kv_link
    if link is None:
        raise ConfigError("--deployment: a disaggregated deployment needs a kv_transfer link")
    return (Disaggregated(prefill=plan.prefill_sm, decode=plan.decode_sm,
                          prefill_replicas=int(plan.prefill_replicas),
                          decode_replicas=int(plan.decode_replicas),
                          link_bandwidth=float(link.bandwidth) * int(plan.prefill_sm.devices),
                          link_alpha=float(link.alpha)), 1)
