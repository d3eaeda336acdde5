r"""``estimate``: mean TTFT, TPOT and throughput of a deployment under load, with a fitted engine.

A thin composition of the pieces every serving path shares: the replica's
:class:`~perfmodel.core.step.StepModel` (formats by the shared default rule, :mod:`perfmodel.formats`,
which is the rule the measured runs the engine was fitted on are mapped with), the
:class:`~perfmodel.engine.Engine` and

- for closed-loop **concurrencies**: the steady state (:func:`perfmodel.serving.steady_state`, or
  :func:`perfmodel.serving.steady_state_disagg` for a P/D deployment) — the path whose error against
  measured runs ``docs/validation.md`` publishes;
- for open-loop **request rates** (Poisson arrivals): the simulator (:func:`perfmodel.serving.simulate`,
  aggregated deployments), the means of its requests after a warm-up share.

Per replica (aggregated) or whole system (P/D), the closed loop's throughput is
:math:`X = C / (\mathrm{TTFT} + (O - 1)\,\mathrm{TPOT})` requests per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import checks
from ..engine.kv_memory import short_pool_reason
from ..errors import ConfigError
from ..formats import DEPRECATED, format_list, renamed
from ..precision import dtype

#: Open-loop points: requests simulated per point and share dropped as warm-up.
RATE_REQUESTS, RATE_WARMUP = 1500, 0.2


@dataclass(frozen=True)
class PrefillPool:
    """Prefill pool of a P/D-disaggregated deployment (the decode pool is the main layout).

    Attributes
    ----------
    tp, dp_attention, ep : int
        Layout of one prefill replica.
    workers : int
        Prefill replicas.
    decode_workers : int
        Decode replicas.
    """

    tp: int = 1
    dp_attention: int = 1
    ep: int = 1
    workers: int = 1
    decode_workers: int = 1


def _formats(model: Any, hardware: str, weights: str | None, kv_cache: str | None) -> tuple[str, str, str]:
    """(weights, activations, KV cache): the shared default rule (:mod:`perfmodel.formats`) and the
    activations engines run the weights with (:func:`perfmodel.precision.serving_activations`).

    A name means the same format as everywhere (``fp8`` is per-tensor FP8, also for a block-scaled
    checkpoint); the measured rows' spellings ``fp4`` and ``int4_wo`` are ``nvfp4`` and ``int4``.
    """
    from ..formats import checkpoint_format, default_kv_cache
    from ..hardware import load_accelerator
    from ..precision import serving_activations
    from ..validation.rows import WEIGHT_FORMATS

    name = (weights or "").strip().lower()
    w = dtype(WEIGHT_FORMATS.get(name, name), "weights").name if name else checkpoint_format(model)
    kv = dtype(kv_cache, "kv_cache").name if kv_cache else default_kv_cache(w)
    return w, serving_activations(w, "fp4" in load_accelerator(hardware).compute), kv


def _counts(name: str, values, low: float) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    if arr.size == 0 or arr.ndim != 1 or not np.all(np.isfinite(arr) & (arr >= low)):
        raise ConfigError(f"{name}: expected numbers >= {low:g}, got {np.asarray(values).tolist()!r}")
    return arr


def estimate(model: str, hardware: str, *, isl: int, osl: int, concurrency=None, rate=None,
             engine: Any = "vllm", tp: int = 1, pp: int = 1, dp_attention: int = 1, ep: int = 1,
             weights: Any = None, kv_cache: str | None = None, prefill: PrefillPool | None = None,
             calibration: str = "calibrated", efficiency: str = "calibrated", seed: int = 0,
             prefix_hit_rate: float = 0.0, prefix: Any = None, precision: Any = DEPRECATED) -> pd.DataFrame:
    """Mean TTFT, TPOT and throughput of a deployment under load (see the module docstring).

    Parameters
    ----------
    model : str
        Model id, Hugging Face repo id or config.json path.
    hardware : str
        Accelerator id, a system name of the measured data (``h200_sxm``) or a hardware YAML path.
    isl, osl : int
        Prompt and output tokens per request (osl >= 2).
    concurrency : float or list of float, optional
        Closed-loop clients per replica (aggregated) or in total (P/D).
    rate : float or list of float, optional
        Open-loop Poisson request rates [1/s] of one replica (aggregated only; simulated).
    engine : str | Engine
        ``vllm``, ``sglang``, ``trtllm`` (fitted terms), ``<name>-preset`` or an engine.
    tp, pp, dp_attention, ep : int
        Layout of one (decode) replica; it spans tp × dp_attention × pp GPUs (TensorRT-LLM's "TP 8
        with attention DP" is tp=1, dp_attention=8, ep=8).
    weights : str or sequence of str, optional
        Weight formats (``fp8``, ``fp8_block``, ``nvfp4``/``fp4``, ``mxfp4``, ``int4``/``int4_wo``,
        ``bf16``...; ``"fp8,bf16"`` or a list gives the rows of each); default: the checkpoint's own
        (``fp8_block`` for DeepSeek-R1, ``mxfp4`` for gpt-oss). A name means one format, as in
        :func:`perfmodel.predict`: ``fp8`` is per-tensor FP8 also for a block-scaled checkpoint.
    kv_cache : str, optional
        KV-cache format (default: fp8 for FP8/FP4 weights, else bf16; :mod:`perfmodel.formats`).
    prefill : PrefillPool, optional
        Makes the deployment P/D-disaggregated.
    calibration : str
        Engine calibration profile (``calibrated`` or a YAML path).
    efficiency : str
        Per-op efficiency profile.
    seed : int
        Seed of the open-loop simulations.
    prefix_hit_rate : float
        Share of each prompt found in the engine's prefix cache, [0, 1): attended, not computed. With
        P/D the whole cache is still transferred (the decode pool is assumed not to hold the prefix).
    prefix : SharedPrefix | dict, optional
        Shared prompt prefixes instead of a rate (``{"tokens": 3072, "pool": 16}``, exclusive with
        ``prefix_hit_rate``): open loop, the simulator's prefix cache finds the hits; closed loop, the
        rate is :func:`perfmodel.serving.reuse.expected_hit_rate` with the replica's KV capacity.
    precision :
        Deprecated old name of ``weights`` (warns).

    Returns
    -------
    pandas.DataFrame
        One row per load point: ``concurrency`` or ``rate``, ``ttft_mean_s``, ``tpot_mean_s``,
        ``e2e_mean_s`` (means over requests; no percentiles: ``simulate`` has both),
        ``requests_per_s``, ``output_tokens_per_s`` (per replica, or the whole system when
        disaggregated), ``output_tokens_per_s_per_device`` (that over ``devices``, the devices it is
        counted over), ``decode_batch_mean`` (mean sequences in a decode step), ``limited_by``
        (closed loop: ``clients``, ``max_num_seqs``, ``kv_cache``, ``prefill_budget`` or
        ``prefill_pool``), ``path`` (``steady state`` or ``simulate``), the formats, ``kv_cache_tokens``
        (the (decode) replica's KV pool as the engine sizes it, :mod:`perfmodel.engine.kv_memory`), the
        profiles and ``engine`` (which engine and terms).
    """
    weights = renamed("weights", weights, "precision", precision, "estimate")
    kwargs = dict(isl=isl, osl=osl, concurrency=concurrency, rate=rate, engine=engine, tp=tp, pp=pp,
                  dp_attention=dp_attention, ep=ep, kv_cache=kv_cache, prefill=prefill, calibration=calibration,
                  efficiency=efficiency, seed=seed, prefix_hit_rate=prefix_hit_rate, prefix=prefix)
    frames = [_estimate(model, hardware, weights=w, **kwargs) for w in format_list(weights)]
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _estimate(model: str, hardware: str, *, isl: int, osl: int, concurrency, rate, engine: Any, tp: int,
              pp: int, dp_attention: int, ep: int, weights: str | None, kv_cache: str | None,
              prefill: PrefillPool | None, calibration: str, efficiency: str, seed: int,
              prefix_hit_rate: float, prefix: Any) -> pd.DataFrame:
    """:func:`estimate` for one weight format."""
    from ..core.step import StepModel
    from ..engine.engine import Engine
    from ..validation.models import UnsupportedModel, resolve_model
    from ..validation.rows import hardware_id
    from .simulator import simulate
    from .steady_disagg import steady_state_disagg
    from .steady_state import steady_state
    from .workload import Workload

    seed = checks.count(seed, "seed", 0, 2**63 - 1)   # checked here too: closed loops do not use it
    served = Engine.load(engine, calibration=calibration)
    if isinstance(hardware, (list, tuple)) or "," in str(hardware):  # the name reader would take the first
        raise ConfigError(f"hardware: one accelerator id, system name or spec file per call, got {hardware!r}; "
                          f"compare several with perfmodel.sweep(model, [A, B], ...) (static batches) or "
                          f"perfmodel.plan(..., hardware=[A, B]) (under load and an SLO)")
    hw = hardware_id(str(hardware)) or str(hardware)
    try:
        spec = resolve_model(model)
    except UnsupportedModel as exc:
        raise ConfigError(f"model: {exc}") from None
    for name, v, low in (("isl", isl, 1), ("osl", osl, 2)):
        if not (isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= low):
            raise ConfigError(f"{name}: expected an integer >= {low}, got {v!r}")
    if spec.max_position_embeddings and isl + osl > spec.max_position_embeddings:
        raise ConfigError(f"isl + osl = {isl + osl} exceeds {spec.id}'s context of "
                          f"{spec.max_position_embeddings} tokens")
    if (concurrency is None) == (rate is None):
        raise ConfigError("give concurrency (closed-loop clients) or rate (open-loop requests/s), not both")
    pools = [("", ep)] if prefill is None else [("", ep), ("prefill.", prefill.ep)]
    for pool, e in pools:
        if e != 1 and spec.moe is None:
            raise ConfigError(f"{pool}ep: {spec.id} is dense (no experts); expert parallelism needs ep=1, got {e}")
    weights, activations, kv = _formats(model, hw, weights, kv_cache)

    def replica(t, d, e):
        moe_tp = (t * d) // e if spec.moe is not None and e and (t * d) % e == 0 else None
        sm = StepModel(spec, hw, tp=t, pp=pp, ep=e, dp_attention=d, moe_tp=moe_tp, weights=weights,
                       activations=activations, kv_cache=kv, efficiency=efficiency)
        if not float(sm.kv_capacity_tokens) > 0:
            raise ConfigError(f"cannot estimate this deployment: weights do not fit in device memory "
                              f"({sm.weights_per_device / 1e9:.1f} GB per device on {hw})")
        return sm

    decode = replica(tp, dp_attention, ep)
    gpus = decode.devices
    short = short_pool_reason(served.memory(decode), _pool_tokens(served, decode), isl + osl)
    if short:
        raise ConfigError(f"cannot estimate this deployment: {short}")
    reuse = {} if prefix is None else {"prefix": prefix}
    if prefix is not None:
        from .reuse import expected_hit_rate

        if prefix_hit_rate:
            raise ConfigError(f"prefix_hit_rate ({prefix_hit_rate}) is exclusive with prefix: give one")
        w = Workload.fixed(isl, osl, concurrency=1, prefix=prefix)   # closed: no rate, K/(P·S) rule
        if rate is None:
            kv_tokens = _pool_tokens(served, decode)
            prefix_hit_rate = expected_hit_rate(w, kv_tokens)
    if rate is not None:
        if prefill is not None:
            raise ConfigError("rate: open-loop estimates are for aggregated deployments; give concurrency "
                              "for a P/D deployment")
        rates = _counts("rate", rate, 1e-9)
        rows = []
        for lam in rates:
            w = Workload.fixed(isl, osl, rate=float(lam), prefix_hit_rate=prefix_hit_rate, **reuse)
            s = simulate(decode, w, engine=served, requests=RATE_REQUESTS, seed=seed).summary(warmup=RATE_WARMUP)
            rows.append({"rate": lam, "ttft_mean_s": s["ttft_mean_s"], "tpot_mean_s": s["tpot_mean_s"],
                         "requests_per_s": s["requests_per_s"], "decode_batch_mean": np.nan, "limited_by": "",
                         "path": "simulate"})
        out = pd.DataFrame(rows)
    else:
        clients_per_rank = dp_attention * (1 if prefill is None else prefill.decode_workers)
        conc = _counts("concurrency", concurrency, clients_per_rank)
        if prefill is None:
            res = steady_state(decode, conc, isl, osl, engine=served, schedulers=dp_attention,
                               prefix_hit_rate=prefix_hit_rate)
        else:
            from ..deployment.disagg import request_kv_transfer_time

            if prefix_hit_rate:
                raise ConfigError("prefix_hit_rate: not modelled for P/D deployments yet (the prefill pool's "
                                  "closed form computes every prompt token)")

            for name, v in (("prefill.workers", prefill.workers), ("prefill.decode_workers", prefill.decode_workers)):
                if not (isinstance(v, (int, np.integer)) and v >= 1):
                    raise ConfigError(f"{name}: expected an integer >= 1, got {v!r}")
            pre = replica(prefill.tp, prefill.dp_attention, prefill.ep)
            total = prefill.workers * pre.devices + prefill.decode_workers * decode.devices
            res = steady_state_disagg(pre, decode, conc, isl, osl, prefill_replicas=prefill.workers,
                                      decode_replicas=prefill.decode_workers, prefill_engine=served,
                                      kv_transfer_s=request_kv_transfer_time(pre, total, isl),
                                      prefill_schedulers=prefill.dp_attention, decode_schedulers=dp_attention)
            gpus = total
        out = pd.DataFrame({"concurrency": conc, "ttft_mean_s": res.ttft_mean_s, "tpot_mean_s": res.tpot_mean_s,
                            "requests_per_s": res.requests_per_s, "decode_batch_mean": res.decode_batch_mean,
                            "limited_by": res.limited_by, "path": "steady state"})
    out["e2e_mean_s"] = out["ttft_mean_s"] + (osl - 1) * out["tpot_mean_s"]
    out["output_tokens_per_s"] = out["requests_per_s"] * osl
    out["output_tokens_per_s_per_device"] = out["output_tokens_per_s"] / gpus
    kv_tokens = _pool_tokens(served, decode)
    return out.assign(devices=gpus, weights=weights, kv_cache=kv, kv_cache_tokens=kv_tokens,
                      mode="agg" if prefill is None else "disagg",
                      efficiency_profile=decode.efficiency.name, engine=served.label,
                      engine_calibration=calibration if served.calibrated else "none (uncalibrated engine)")


def _pool_tokens(served: Any, step_model: Any) -> float:
    """KV tokens of a replica as the engine's scheduler uses them (its pool times ``kv_capacity_fraction``)."""
    return float(served.step(step_model).kv_capacity_tokens) * served.profile.kv_capacity_fraction
