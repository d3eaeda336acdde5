"""Declarative workloads and SLOs: who sends what, when, and what counts as good enough.

A :class:`Workload` fixes the load process (open loop: Poisson, gamma with a burstiness CV, or a
trace; closed loop: a fixed number of clients with optional think time), the input / output length
distributions, reasoning tokens, a first-token timeout and an optional :class:`SLO`. Workloads are
YAML files validated with pydantic (``extra="forbid"``); shipped examples live in ``workloads/``.

All times are seconds, rates requests per second, lengths tokens. Sampling uses a
:class:`numpy.random.Generator`, so a seed reproduces a run exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from ..errors import ConfigError, SpecError
from ..fileio import read_csv
from ..hardware.registry import read_yaml
from ..spec_base import Strict, optional_seconds, seconds, validate, validate_file
from ..units import to_si

# ----------------------------------------------------------------------------------------------
# length distributions


class Fixed(Strict):
    """Every request has ``value`` tokens."""

    dist: Literal["fixed"] = "fixed"
    value: int = Field(ge=0)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(n, self.value, dtype=np.int64)

    @property
    def mean(self) -> float:
        return float(self.value)


class Uniform(Strict):
    """Integers uniform on [low, high] (both included)."""

    dist: Literal["uniform"]
    low: int = Field(ge=0)
    high: int = Field(ge=0)

    @model_validator(mode="after")
    def _order(self) -> Uniform:
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) must be >= low ({self.low})")
        return self

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(self.low, self.high + 1, size=n, dtype=np.int64)

    @property
    def mean(self) -> float:
        return 0.5 * (self.low + self.high)


class LogNormal(Strict):
    """Log-normal lengths with arithmetic ``mean`` and log-space ``sigma``, clipped to [min, max].

    ``mu = ln(mean) - sigma^2 / 2`` so that the unclipped mean is ``mean`` [tokens].
    """

    dist: Literal["lognormal"]
    mean: float = Field(gt=0)
    sigma: float = Field(ge=0)
    min: int = Field(default=1, ge=0)
    max: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _order(self) -> LogNormal:
        if self.max is not None and self.max < self.min:
            raise ValueError(f"max ({self.max}) must be >= min ({self.min})")
        return self

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        mu = np.log(self.mean) - 0.5 * self.sigma ** 2
        x = np.rint(rng.lognormal(mu, self.sigma, size=n)).astype(np.int64)
        return np.clip(x, self.min, self.max if self.max is not None else None)


class Empirical(Strict):
    """Lengths drawn from ``values`` with optional ``weights`` (normalised)."""

    dist: Literal["empirical"]
    values: list[int] = Field(min_length=1)
    weights: list[float] | None = None

    @model_validator(mode="after")
    def _weights(self) -> Empirical:
        if any(v < 0 for v in self.values):
            raise ValueError("values must be >= 0 tokens")
        if self.weights is not None:
            if len(self.weights) != len(self.values):
                raise ValueError(f"weights has {len(self.weights)} entries, values {len(self.values)}")
            if any(w < 0 for w in self.weights) or sum(self.weights) <= 0:
                raise ValueError("weights must be >= 0 with a positive sum")
        return self

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        p = None
        if self.weights is not None:
            w = np.asarray(self.weights, dtype=float)
            p = w / w.sum()
        return rng.choice(np.asarray(self.values, dtype=np.int64), size=n, p=p)

    @property
    def mean(self) -> float:
        if self.weights is None:
            return float(np.mean(self.values))
        w = np.asarray(self.weights, dtype=float)
        return float(np.dot(w / w.sum(), self.values))


LengthDist = Annotated[Fixed | Uniform | LogNormal | Empirical, Field(discriminator="dist")]


def _length(v: Any) -> Any:
    """Accept a bare integer for a fixed length."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return {"dist": "fixed", "value": int(v)}
    if isinstance(v, dict) and "dist" not in v and set(v) == {"value"}:
        return {"dist": "fixed", **v}
    return v


