"""Per-engine argument builders for :mod:`perfmodel.planning.launch` (vLLM, SGLang, TensorRT-LLM).

Each builder maps one pool of a :class:`~perfmodel.planning.launch.LaunchSpec` to that engine's
arguments (the mapping is in the :mod:`~perfmodel.planning.launch` docstring); :func:`standalone`
assembles the commands of every pool and checks them against the recorded schema.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..errors import ConfigError
from .engine_args import check_args, check_keys, load_arg_schema
from .engine_space import ENGINE_NAMES


@dataclass
class LaunchConfig:
    """Generated launch configuration.

    Attributes
    ----------
    engine : str
        ``vllm``, ``sglang``, ``trtllm`` or ``dynamo``.
    commands : list of dict
        ``{"role", "replicas", "devices", "argv"}`` per pool (argv: the full command line).
    files : dict
        File name -> text, for files the commands read (YAML).
    notes : list of str
        What the generator could not state as arguments, and what to fill in.
    schema : dict
        The engine version the arguments were checked against and where its names were read.
    """

    engine: str
    commands: list[dict[str, Any]]
    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    schema: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        """A shell-readable rendering: commands (one per pool), then the files, then notes as comments."""
        out = [f"# {self.engine}: checked against {str(self.schema.get('version', '')).split(' (')[0]}"]
        for c in self.commands:
            out.append(f"# {c['role']}: {c['replicas']} replica(s) x {c['devices']} device(s)")
            out.append(shlex.join(c["argv"]))
        for name, body in self.files.items():
            out += [f"# --- file: {name}", body.rstrip()]
        out += [f"# note: {n}" for n in self.notes]
        return "\n".join(out)

    def as_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "commands": self.commands, "files": self.files, "notes": self.notes,
                "schema": self.schema}

#: Formats served from a checkpoint already quantized to them (no online-quantization flag).
CHECKPOINT_FORMATS = ("fp8_block", "mxfp4", "int4", "int8")
_ONLINE = {  # weight format -> (vLLM, SGLang) --quantization value
    "fp8": ("fp8", "fp8"),
    "nvfp4": ("modelopt_fp4", "modelopt_fp4"),
    "fp4": ("modelopt_fp4", "modelopt_fp4"),
}
_KV = {  # KV format -> value per engine (None: the engine default, which follows the model dtype)
    "vllm": {"bf16": None, "fp16": None, "fp8": "fp8"},
    "sglang": {"bf16": None, "fp16": None, "fp8": "fp8_e4m3"},
    "trtllm": {"bf16": None, "fp16": None, "fp8": "fp8"},
}
TRTLLM_CONFIG = "extra-llm-api-config{suffix}.yml"
MULTINODE = {"vllm": "--data-parallel-size-local, --data-parallel-address, --data-parallel-start-rank",
             "sglang": "--nnodes, --node-rank, --dist-init-addr",
             "trtllm": "an MPI or Slurm launch across the hosts"}


def weight_notes(spec: Any, engine: str) -> list[str]:
    """Notes for weight formats read from the checkpoint (and TensorRT-LLM, which reads every format so)."""
    w = spec.weights
    if w in CHECKPOINT_FORMATS or (engine == "trtllm" and w not in ("bf16", "fp16")):
        return [f"weights {w}: serve a checkpoint already quantized to {w} in place of {spec.model} "
                f"(the engine reads the format from the checkpoint's config; no flag sets it)"]
    return []


def spec_notes(spec: Any) -> list[str]:
    """Notes for speculative decoding settings a launch cannot fill in itself."""
    sd = spec.spec_decode
    if sd is not None and sd.method == "eagle":
        return [f"speculative decoding eagle k={sd.k}: replace '{_draft_name(spec)}' with the repository of an "
                f"EAGLE-3 head trained for {spec.model}"]
    return []


def kv_value(spec: Any, engine: str) -> str | None:
    table = _KV[engine]
    if spec.kv_cache not in table:
        raise ConfigError(f"launch {engine}: kv_cache {spec.kv_cache!r} has no recorded {engine} setting; "
                          f"allowed: {', '.join(table)}")
    return table[spec.kv_cache]


def _format_args(spec: Any, engine: str) -> list[str]:
    """``--dtype`` / ``--quantization`` and ``--kv-cache-dtype`` of vLLM or SGLang (same flag names in both)."""
    a: list[str] = []
    if spec.weights in ("bf16", "fp16"):
        a += ["--dtype", "bfloat16" if spec.weights == "bf16" else "float16"]
    elif spec.weights in _ONLINE:
        a += ["--quantization", _ONLINE[spec.weights][engine == "sglang"]]
    kv = kv_value(spec, engine)
    return a + (["--kv-cache-dtype", kv] if kv else [])


def _draft_name(spec: Any) -> str:
    from ..modelspec import load_model

    sd = spec.spec_decode
    if sd.method == "draft":
        m = load_model(sd.draft_model)
        return m.hf_repo_id or m.id
    return f"<EAGLE-3 draft head for {spec.model}>"


def _check_pool(spec: Any, pool: Any, engine: str) -> None:
    if engine == "trtllm" and pool.dp_attention > 1 and pool.tp > 1:
        raise ConfigError(f"launch trtllm: {pool.role} tp={pool.tp} with dp_attention={pool.dp_attention}: "
                          "enable_attention_dp runs attention with TP 1 on every rank, so only tp=1 (pure "
                          "attention DP) or dp_attention=1 is expressible")
    if engine == "sglang" and spec.moe and pool.ep > pool.devices // pool.pp:
        raise ConfigError(f"launch sglang: {pool.role} ep={pool.ep} exceeds --tp-size "
                          f"{pool.devices // pool.pp} (tp x dp_attention)")


def vllm_args(spec: Any, pool: Any) -> tuple[list[str], list[str]]:
    """``vllm serve`` arguments after the model, and notes, for one pool."""
    _check_pool(spec, pool, "vllm")
    a = ["--tensor-parallel-size", str(pool.tp)]
    notes: list[str] = []
    if pool.pp > 1:
        a += ["--pipeline-parallel-size", str(pool.pp)]
    if pool.dp_attention > 1:
        a += ["--data-parallel-size", str(pool.dp_attention)]
    if spec.moe and (pool.ep > 1 or pool.dp_attention > 1):
        a.append("--enable-expert-parallel")
        if pool.ep not in (1, pool.tp * pool.dp_attention):
            notes.append(f"{pool.role}: vLLM's expert-parallel group is tp x dp = {pool.tp * pool.dp_attention}; "
                         f"the plan's ep = {pool.ep} has no vLLM flag")
    a += _format_args(spec, "vllm")
    a += _knob_args(spec, "vllm")
    if not spec.chunked_prefill:
        a.append("--no-enable-chunked-prefill")
    sd = spec.spec_decode
    if sd is not None:
        cfg: dict[str, Any] = {"num_speculative_tokens": sd.k}
        if sd.method in ("eagle", "draft"):
            cfg = {"method": "eagle3" if sd.method == "eagle" else "draft_model", "model": _draft_name(spec), **cfg}
        else:
            cfg = {"method": sd.method, **cfg}
        a += ["--speculative-config", json.dumps(cfg, separators=(",", ":"))]
    return a, notes


def sglang_args(spec: Any, pool: Any) -> tuple[list[str], list[str]]:
    """``python -m sglang.launch_server`` arguments (after the command), and notes, for one pool."""
    _check_pool(spec, pool, "sglang")
    a = ["--model-path", spec.model, "--tp-size", str(pool.tp * pool.dp_attention)]
    if pool.dp_attention > 1:
        a += ["--dp-size", str(pool.dp_attention), "--enable-dp-attention"]
    if pool.pp > 1:
        a += ["--pp-size", str(pool.pp)]
    if spec.moe and pool.ep > 1:
        a += ["--ep-size", str(pool.ep)]
    a += _format_args(spec, "sglang")
    a += _knob_args(spec, "sglang", spec.max_num_batched_tokens if spec.chunked_prefill else -1)
    sd = spec.spec_decode
    if sd is not None:
        algo = {"eagle": "EAGLE3", "mtp": "NEXTN", "ngram": "NGRAM", "draft": "STANDALONE"}[sd.method]
        a += ["--speculative-algorithm", algo]
        if sd.method in ("eagle", "draft"):
            a += ["--speculative-draft-model-path", _draft_name(spec)]
        a += ["--speculative-num-steps", str(sd.k), "--speculative-eagle-topk", "1",
              "--speculative-num-draft-tokens", str(sd.k + 1)]
    return a, []


def trtllm_options(spec: Any, pool: Any) -> dict[str, Any]:
    """The ``--extra_llm_api_options`` mapping of one pool (LLM API keys)."""
    _check_pool(spec, pool, "trtllm")
    o: dict[str, Any] = {"tensor_parallel_size": pool.tp * pool.dp_attention}
    if pool.pp > 1:
        o["pipeline_parallel_size"] = pool.pp
    if spec.moe:
        o["moe_expert_parallel_size"] = pool.ep
    o["enable_attention_dp"] = pool.dp_attention > 1
    o["max_batch_size"] = spec.max_num_seqs
    o["max_num_tokens"] = spec.max_num_batched_tokens
    o["enable_chunked_prefill"] = bool(spec.chunked_prefill)
    o["cuda_graph_config"] = {"enable_padding": True, "max_batch_size": spec.max_num_seqs}
    kv = kv_value(spec, "trtllm")
    if kv:
        o["kv_cache_config"] = {"dtype": kv}
    sd = spec.spec_decode
    if sd is not None:
        if sd.method == "mtp":
            o["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": sd.k}
        else:
            o["speculative_config"] = {"decoding_type": {"eagle": "Eagle", "ngram": "NGram",
                                                         "draft": "DraftTarget"}[sd.method], "max_draft_len": sd.k}
            if sd.method in ("eagle", "draft"):
                o["speculative_config"]["speculative_model_dir"] = _draft_name(spec)
    if pool.role != "aggregated":
        o["cache_transceiver_config"] = {"backend": "DEFAULT"}
        if pool.role == "prefill":
            o["disable_overlap_scheduler"] = True
    return o


def trtllm_args(spec: Any, pool: Any, config_name: str) -> tuple[list[str], dict[str, Any]]:
    """``trtllm-serve`` arguments after the model and the pool's LLM API options (written to ``config_name``)."""
    o = trtllm_options(spec, pool)
    a = ["--backend", "pytorch", "--tp_size", str(o["tensor_parallel_size"])]
    if pool.pp > 1:
        a += ["--pp_size", str(pool.pp)]
    if spec.moe:
        a += ["--ep_size", str(pool.ep)]
    a += [*_knob_args(spec, "trtllm"), "--extra_llm_api_options", config_name]
    return a, o


