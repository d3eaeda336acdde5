"""Launch configurations for a chosen plan: ``vllm serve``, SGLang, ``trtllm-serve`` and a Dynamo graph.

A :class:`LaunchSpec` is what a launch needs from a plan row (:meth:`LaunchSpec.from_plan_row`) or a
deployment file (:meth:`LaunchSpec.from_deployment`): the model's Hugging Face name, the weight and
KV-cache formats, one or two pools (aggregated, or prefill and decode) each with its tensor /
pipeline / expert parallelism, attention data parallelism and replica count, the scheduler limits of
the engine profile the plan simulated (``max_num_seqs``, the per-step token budget, chunked prefill)
and the speculative decoding, if any. :func:`launch_config` turns it into a :class:`LaunchConfig`:
the command lines, the files they read (TensorRT-LLM's LLM API YAML, the Dynamo manifest) and notes.

Every generated argument list and file is checked against the engine's recorded argument schema
(:mod:`perfmodel.planning.engine_args`, which names the engine version and source read) before it is
returned, so a flag the recorded version does not accept is an error here, not at launch.

Mapping (one replica of ``tp·dp_attention·pp`` devices):

- vLLM: ``--tensor-parallel-size tp``, ``--data-parallel-size dp_attention`` (DP attention),
  ``--enable-expert-parallel`` for MoE with ep > 1 or DP (vLLM's EP group is tp·dp);
- SGLang: ``--tp-size tp·dp_attention``, ``--dp-size dp_attention --enable-dp-attention``,
  ``--ep-size ep``;
- TensorRT-LLM: ``--tp_size tp·dp_attention`` with ``enable_attention_dp`` (attention TP 1 per rank),
  ``--ep_size ep``.

Weight formats an engine quantizes online (FP8, NVFP4 via ModelOpt) get a flag; formats read from the
checkpoint (block FP8, MXFP4, INT4/INT8) get a note to serve such a checkpoint.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, PerfmodelError, unknown_name
from ..formats import checkpoint_format, default_kv_cache, resolve_formats
from .engine_args import load_arg_schema
from .launch_engines import LaunchConfig

LAUNCH_ENGINES = ("vllm", "sglang", "trtllm", "dynamo")


@dataclass(frozen=True)
class PoolLayout:
    """Layout of one pool's replicas.

    Attributes
    ----------
    role : {"aggregated", "prefill", "decode"}
    tp, pp, ep, dp_attention : int
        Tensor, pipeline and expert parallelism and attention data parallelism of one replica.
    replicas : int
        Engine instances (workers) in the pool.
    """

    role: str
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp_attention: int = 1
    replicas: int = 1

    @property
    def devices(self) -> int:
        """Devices of one replica: tp·dp_attention·pp."""
        return self.tp * self.dp_attention * self.pp


@dataclass(frozen=True)
class LaunchSpec:
    """Everything a launch configuration is generated from (see the module docstring).

    Attributes
    ----------
    model : str
        Hugging Face repository id (the perfmodel id when the spec names none).
    model_id : str
        perfmodel model id.
    moe : bool
        Mixture-of-experts model (expert parallelism applies).
    weights, kv_cache : str
        Weight and KV-cache formats (perfmodel names: ``bf16``, ``fp8``, ``nvfp4``...).
    pools : tuple of PoolLayout
        One aggregated pool, or a prefill and a decode pool.
    engine : str
        Engine profile the plan simulated (its scheduler limits are used).
    max_num_seqs, max_num_batched_tokens : int
        Concurrency limit and per-step token budget of that profile.
    chunked_prefill : bool
    spec_decode : SpecDecode, optional
    """

    model: str
    model_id: str
    moe: bool
    weights: str
    kv_cache: str
    pools: tuple[PoolLayout, ...]
    engine: str = "vllm"
    max_num_seqs: int = 1024
    max_num_batched_tokens: int = 8192
    chunked_prefill: bool = True
    spec_decode: Any = None

    @property
    def disaggregated(self) -> bool:
        return any(p.role == "prefill" for p in self.pools)

    @classmethod
    def from_plan_row(cls, row: Mapping[str, Any], inputs: Mapping[str, Any] | None = None,
                      engine: str | None = None) -> LaunchSpec:
        """From a :func:`~perfmodel.planning.plan` row (and the plan's ``inputs``).

        Reads ``tp``, ``pp``, ``ep``, ``dp_attention`` (or ``attention_dp``), ``weights`` (or the old
        ``precision``), ``kv_cache``, ``spec_decode``, ``replicas``, ``engine`` (the profile it simulated)
        and its scheduler limits ``max_num_seqs`` and ``max_num_batched_tokens`` (else the profile's); a P/D row gives
        ``prefill_<field>`` and ``decode_<field>`` for the layout fields, ``<role>_workers`` (or
        ``<role>_num_workers``) for the replicas, and ``_size`` suffixes (``prefill_tp_size``) are read too;
        a ``<role>_layout`` label (``"tp1-adp8-ep8"``, :func:`parse_layout_label`) takes precedence, and
        the decode pool falls back to the unprefixed fields. A P/D row whose ``prefill_weights`` and
        ``decode_weights`` (or the old ``_precision`` names) differ raises :class:`ConfigError` (one weight format per launch spec).
        """
        inputs = inputs or {}
        model = row.get("model") or inputs.get("model")
        if not model:
            raise ConfigError("launch: the plan row names no model (give a row with 'model' or the plan inputs)")
        prof_name = engine or _profile_name(row.get("engine") or inputs.get("engine") or "vllm")
        pools_fmt = tuple(row.get(f"{role}_weights", row.get(f"{role}_precision"))
                          for role in ("prefill", "decode"))
        if all(isinstance(f, str) for f in pools_fmt) and pools_fmt[0] != pools_fmt[1]:
            raise ConfigError(f"launch: the plan's pools use different weight formats (prefill {pools_fmt[0]}, "
                              f"decode {pools_fmt[1]}); the launch configuration takes one format for both "
                              "pools, so it is not generated for this row (pick a row with one format)")
        weights = str(row.get("weights") or row.get("precision") or inputs.get("weights")
                      or checkpoint_format(model))
        kv = str(row.get("kv_cache") or inputs.get("kv_cache") or default_kv_cache(weights))
        if _is_pd(row):
            pools = tuple(_pool(row, role, f"{role}_") for role in ("prefill", "decode"))
        else:
            pools = (_pool(row, "aggregated", ""),)
        _check_devices(row, pools)
        limits = {k: int(row[k]) for k in ("max_num_seqs", "max_num_batched_tokens")
                  if row.get(k) is not None and row[k] == row[k]}
        return _finish(str(model), weights, kv, pools, prof_name, row.get("spec_decode"), limits)

    @classmethod
    def from_deployment(cls, deployment: Any, engine: str = "vllm", spec_decode: Any = None) -> LaunchSpec:
        """From a deployment file, mapping or :class:`~perfmodel.deployment.schema.Deployment`.

        Aggregated (one pool runs every role) or P/D (prefill on one pool, decode on another); an
        attention-FFN split has no launch configuration in these engines (ConfigError).
        """
        from ..deployment.load import load_deployment
        from ..deployment.pools import resolve_pool

        dep = load_deployment(deployment)
        pl = dep.placement
        if pl is None or pl.decode_attention != pl.decode_ffn:
            raise ConfigError("launch: deployment placement splits decode attention and FFN across pools; "
                              "vLLM, SGLang, TensorRT-LLM and Dynamo serve a decode replica on one pool")
        roles = [("aggregated", pl.prefill)] if pl.prefill == pl.decode_attention else \
            [("prefill", pl.prefill), ("decode", pl.decode_attention)]
        pools = []
        for role, name in roles:
            s = dep.pools[name]
            pools.append(PoolLayout(role, s.tp, s.pp, s.ep or 1, s.dp_attention, resolve_pool(dep, name).replicas))
        weights, kv = resolve_formats(dep.model, None, dep.precision.weights, dep.precision.kv_cache)
        return _finish(dep.model, weights, kv, tuple(pools),
                       _profile_name(engine), spec_decode)


def _profile_name(label: str) -> str:
    """The engine profile name at the head of an engine label (``"vllm (fitted terms: ...)"`` -> ``vllm``)."""
    return str(label).split(" ", 1)[0]


def _is_pd(row: Mapping[str, Any]) -> bool:
    mode = str(row.get("mode", "")).lower()
    if mode in ("agg", "aggregated"):
        return False
    return mode in ("disagg", "pd", "disaggregated") or any(
        k in row for k in ("prefill_layout", "prefill_workers", "prefill_num_workers", "prefill_tp", "prefill_tp_size"))


def _check_devices(row: Mapping[str, Any], pools: tuple[PoolLayout, ...]) -> None:
    """The row's own device counts, where it states them, must match the layout read from it."""
    stated = {"aggregated": "devices_per_replica", "decode": "devices_per_replica",
              "prefill": "prefill_devices_per_worker"}
    for p in pools:
        v = row.get(stated[p.role])
        if v is not None and v == v and int(v) != p.devices:
            raise ConfigError(f"launch: row {stated[p.role]} = {int(v)}, but the {p.role} layout tp={p.tp} "
                              f"dp_attention={p.dp_attention} pp={p.pp} is {p.devices} devices")


def _get(row: Mapping[str, Any], prefixes: tuple[str, ...], *names: str, default: int = 1) -> int:
    for prefix in prefixes:
        for n in names:
            for key in (f"{prefix}{n}", f"{prefix}{n}_size"):
                v = row.get(key)
                if v is not None and v == v:  # skip NaN from DataFrames
                    return int(v)
    return default


_LABEL = re.compile(r"(tp|adp|dp|pp|ep)(\d+)")
_LABEL_FIELDS = {"tp": "tp", "adp": "dp_attention", "dp": "dp_attention", "pp": "pp", "ep": "ep"}


def parse_layout_label(label: str) -> dict[str, int]:
    """``"tp1-adp8-ep8"`` -> ``{"tp": 1, "dp_attention": 8, "ep": 8}`` (a plan's layout label).

    Raises
    ------
    ConfigError
        Text in the label that is not ``tp``/``adp``/``dp``/``pp``/``ep`` followed by an integer.
    """
    parts = [p for p in re.split(r"[-_\s]+", str(label).strip()) if p]
    out = {}
    for part in parts:
        m = _LABEL.fullmatch(part)
        if m is None:
            raise ConfigError(f"launch: layout label {label!r}: cannot read {part!r}; expected tpN, adpN, ppN, "
                              "epN joined by '-'")
        out[_LABEL_FIELDS[m.group(1)]] = int(m.group(2))
    return out


def _pool(row: Mapping[str, Any], role: str, prefix: str) -> PoolLayout:
    """One pool of a row: a ``<role>_layout`` label if given, else ``<role>_<field>`` keys; a P/D row's
    decode pool falls back to the unprefixed fields (plans state the decode layout there)."""
    label = row.get(f"{role}_layout") if prefix else None
    if label:
        f = parse_layout_label(label)
        lay = {k: f.get(k, 1) for k in ("tp", "pp", "ep", "dp_attention")}
    else:
        prefixes = (prefix, "") if role == "decode" else (prefix,)
        lay = {"tp": _get(row, prefixes, "tp"), "pp": _get(row, prefixes, "pp"),
               "ep": _get(row, prefixes, "ep", "moe_ep"),
               "dp_attention": _get(row, prefixes, "dp_attention", "attention_dp")}
    reps = _get(row, ("",), "replicas") if not prefix else _get(row, (prefix,), "workers", "num_workers", "replicas")
    return PoolLayout(role, replicas=reps, **lay)


def _local_model_dir(spec: Any) -> str | None:
    """The folder of a user's ``config.json`` (what ``vllm serve PATH`` and the other engines load), or None."""
    src = Path(spec.source) if spec.source and "://" not in spec.source else None
    return str(src.parent) if src is not None and src.is_file() else None


def _finish(model: str, weights: str, kv: str, pools: tuple[PoolLayout, ...], profile: str,
            spec_decode: Any, limits: Mapping[str, int] | None = None) -> LaunchSpec:
    """The spec, with the scheduler limits of ``profile`` where ``limits`` (a plan row's
    ``max_num_seqs`` / ``max_num_batched_tokens``, the values it simulated) does not give them."""
    from ..engine.engine import Engine
    from ..engine.speculative import as_spec_decode, parse_spec_decode
    from ..modelspec import load_model
    from ..precision import dtype

    spec = load_model(model)
    try:
        prof = Engine.load(profile, **(limits or {})).profile
    except PerfmodelError as exc:
        raise ConfigError(f"launch: the plan's engine profile {profile!r} cannot be loaded by name ({exc}); "
                          "pass engine= (a shipped profile name or a profile YAML path)") from exc
    sd = parse_spec_decode(spec_decode) if isinstance(spec_decode, str) else as_spec_decode(spec_decode)
    for p in pools:
        for name in ("tp", "pp", "ep", "dp_attention", "replicas"):
            if getattr(p, name) < 1:
                raise ConfigError(f"launch: {p.role}.{name} = {getattr(p, name)}; expected an integer >= 1")
    return LaunchSpec(model=spec.hf_repo_id or _local_model_dir(spec) or spec.id, model_id=spec.id,
                      moe=spec.moe is not None,
                      weights=dtype(weights).name, kv_cache=dtype(kv).name, pools=pools, engine=prof.name,
                      max_num_seqs=int(prof.max_num_seqs), max_num_batched_tokens=int(prof.max_num_batched_tokens),
                      chunked_prefill=bool(prof.chunked_prefill), spec_decode=sd)


def launch_engine(profile: str) -> str:
    """The launch engine (``vllm``, ``sglang``, ``trtllm``) of an engine profile a plan simulated: its
    ``backend`` (``vllm-2k`` and ``sglang-preset`` serve with vLLM and SGLang).

    Raises
    ------
    ConfigError
        A profile without a backend (give the launch engine by name).
    """
    from ..engine.engine import Engine

    prof = Engine.load(_profile_name(profile)).profile
    if prof.backend is None:
        raise ConfigError(f"launch: engine profile {prof.name!r} names no backend; give the launch engine "
                          f"({', '.join(LAUNCH_ENGINES)})")
    return prof.backend


def launch_config(spec: LaunchSpec | Mapping[str, Any], engine: str, inputs: Mapping[str, Any] | None = None,
                  **kw: Any) -> LaunchConfig:
    """Launch configuration of ``spec`` (a :class:`LaunchSpec` or a plan row) for ``engine``.

    Parameters
    ----------
    spec : LaunchSpec or mapping
        A plan row is read with :meth:`LaunchSpec.from_plan_row` (with ``inputs``).
    engine : {"vllm", "sglang", "trtllm", "dynamo"}
        ``dynamo`` writes a disaggregated DynamoGraphDeployment whose workers run the plan's engine
        (``backend=`` overrides); it needs a P/D spec.
    **kw
        ``backend`` (dynamo), ``dynamo_version`` (image tag, default the examples' ``1.3.1``).

    Raises
    ------
    UnknownNameError
        ``engine`` is not one of :data:`LAUNCH_ENGINES` (with suggestions).
    ConfigError
        A layout or format the engine cannot express, or an argument its recorded schema rejects.
    """
    from . import launch_dynamo, launch_engines

    if engine not in LAUNCH_ENGINES:
        raise unknown_name("launch engine", str(engine), LAUNCH_ENGINES)
    if not isinstance(spec, LaunchSpec):
        spec = LaunchSpec.from_plan_row(spec, inputs)
    if engine == "dynamo":
        cfg = launch_dynamo.dynamo_graph(spec, **kw)
    else:
        if kw:
            raise ConfigError(f"launch: options {sorted(kw)} apply to engine 'dynamo' only")
        cfg = launch_engines.standalone(spec, engine)
    s = load_arg_schema(engine)
    cfg.schema = {"engine": engine, "version": s.version, "measured_versions": s.measured_versions,
                  "version_note": s.version_note, "sources": s.sources}
    if spec.engine.split("-")[0] != (kw.get("backend") or engine) and engine != "dynamo":
        cfg.notes.append(f"scheduler limits (max sequences {spec.max_num_seqs}, token budget "
                         f"{spec.max_num_batched_tokens}) are those of the plan's engine profile "
                         f"'{spec.engine}', not {engine}'s defaults")
    return cfg
