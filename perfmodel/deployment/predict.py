"""TTFT, TPOT and throughput of a deployment: pools, placement and the links between them.

Static batch, as in :func:`perfmodel.predict`: every decode instance starts ``batch`` sequences of
``isl`` prompt tokens at once and generates ``osl`` tokens each; there are ``R_dec`` decode
instances (replicas of the decode pool, or one attention + FFN instance for a split).

- Prefill: the ``n_pre = ceil(batch·R_dec/R_pre)`` prompts of one prefill replica in one step.
- TTFT = prefill + exposed KV transfer (P/D only, see :mod:`.disagg`). No queueing.
- TPOT: the decode step (aggregated / P/D: the decode pool's own step; split: :mod:`.split`), by
  Simpson's rule over the contexts isl+1, midpoint, isl+osl−1.
- E2E = TTFT + (osl − 1)·TPOT.
- output tokens/s: prefill co-located with decode: ``R_dec·batch·osl / E2E``; separate prefill
  pool (phases overlap across batches): ``min(R_dec·batch·osl / ((osl−1)·TPOT),
  R_pre·n_pre·osl / prefill)``. Per device: divided by the devices of all pools.
"""

from __future__ import annotations

import numpy as np

from ..checks import broadcast
from ..core.memory import WORKSPACE_TOKENS, kv_bytes_per_token_device, weights_per_device, workspace_bytes
from ..core.ops import StepShape
from ..core.predict import _positive_array, predict
from ..errors import ConfigError
from .disagg import kv_transfer_time
from .load import load_deployment
from .lpu_memory import ffn_pool_memory, ffn_weight_bytes_per_device
from .placement import DeploymentPlan
from .power import total_power
from .result import DeploymentPrediction, PoolResult
from .speculation import attention_pool_draft, cached_prefill_time, split_spec_step
from .split import micro_batch_count, split_step


def _plan(deployment) -> DeploymentPlan:
    if isinstance(deployment, DeploymentPlan):
        return deployment
    return DeploymentPlan(load_deployment(deployment, check=False))