# ----------------------------------------------------------------------------------------------
# arrivals

#: ``Arrival.ramp_up`` value that asks for one mean request duration (resolved by the simulator).
AUTO_RAMP = "auto"


class Arrival(Strict):
    """How requests arrive.

    Attributes
    ----------
    process : {"poisson", "gamma", "trace", "closed"}
        Open loop: ``poisson`` (exponential gaps), ``gamma`` (gaps with coefficient of variation
        ``cv``; cv > 1 is burstier than Poisson), ``trace`` (arrival times from a CSV file).
        Closed loop: ``closed`` (``concurrency`` clients, each sends its next request ``think_time``
        after the previous one ended).
    rate : float | None
        Mean arrival rate [requests/s] for poisson / gamma. Accepts ``"4 /s"``.
    cv : float
        Coefficient of variation of inter-arrival gaps (gamma only; 1 = Poisson).
    trace : str | None
        CSV with a column ``arrival_s`` (seconds) and optionally ``isl``, ``osl``,
        ``reasoning_tokens``, ``prefix_id`` (which shared prefix, with the workload's ``prefix``); relative paths are read from the workload file's folder.
    time_scale : float
        Multiplies trace times (0.5 replays the trace twice as fast).
    concurrency : int | None
        Number of closed-loop clients.
    think_time : float
        Pause of a closed-loop client between a response and its next request [s].
    ramp_up : float | "auto"
        Closed loop: client k sends its first request at k·ramp_up/concurrency [s]. ``"auto"`` (the
        default of a closed loop) is one mean request duration D at that load, from the engine-aware
        steady state (:mod:`perfmodel.serving.ramp`), so client k starts at k·D/C and the clients are
        spread over the request cycle as in steady state. 0 starts all clients at once; with fixed
        lengths they then stay in synchronised waves (the TTFT is that of one wave of C prompts).
        Open loops have none (0).
    """

    process: Literal["poisson", "gamma", "trace", "closed"] = "poisson"
    rate: float | None = None
    cv: float = Field(default=1.0, gt=0)
    trace: str | None = None
    time_scale: float = Field(default=1.0, gt=0)
    concurrency: int | None = Field(default=None, ge=1)
    think_time: float = 0.0
    ramp_up: float | Literal["auto"] = AUTO_RAMP

    @model_validator(mode="before")
    @classmethod
    def _default_ramp(cls, data: Any) -> Any:
        # "auto" is the default of a closed loop only; an open loop has no ramp (0)
        if isinstance(data, dict) and data.get("ramp_up") is None:
            return {**data, "ramp_up": AUTO_RAMP if data.get("process") == "closed" else 0.0}
        return data

    @field_validator("rate", mode="before")
    @classmethod
    def _rate(cls, v: Any) -> float | None:
        return None if v is None else to_si(v, "frequency", "value")

    @field_validator("think_time", mode="before")
    @classmethod
    def _think(cls, v: Any) -> float:
        return seconds(v, "value")

    @field_validator("ramp_up", mode="before")
    @classmethod
    def _ramp(cls, v: Any) -> float | str:
        if isinstance(v, str) and v.strip().lower() == AUTO_RAMP:
            return AUTO_RAMP
        if isinstance(v, str) and v.strip() in ("0", "0.0"):
            return 0.0  # zero needs no unit: all clients at once
        try:
            return seconds(v, "value")
        except (ValueError, ConfigError) as e:
            raise ValueError(f"expected a time (e.g. '30 s'; 0 = all clients at once) or 'auto' (one mean "
                             f"request duration), got {v!r}: {e}") from e

    @model_validator(mode="after")
    def _consistent(self) -> Arrival:
        p = self.process
        if p in ("poisson", "gamma") and (self.rate is None or self.rate <= 0):
            raise ValueError(f"process {p!r} needs rate > 0 [requests/s], got {self.rate!r}")
        if p == "trace" and not self.trace:
            raise ValueError("process 'trace' needs trace: <path to CSV with an arrival_s column>")
        if p == "closed" and self.concurrency is None:
            raise ValueError("process 'closed' needs concurrency >= 1")
        if p != "closed" and (self.concurrency is not None or self.ramp_up != 0):
            raise ValueError(f"concurrency and ramp_up are for process 'closed', not {p!r}")
        return self

    @property
    def closed(self) -> bool:
        return self.process == "closed"

    @property
    def auto_ramp(self) -> bool:
        """Whether the closed-loop ramp-up is ``"auto"`` (resolved per simulation)."""
        return self.ramp_up == AUTO_RAMP


