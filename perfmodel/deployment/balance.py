"""Prefill/decode disaggregation: the prefill:decode device ratio that balances the two pools.

Serving λ requests/s needs :math:`N_p = λ\\,ISL / r_p` prefill devices and
:math:`N_d = λ\\,(OSL-1) / r_d` decode devices, with r_p the prefill tokens/s per device and r_d
the decode tokens/s per device, so

.. math:: \\frac{N_p}{N_d} = \\frac{ISL \\cdot r_d}{(OSL - 1)\\, r_p}

The KV transfer between the pools is in :mod:`perfmodel.deployment.disagg`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.predict import predict
from .predict import _plan, predict_deployment


@dataclass(frozen=True)
class PDBalance:
    """Throughput per device of each phase and the prefill:decode device ratio that balances them.

    Attributes
    ----------
    prefill_tokens_per_s_per_device : ndarray
        r_p: prompt tokens per second per prefill device at ``prefill_batch`` prompts per step.
    decode_tokens_per_s_per_device : ndarray
        r_d: output tokens per second per decode device at ``batch`` sequences (split: attention
        and FFN devices both counted).
    prefill_to_decode_devices : ndarray
        N_p / N_d (see the module docstring).
    """

    isl: np.ndarray
    osl: np.ndarray
    batch: np.ndarray
    prefill_batch: np.ndarray
    prefill_tokens_per_s_per_device: np.ndarray
    decode_tokens_per_s_per_device: np.ndarray
    prefill_to_decode_devices: np.ndarray

    def to_dataframe(self) -> pd.DataFrame:
        cols = {k: np.ravel(v) for k, v in self.__dict__.items()}
        n = max(len(v) for v in cols.values())
        return pd.DataFrame({k: np.broadcast_to(v, (n,)) for k, v in cols.items()})


def pd_balance(deployment, isl, osl, batch, prefill_batch=1) -> PDBalance:
    """Prefill:decode device ratio that balances throughput for an ISL/OSL mix.

    Parameters
    ----------
    deployment : str | dict | Deployment | DeploymentPlan
        Any deployment; its prefill pool sets r_p, its decode pool(s) r_d.
    isl, osl, batch : array_like
        Prompt and output lengths, decoding sequences per decode instance.
    prefill_batch : array_like
        Prompts per prefill step on one prefill replica (default 1).

    Returns
    -------
    PDBalance
    """
    plan = _plan(deployment)
    b, i, o, pb = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(batch, isl, osl, prefill_batch))
    pre = predict(None, None, isl=i, osl=o, batch=pb, step_model=plan.prefill_sm)
    r_p = pb * i / pre.ttft_s / plan.prefill_pool.replica_devices
    dec = predict_deployment(plan, isl=i, osl=o, batch=b)
    r_d = b / dec.tpot_s / plan.decode_devices
    with np.errstate(divide="ignore"):
        ratio = np.where(o > 1, i * r_d / (np.maximum(o - 1.0, 1e-300) * r_p), np.inf)
    return PDBalance(i, o, b, pb, r_p, r_d, ratio)
