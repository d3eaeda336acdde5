"""Does an attention–FFN split pay? Local FFN time against remote FFN time plus exposed exchange.

For the decode step at the midpoint context and the full batch:

- :math:`T_{local}`: the FFN/MoE part run on the attention pool itself (its attention layout, its
  own collectives), as if nothing were delegated;
- :math:`T_{remote}`: the FFN/MoE part on the FFN pool;
- :math:`T_{comm} = 2L(\\alpha + S/(B \\min(N_a, N_f)))`: the exchange without overlap;
- overlap: the share of :math:`T_{comm}` hidden by micro-batch pipelining,
  :math:`1 - T_{exposed}/T_{comm}` (0 for one micro-batch).

The split pays when :math:`T_{local} > T_{remote} + (1 - \\text{overlap})\\,T_{comm}`
(:func:`perfmodel.core.roofline.offload_pays`). This compares FFN placement only; it does not credit
the overlap of attention with FFN compute that micro-batching also brings, nor the memory the split
frees on the attention pool (``local_fits`` says whether the FFN weights would fit there at all).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.memory import kv_bytes_per_token_device, weights_per_device
from ..core.ops import StepShape
from ..core.roofline import offload_pays
from ..errors import ConfigError
from .split import split_step


@dataclass(frozen=True)
class OffloadAnalysis:
    """Times per decode step [s] and the verdict, arrays over operating points (module docstring)."""

    batch: np.ndarray
    t_local_ffn_s: np.ndarray
    t_remote_ffn_s: np.ndarray
    t_comm_s: np.ndarray
    t_comm_exposed_s: np.ndarray
    overlap: np.ndarray
    pays: np.ndarray
    local_fits: np.ndarray
    tpot_local_s: np.ndarray
    tpot_split_s: np.ndarray

    def to_dataframe(self) -> pd.DataFrame:
        shape = np.broadcast_shapes(*(np.shape(v) for v in self.__dict__.values()))
        return pd.DataFrame({k: np.broadcast_to(v, shape).ravel() for k, v in self.__dict__.items()})

    def __repr__(self) -> str:
        return "OffloadAnalysis (pays: T_local > T_remote + exposed T_comm)\n" + self.to_dataframe().to_string(
            index=False)


def offload_analysis(deployment, isl=1024, osl=128, batch=1) -> OffloadAnalysis:
    """Whether delegating decode FFN to the FFN pool shortens the decode step.

    Parameters
    ----------
    deployment : str | dict | Deployment | DeploymentPlan
        A deployment with an attention–FFN split.
    isl, osl, batch : array_like

    Raises
    ------
    ConfigError
        The deployment has no attention–FFN split.
    """
    from .predict import _plan

    plan = _plan(deployment)
    if not plan.split:
        raise ConfigError(f"offload_analysis needs an attention–FFN split; this deployment is {plan.mode!r}")
    asm, fsm, link = plan.attention_sm, plan.ffn_sm, plan.activation_link
    assert asm is not None and fsm is not None and link is not None
    b, i, o = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(batch, isl, osl))
    ctx = i + 0.5 * o
    shape = StepShape.make(n_decode=b, context=ctx)
    t_local = asm.breakdown_part(shape, "ffn").total
    t_remote = fsm.breakdown_part(shape, "ffn").total
    n_micro = plan.deployment.options.micro_batches
    step = split_step(asm, fsm, link, b, ctx, plan.attention_pool.count, plan.ffn_pool.count, n_micro)
    serial = split_step(asm, fsm, link, b, ctx, plan.attention_pool.count, plan.ffn_pool.count, 1)
    t_comm = serial.exchange_exposed
    with np.errstate(divide="ignore", invalid="ignore"):
        overlap = np.clip(np.where(t_comm > 0, 1.0 - step.exchange_exposed / t_comm, 0.0), 0.0, 1.0)
    par, prec, model = asm.parallel, asm.precision, asm.model
    used = weights_per_device(model, par, prec) + b / par.dp_attention * kv_bytes_per_token_device(
        model, par, prec, i + o)
    local_fits = used <= asm.hardware.memory_capacity * (1.0 - asm.reserve)
    return OffloadAnalysis(
        batch=b, t_local_ffn_s=np.asarray(t_local), t_remote_ffn_s=np.asarray(t_remote), t_comm_s=t_comm,
        t_comm_exposed_s=step.exchange_exposed, overlap=overlap,
        pays=offload_pays(t_local, t_remote, t_comm, overlap), local_fits=local_fits,
        tpot_local_s=asm.breakdown(shape).total, tpot_split_s=step.total)