class SLO(Strict):
    """Service-level objective: per-request limits, all of which must hold (a *joint* SLO).

    Attributes
    ----------
    ttft, tpot, e2e, ttfat : float | None
        Limits [s] on time to first token (including queueing), time per output token, end-to-end
        latency and time to first answer token (after reasoning). ``None`` = no limit.
    target : float
        Fraction of requests that must meet all limits (attainment target), e.g. 0.95.
    """

    ttft: float | None = None
    tpot: float | None = None
    e2e: float | None = None
    ttfat: float | None = None
    target: float = Field(default=0.95, gt=0, le=1)

    @field_validator("ttft", "tpot", "e2e", "ttfat", mode="before")
    @classmethod
    def _t(cls, v: Any) -> float | None:
        return optional_seconds(v, "value")

    def limits(self) -> dict[str, float]:
        """The limits that are set, ``{metric: seconds}``."""
        return {k: v for k in ("ttft", "tpot", "e2e", "ttfat") if (v := getattr(self, k)) is not None}


class SharedPrefix(Strict):
    """Prompts that start with one of ``pool`` shared prefixes of ``tokens`` tokens each.

    Each request (each session, with ``sessions``) draws one prefix uniformly from the pool; a
    trace's ``prefix_id`` column names it instead. The prefix is part of the prompt (``isl`` counts
    it), so a prompt shorter than the prefix shares only its whole length.

    Attributes
    ----------
    tokens : int
        Length S of every shared prefix [tokens] (a system prompt, a RAG corpus, few-shot examples).
    pool : int
        Number P of distinct prefixes (1 = one system prompt for every request).
    """

    tokens: int = Field(ge=1)
    pool: int = Field(default=1, ge=1)


class Sessions(Strict):
    """Multi-turn conversations that resend their history.

    Turn 1's prompt is drawn from ``isl``; turn t > 1's prompt is the previous prompt, the previous
    answer and ``user_tokens`` new tokens (reasoning tokens are not resent, so after a reasoning turn
    only the previous prompt is a reusable prefix). A session sends turn t + 1 ``think_time`` after
    turn t ended; a session whose turn is cancelled or rejected ends. Open loop: sessions start at
    ``rate / turns`` per second, so the request rate is ``rate`` when every turn completes. Closed
    loop: each client runs sessions back to back (``arrival.think_time`` between all its requests).

    Attributes
    ----------
    turns : int
        Requests per session (>= 2).
    user_tokens : LengthDist
        New user tokens appended per turn after the first [tokens]; an integer means fixed.
    think_time : float
        Open loop: pause between an answer and the session's next turn [s] (closed loop: 0, the
        client's ``arrival.think_time`` applies).
    """

    turns: int = Field(ge=2)
    user_tokens: LengthDist
    think_time: float = 0.0

    @field_validator("user_tokens", mode="before")
    @classmethod
    def _len(cls, v: Any) -> Any:
        return _length(v)

    @field_validator("think_time", mode="before")
    @classmethod
    def _think(cls, v: Any) -> float:
        t = seconds(v, "sessions.think_time")
        if not t >= 0:
            raise ValueError(f"must be >= 0 s, got {v!r}")
        return t


