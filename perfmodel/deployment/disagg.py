"""Prefill/decode disaggregation: the KV-cache transfer between the pools.

**KV transfer.** After (or while) the prefill pool fills the KV cache of a prompt of ISL tokens, it is
sent to the decode-attention pool. Per device the link carries the larger of what a sender sends and
what a receiver receives, S (see :meth:`DeploymentPlan.kv_send_recv_bytes`):

- ``after_prefill``: all of it after the prefill, exposed: :math:`t_{kv} = \\alpha + S/B`;
- ``layerwise``: layer l is sent while layers > l are prefilled; with per-layer message
  :math:`s = \\alpha + S/(L B)` and prefill time per layer :math:`p = T_{pre}/L`, a two-stage pipeline
  over L layers exposes :math:`t_{kv} = \\max(s,\\; L s - (L-1) p)` beyond the prefill: only the last
  layer's share when the link keeps up, the shortfall otherwise.

TTFT = prefill time + t_kv: the decode pool emits the first token in most disaggregated servers.
Where the prefill pool streams it directly, subtract ``kv_transfer_s`` from TTFT.

The prefill:decode device ratio that balances the pools is in :mod:`perfmodel.deployment.balance`.
"""

from __future__ import annotations

import numpy as np

from ..core.roofline import message_time
from .split import ExchangeLink


def kv_transfer_time(bytes_per_device, link: ExchangeLink, layers: int, prefill_time,
                     mode: str = "after_prefill") -> np.ndarray:
    """KV-transfer time exposed after the prefill [s] (see the module docstring).

    Parameters
    ----------
    bytes_per_device : array_like
        S [B], the larger of the per-sender and per-receiver bytes.
    link : ExchangeLink
        Per-direction, per-device bandwidth B and per-message α.
    layers : int
        L.
    prefill_time : array_like
        T_pre [s].
    mode : {"after_prefill", "layerwise"}
    """
    s = np.asarray(bytes_per_device, dtype=float)
    if mode == "after_prefill":
        return message_time(s, link.bandwidth, link.alpha)
    if mode != "layerwise":
        raise ValueError(f"mode: expected 'after_prefill' or 'layerwise', got {mode!r}")
    per_layer = message_time(s / layers, link.bandwidth, link.alpha)
    return np.maximum(per_layer, layers * per_layer - (layers - 1) * np.asarray(prefill_time) / layers)


def kv_transfer_link(prefill_model, total_devices: int) -> tuple[ExchangeLink, int]:
    """The link a request's KV cache crosses between a prefill and a decode replica, and its senders.

    The cache leaves the tp × pp devices of the prefill rank that holds it (with attention DP a
    sequence's KV lives on one rank) in parallel, each over its own port: the scale-up link when both
    pools fit in one scale-up domain (an NVL72 rack), else the scale-out NIC; α is that link's.

    Parameters
    ----------
    prefill_model : StepModel
        A prefill replica (hardware and layout).
    total_devices : int
        Devices of both pools together.

    Returns
    -------
    (ExchangeLink, int)
        Per-device bandwidth [B/s] and α [s]; the number of sending devices.

    Raises
    ------
    PerfmodelError
        The accelerator declares neither port.
    """
    from ..errors import PerfmodelError
    from ..hardware import load_link

    hw = prefill_model.hardware
    up = hw.scale_up
    port = up if up is not None and (up.domain is None or total_devices <= up.domain) else hw.scale_out
    if port is None:
        port = up
    if port is None:
        raise PerfmodelError(f"{hw.id}: no scale-up or scale-out port in its spec to move the KV cache")
    link = load_link(port.link)
    bandwidth = port.bandwidth.value if port.bandwidth else link.bandwidth.value
    senders = prefill_model.parallel.tp * prefill_model.parallel.pp
    return ExchangeLink(bandwidth, link.alpha.value, port.link), senders


def request_kv_transfer_time(prefill_model, total_devices: int, tokens) -> np.ndarray:
    """Time to move one request's KV cache of ``tokens`` tokens between the pools [s].

    :math:`t_{kv} = \\alpha + S/B` (:func:`kv_transfer_time`, after the prefill) with
    S = tokens × the prefill replica's KV bytes per token / senders, over the link of
    :func:`kv_transfer_link`. The one KV-transfer time of ``estimate``, ``validate`` and the simulator.
    """
    link, senders = kv_transfer_link(prefill_model, total_devices)
    size = np.asarray(tokens, dtype=float) * float(prefill_model.kv_bytes_per_token) / senders
    return kv_transfer_time(size, link, 1, 0.0)