def _knob_args(spec: Any, engine: str, budget: Any = None) -> list[str]:
    """The sequence-limit and token-budget arguments of ``engine`` (flag names from
    :data:`perfmodel.planning.engine_space.ENGINE_NAMES`); ``budget`` replaces the spec's token budget."""
    budget = spec.max_num_batched_tokens if budget is None else budget
    return [ENGINE_NAMES["max_num_seqs"][engine], str(spec.max_num_seqs),
            ENGINE_NAMES["max_num_batched_tokens"][engine], str(budget)]


def dump_yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def standalone(spec: Any, engine: str) -> Any:
    """:class:`~perfmodel.planning.launch.LaunchConfig` of the engine's own servers, one command per pool."""

    schema = load_arg_schema(engine)
    cfg = LaunchConfig(engine, [], notes=weight_notes(spec, engine) + spec_notes(spec))
    for pool in spec.pools:
        suffix = "" if pool.role == "aggregated" else f"-{pool.role}"
        if engine == "vllm":
            rest, notes = vllm_args(spec, pool)
            if pool.role != "aggregated":
                rest += ["--kv-transfer-config", json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"},
                                                            separators=(",", ":"))]
            argv, cfg.notes = [spec.model, *rest], cfg.notes + notes
        elif engine == "sglang":
            argv, _ = sglang_args(spec, pool)
            if pool.role != "aggregated":
                argv += ["--disaggregation-mode", pool.role, "--disaggregation-transfer-backend", "nixl"]
        else:
            name = TRTLLM_CONFIG.format(suffix=suffix)
            rest, options = trtllm_args(spec, pool, name)
            check_keys(options, schema.keys("yaml_keys"), f"trtllm {name}")
            cfg.files[name] = dump_yaml(options)
            argv = [spec.model, *rest]
        check_args(engine, argv)
        cfg.commands.append({"role": pool.role, "replicas": pool.replicas, "devices": pool.devices,
                             "argv": [*schema.command, *argv]})
    wide = [p for p in spec.pools if p.devices > 8]
    if wide:
        cfg.notes.append(f"{', '.join(f'{p.role} replicas span {p.devices} devices' for p in wide)}: on several "
                         "hosts add the engine's multi-node settings (" + MULTINODE[engine] + "; not generated here)")
    if spec.disaggregated:
        cfg.notes.append({"vllm": "P/D: prefill and decode instances exchange KV through the NIXL connector; "
                                  "a proxy or router (e.g. Dynamo) must send each request to both",
                          "sglang": "P/D: put a router in front (SGLang's router in PD mode, or Dynamo)",
                          "trtllm": "P/D: the context and generation servers need trtllm-serve disaggregated "
                                    "(its cluster YAML is not generated here) or Dynamo"}[engine])
    elif spec.pools[0].replicas > 1:
        cfg.notes.append(f"{spec.pools[0].replicas} replicas: start the command once per replica "
                         "(on its own devices) behind a load-balancing router")
    return cfg
