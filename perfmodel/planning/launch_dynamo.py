"""NVIDIA Dynamo disaggregated graph (a ``DynamoGraphDeployment`` manifest) for a P/D launch spec.

The manifest has a ``Frontend`` service and one worker service per pool (``subComponentType``
prefill / decode, ``replicas`` = the pool's workers, ``resources.limits.gpu`` = devices per worker);
each worker runs ``python3 -m dynamo.<backend>`` with the engine arguments of
:mod:`perfmodel.planning.launch_engines` for its pool plus Dynamo's own worker flags, laid out as
Dynamo's v1alpha1 example deployments do (versions and sources in
``perfmodel/data/engines/args/dynamo.yaml``). The manifest keys are checked with
:func:`~perfmodel.planning.engine_args.check_keys` and every worker's arguments with
:func:`~perfmodel.planning.engine_args.check_args`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError, unknown_name
from . import launch_engines as le
from .engine_args import check_args, check_keys, load_arg_schema

BACKENDS = ("vllm", "sglang", "trtllm")
DEFAULT_VERSION = "1.3.1"  # runtime image tag of the example deployments read


def _worker_args(spec: Any, pool: Any, backend: str, files: dict[str, str]) -> tuple[list[str], list[str]]:
    if backend == "vllm":
        rest, notes = le.vllm_args(spec, pool)
        argv = ["--model", spec.model, *rest, f"--is-{pool.role}-worker"]
        check_args("vllm", argv, extra=load_arg_schema("dynamo").data["worker_args"]["vllm"], positional=False)
        return argv, notes
    if backend == "sglang":
        argv, notes = le.sglang_args(spec, pool)
        argv += ["--disaggregation-mode", pool.role, "--disaggregation-transfer-backend", "nixl"]
        check_args("sglang", argv)
        return argv, notes
    name = f"{pool.role}.yaml"
    options = {"backend": "pytorch", **le.trtllm_options(spec, pool)}
    check_keys(options, load_arg_schema("trtllm").keys("yaml_keys"), f"dynamo trtllm {name}")
    files[name] = le.dump_yaml(options)
    argv = ["--model-path", spec.model, "--served-model-name", spec.model, "--extra-engine-args", name,
            "--disaggregation-mode", pool.role]
    check_args("dynamo", argv, extra=load_arg_schema("dynamo").data["worker_args"]["trtllm"])
    return argv, []


def dynamo_graph(spec: Any, backend: str | None = None, dynamo_version: str = DEFAULT_VERSION) -> Any:
    """:class:`~perfmodel.planning.launch.LaunchConfig` with the manifest (``dynamo-graph.yaml``).

    Parameters
    ----------
    spec : LaunchSpec
        Must be P/D (a prefill and a decode pool).
    backend : {"vllm", "sglang", "trtllm"}, optional
        Engine of the workers (default: the engine profile the plan simulated).
    dynamo_version : str
        Runtime image tag.

    Raises
    ------
    ConfigError
        ``spec`` is aggregated.
    UnknownNameError
        Unknown ``backend``.
    """
    if not spec.disaggregated:
        raise ConfigError("launch dynamo: the plan is aggregated; a Dynamo disaggregated graph needs prefill and "
                          "decode pools (use --launch vllm|sglang|trtllm for an aggregated plan)")
    backend = backend or spec.engine.split("-")[0]
    if backend not in BACKENDS:
        raise unknown_name("dynamo backend", backend, BACKENDS)
    ds = load_arg_schema("dynamo").data
    image = f"{ds['images'][backend]}:{dynamo_version}"
    cfg = le.LaunchConfig("dynamo", [], notes=le.weight_notes(spec, backend) + le.spec_notes(spec))
    services: dict[str, Any] = {"Frontend": {"componentType": "frontend", "replicas": 1,
                                             "extraPodSpec": {"mainContainer": {"image": image}}}}
    for pool in spec.pools:
        argv, notes = _worker_args(spec, pool, backend, cfg.files)
        cfg.notes += notes
        name = f"Vllm{pool.role.capitalize()}Worker" if backend == "vllm" else pool.role
        command = ["python3", "-m", f"dynamo.{backend}"]
        services[name] = {"envFromSecret": "hf-token-secret", "componentType": "worker",
                          "subComponentType": pool.role, "replicas": pool.replicas,
                          "resources": {"limits": {"gpu": str(pool.devices)}},
                          "extraPodSpec": {"mainContainer": {"image": image, "workingDir": "/workspace",
                                                             "command": command, "args": argv}}}
        cfg.commands.append({"role": pool.role, "replicas": pool.replicas, "devices": pool.devices,
                             "argv": [*command, *argv]})
    graph = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
             "metadata": {"name": f"{spec.model_id.replace('.', '-')}-{backend}-disagg"},
             "spec": {"services": services}}
    check_keys(graph, ds["graph_keys"], "dynamo-graph.yaml")
    cfg.files = {"dynamo-graph.yaml": le.dump_yaml(graph), **cfg.files}
    if backend == "trtllm":
        cfg.notes.append("the worker YAML files (prefill.yaml, decode.yaml) must be mounted in the worker "
                         "containers at the path given to --extra-engine-args")
    if any(p.devices > 8 for p in spec.pools):
        cfg.notes.append("a worker spans more than 8 GPUs: use Dynamo's multinode worker settings "
                         "(not generated here)")
    return cfg