class Workload(Strict):
    """A load to serve: arrivals, lengths, reasoning, timeout and an optional SLO.

    Attributes
    ----------
    name : str
        Id shown in results.
    arrival : Arrival
        Load process (open or closed loop).
    isl, osl : LengthDist
        Input (prompt) and answer lengths [tokens]; an integer means fixed.
    reasoning_tokens : LengthDist
        Tokens generated before the answer (thinking); total output = reasoning + osl.
    tokens_per_word : float
        Tokenizer density of the target language [tokens/word], to express times per text length.
    task_words : int | None
        Length of a reference answer [words]: results report the time to finish it.
    timeout : float | None
        A request with no first token this long after arrival is cancelled [s] (e.g. 20 s).
    max_queue : int | None
        Arrivals finding this many requests waiting on their replica are rejected.
    requests : int | None
        Number of requests to send (default when ``simulate`` is not told).
    horizon : float | None
        Simulated time after which arrivals stop and unfinished requests are reported in flight [s].
    prefix_hit_rate : float
        Share of each prompt found in the engine's prefix cache, 0 (default) to < 1: those tokens are
        attended but not computed. An explicit rate, applied to every fresh prompt with no cache state;
        exclusive with ``prefix`` and ``sessions``, which describe the reuse instead.
    prefix : SharedPrefix | None
        Shared prompt prefixes (``{tokens: 2048, pool: 16}``): the simulator keeps a prefix cache.
    sessions : Sessions | None
        Multi-turn sessions resending their history (``{turns: 4, user_tokens: 256}``).
    spec_acceptance : float | list of float | None
        Speculative-decoding acceptance on this workload's text: one rate, or one per draft position
        (each in [0, 1]). Acceptance depends on the text (code is more predictable than chat), so it is a
        workload property: it replaces the method's sourced default when the engine speculates and
        its spec has no acceptance of its own (``accept=`` given with the spec wins). Unused, and said
        so in the result's ``meta``, when the engine does not speculate.
    slo : SLO | None
        Joint latency objective.
    """

    schema_version: Literal[1] = 1
    kind: Literal["workload"] = "workload"
    name: str = "workload"
    description: str = ""
    arrival: Arrival
    isl: LengthDist
    osl: LengthDist
    reasoning_tokens: LengthDist = Field(default_factory=lambda: Fixed(value=0))
    tokens_per_word: float = Field(default=1.0, gt=0)
    task_words: int | None = Field(default=None, ge=1)
    timeout: float | None = None
    max_queue: int | None = Field(default=None, ge=0)
    requests: int | None = Field(default=None, ge=1)
    horizon: float | None = None
    slo: SLO | None = None
    prefix_hit_rate: float = Field(default=0.0, ge=0.0, lt=1.0)
    prefix: SharedPrefix | None = None
    sessions: Sessions | None = None
    spec_acceptance: float | list[float] | None = None
    base_dir: str | None = Field(default=None, exclude=True)

    @field_validator("isl", "osl", "reasoning_tokens", mode="before")
    @classmethod
    def _len(cls, v: Any) -> Any:
        return _length(v)

    @field_validator("timeout", "horizon", mode="before")
    @classmethod
    def _times(cls, v: Any) -> float | None:
        return optional_seconds(v, "value")

    @model_validator(mode="after")
    def _osl(self) -> Workload:
        if isinstance(self.osl, Fixed) and self.osl.value < 1 and not (
                isinstance(self.reasoning_tokens, Fixed) and self.reasoning_tokens.value > 0):
            raise ValueError("osl: a request must generate at least one token")
        if isinstance(self.isl, Fixed) and self.isl.value < 1:
            raise ValueError("isl: a prompt needs at least one token")
        if self.prefix_hit_rate and (self.prefix is not None or self.sessions is not None):
            raise ValueError(f"prefix_hit_rate ({self.prefix_hit_rate}) is exclusive with prefix and sessions, "
                             "which describe the reuse the simulator's prefix cache then finds: give one")
        rates = [self.spec_acceptance] if isinstance(self.spec_acceptance, float) else self.spec_acceptance or []
        if self.spec_acceptance is not None and not (rates and all(0.0 <= r <= 1.0 for r in rates)):
            raise ValueError(f"spec_acceptance: expected a rate or a list of per-position rates, each in [0, 1], "
                             f"got {self.spec_acceptance!r}")
        if self.sessions is not None:
            if self.arrival.process == "trace":
                raise ValueError("sessions: not available with a trace (give each row a prefix_id instead)")
            if self.arrival.closed and self.sessions.think_time:
                raise ValueError(f"sessions.think_time ({self.sessions.think_time} s) is for open loop; a closed "
                                 "loop's clients pause arrival.think_time between all their requests")
        return self

    @property
    def has_reuse(self) -> bool:
        """Whether the workload describes prefix reuse (shared prefixes or sessions)."""
        return self.prefix is not None or self.sessions is not None

    # -- convenience constructors ----------------------------------------------------------
    @classmethod
    def fixed(cls, isl: int, osl: int, *, rate: float | None = None, concurrency: int | None = None,
              cv: float = 1.0, think_time: Any = 0.0, ramp_up: Any = AUTO_RAMP, **kwargs: Any) -> Workload:
        """Fixed ISL/OSL workload, open loop at ``rate`` [req/s] or closed loop at ``concurrency``.

        A closed loop's clients start over ``ramp_up`` (default ``"auto"``: one mean request duration,
        see :class:`Arrival`; 0 starts them together).

        Examples
        --------
        >>> Workload.fixed(1024, 256, rate=4.0).arrival.process
        'poisson'
        """
        if (rate is None) == (concurrency is None):
            raise SpecError("Workload.fixed: give exactly one of rate= [requests/s] or concurrency=")
        if concurrency is not None:
            arrival = {"process": "closed", "concurrency": concurrency, "think_time": think_time,
                       "ramp_up": ramp_up}
        else:
            arrival = {"process": "poisson" if cv == 1.0 else "gamma", "rate": rate, "cv": cv}
        return validate(cls, {"arrival": arrival, "isl": isl, "osl": osl, **kwargs}, "Workload.fixed")

    def with_load(self, *, rate: float | None = None, concurrency: int | None = None) -> Workload:
        """Same workload at another open-loop rate or closed-loop concurrency.

        A trace is rescaled in time so that its mean rate becomes ``rate``.
        """
        a = self.arrival
        if rate is not None:
            if a.process == "closed":
                new = {"process": "poisson", "rate": rate}
            elif a.process == "trace":
                base = trace_mean_rate(self)
                new = {**a.model_dump(), "time_scale": a.time_scale * base / rate}
            else:
                new = {**a.model_dump(), "rate": rate}
        elif concurrency is not None:
            new = {"process": "closed", "concurrency": int(concurrency), "think_time": a.think_time,
                   "ramp_up": a.ramp_up if a.closed else AUTO_RAMP}
        else:
            return self
        return self.replace(arrival=new)

    @property
    def is_closed_loop(self) -> bool:
        return self.arrival.closed


