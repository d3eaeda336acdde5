"""TP / EP scaling curves: per-user speed-up and per-device throughput against device count.

For each device count d, one replica of d devices decodes a fixed ``batch`` of sequences:

- per-user speed-up :math:`s(d) = TPOT(d_0) / TPOT(d)` against the smallest count d_0, next to the
  ideal :math:`d / d_0`; ``scaling_efficiency`` = s / ideal. Weights and KV reads split d ways, but
  collectives (α + S/B per step, 2 per layer with TP) and the unsplit parts do not, so the speed-up
  is sub-linear: "runs on four cards" is not "each user is four times faster";
- per-device throughput :math:`B / TPOT(d) / d`;
- ``comm_share``: collectives' share of the decode step (the coordination overhead).

Parallelism: ``tp`` (tp = d; MoE experts tensor-split), ``ep`` (MoE: tp = 1, attention data-parallel
over d ranks, experts over d ranks) or ``tp-ep`` (tp = d, experts over d ranks).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .. import checks
from ..core.ops import StepShape
from ..core.predict import predict
from ..core.step import StepModel
from ..errors import ConfigError


def _layout(parallelism: str, d: int) -> dict[str, int]:
    if parallelism == "tp":
        return {"tp": d}
    if parallelism == "ep":
        return {"tp": 1, "dp_attention": d, "ep": d}
    if parallelism == "tp-ep":
        return {"tp": d, "ep": d}
    raise ConfigError(f"parallelism: expected 'tp', 'ep' or 'tp-ep', got {parallelism!r}")


def scaling_curve(model, hardware, devices: Sequence[int] = (1, 2, 4, 8), isl: int = 1024, osl: int = 128,
                  batch: int = 1, parallelism: str = "tp", weights: str | None = None,
                  activations: str | None = None, kv_cache: str | None = None, efficiency="calibrated") -> pd.DataFrame:
    """Per-user speed-up and per-device throughput against the number of devices.

    Parameters
    ----------
    model, hardware : str
        Model and accelerator/system ids.
    devices : sequence of int
        Strictly increasing device counts.
    isl, osl, batch : int
        One operating point (batch = sequences per replica).
    parallelism : {"tp", "ep", "tp-ep"}
    weights, activations, kv_cache, efficiency :
        As in :func:`perfmodel.predict` (default formats: :mod:`perfmodel.formats`).

    Returns
    -------
    pandas.DataFrame
        Columns devices, layout, tpot_s, per_user_tokens_per_s, speedup, ideal_speedup,
        scaling_efficiency, decode_tokens_per_s, decode_tokens_per_s_per_device, comm_s_per_token,
        comm_share, fits.
    """
    ds = [checks.count(d, "devices") for d in devices]
    if not ds or any(d < 1 for d in ds) or any(b <= a for a, b in zip(ds, ds[1:], strict=False)):
        raise ConfigError(f"devices: must be strictly increasing positive integers, got {list(devices)!r}")
    rows = []
    for d in ds:
        sm = StepModel(model, hardware, weights=weights, activations=activations, kv_cache=kv_cache,
                       efficiency=efficiency, **_layout(parallelism, d))
        p = predict(None, None, isl=isl, osl=osl, batch=batch, step_model=sm)
        tpot = float(np.ravel(p.tpot_s)[0])
        comm = float(np.ravel(sm.breakdown(StepShape.make(n_decode=batch, context=isl + 0.5 * osl)).comm_total)[0])
        rows.append({"devices": d, "layout": sm.parallel.label(), "tpot_s": tpot,
                     "per_user_tokens_per_s": 1.0 / tpot, "decode_tokens_per_s": batch / tpot,
                     "decode_tokens_per_s_per_device": batch / tpot / d, "comm_s_per_token": comm,
                     "comm_share": comm / tpot, "fits": bool(np.ravel(p.fits)[0])})
    df = pd.DataFrame(rows)
    df["speedup"] = df["tpot_s"].iloc[0] / df["tpot_s"]
    df["ideal_speedup"] = df["devices"] / df["devices"].iloc[0]
    df["scaling_efficiency"] = df["speedup"] / df["ideal_speedup"]
    order = ["devices", "layout", "tpot_s", "per_user_tokens_per_s", "speedup", "ideal_speedup",
             "scaling_efficiency", "decode_tokens_per_s", "decode_tokens_per_s_per_device", "comm_s_per_token",
             "comm_share", "fits"]
    return df[order]
