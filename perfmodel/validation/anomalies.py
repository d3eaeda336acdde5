"""Physics checks that flag measured rows no faithful model should be fitted to.

Each check compares a measurement with bounds from the *datasheet* roofline (peaks, η = 1, no
overheads), so a flag means the measurement is outside what the hardware can do for the recorded
configuration — a mislabelled layout, speculative decoding, prefix caching, a broken run — not that
the model is inaccurate. Flagged rows are reported with their reason and left out of the fit and of the
headline errors (both figures with and without them are published).

Checks (constants are module attributes, documented and overridable):

``tpot_below_roofline``
    measured TPOT < :data:`FLOOR_MARGIN` × datasheet decode step at the decode batch the measurement
    itself implies, :math:`n = C\\,(N-1)\\,\\mathrm{TPOT} / (\\mathrm{TTFT} + (N-1)\\,\\mathrm{TPOT})`
    (closed loop: the rest of the C requests are in prefill). Faster than the bytes allow:
    speculative decoding (MTP), or fewer/more GPUs than recorded.
``ttft_below_roofline``
    measured TTFT < :data:`FLOOR_MARGIN` × datasheet prefill of one prompt: prefix caching or a
    smaller prompt than recorded.

Both floors sum the ops' max(F/P, D/B) and leave communication out (see :func:`_device_floor`).
``tpot_above_ceiling``
    measured TPOT > :data:`SLOW_FACTOR` × (datasheet decode step at C plus C prefills of the prompt
    spread over the N − 1 decode steps) + :data:`MAX_HOST_STEP` — slower than the slowest plausible
    path (every kernel at 1/SLOW_FACTOR of peak and 20 ms of host time per step).
``ttft_above_ceiling``
    the whole closed loop fits in the KV cache (C·(I + O) tokens ≤ the datasheet model's capacity, so
    no request has to wait for another to finish) and yet measured TTFT > :data:`SLOW_FACTOR` × (C
    prompts prefilled one after another at datasheet speed) + :data:`MAX_REQUEST_TIME`: slower than
    the slowest plausible path (warm-up, JIT compilation or graph capture inside the timed window?).
``id_layout_mismatch``
    the run id names a world size (``_tpN_``; attention-DP runs are named by tp × attention_dp) different
    from ``tp_size × attention_dp_size``.
``disagg_recorded_as_agg``
    the row's public source ran it as a P/D deployment recorded as aggregated (``source_flag`` of
    :mod:`perfmodel.validation.source_rules`).

P/D-disaggregated rows get the TPOT checks on the decode pool's model (decode-only steps, no prefill
term in the ceiling) and the TTFT floor on the prefill pool's; no TTFT ceiling, since prompts can queue
for the prefill pool whatever its speed.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..core.ops import StepShape
from ..errors import PerfmodelError
from .stepmodels import CONFIG_COLUMNS, DISAGG_COLUMNS, StepModelCache, config_groups, pool_keys

#: A measurement below this fraction of a datasheet lower bound is flagged (10 % slack for
#: peaks quoted with boost clocks and rounding).
FLOOR_MARGIN = 0.9
#: Worst plausible slowdown of every op relative to the datasheet roofline [-].
SLOW_FACTOR = 5.0
#: Worst plausible host (framework) time per step [s].
MAX_HOST_STEP = 0.020
#: Worst plausible time of a request outside the engine's steps (front end, tokeniser, network) [s].
MAX_REQUEST_TIME = 1.0


def _id_tp(run_id: str) -> int | None:
    m = re.search(r"_tp(\d+)(?:_|$)", run_id)
    return int(m.group(1)) if m else None


def _device_floor(sm, n, context, prefill) -> np.ndarray:
    """Sum over ops of max(F/P, D/B) at datasheet peaks, communication left out.

    Collectives are excluded: a floor must not depend on how the collectives are modelled (algorithm,
    hierarchy across nodes), only on work every implementation has to do.
    """
    n, context, prefill = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (n, context, prefill)))
    shape = StepShape.make(n, context, (prefill > 0).astype(float), prefill, np.zeros_like(n))
    return np.broadcast_to(sm.breakdown(shape).compute_total, n.shape)


def _implied_decode_batch(rows: pd.DataFrame) -> np.ndarray:
    """Decode batch the measurement implies: C (N − 1) TPOT / (TTFT + (N − 1) TPOT), at least 1."""
    c = rows["concurrency"].to_numpy(float)
    ttft = rows["measured_ttft_mean_s"].to_numpy(float)
    tpot = rows["measured_tpot_mean_s"].to_numpy(float)
    decode_time = np.maximum(rows["osl"].to_numpy(float) - 1.0, 1.0) * tpot
    return np.maximum(c * decode_time / (ttft + decode_time), 1.0)


def _bounds(sm, rows: pd.DataFrame) -> tuple[np.ndarray, ...]:
    c = rows["concurrency"].to_numpy(float)
    isl = rows["isl"].to_numpy(float)
    osl = rows["osl"].to_numpy(float)
    decode_steps = np.maximum(osl - 1.0, 1.0)
    mid = isl + osl / 2.0
    zero = np.zeros_like(c)
    floor_tpot = _device_floor(sm, _implied_decode_batch(rows), mid, zero)
    floor_ttft = _device_floor(sm, zero, zero, isl)
    full = sm.step_time(*np.broadcast_arrays(c, mid, zero, zero))
    prefill = sm.step_time(*np.broadcast_arrays(zero, zero, isl, zero))
    ceiling = SLOW_FACTOR * (full + c * prefill / decode_steps) + MAX_HOST_STEP
    fits = c * (isl + osl) <= float(sm.kv_capacity_tokens)
    ttft_ceiling = np.where(fits, SLOW_FACTOR * c * prefill + MAX_REQUEST_TIME, np.inf)
    return floor_tpot, floor_ttft, ceiling, ttft_ceiling


def _disagg_bounds(decode_sm, prefill_sm, rows: pd.DataFrame) -> tuple[np.ndarray, ...]:
    """Bounds of P/D rows: decode-only steps in the decode pool, prompts in the prefill pool.

    No TTFT ceiling: prompts can queue for the prefill pool whatever its speed.
    """
    c = rows["concurrency"].to_numpy(float)
    isl, osl = rows["isl"].to_numpy(float), rows["osl"].to_numpy(float)
    mid, zero = isl + osl / 2.0, np.zeros_like(c)
    floor_tpot = _device_floor(decode_sm, _implied_decode_batch(rows), mid, zero)
    floor_ttft = _device_floor(prefill_sm, zero, zero, isl)
    ceiling = SLOW_FACTOR * decode_sm.step_time(*np.broadcast_arrays(c, mid, zero, zero)) + MAX_HOST_STEP
    return floor_tpot, floor_ttft, ceiling, np.full_like(c, np.inf)


def _pool_bounds(cache: StepModelCache, deployments: pd.DataFrame):
    """Yield (rows, bounds) per step-model configuration: aggregated and P/D rows."""
    mode = deployments["mode"] if "mode" in deployments else pd.Series("agg", index=deployments.index)
    for key, rows in config_groups(deployments[mode == "agg"], CONFIG_COLUMNS):
        try:
            yield rows, _bounds(cache.get(key), rows)
        except PerfmodelError:
            continue
    disagg = deployments[mode == "disagg"]
    for _, rows in config_groups(disagg, DISAGG_COLUMNS):
        decode_key, prefill_key = pool_keys(rows.iloc[0])
        try:
            decode, prefill = cache.get(decode_key), cache.get(prefill_key)
            yield rows, _disagg_bounds(decode, prefill, rows)
        except PerfmodelError:
            continue


def flag_anomalies(deployments: pd.DataFrame, datasheet: StepModelCache | None = None) -> pd.Series:
    """Reason each row is anomalous ('' = not flagged), aligned with ``deployments``.

    Parameters
    ----------
    deployments : pandas.DataFrame
        Output of :func:`perfmodel.validation.rows.map_rows` (``measured_*`` columns needed).
    datasheet : StepModelCache, optional
        Cache of datasheet step models (built if not given).

    Returns
    -------
    pandas.Series
        Semicolon-joined reasons per row.
    """
    cache = datasheet or StepModelCache("datasheet")
    reasons = pd.Series("", index=deployments.index, dtype=object)
    if deployments.empty:
        return reasons

    def add(idx, text: str) -> None:
        for i in idx:
            reasons[i] = f"{reasons[i]}; {text}" if reasons[i] else text

    for rows, (floor_tpot, floor_ttft, ceiling, ttft_ceiling) in _pool_bounds(cache, deployments):
        tpot = rows["measured_tpot_mean_s"].to_numpy(float)
        ttft = rows["measured_ttft_mean_s"].to_numpy(float)
        for mask, text in (
            (tpot < FLOOR_MARGIN * floor_tpot, "tpot_below_roofline: TPOT below the datasheet decode "
                                               "floor (speculative decoding or mislabelled layout?)"),
            (ttft < FLOOR_MARGIN * floor_ttft, "ttft_below_roofline: prefill faster than its FLOPs/bytes "
                                               "allow (prefix caching?)"),
            (tpot > ceiling, "tpot_above_ceiling: TPOT above the slowest plausible path "
                             f"({SLOW_FACTOR:g}x datasheet + {MAX_HOST_STEP * 1e3:g} ms/step)"),
            (ttft > ttft_ceiling, "ttft_above_ceiling: TTFT above serial prefill of every client at "
                                  f"1/{SLOW_FACTOR:g} of datasheet speed + {MAX_REQUEST_TIME:g} s with no "
                                  "KV-cache wait possible (warm-up or compilation in the timed window?)"),
        ):
            add(rows.index[mask], text)
    if {"id", "tp", "dp"} <= set(deployments.columns):
        modes = deployments["mode"] if "mode" in deployments else pd.Series("agg", index=deployments.index)
        for i, run_id, tp, dp, mode in zip(deployments.index, deployments["id"], deployments["tp"],
                                           deployments["dp"], modes, strict=True):
            named = _id_tp(str(run_id))
            if mode == "agg" and named and named != int(tp) * int(dp):
                add([i], f"id_layout_mismatch: id says tp{named}, tp_size x attention_dp is "
                         f"{int(tp)}x{int(dp)}")
    if "source_flag" in deployments:
        for i, text in zip(deployments.index, deployments["source_flag"].fillna(""), strict=True):
            if text:
                add([i], str(text))
    return reasons


def anomaly_category(reason: str) -> list[str]:
    """Check names in a reason string (``'tpot_below_roofline'``, ...)."""
    return [part.split(":", 1)[0].strip() for part in reason.split(";") if part.strip()]