def load_workload(path_or_spec: str | Path | dict | Workload) -> Workload:
    """Load a workload from YAML (path), a mapping or return the instance.

    Raises
    ------
    SpecError
        Names the file, the field, the value and what is allowed.
    """
    if isinstance(path_or_spec, Workload):
        return path_or_spec
    if isinstance(path_or_spec, dict):
        return validate(Workload, path_or_spec, "workload")
    path = Path(path_or_spec)
    data = read_yaml(path)
    if isinstance(data, dict):
        data = {**data, "base_dir": str(path.resolve().parent)}
    return validate_file(Workload, data, str(path))


# ----------------------------------------------------------------------------------------------
# sampling


def shortest(d: Any) -> int:
    """Smallest length a distribution can draw [tokens]."""
    for attr in ("value", "low", "min"):
        v = getattr(d, attr, None)
        if v is not None:
            return int(v)
    return int(min(d.values))


def check_context(w: Workload, model: Any) -> None:
    """Refuse a workload none of whose requests fits the model's declared context.

    The shortest possible request needs ``isl + reasoning + osl - 1`` tokens of context; if even that
    exceeds ``model.max_position_embeddings`` every request would be refused.

    Raises
    ------
    ConfigError
        Names the shortest request and the model's limit.
    """
    limit = getattr(model, "max_position_embeddings", None)
    if not limit or w.arrival.process == "trace":
        return
    need = shortest(w.isl) + shortest(w.reasoning_tokens) + shortest(w.osl) - 1
    if need > limit:
        raise ConfigError(f"isl + osl: every request of workload {w.name!r} needs at least {need} tokens of "
                          f"context (isl {shortest(w.isl)}, reasoning {shortest(w.reasoning_tokens)}, osl "
                          f"{shortest(w.osl)}), more than {model.id}'s {limit} (max_position_embeddings)")


