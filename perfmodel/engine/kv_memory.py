r"""The KV-cache pool as each serving engine sizes it at start-up, and what it holds.

Every engine splits a device's memory M (the total the driver reports, :func:`device_memory`) into
weights W, an activation workspace A, runtime buffers R and the KV pool; they differ in which share
they take and of what (bytes per device):

``vllm`` (``gpu_memory_utilization`` u, default 0.9 of *total* memory; ``vllm/v1/worker/gpu_worker.py``
``Worker.determine_available_memory``: requested memory u·M less weights, the torch peak increase and
the non-torch increase of a profiling run): the run at ``max_num_batched_tokens`` B sets the activation
peak, its dummy sampler run over ``max_num_seqs`` S sequences the logits:

.. math:: K = u\,M - W - A(B) - 2\cdot 4\,V\,S - R

``sglang`` (``mem_fraction_static`` f of total memory holds weights + KV pool;
``ServerArgs._handle_gpu_memory_settings`` derives f from M when it is not given, after the token budget
is set, and reserves activation memory that grows with it: :func:`sglang_mem_fraction` with
``chunked_prefill_size`` = the profile's ``max_num_batched_tokens`` B):

.. math:: K = f(M, B)\,M - W - R

``trtllm`` (``free_gpu_memory_fraction`` φ, default 0.9 of the memory *free* after the weights and a
profiling forward at ``max_num_tokens``; ``KvCacheConfig``):

.. math:: K = \varphi\,(M - W - A(B) - R)

A(T) is :func:`perfmodel.core.memory.workspace_bytes`, V the vocabulary (fp32 logits and one copy),
R = :data:`RUNTIME_BYTES` (CUDA context, NCCL and library workspaces: an assumption). CUDA-graph memory
does not reduce K in any of the three as modelled: vLLM and TensorRT-LLM capture their graphs after sizing
the pool, from the memory left outside it (vLLM counts them in the profile only with
``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1``, default 0 in ``vllm/envs.py``); SGLang's rule reserves them
inside 1 − f.

The pool holds :math:`N = \lfloor K / (b\,k) \rfloor\, b` tokens per attention rank (k bytes per token on
the device, b = ``kv_block_size``), times the attention-DP ranks per replica. A sequence of L tokens
occupies :math:`\lceil L / b \rceil` blocks.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

import numpy as np

from ..core.memory import kv_bytes_per_token_device, weights_per_device, workspace_bytes
from ..fileio import read_yaml

MIB = float(1 << 20)
GIB = float(1 << 30)
#: Memory per device outside the weights, activations and KV pool before the pool is sized: CUDA
#: context, NCCL buffers, cuBLAS/attention workspaces [B]. An assumption, not measured here.
RUNTIME_BYTES = 1.0 * GIB
#: Bytes per logit in the sampler's profiling run (fp32) times the copies alive at its peak (2: an
#: assumption, logits and probabilities).
LOGIT_BYTES = 4.0 * 2.0


@functools.cache
def _device_table() -> dict[str, dict[str, Any]]:
    path = resources.files("perfmodel") / "data" / "engine_memory" / "device_memory.yaml"
    return read_yaml("data/engine_memory/device_memory.yaml", path.read_text(encoding="utf-8"))["devices"]


def device_memory(hardware: Any) -> tuple[float, str]:
    """Device memory the engine sees [B] and where the figure comes from.

    The driver's total for the parts listed in ``perfmodel/data/engine_memory/device_memory.yaml``
    (NVIDIA's "80 GB" etc. are GiB); the accelerator spec's capacity otherwise.
    """
    row = _device_table().get(hardware.id)
    if row is not None:
        return float(row["bytes"]), row["source"]
    return float(hardware.memory_capacity), f"{hardware.id} spec memory capacity"


def sglang_mem_fraction(device_bytes: float, tp: int, pp: int = 1, dp: int = 1,
                        chunked_prefill_size: int | None = None, spec_decode: bool = False) -> float:
    """SGLang's default ``mem_fraction_static`` for a device of ``device_bytes`` [B].

    Rule of ``sglang/srt/server_args.py`` ``ServerArgs._handle_gpu_memory_settings`` (read in the SGLang
    0.5.9 wheel, sha256 8a936c4d…bb64d1, lines 1020-1062; the KV pool is then f·M less what the weights
    took: ``sglang/srt/model_executor/model_runner_kv_cache_mixin.py`` ``profile_max_num_token``, lines
    116-149), memory in MiB: the capacity tier sets ``cuda_graph_max_bs`` g and, where the server is
    given none, ``chunked_prefill_size`` c (< 20 GiB: c = 2048, g = 8; < 35 GiB: c = 2048, g = 24 for
    tp < 4 else 80; < 60 GiB: c = 4096, g = 32 or 160; < 160 GiB: c = 8192, g = 256 or 512; above:
    c = 16384, g = 512);
    a given ``chunked_prefill_size`` replaces the tier's c in the activation reserve 1.5·max(c, 2048)
    (so a larger token budget leaves less for the KV pool, until the 10 GiB floor), then

    .. math:: r = 512 + 1.5\\,\\max(c, 2048) + 2g + 1024\\,tp\\,pp/8 \\;[+\\, 3 g\\,dp \\;+\\, 1.5 g\\,dp
              \\text{ if } g > 300 \\text{, with attention DP}],\\quad f = (M - \\max(r, 10240)) / M

    (the 10 GiB floor applies above 60 GiB; 2 GiB more for an EAGLE/MTP draft). ``tp`` is SGLang's
    tp_size: every GPU of the replica, attention-DP ranks included. Rounded to 3 decimals as SGLang does.
    :func:`engine_memory` passes the engine profile's ``max_num_batched_tokens`` as
    ``chunked_prefill_size`` (SGLang's flag for it, :data:`perfmodel.planning.engine_space.ENGINE_NAMES`):
    the budget the scheduler is simulated with is the one the memory is reserved for.
    """
    mem = device_bytes / MIB
    if mem < 20 * 1024:
        c, g = 2048, 8
    elif mem < 35 * 1024:
        c, g = 2048, 24 if tp < 4 else 80
    elif mem < 60 * 1024:
        c, g = 4096, 32 if tp < 4 else 160
    elif mem < 160 * 1024:
        c, g = 8192, 256 if tp < 4 else 512
    else:
        c, g = 16384, 512
    c = chunked_prefill_size or c
    reserved = 512 + 1.5 * max(c, 2048) + 2 * g + tp * pp / 8 * 1024
    if dp > 1:
        reserved += 3 * g * dp + (1.5 * g * dp if g > 300 else 0.0)
    if mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if spec_decode:
        reserved += 2 * 1024
    return round((mem - reserved) / mem, 3)


@dataclass(frozen=True)
class EngineMemory:
    """One device's memory as the engine splits it [B], and the KV tokens of the replica.

    Attributes
    ----------
    rule : str
        Which engine rule and fraction (``"vllm gpu_memory_utilization=0.9"``).
    device_bytes, fraction : float
        Memory M the engine sees [B] and its fraction (u, f or φ).
    weights, activations, runtime : float
        W, A (+ sampler logits for vLLM) and R [B].
    kv_pool : float
        K [B] (0 when nothing is left).
    kv_bytes_per_token : float
        Bytes one token takes on one device [B].
    block_size : int
        Tokens per KV block.
    kv_tokens : float
        Tokens the replica's pool holds (whole blocks, all attention-DP ranks).
    source : str
        Where M comes from.
    ranks : int
        Attention-DP ranks D of the replica, each with its own pool of ``kv_tokens / D`` tokens.
    """

    rule: str
    device_bytes: float
    fraction: float
    weights: float
    activations: float
    runtime: float
    kv_pool: float
    kv_bytes_per_token: float
    block_size: int
    kv_tokens: float
    source: str
    ranks: int = 1

    def max_sequences(self, tokens_per_sequence: float) -> int:
        r"""Sequences of ``tokens_per_sequence`` tokens L the pool holds at once: whole blocks each, and a
        sequence's blocks on one attention-DP rank,
        :math:`D\,\lfloor (N / (D\,b)) / \lceil L / b \rceil \rfloor` (N = ``kv_tokens``)."""
        if tokens_per_sequence <= 0:
            return 0
        b, d = self.block_size, self.ranks
        return int(d * (self.kv_tokens // (d * b) // math.ceil(tokens_per_sequence / b)))

    #: Field -> output name (:mod:`perfmodel.metrics_vocabulary`: the unit and the device in the name).
    OUTPUT_NAMES = {"fraction": "memory_fraction", "weights": "weights_bytes_per_device",
                    "activations": "activations_bytes_per_device", "runtime": "runtime_bytes_per_device",
                    "kv_pool": "kv_pool_bytes_per_device", "kv_bytes_per_token": "kv_bytes_per_token_per_device",
                    "block_size": "kv_block_size", "kv_tokens": "kv_cache_tokens", "ranks": "dp_attention"}

    def as_dict(self) -> dict[str, Any]:
        """The fields under their output names (``weights_bytes_per_device``, ``kv_cache_tokens``...)."""
        return {self.OUTPUT_NAMES.get(k, k): v for k, v in asdict(self).items()}


def memory_rule(profile: Any) -> tuple[str, Any] | None:
    """(field, value) of the memory fraction an engine profile sets, or None (use the step model's)."""
    for name in ("gpu_memory_utilization", "mem_fraction_static", "free_gpu_memory_fraction"):
        value = getattr(profile, name, None)
        if value is not None:
            return name, value
    return None


def engine_memory(step_model: Any, profile: Any, spec_decode: bool = False) -> EngineMemory | None:
    """How ``profile``'s engine splits the memory of one device of ``step_model`` (module docstring).

    None when the profile sets no memory fraction or the step model is not a first-principles one
    (no ``model``/``parallel``/``precision``/``hardware``): callers then use its ``kv_capacity_tokens``.
    None too where SGLang's default rule (``mem_fraction_static: auto``) leaves no room for the KV pool
    (its attention-DP padding grows with the DP size: at DP 72 it exceeds a GB200's memory): SGLang would
    not start, so a run that did set the fraction itself, and the step model's reserve stands in for it.
    """
    rule = memory_rule(profile)
    if rule is None or not all(hasattr(step_model, a) for a in ("model", "parallel", "precision", "hardware")):
        return None
    model, par, prec = step_model.model, step_model.parallel, step_model.precision
    m, source = device_memory(step_model.hardware)
    w = weights_per_device(model, par, prec)
    runtime = RUNTIME_BYTES
    name, value = rule
    if name == "mem_fraction_static":
        frac = sglang_mem_fraction(m, par.tp * par.dp_attention, par.pp, par.dp_attention,
                                   chunked_prefill_size=int(profile.max_num_batched_tokens),
                                   spec_decode=spec_decode) if value == "auto" else float(value)
        act = 0.0
        pool = frac * m - w - runtime
        if value == "auto" and pool <= 0:
            return None
    else:
        frac = float(value)
        act = float(workspace_bytes(model, par, prec, float(profile.max_num_batched_tokens)))
        if name == "gpu_memory_utilization":
            act += LOGIT_BYTES * model.vocab_size * profile.max_num_seqs
            pool = frac * m - w - act - runtime
        else:
            pool = frac * (m - w - act - runtime)
    pool = max(pool, 0.0)
    per_token = float(kv_bytes_per_token_device(model, par, prec, 1.0, state=False))
    b = int(profile.kv_block_size)
    tokens = math.floor(pool / (per_token * b)) * b * par.dp_attention if per_token > 0 else np.inf
    label = f"{profile.backend or profile.name} {name}={frac:g}" + (" (SGLang's default rule)" if value == "auto" else "")
    return EngineMemory(label, m, frac, w, act, runtime, pool, per_token, b, float(tokens), source, par.dp_attention)


def pool_tokens_with_draft(mem: EngineMemory, spec: Any, draft_model: Any, dp_attention: int) -> float:
    r"""KV tokens of a replica's engine pool once a draft model's weights and KV cache share it.

    The draft's weights :math:`W_d` are loaded before the engine sizes its pool and its layers' KV
    (:math:`k_d` bytes per token per device) sit in the same blocks as the target's (:math:`k`):

    .. math:: N = \left\lfloor \frac{\max(K - W_d, 0)}{b\,(k + k_d)} \right\rfloor b\,D

    (K = ``mem.kv_pool``, b the block size, D the attention-DP ranks). Without a draft model (none, or
    n-gram lookup, which puts nothing on the device) this is ``mem.kv_tokens``.
    """
    if draft_model is None:
        return mem.kv_tokens
    from .speculative_draft import draft_memory

    d = draft_memory(spec, draft_model)
    per_token = mem.kv_bytes_per_token + d.kv_per_token
    if per_token <= 0:
        return mem.kv_tokens
    b = mem.block_size
    return float(math.floor(max(mem.kv_pool - d.weights, 0.0) / (b * per_token)) * b * dp_attention)


def engine_kv_tokens(step_model: Any, profile: Any) -> float:
    """KV tokens of a replica as ``profile``'s engine sizes its pool (:func:`engine_memory`), or the step
    model's ``kv_capacity_tokens`` where the engine sets no memory fraction or the step model is not a
    first-principles one."""
    mem = engine_memory(step_model, profile)
    return float(step_model.kv_capacity_tokens) if mem is None else mem.kv_tokens


def short_pool_reason(mem: EngineMemory | None, pool_tokens: float, sequence_tokens: float) -> str | None:
    """Why one request of ``sequence_tokens`` tokens does not fit the engine's KV pool, or None.

    ``pool_tokens``: the replica's pool as the serving paths use it (``kv_capacity_tokens`` of the
    engine's step model, a draft's share taken out, times ``kv_capacity_fraction``); a sequence must fit
    one attention-DP rank's share of it. None also when the engine sets no memory fraction (``mem`` None:
    the step model's own reserve, checked where it is built).
    """
    if mem is None or pool_tokens / mem.ranks >= sequence_tokens:
        return None
    ranks = f" ({pool_tokens / mem.ranks:,.0f} per attention-DP rank)" if mem.ranks > 1 else ""
    held = (f"holds {pool_tokens:,.0f} tokens per replica{ranks}, fewer than one request's {sequence_tokens:,.0f}"
            if pool_tokens >= mem.ranks else "is empty")
    return (f"the engine's KV pool ({mem.rule}) {held}: of {mem.device_bytes / GIB:.1f} GiB per "
            f"device the weights take {mem.weights / GIB:.1f}, activations {mem.activations / GIB:.1f} and "
            f"runtime buffers {mem.runtime / GIB:.1f} GiB; raise the engine's memory fraction or use more "
            "devices per replica")
