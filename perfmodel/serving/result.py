"""The result of a serving simulation: per-request numpy arrays plus what produced them."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..metrics_vocabulary import deprecated_property
from .metrics import summarize
from .state import COMPLETED, STATUS_NAMES

if TYPE_CHECKING:
    from .simulator import _Sim
    from .workload import SLO, Workload


def _describe(model: Any) -> str:
    r = repr(model)
    return r if len(r) <= 160 else f"{type(model).__name__}(...)"


@dataclass(eq=False)
class SimulationResult:
    """Per-request outcome of :func:`perfmodel.serving.simulate`.

    All times are seconds from the start of the simulation; NaN where a time does not apply
    (e.g. no first token for a cancelled request). The per-request latencies are
    :attr:`request_ttft_s`, :attr:`request_tpot_s` and :attr:`request_e2e_s` (each request's own value
    under load, queueing included; a bare ``ttft_s`` in the glossary is one static batch on an idle
    replica); ``ttft_s``, ``tpot_s`` and ``e2e_s`` still answer for one release, with a
    DeprecationWarning.

    Attributes
    ----------
    arrival_s, sched_s, first_token_s, finish_s : ndarray[float]
        Arrival, first scheduled step start, first token, and end (completion, cancellation or
        rejection) times [s].
    isl, osl, reasoning_tokens, output_tokens : ndarray[int]
        Prompt, answer, reasoning and total generated lengths [tokens].
    status : ndarray[int8]
        0 completed, 1 cancelled (first-token timeout), 2 rejected, 3 in flight at the horizon.
    replica : ndarray[int]
        Replica the request was routed to (P/D: its prefill replica, then its decode replica).
    preemptions : ndarray[int]
        Times the request was preempted (recompute).
    itl_values, itl_weights : ndarray
        Inter-token gaps [s] and the number of tokens each applies to: the per-token ITL
        distribution over all requests (stalls behind prefill steps show in its tail). Per request,
        the mean per-token ITL is its TPOT.
    cached_tokens : ndarray[int] | None
        Prompt tokens found in the prefix cache when the request was first scheduled (workloads with
        prefix reuse or an explicit hit rate; None otherwise).
    meta : dict
        Engine profiles (with sources), step model, router, seed, horizon, wall time, steps; a closed
        loop's ``ramp_up`` (``{"ramp_up_s": …, "basis": "given" | how "auto" was resolved}``, whose
        value ``workload.arrival.ramp_up`` also holds).
    """

    arrival_s: np.ndarray
    sched_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    reasoning_tokens: np.ndarray
    output_tokens: np.ndarray
    status: np.ndarray
    replica: np.ndarray
    preemptions: np.ndarray
    itl_values: np.ndarray
    itl_weights: np.ndarray
    horizon_s: float = math.inf
    tokens_per_word: float = 1.0
    task_words: int | None = None
    slo: SLO | None = None
    workload: Workload | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    cached_tokens: np.ndarray | None = None

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def from_sim(cls, sim: _Sim, *, workload: Workload, engines: dict, models: dict, router: str,
                 seed: int, wall_s: float, iterations: int) -> SimulationResult:
        R = sim.req
        n = sim.n_arrived

        def f(col: list) -> np.ndarray:
            return np.asarray(col[:n], dtype=float)

        def i(col: list) -> np.ndarray:
            return np.asarray(col[:n], dtype=np.int64)

        vals, wts = [], []
        for rep in sim.replicas:
            if rep.itl:  # runs of decode steps: step k lasts alpha + beta·k
                alpha, beta, m, ndec, extra = (np.array(c, dtype=float) for c in zip(*rep.itl, strict=True))
                sizes = m.astype(np.int64)
                first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
                k = np.arange(sizes.sum()) - np.repeat(first, sizes)
                d = np.repeat(alpha, sizes) + np.repeat(beta, sizes) * k
                d[first] += extra
                vals.append(d)
                wts.append(np.repeat(ndec, sizes))
            if rep.itl_single:
                a = np.asarray(rep.itl_single, dtype=float).reshape(-1, 2)
                vals.append(a[:, 0])
                wts.append(a[:, 1])
        steps = sum(r.steps for r in sim.replicas)
        busy = [r.busy_time for r in sim.replicas]
        status = np.asarray(R.status[:n], dtype=np.int8)
        finish = f(R.finish)
        finish[status == 3] = np.nan
        meta = {
            "engine": {k: e.describe() for k, e in engines.items()},
            "step_model": {k: _describe(m) for k, m in models.items()},
            "devices_per_replica": {k: int(getattr(m, "devices", 1)) for k, m in models.items()},
            "replicas": len(sim.replicas),
            "pools": {r.role for r in sim.replicas},
            "router": router,
            "seed": seed,
            "requests_limit": sim.n_limit,
            "wall_s": wall_s,
            "iterations": iterations,
            "steps": steps,
            "busy_s": busy,
            "table_points": sum({id(r.timer): r.timer.table_points for r in sim.replicas}.values()),
        }
        meta["pools"] = sorted(meta["pools"])
        if sim.w.spec_acceptance is not None and all(getattr(e, "spec", None) is None for e in engines.values()):
            meta["spec_acceptance"] = "unused: the engine does not speculate (give it spec_decode)"
        cached = None
        if workload.has_reuse or workload.prefix_hit_rate:
            cached = i(R.hit)
            meta["prefix_cache_evicted_blocks"] = sum(r.cache.evicted for r in sim.replicas if r.cache)
        return cls(
            arrival_s=f(R.arrival), sched_s=f(R.sched), first_token_s=f(R.first), finish_s=finish,
            isl=i(R.isl), osl=i(R.osl), reasoning_tokens=i(R.reason), output_tokens=i(R.out),
            status=status, replica=i(R.replica), preemptions=i(R.preempt),
            itl_values=np.concatenate(vals) if vals else np.zeros(0),
            itl_weights=np.concatenate(wts) if wts else np.zeros(0),
            horizon_s=sim.horizon, tokens_per_word=workload.tokens_per_word,
            task_words=workload.task_words, slo=workload.slo, workload=workload, meta=meta,
            cached_tokens=cached)

    # -- per-request metrics -------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of requests that arrived."""
        return int(self.arrival_s.size)

    @property
    def completed(self) -> np.ndarray:
        return self.status == COMPLETED

    @property
    def queue_s(self) -> np.ndarray:
        """Queueing delay: arrival to the start of the first step computing the prompt [s]."""
        return self.sched_s - self.arrival_s

    @property
    def request_ttft_s(self) -> np.ndarray:
        """Each request's time to first token, t_first − t_arrival, queueing included [s]."""
        return self.first_token_s - self.arrival_s

    @property
    def request_tpot_s(self) -> np.ndarray:
        """Each request's time per output token after the first, (t_last − t_first)/(N − 1) [s]; NaN if
        N = 1."""
        n1 = self.output_tokens - 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n1 > 0, (self.finish_s - self.first_token_s) / np.where(n1 > 0, n1, 1), np.nan)

    @property
    def request_e2e_s(self) -> np.ndarray:
        """Each request's end-to-end latency t_last − t_arrival [s] (NaN unless completed)."""
        return np.where(self.completed, self.finish_s - self.arrival_s, np.nan)

    @property
    def ttfat_s(self) -> np.ndarray:
        """Time to first answer token TTFT + R·TPOT [s] (= TTFT without reasoning tokens), per request."""
        tp = np.nan_to_num(self.request_tpot_s, nan=0.0)
        return self.request_ttft_s + self.reasoning_tokens * tp

    # the old names, for one release (a DeprecationWarning each time)
    ttft_s = deprecated_property("SimulationResult", "ttft_s")
    tpot_s = deprecated_property("SimulationResult", "tpot_s")
    e2e_s = deprecated_property("SimulationResult", "e2e_s")

    def slo_met(self, slo: SLO | None = None) -> np.ndarray:
        """Boolean per request: completed and within every limit of ``slo`` (default: the workload's)."""
        from .metrics import slo_masks

        slo = slo or self.slo
        if slo is None:
            raise ValueError("slo_met: no SLO given and the workload has none")
        return slo_masks(self, slo)[0]

    # -- summaries ------------------------------------------------------------------------------
    def summary(self, slo: SLO | dict | None = None, warmup: float = 0.0) -> dict[str, Any]:
        """Counts, throughput, percentiles (p50/p90/p95/p99), joint SLO attainment and goodput.

        Parameters
        ----------
        slo : SLO | dict | None
            Objective (default: the workload's). Limits may be quantity strings.
        warmup : float
            Fraction of the earliest arrivals left out of the statistics (0 = none).
        """
        from ..spec_base import validate
        from .workload import SLO as _SLO

        if isinstance(slo, dict):
            slo = validate(_SLO, slo, "slo")
        return summarize(self, slo or self.slo, warmup)

    def to_dataframe(self):
        """One row per request (pandas DataFrame), times in seconds; the latencies are
        ``request_ttft_s``, ``request_tpot_s``, ``request_e2e_s`` (each request's own, under load)."""
        import pandas as pd

        df = pd.DataFrame({
            "arrival_s": self.arrival_s, "isl": self.isl, "osl": self.osl,
            "reasoning_tokens": self.reasoning_tokens, "output_tokens": self.output_tokens,
            "replica": self.replica,
            "status": pd.Categorical.from_codes(self.status, categories=list(STATUS_NAMES)),
            "queue_s": self.queue_s, "request_ttft_s": self.request_ttft_s,
            "request_tpot_s": self.request_tpot_s, "request_e2e_s": self.request_e2e_s,
            "ttfat_s": self.ttfat_s, "finish_s": self.finish_s, "preemptions": self.preemptions,
        })
        if self.cached_tokens is not None:
            df["cached_tokens"] = self.cached_tokens
        if self.slo is not None and self.slo.limits():
            df["slo_met"] = self.slo_met()
        return df

    _SHOW = (("arrived", "{:d}"), ("completed", "{:d}"), ("cancelled", "{:d}"), ("rejected", "{:d}"),
             ("in_flight", "{:d}"), ("output_tokens_per_s", "{:.1f}"),
             ("ttft_p50_s", "{:.3f}"), ("ttft_p95_s", "{:.3f}"), ("ttft_p99_s", "{:.3f}"),
             ("tpot_p50_s", "{:.4f}"), ("tpot_p95_s", "{:.4f}"), ("tpot_p99_s", "{:.4f}"),
             ("e2e_p95_s", "{:.3f}"), ("slo_attainment", "{:.3f}"), ("goodput_requests_per_s", "{:.3f}"),
             ("prefix_hit_rate", "{:.3f}"))

    def _rows(self) -> list[tuple[str, str]]:
        s = self.summary()
        rows = []
        for key, fmt in self._SHOW:
            v = s.get(key)
            if v is None or (isinstance(v, float) and not math.isfinite(v)):
                continue
            rows.append((key, fmt.format(v)))
        return rows

    def _title(self) -> str:
        eng = "/".join(sorted({e["name"] for e in self.meta.get("engine", {}).values()}))
        name = self.workload.name if self.workload is not None else "workload"
        return (f"SimulationResult({name}, engine={eng}, replicas={self.meta.get('replicas')}, "
                f"seed={self.meta.get('seed')})")

    def __repr__(self) -> str:
        rows = self._rows()
        w = max((len(k) for k, _ in rows), default=0)
        return "\n".join([self._title()] + [f"  {k.ljust(w)}  {v}" for k, v in rows])

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><td>{html.escape(k)}</td><td style='text-align:right'>{html.escape(v)}</td></tr>"
                       for k, v in self._rows())
        return f"<b>{html.escape(self._title())}</b><table>{body}</table>"
