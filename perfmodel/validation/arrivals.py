"""How the requests of a measured serving run arrived: closed loop (clients) or open loop (a rate).

Optional columns of the ``serving_measured.csv`` schema (absent or empty: a closed-loop run, as every
row of the shipped CSV):

``arrival``
    ``closed``: ``C`` clients each send their next request when the previous one finished (the
    concurrency is ``batch_size`` per attention-DP rank, as before); ``open``: requests arrive at a
    fixed mean rate whatever the server does (``vllm bench serve --request-rate``, GuideLLM's
    ``poisson``/``constant`` strategies, inference-perf's rate stages, AIPerf ``--request-rate``).
``rate_requests_per_s``
    Open loop: mean arrival rate of the whole run, over all replicas [requests/s] (the glossary's name
    of an offered arrival rate; a table with the old column ``request_rate_rps`` is read, with a
    DeprecationWarning: :func:`current_arrival_columns`).
``arrival_process``
    Open loop: ``poisson`` (exponential gaps), ``gamma`` (gamma-distributed gaps with coefficient
    of variation ``arrival_cv``; vLLM's ``--burstiness`` b gives CV = 1/sqrt(b)) or ``constant``
    (equal gaps). Anything else is kept as written and the row is skipped with the reason.
``arrival_cv``
    Coefficient of variation of the gaps between arrivals (gamma; poisson 1, constant 0).
``replicas``
    Identical replicas sharing the open-loop rate behind one load balancer (empty: 1). A
    disaggregated row's pools are its ``prefill_num_workers`` and ``decode_num_workers``: 1 there.
``requests``
    Requests the run's means are taken over (the completed ones); the simulation sends as many.
``max_concurrency``
    A client-side cap on requests in flight during an open-loop run (empty: none). Where it binds the
    run is neither open nor closed loop: scored only when the simulation without the cap stays at or
    below it, else skipped with the reason (the simulator has no client cap).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..deprecation import renamed_columns

#: Columns describing the arrival process (all optional, see the module docstring).
ARRIVAL_COLUMNS = ("arrival", "rate_requests_per_s", "arrival_process", "arrival_cv", "replicas", "requests",
                   "max_concurrency")
#: Arrival columns renamed in this release (old -> new); :func:`current_arrival_columns` reads the old ones.
RENAMED_ARRIVAL_COLUMNS = {"request_rate_rps": "rate_requests_per_s"}
#: Open-loop arrival processes the simulator replays.
PROCESSES = ("poisson", "gamma", "constant")
#: Coefficient of variation the simulator's gamma gaps use for ``constant`` arrivals (it has no
#: deterministic process): gaps within ±10 % of 1/rate at two standard deviations.
CONSTANT_CV = 0.05


def current_arrival_columns(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """``df`` with the old arrival column names (:data:`RENAMED_ARRIVAL_COLUMNS`) replaced by the new ones,
    after a :class:`DeprecationWarning` naming them; ``df`` itself when it has none. Where both names are
    columns, the new one is kept and the old one dropped."""
    return renamed_columns(df, RENAMED_ARRIVAL_COLUMNS, where, "an arrival rate in requests/s")


def open_loop_mask(df: pd.DataFrame) -> np.ndarray:
    """Rows of a serving table recorded as open loop (``arrival == "open"``, case and blanks ignored)."""
    if "arrival" not in df.columns:
        return np.zeros(len(df), dtype=bool)
    return df["arrival"].fillna("").astype(str).str.strip().str.lower().eq("open").to_numpy()


def _cell(row: dict, name: str) -> Any:
    v = row.get(name)
    return None if v is None or (isinstance(v, float) and math.isnan(v)) or str(v).strip() == "" else v


def _number(row: dict, name: str) -> tuple[Any, float | None]:
    """(raw cell, its value as a float: None when empty, NaN when not a number)."""
    raw = _cell(row, name)
    try:
        return raw, None if raw is None else float(raw)
    except (TypeError, ValueError):
        return raw, math.nan


def row_arrival(row: dict) -> dict[str, Any]:
    """Arrival fields of one open-loop row, checked.

    Returns
    -------
    dict
        ``rate_requests_per_s`` [1/s], ``arrival_process``, ``arrival_cv`` (the CV the simulator uses:
        1 for poisson, :data:`CONSTANT_CV` for constant), ``replicas`` (>= 1), ``requests`` (None when
        not recorded) and ``max_concurrency`` (None: no cap).

    Raises
    ------
    ValueError
        A field that is missing or not allowed, named with its value and what is allowed.
    """
    process = str(_cell(row, "arrival_process") or "poisson").strip().lower()
    if process not in PROCESSES:
        raise ValueError(f"arrival_process={process!r} is not simulated (allowed: {', '.join(PROCESSES)})")
    raw_rate, rate = _number(row, "rate_requests_per_s")
    if not (rate is not None and math.isfinite(rate) and rate > 0):
        raise ValueError(f"rate_requests_per_s={raw_rate!r} is not a finite rate > 0 [requests/s]")
    cv = 1.0 if process == "poisson" else CONSTANT_CV
    if process == "gamma":
        raw_cv, cv = _number(row, "arrival_cv")
        if not (cv is not None and math.isfinite(cv) and cv > 0):
            raise ValueError(f"arrival_cv={raw_cv!r} is not a number > 0 (gamma arrivals need one)")
    counts = {}
    for name in ("replicas", "requests", "max_concurrency"):
        raw, value = _number(row, name)
        if value is not None and not (math.isfinite(value) and value >= 1 and value == int(value)):
            raise ValueError(f"{name}={raw!r} is not an integer >= 1")
        counts[name] = None if value is None else int(value)
    return {"rate_requests_per_s": rate, "arrival_process": process, "arrival_cv": cv,
            "replicas": counts["replicas"] or 1, "requests": counts["requests"],
            "max_concurrency": counts["max_concurrency"]}
