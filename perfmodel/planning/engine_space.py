"""The engine dimensions of a plan's search: engines, their token budget and sequence limit, collapse.

A plan searches every candidate under every **engine variant**: each engine named (``vllm``,
``sglang``, ``trtllm``, ``vllm-2k``, a ``-preset`` form or a profile YAML) × each per-step token budget
(``max_num_batched_tokens``: vLLM ``--max-num-batched-tokens``, SGLang ``--chunked-prefill-size``,
TensorRT-LLM ``max_num_tokens``) × each sequence limit (``max_num_seqs``: vLLM ``--max-num-seqs``,
SGLang ``--max-running-requests``, TensorRT-LLM ``max_batch_size``) × each speculative-decoding
setting. A knob not given keeps each engine's own default (its profile's value).

**Collapse of the sequence limit** (screen stage, before any simulation). A sequence limit S that no
pool of a candidate lets bind cannot change the steady state. An aggregated replica, and a P/D decode
worker, hold at most

.. math:: n_{kv} = \\frac{K\\,f}{I + O} \\;\\text{(reserve\\_full)} \\quad\\text{or}\\quad
          \\frac{K\\,f}{I + O/2} \\;\\text{(on demand)}

sequences at the mean context (K the KV pool in tokens as the engine sizes it for that S, f the
engine's ``kv_capacity_fraction``; :func:`perfmodel.planning.bounds.sequence_limit`). A P/D prefill
worker holds only the prompts it is computing (a request leaves it with its first token): a step of
token budget B carries at most one prompt continued from the step before, the whole prompts that fit
and one prompt cut by the budget, so at the mean prompt length I

.. math:: n_{p} = \\lfloor B / I \\rfloor + 2 .

Among the variants of one candidate that differ only in S, listed from the smallest S₀, a larger S is
**collapsed** into S₀ when every pool's count (n_kv; P/D: n_p and the decode pool's n_kv) is below S₀
(neither limit binds) and every pool's KV pool is no larger than under S₀ (vLLM charges sampler
logits per sequence of S to the profiling run, so a larger S leaves a smaller pool; SGLang and
TensorRT-LLM size it without S): the steady state, the screen's capacity bounds and the per-replica
ceiling (P/D: the decode rate at the TPOT limit) of the sizing are then those of S₀ or below them. It
is a steady-state argument, not a proof for the simulation (a transient excess of running sequences
over the mean-length counts, which preemption cuts, and prompts much shorter than the mean are not
explored); ``prune=False`` simulates every variant.
The KV cache, not the concurrency the target rate implies, decides, because the sizing drives each
replica to overload (:func:`perfmodel.serving.max_load`), where a limit binds unless the cache does first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import checks
from ..errors import ConfigError

#: The engine knobs a plan searches, by their engine-profile field names (one name everywhere).
KNOBS = ("max_num_batched_tokens", "max_num_seqs")
#: Each knob's name in each engine's launch arguments (checked against the recorded argument schemas,
#: perfmodel/data/engines/args, by tests/test_cli_vocabulary.py); TensorRT-LLM's are also LLM API YAML keys.
ENGINE_NAMES = {"max_num_batched_tokens": {"vllm": "--max-num-batched-tokens", "sglang": "--chunked-prefill-size",
                                           "trtllm": "--max_num_tokens"},
                "max_num_seqs": {"vllm": "--max-num-seqs", "sglang": "--max-running-requests",
                                 "trtllm": "--max_batch_size"}}


def engine_list(engine: Any) -> list[Any]:
    """The engines of ``engine``: a comma list (``"vllm,sglang"``), a sequence, or one engine/profile."""
    if engine is None:
        return ["vllm"]
    if isinstance(engine, str):
        names = [e.strip() for e in engine.split(",") if e.strip()]
        if not names:
            raise ConfigError(f"engine: expected engine names (e.g. 'vllm,sglang,trtllm'), got {engine!r}")
        return list(dict.fromkeys(names))
    if isinstance(engine, Sequence) and not isinstance(engine, (bytes, dict)):
        if not engine:
            raise ConfigError("engine: expected at least one engine (e.g. ['vllm', 'sglang'])")
        return [n for e in engine for n in engine_list(e)] if all(isinstance(e, str) for e in engine) \
            else list(engine)
    return [engine]


def knob_values(values: Any, name: str) -> list[int] | None:
    """Whole-number knob values, sorted and without repeats (None: each engine's default)."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [v for v in values.split(",") if v.strip()]
    elif not isinstance(values, Sequence):
        values = [values]
    out = sorted({checks.count(int(v) if isinstance(v, str) and v.strip().isdigit() else v, name)
                  for v in values})
    if not out:
        raise ConfigError(f"{name}: expected at least one whole number >= 1, got {values!r}")
    return out


def engine_variants(engine: Any, spec_decode: Sequence[Any] = (None,), max_num_seqs: Any = None,
                    max_num_batched_tokens: Any = None) -> list[Any]:
    """Every engine variant to search, in enumeration order: engine × token budget × speculative
    decoding × sequence limit (ascending, so a group's smallest limit comes first).

    Returns
    -------
    list of Engine
        Each loaded with its knob values (:meth:`perfmodel.engine.Engine.load`; unknown names raise
        :class:`~perfmodel.errors.UnknownNameError` with the closest names).
    """
    from ..engine.engine import Engine

    seqs = knob_values(max_num_seqs, "max_num_seqs") or [None]
    budgets = knob_values(max_num_batched_tokens, "max_num_batched_tokens") or [None]
    out = []
    for name in engine_list(engine):
        for b in budgets:
            for opt in (spec_decode or (None,)):
                for s in seqs:
                    kw = {k: v for k, v in (("max_num_batched_tokens", b), ("max_num_seqs", s)) if v is not None}
                    out.append(Engine.load(name, spec_decode=opt, **kw))
    return out


def variant_label(eng: Any, searched: dict[str, bool]) -> str:
    """What tells this engine variant apart in a deployment name: the engine and the knobs searched
    (``"sglang max_num_seqs 256"``); empty when the search has one engine and no knob list."""
    parts = [eng.name] if searched.get("engine") else []
    parts += [f"{k} {getattr(eng.profile, k)}" for k in KNOBS if searched.get(k)]
    return " ".join(parts)


def deployment_name(task: dict[str, Any]) -> str:
    """The candidate's name, with its engine variant's label in brackets when there is one."""
    label = task.get("variant")
    return task["candidate"].name + (f" [{label}]" if label else "")


def engine_columns(eng: Any) -> dict[str, Any]:
    """The plan row's engine columns: ``engine`` (its name) and the knob values it ran with."""
    return {"engine": eng.name, **{k: int(getattr(eng.profile, k)) for k in KNOBS}}


def collapse_key(task: dict[str, Any]) -> tuple:
    """The group of variants of one task that differ only in ``max_num_seqs``: (candidate, engine
    name, calibration terms, token budget, speculative decoding, the profile's other fields)."""
    eng = task["engine"]
    rest = eng.profile.model_dump(exclude={"max_num_seqs", "sources"})
    spec = eng.spec.label() if eng.spec is not None else "off"
    return (id(task["candidate"]), eng.name, eng.source, spec, tuple(sorted((k, str(v)) for k, v in rest.items())))


def kv_sequences(task: dict[str, Any], isl: float, osl: float, pool: str = "model") -> tuple[float, float]:
    """(sequences the KV cache holds at the mean context, KV pool [tokens]) of one pool of a task under
    its engine (``pool``: ``"model"``, the aggregated replica or P/D prefill worker; ``"decode_model"``):
    :func:`perfmodel.planning.bounds.sequence_limit` without the sequence limit itself."""
    import numpy as np

    from .bounds import sequence_limit

    eng = task["engine"]
    served = eng.step(task[pool])
    unlimited = eng.profile.model_copy(update={"max_num_seqs": 2**62})
    return sequence_limit(served, unlimited, isl, osl), float(np.ravel(served.kv_capacity_tokens)[0])


def prefill_sequences(profile: Any, isl: float) -> float:
    """Prompts a P/D prefill worker computes at once at the mean prompt length ``isl``:
    :math:`\\lfloor B / I \\rfloor + 2` (module docstring; B = ``max_num_batched_tokens``)."""
    import math

    return float(math.floor(float(profile.max_num_batched_tokens) / max(float(isl), 1.0)) + 2)


def pool_sequences(task: dict[str, Any], isl: float, osl: float) -> tuple[float, tuple[float, ...], str]:
    """(most sequences any pool of the task holds whatever its limit, each pool's KV pool [tokens], what
    bounds them in words) at the mean lengths (module docstring)."""
    n_kv, pool = kv_sequences(task, isl, osl, "decode_model" if task["candidate"].disaggregated else "model")
    if not task["candidate"].disaggregated:
        return n_kv, (pool,), f"the KV cache holds {n_kv:.0f} sequences at the mean context"
    n_p = prefill_sequences(task["engine"].profile, isl)
    _, pool_p = kv_sequences(task, isl, osl, "model")
    return max(n_p, n_kv), (pool_p, pool), (f"a prefill worker computes at most {n_p:.0f} prompts a step "
                                            f"and the decode pool's KV cache holds {n_kv:.0f} sequences at "
                                            "the mean context")


class SequenceLimitCollapse:
    """The collapse of the sequence limit (module docstring), fed the feasible tasks in enumeration
    order; :meth:`into` says which kept variant a task collapses into (None: keep it)."""

    def __init__(self) -> None:
        # group -> (S0, KV pools of S0, its name)
        self.first: dict[tuple, tuple[int, tuple[float, ...], str]] = {}

    def into(self, task: dict[str, Any], isl: float, osl: float) -> tuple[str, str] | None:
        """(kept deployment, reason) when ``task`` collapses, else None (and it may head its group)."""
        key = collapse_key(task)
        s = int(task["engine"].profile.max_num_seqs)
        n, pools, why = pool_sequences(task, isl, osl)
        if key not in self.first:
            if n < s:   # no pool lets S bind: larger limits in this group may collapse into it
                self.first[key] = (s, pools, deployment_name(task))
            return None
        s0, pools0, name0 = self.first[key]
        if s > s0 and n < s0 and all(p <= p0 for p, p0 in zip(pools, pools0, strict=True)):
            sizes = ", ".join(f"{p:,.0f} <= {p0:,.0f}" for p, p0 in zip(pools, pools0, strict=True))
            return name0, (f"max_num_seqs {s} cannot bind: {why}, fewer than max_num_seqs {s0}, with "
                           f"{'KV pools' if len(pools) > 1 else 'a KV pool'} no larger ({sizes} tokens); "
                           f"same steady state as {name0}, or below it")
        return None