def _simpson(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return (x[0] + 4.0 * x[1] + x[2]) / 6.0


def _contexts(i, o) -> np.ndarray:
    lo = i + 1.0
    hi = np.maximum(i + o - 1.0, lo)
    return np.stack([lo, 0.5 * (lo + hi), hi])


def _memory(sm, weights, kv, work):
    usable = sm.hardware.memory_capacity * (1.0 - sm.reserve)
    used = weights + kv + work
    fits = used <= usable
    reason = np.where(fits, "", np.where(weights > usable, "weights alone exceed usable memory",
                                         "weights + KV cache + workspace exceed usable memory"))
    return used, fits, reason, usable


def predict_deployment(deployment, isl=1024, osl=128, batch=1, strict: bool = False) -> DeploymentPrediction:
    """Predict a deployment at static-batch operating points (module docstring gives the rules).

    Parameters
    ----------
    deployment : str | Path | dict | Deployment | DeploymentPlan
        Deployment YAML path, mapping, validated deployment, or a plan reused across calls.
    isl, osl, batch : int or array_like
        Prompt tokens, output tokens, sequences per decode instance (numpy-broadcast together).
    strict : bool
        Raise :class:`ConfigError` when a pool does not fit in memory at some point, instead of
        flagging it in ``fits`` / ``fit_reason``.

    Returns
    -------
    DeploymentPrediction
    """
    plan = _plan(deployment)
    model, prec = plan.model, plan.precision
    b, i, o = broadcast("batch, isl, osl", _positive_array("batch", batch), _positive_array("isl", isl),
                        _positive_array("osl", osl))
    n_pre = plan.prefill_prompts(b)
    dep = plan.deployment
    spec, hit = dep.spec, dep.prefix_hit_rate
    pre = predict(None, None, isl=i, osl=o, batch=n_pre, step_model=plan.prefill_sm)
    prefill_s = pre.ttft_s if not hit else cached_prefill_time(plan.prefill_sm, n_pre, i, hit)
    pre_ops = plan.prefill_sm.breakdown(StepShape.make(n_prefill=n_pre, chunk=i)).compute_total

    kv_s = np.zeros_like(b)
    if plan.kv_link is not None:
        send, recv = plan.kv_send_recv_bytes(n_pre, b, i)
        kv_s = kv_transfer_time(np.maximum(send, recv), plan.kv_link, model.num_layers, prefill_s,
                                plan.deployment.options.kv_transfer)
    ttft = prefill_s + kv_s
    ctx = _contexts(i, o)
    n_micro = plan.deployment.options.micro_batches
    pools: dict[str, dict] = {n: {} for n in plan.pools}

    if plan.split:
        asm, fsm = plan.attention_sm, plan.ffn_sm
        assert asm is not None and fsm is not None and plan.activation_link is not None
        draft, dmem = attention_pool_draft(asm, spec, dep.draft_weights)
        if spec is None:
            step = split_step(asm, fsm, plan.activation_link, b, ctx, plan.attention_pool.count,
                              plan.ffn_pool.count, n_micro)
            tpot = _simpson(np.broadcast_to(step.total, ctx.shape))
        else:
            sstep = split_spec_step(asm, fsm, plan.activation_link, spec, b, ctx, plan.attention_pool.count,
                                    plan.ffn_pool.count, n_micro, draft)
            step = sstep.verify
            tpot = _simpson(np.broadcast_to(sstep.tpot, ctx.shape))
        comm = _simpson(np.broadcast_to(step.exchange_exposed, ctx.shape))
        coll = _simpson(np.broadcast_to(step.collectives, ctx.shape))
        decode_bound = np.broadcast_to(step.bound(), ctx.shape)[1]
        n_formed = micro_batch_count(n_micro, b)  # at most one micro-batch per sequence
        mid = StepShape.make(n_decode=b / n_formed, context=ctx[1])
        attn_busy = (n_formed * asm.breakdown_part(mid, "attention").compute_total
                     + asm.breakdown_part(StepShape.make(n_decode=b, context=ctx[1]), "head").compute_total)
        ffn_busy = n_formed * fsm.breakdown_part(mid, "ffn").compute_total
        # memory: attention pool (+ full weights if it also prefills), FFN pool
        apool, fpool = plan.attention_pool, plan.ffn_pool
        apar = asm.parallel
        if apool is plan.prefill_pool:
            a_weights = plan.prefill_sm.weights_per_device
            a_work = workspace_bytes(model, plan.prefill_sm.parallel, prec, np.minimum(n_pre * i, WORKSPACE_TOKENS))
        else:
            a_weights = weights_per_device(model, apar, prec) - ffn_weight_bytes_per_device(model, apar, prec)
            a_work = workspace_bytes(model, apar, prec, b)
        a_weights = a_weights + dmem.weights
        per_seq = kv_bytes_per_token_device(model, apar, prec, i + o) + dmem.kv_per_token * (i + o)
        a_kv = (b / apar.dp_attention) * per_seq
        a_used, a_fits, a_reason, a_usable = _memory(asm, a_weights, a_kv, a_work)
        max_batch = np.floor(np.maximum(a_usable - a_weights - a_work, 0.0) / per_seq) * apar.dp_attention
        pools[apool.name].update(used=a_used, fits=a_fits, reason=a_reason, cap=asm.hardware.memory_capacity)
        fmem = ffn_pool_memory(model, fsm.parallel, prec, fpool.accelerator, fpool.spec.reserve,
                               fpool.spec.spill, b, fpool.name)
        pools[fpool.name].update(used=fmem.used, fits=fmem.fits, reason=fmem.reason(), cap=fmem.capacity)
        top = dict(weights=a_weights, kv=a_kv, used=a_used)
    else:
        dsm = plan.decode_sm
        assert dsm is not None
        dec = pre if dsm is plan.prefill_sm and spec is None else predict(
            None, None, isl=i, osl=o, batch=b, step_model=dsm, spec_decode=spec, draft_weights=dep.draft_weights)
        tpot = dec.tpot_s
        mid = dsm.breakdown(StepShape.make(n_decode=b, context=ctx[1]))
        comm = np.zeros_like(b)
        coll = np.broadcast_to(mid.comm_total, b.shape)
        decode_bound = dec.decode_bound
        attn_busy, ffn_busy = mid.compute_total, 0.0
        max_batch = dec.max_batch_at_context
        pools[plan.attention_pool.name].update(used=dec.memory_used_bytes_per_device, fits=dec.fits,
                                               reason=dec.fit_reason, cap=dec.memory_capacity_bytes)
        top = dict(weights=dec.weights_bytes_per_device, kv=dec.kv_bytes_per_device,
                   used=dec.memory_used_bytes_per_device)
    if plan.prefill_pool is not plan.attention_pool:
        pools[plan.prefill_pool.name].update(used=pre.memory_used_bytes_per_device, fits=pre.fits,
                                             reason=pre.fit_reason, cap=pre.memory_capacity_bytes)

    e2e = ttft + (o - 1.0) * tpot
    r_dec, r_pre = plan.decode_replicas, plan.prefill_replicas
    if plan.kv_link is None:
        out_tps = r_dec * b * o / e2e
    else:
        with np.errstate(divide="ignore"):
            decode_side = np.where(o > 1, r_dec * b * o / ((o - 1.0) * tpot), np.inf)
        out_tps = np.minimum(decode_side, r_pre * n_pre * o / prefill_s)

    busy = {plan.prefill_pool.name: pre_ops}
    busy[plan.attention_pool.name] = busy.get(plan.attention_pool.name, 0.0) + (o - 1.0) * attn_busy
    if plan.split:
        busy[plan.ffn_pool.name] = busy.get(plan.ffn_pool.name, 0.0) + (o - 1.0) * ffn_busy
    labels = plan.layout_labels()
    results = {}
    for name, pool in plan.pools.items():
        d = pools[name]
        results[name] = PoolResult(
            name=name, hardware=pool.accelerator.id, roles=pool.roles, layout=labels[name], devices=pool.count,
            memory_fits=np.broadcast_to(d["fits"], b.shape), fit_reason=np.broadcast_to(d["reason"], b.shape),
            memory_used_bytes_per_device=np.broadcast_to(d["used"], b.shape), memory_capacity_bytes=d["cap"],
            busy_fraction=np.broadcast_to(busy[name] / e2e, b.shape), power=plan.power[name])
    fits = np.logical_and.reduce([r.memory_fits for r in results.values()])
    reason = np.array(["; ".join(f"{n}: {r.fit_reason[k]}" for n, r in results.items() if r.fit_reason[k])
                       for k in np.ndindex(b.shape)] or [""], dtype=object).reshape(b.shape)
    if strict and not np.all(fits):
        first = reason.ravel()[np.argmin(fits.ravel())]
        raise ConfigError(f"deployment does not fit in memory: {first}")
    watts = total_power([plan.power[n] for n in plan.pools])
    per_mw = out_tps / (watts / 1e6) if watts else np.full_like(b, np.nan)
    cols = dict(
        batch=b, isl=i, osl=o, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, output_tokens_per_s=out_tps,
        decode_tokens_per_s=r_dec * b / tpot, total_tokens_per_s=out_tps * (i + o) / o,
        per_user_tokens_per_s=1.0 / tpot, output_tokens_per_s_per_device=out_tps / plan.devices, fits=fits,
        fit_reason=reason, weights_bytes_per_device=np.broadcast_to(top["weights"], b.shape),
        kv_bytes_per_device=np.broadcast_to(top["kv"], b.shape),
        memory_used_bytes_per_device=np.broadcast_to(top["used"], b.shape),
        max_batch_at_context=np.broadcast_to(max_batch, b.shape), prefill_bound=pre.prefill_bound,
        decode_bound=np.broadcast_to(decode_bound, b.shape), prefill_s=prefill_s, kv_transfer_s=kv_s,
        comm_s_per_token=np.broadcast_to(comm, b.shape), collective_s_per_token=np.broadcast_to(coll, b.shape),
        output_tokens_per_s_per_mw=per_mw)
    sms = [sm for sm in (plan.prefill_sm, plan.decode_sm, plan.attention_sm, plan.ffn_sm) if sm is not None]
    effs = {sm.efficiency.name for sm in sms}
    config = {
        "model": model.id, "hardware": "+".join(dict.fromkeys(p.accelerator.id for p in plan.pools.values())),
        "devices": plan.devices, "parallel": " ".join(f"{n}[{lab}]" for n, lab in labels.items()),
        "precision": prec.label(), "efficiency": "+".join(sorted(effs)), "mode": plan.mode,
        "micro_batches": n_micro if plan.split else 1, "power_w": watts,
        "efficiency_fallback": any(sm.efficiency.fallback for sm in sms),
        "spec_decode": "off" if spec is None else f"{spec.label()} ({spec.acceptance_source})",
        "prefix_hit_rate": float(hit),
        "basis": "analytic-datasheet" if all(sm.efficiency.name == "datasheet" for sm in sms)
        else "analytic-calibrated",
    }
    details = {"plan": plan, "prefill": pre, "split_step": step if plan.split else None}
    return DeploymentPrediction(mode=plan.mode, columns=cols, pools=results, config=config,
                                assumptions=[*plan.assumptions, *_feature_notes(plan, spec, hit)],
                                details=details)


def _feature_notes(plan: DeploymentPlan, spec, hit: float) -> list[str]:
    """What a prediction assumed about speculation and prefix caching (empty when both are off)."""
    out = []
    if spec is not None:
        out.append(f"speculative decoding {spec.label()}, E = {spec.expected_tokens:.3g} tokens per step; "
                   f"acceptance: {spec.acceptance_source}")
        if plan.split:
            out.append("speculation in the attention-FFN split: the draft runs on the attention pool; "
                       + ("the attention-core correction of the verify step is exact for one micro-batch"
                          if plan.deployment.options.micro_batches == 1 else
                          "the attention-core correction of the verify step is applied to the critical "
                          "path as if serial (an approximation with several micro-batches)"))
    if hit:
        out.append(f"prefix cache: {hit:g} of each prompt cached (attended, not computed)"
                   + ("; the KV transfer still sends the whole prompt's cache" if plan.kv_link is not None else ""))
    return out
