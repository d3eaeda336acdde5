"""Crossovers and task time: when does the faster starter stop being the faster finisher?

- Output-length crossover of two deployments (concepts §2):
  :math:`N^* = 1 + (TTFT_B - TTFT_A) / (TPOT_A - TPOT_B)`; beyond N* the lower-TPOT one finishes first.
- Prefill-bottleneck ISL: the smallest prompt length at which prefill takes at least a share ``s`` of
  the request's end-to-end time, :math:`TTFT \\ge s \\cdot E2E`. With the default s = ½ this is the
  same as :math:`TTFT \\ge (N-1)\\,TPOT`: prefill takes longer than decoding the whole answer.
- Concurrency limit: the largest batch (static) or closed-loop concurrency (serving steady state) at
  which each user still gets at least a given output rate [tok/s].
- Agent chains: a task of K dependent calls, call k with output :math:`N_k`, tool time :math:`\\tau_k`
  after it, completes in :math:`T = \\sum_k \\left(TTFT_k + (N_k - 1)\\,TPOT_k\\right) + \\sum_{k<K}
  \\tau_k`; each call's prompt holds the previous prompt, answer and tool result.

All times in seconds, lengths in tokens. TTFT here is the model's (no queueing) unless the caller
passes measured or simulated values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..core.predict import predict
from ..core.roofline import crossover_tokens, e2e_latency
from ..core.step import StepModel
from ..errors import ConfigError


def _times(x: Any) -> tuple[float, float]:
    """(TTFT, TPOT) [s] from a pair, a mapping / Series with ttft_s & tpot_s, or a Prediction."""
    if isinstance(x, (tuple, list)) and len(x) == 2:
        return float(x[0]), float(x[1])
    if isinstance(x, Mapping) or isinstance(x, pd.Series):
        return float(x["ttft_s"]), float(x["tpot_s"])
    if hasattr(x, "ttft_s") and hasattr(x, "tpot_s"):
        return float(np.ravel(x.ttft_s)[0]), float(np.ravel(x.tpot_s)[0])
    raise ConfigError(f"expected (ttft_s, tpot_s), a mapping with those keys or a Prediction, got {x!r}")


def output_crossover(a: Any, b: Any) -> dict[str, Any]:
    """Answer length at which deployments ``a`` and ``b`` finish at the same time.

    Parameters
    ----------
    a, b : (ttft, tpot) | mapping | Prediction
        The two deployments' TTFT and TPOT [s].

    Returns
    -------
    dict
        ``crossover_tokens`` N* (float; inf if the TPOTs are equal), ``completion_s`` at N*, and
        ``faster_beyond`` / ``faster_below``: which of "a" / "b" finishes first for longer / shorter
        answers (None when one wins everywhere; ``crossover_tokens`` is then < 1 or inf).

    Examples
    --------
    >>> r = output_crossover((0.2, 0.040), (0.5, 0.030))
    >>> round(r["crossover_tokens"], 6), round(r["completion_s"], 6), r["faster_beyond"]
    (31.0, 1.4, 'b')
    """
    ta, pa = _times(a)
    tb, pb = _times(b)
    n = float(crossover_tokens(ta, pa, tb, pb))
    out: dict[str, Any] = {"crossover_tokens": n, "completion_s": float("nan"), "faster_beyond": None,
                           "faster_below": None}
    if np.isfinite(n) and n >= 1:
        out["completion_s"] = float(e2e_latency(ta, pa, n))
        beyond = "a" if pa < pb else "b"
        out["faster_beyond"], out["faster_below"] = beyond, ("b" if beyond == "a" else "a")
    return out


def completion_time(ttft: ArrayLike, tpot: ArrayLike, output_tokens: ArrayLike) -> np.ndarray:
    """Time to finish an answer of N tokens, :math:`TTFT + (N-1)\\,TPOT` [s] (broadcasting)."""
    return e2e_latency(ttft, tpot, output_tokens)


def _step_model(model: Any, hardware: Any, step_model: StepModel | None, kw: dict[str, Any]) -> StepModel:
    return step_model if step_model is not None else StepModel(model, hardware, **kw)


def prefill_bottleneck_isl(model: Any = None, hardware: Any = None, osl: int = 256, batch: int = 1,
                           share: float = 0.5, isl_max: int = 1_048_576, step_model: StepModel | None = None,
                           **layout: Any) -> dict[str, Any]:
    """Smallest prompt length at which prefill takes at least ``share`` of the end-to-end time.

    Criterion: :math:`TTFT(I) \\ge s \\cdot E2E(I)`, i.e. with s = ½, :math:`TTFT \\ge (N-1)\\,TPOT`.
    Evaluated with :func:`~perfmodel.core.predict.predict` (static batch, no queueing) over a
    geometric grid of ISL in one vectorised call, then refined to the exact integer by bisection
    (TTFT share grows with ISL for the transformer models here; the scan guards against the first
    crossing being missed between grid points only up to the grid's resolution).

    Parameters
    ----------
    model, hardware : str
        Model and hardware ids (or pass ``step_model``).
    osl : int
        Answer length N [tokens].
    batch : int
        Sequences prefilled and decoded together.
    share : float
        s in (0, 1).
    isl_max : int
        Largest prompt length tried [tokens].
    **layout
        ``tp``, ``pp``, ``weights``... passed to :class:`~perfmodel.core.step.StepModel`.

    Returns
    -------
    dict
        ``isl`` (None if even ``isl_max`` does not reach the share), ``ttft_s``, ``tpot_s``, ``e2e_s``,
        ``ttft_share`` at that ISL, and ``criterion``.
    """
    if not 0 < share < 1:
        raise ConfigError(f"share: must be in (0, 1), got {share}")
    sm = _step_model(model, hardware, step_model, layout)

    def frac(isl: ArrayLike):
        # a sweep of the formula up to isl_max, which may pass the model's declared context
        p = predict(None, None, isl=np.atleast_1d(isl), osl=osl, batch=batch, step_model=sm, beyond_context=True)
        return p.ttft_s / p.e2e_s, p

    grid = np.unique(np.geomspace(1, isl_max, 160).round())
    f, _ = frac(grid)
    hit = np.flatnonzero(f >= share)
    result = {"criterion": f"TTFT >= {share:g} x E2E (static batch {batch}, osl {osl}, no queueing)",
              "isl": None, "ttft_s": float("nan"), "tpot_s": float("nan"), "e2e_s": float("nan"),
              "ttft_share": float(f[-1])}
    if hit.size == 0:
        return result
    hi = int(grid[hit[0]])
    lo = int(grid[hit[0] - 1]) if hit[0] > 0 else 0
    while hi - lo > 1:  # invariant: share(lo) < s <= share(hi)
        mid = (lo + hi) // 2
        if float(frac(mid)[0][0]) >= share:
            hi = mid
        else:
            lo = mid
    fh, p = frac(hi)
    result.update(isl=hi, ttft_s=float(p.ttft_s[0]), tpot_s=float(p.tpot_s[0]), e2e_s=float(p.e2e_s[0]),
                  ttft_share=float(fh[0]))
    return result


def max_concurrency_for_speed(min_tokens_per_s: float, model: Any = None, hardware: Any = None,
                              isl: int = 1024, osl: int = 256, max_concurrency: int = 1024,
                              method: str = "static", engine: Any = "vllm",
                              step_model: Any = None, **layout: Any) -> dict[str, Any]:
    """Largest concurrency at which each user still gets ``min_tokens_per_s`` output tokens/s.

    Parameters
    ----------
    min_tokens_per_s : float
        Threshold on per-user speed 1/TPOT [tok/s].
    method : {"static", "steady_state"}
        ``static``: a static batch of that many sequences (:func:`~perfmodel.core.predict.predict`,
        TPOT of pure decode steps). ``steady_state``: closed-loop serving with continuous batching
        (:func:`perfmodel.serving.steady_state`; prefill chunks interleave and raise TPOT).
    max_concurrency : int
        Largest concurrency tried (all integers 1..max are evaluated in one vectorised call).

    Returns
    -------
    dict
        ``concurrency`` (0 if even one user is slower than the threshold), ``per_user_tokens_per_s``
        there, ``method``.
    """
    c = np.arange(1, int(max_concurrency) + 1, dtype=float)
    if method == "static":
        sm = _step_model(model, hardware, step_model, layout)
        p = predict(None, None, isl=isl, osl=osl, batch=c, step_model=sm)
        speed = p.per_user_tokens_per_s
    elif method == "steady_state":
        from ..serving import steady_state

        sm = step_model if step_model is not None else {"model": model, "hardware": hardware, **layout}
        speed = 1.0 / steady_state(sm, c, isl, osl, engine=engine).tpot_mean_s
    else:
        raise ConfigError(f"method: expected 'static' or 'steady_state', got {method!r}")
    ok = np.flatnonzero(speed >= min_tokens_per_s)
    n = int(c[ok[-1]]) if ok.size else 0
    return {"concurrency": n, "per_user_tokens_per_s": float(speed[n - 1]) if n else float(speed[0]),
            "threshold_tokens_per_s": float(min_tokens_per_s), "method": method,
            "note": "per-user speed = 1/TPOT; at concurrency 0 the value shown is the single-user speed"}


def chain_time(ttft: ArrayLike, tpot: ArrayLike, output_tokens: ArrayLike, tool_time: ArrayLike = 0.0
               ) -> float:
    """Completion time of K dependent calls [s] (equation in the module docstring).

    ``ttft``, ``tpot`` and ``output_tokens`` are per call (length K or scalars); ``tool_time`` is the
    time after each call but the last (length K − 1 or a scalar).
    """
    n = np.atleast_1d(np.asarray(output_tokens, dtype=float))
    try:
        t = np.broadcast_to(np.asarray(ttft, dtype=float), n.shape)
        p = np.broadcast_to(np.asarray(tpot, dtype=float), n.shape)
    except ValueError:
        raise ConfigError(f"ttft, tpot: give one value or one per call ({n.size} calls)") from None
    try:
        tool = np.broadcast_to(np.asarray(tool_time, dtype=float), (max(n.size - 1, 0),))
    except ValueError:
        raise ConfigError(f"tool_time: give one value or one per gap between calls ({n.size - 1} for "
                          f"{n.size} calls), got {np.size(tool_time)}") from None
    return float(np.sum(e2e_latency(t, p, n)) + np.sum(tool))


def agent_chain(deployments: Mapping[str, Mapping[str, Any]], model: Any, steps: int = 10,
                isl: int = 2048, osl: int | Sequence[int] = 256, tool_time: float = 1.0,
                tool_tokens: int = 256, batch: int = 1) -> pd.DataFrame:
    """Completion time of an agent task (K dependent calls) on each deployment.

    Call k's prompt is the first prompt plus every earlier answer and tool result:
    :math:`I_k = I_1 + \\sum_{j<k} (N_j + R)` with R = ``tool_tokens``. Each deployment's TTFT_k and
    TPOT_k come from one vectorised :func:`~perfmodel.core.predict.predict` call over the K calls.

    Parameters
    ----------
    deployments : mapping
        Name -> :class:`~perfmodel.core.step.StepModel` keyword arguments (``hardware``, ``tp``...).
    model : str
        Model id.
    steps : int
        K, dependent calls.
    isl : int
        First prompt [tokens].
    osl : int or sequence
        Output tokens of each call.
    tool_time : float
        Tool time between calls [s].
    tool_tokens : int
        Tokens a tool result adds to the next prompt.

    Returns
    -------
    pandas.DataFrame
        One row per deployment: ``completion_s``, ``llm_s`` (time in the model), ``tool_s``,
        ``first_call_e2e_s``, sorted by completion time.
    """
    if steps < 1:
        raise ConfigError(f"steps: must be >= 1, got {steps}")
    outs = np.broadcast_to(np.asarray(osl, dtype=float), (steps,))
    isls = isl + np.r_[0.0, np.cumsum(outs[:-1] + tool_tokens)]
    rows = []
    for name, kw in deployments.items():
        p = predict(model, isl=isls, osl=outs, batch=batch, **dict(kw))  # hardware etc. in kw
        llm = float(np.sum(p.e2e_s))
        total = chain_time(p.ttft_s, p.tpot_s, outs, tool_time)
        rows.append({"deployment": name, "completion_s": total, "llm_s": llm, "tool_s": total - llm,
                     "first_call_e2e_s": float(p.e2e_s[0]), "last_call_isl": int(isls[-1]),
                     "steps": steps, "fits": bool(np.all(p.fits))})
    return pd.DataFrame(rows).sort_values("completion_s").reset_index(drop=True)