def _trace_path(w: Workload) -> Path:
    p = Path(w.arrival.trace or "")
    if not p.is_absolute() and w.base_dir:
        p = Path(w.base_dir) / p
    return p


def read_trace(w: Workload) -> dict[str, np.ndarray]:
    """Read the trace CSV of ``w``: ``arrival_s`` sorted and rebased to 0, optional length columns."""
    path = _trace_path(w)
    try:
        df = read_csv(path, "trace CSV", required=("arrival_s",),
                      numeric=("arrival_s", "isl", "osl", "reasoning_tokens", "prefix_id"))
    except SpecError as exc:
        raise SpecError(f"arrival.trace: {exc} (the trace needs a column 'arrival_s' [s])") from None
    order = np.argsort(df["arrival_s"].to_numpy(float), kind="stable")
    out = {}
    if "prefix_id" in df.columns and w.prefix is None:
        raise SpecError(f"arrival.trace: {path} has a prefix_id column; give the workload a prefix: {{tokens: S}} "
                        "(the length of the shared prefix each id names)")
    for col in ("arrival_s", "isl", "osl", "reasoning_tokens", "prefix_id"):
        if col in df.columns:
            v = df[col].to_numpy()[order]
            if not np.all(np.isfinite(v.astype(float))) or np.any(v.astype(float) < 0):
                raise SpecError(f"arrival.trace: {path}: column {col!r} must be finite and >= 0")
            out[col] = v.astype(float if col == "arrival_s" else np.int64)
    out["arrival_s"] = (out["arrival_s"] - out["arrival_s"][0]) * w.arrival.time_scale
    return out


def trace_mean_rate(w: Workload) -> float:
    """Mean arrival rate of the (scaled) trace [requests/s]."""
    t = read_trace(w)["arrival_s"]
    if len(t) < 2 or t[-1] <= 0:
        raise SpecError("arrival.trace: need at least two distinct arrival times to define a rate")
    return (len(t) - 1) / t[-1]


def interarrivals(a: Arrival, n: int, rng: np.random.Generator) -> np.ndarray:
    """Gaps between open-loop arrivals [s] (Poisson: exponential; gamma: shape 1/cv², mean 1/rate)."""
    assert a.rate is not None
    if a.process == "poisson" or a.cv == 1.0:
        return rng.exponential(1.0 / a.rate, size=n)
    shape = 1.0 / a.cv ** 2
    return rng.gamma(shape, 1.0 / (a.rate * shape), size=n)


def sample_lengths(w: Workload, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Draw ``n`` (isl, osl, reasoning) triples [tokens]; at least one output token per request."""
    isl = np.maximum(w.isl.sample(n, rng), 1)
    osl = w.osl.sample(n, rng)
    reason = w.reasoning_tokens.sample(n, rng)
    osl = np.where(osl + reason < 1, 1, osl)
    return isl, osl, reason
