"""Measure per-op kernels on a lent accelerator, in the schema of the project's per-op tables.

For a session that has a GPU machine (the ``device`` tool): runs in well under five minutes and writes
rows that ``perfmodel validate --data FILE`` and the calibration fit read like the shipped tables.

- ``gemm.csv``: bf16 (and fp8 via ``torch._scaled_mm`` where the GPU supports it) GEMMs over decode-like
  (M = 1..256) and prefill-like (M = 512..16384) shapes of common models; columns as ``gemm.csv.gz``
  (system, backend, backend_version, kernel_source, dtype, m, n, k, latency_ms) plus device, driver,
  cuda and date.
- ``attention_decode.csv`` / ``attention_prefill.csv``: PyTorch's ``scaled_dot_product_attention`` (the
  backend PyTorch picks) for GQA shapes of Llama-3.1-8B/70B at TP 1, columns as the shipped tables (decode:
  ``isl`` = 1, ``step`` = ``kv_len`` - 1; prefill: ``step`` = 0). These are PyTorch's kernels, not
  TensorRT-LLM's: they test the attention roofline, not the TRT-LLM kernel-path terms.
- ``decode_step.csv``: one whole decode step of Llama-3.1-8B (bf16, random weights, config from
  ``perfmodel/data/models/llama-3.1-8b.json``) written as plain PyTorch ops — RMSNorm, fused QKV, RoPE,
  KV-cache write, SDPA over the cache, O projection, gated MLP, LM head and argmax — captured in a CUDA
  graph, for batch 1..128 at 1k and 4k cached tokens: a framework-free step that the step model
  (``StepModel.step_time``) predicts without any engine overhead. Unfused small ops make it slower than
  an engine's fused kernels, so it bounds the step model's small-op costs from above.
- ``prefill_step.csv``: the same model's prefill of one prompt of 128..16384 tokens in one step (causal
  attention over the prompt, KV written to the cache, logits of the last token only); columns as
  ``decode_step.csv`` with ``batch_size`` = ``context`` = 0 (no sequence decoding) and ``prefill_tokens``.
- ``hbm_copy.csv``: achieved copy bandwidth of a large device-to-device copy (bytes read + written / time),
  measured before the other tables (``order`` = first) and after them (last).

A shape that fails (an unsupported dtype or size on that GPU) is printed and left out; the rest still run.

Usage on the device machine::

    python3 benchmarks/device_ops.py --out "$OUT" [--quick]

It also runs on a CPU (``--device cpu --quick``) so the script itself is tested without a GPU; CPU
rows are for that test only and are never added to validation data.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import platform
import subprocess
import time
from pathlib import Path

#: (n, k) of the projections of Llama-3.1-8B/70B and a DeepSeek-like MoE expert (per GPU at TP 1).
SHAPES_NK = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (10240, 8192), (8192, 8192),
             (57344, 8192), (8192, 28672), (4096, 7168), (7168, 2048)]
DECODE_M = [1, 4, 16, 64, 256]
PREFILL_M = [512, 2048, 8192, 16384]
#: (query heads, KV heads, head dim) of Llama-3.1-8B and Llama-3.1-70B at TP 1.
ATTENTION_HEADS = [(32, 8, 128), (64, 8, 128)]
DECODE_BATCH = [1, 8, 32, 128]
DECODE_KV = [1024, 4096, 16384]
PREFILL_ISL = [512, 2048, 8192]
#: Bytes each timed shape cycles through (copies of its weights or KV cache): several times the largest
#: L2 of the GPUs measured (H200 60 MB, B200 126 MB), so every call reads HBM as a model's step does.
CYCLE_BYTES = 512 * 2**20
#: The per-op tables' system names for the GPUs they cover.
SYSTEM_IDS = {"h100": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "gb200": "gb200"}
MODELS = Path(__file__).resolve().parents[1] / "perfmodel" / "data" / "models"
STEP_MODEL = MODELS / "llama-3.1-8b.json"
STEP_POINTS = [(b, ctx) for ctx in (1024, 4096) for b in (1, 8, 32, 64, 128)]
PREFILL_TOKENS = [128, 512, 1024, 2048, 4096, 8192, 16384]
#: The tables, in the order they are measured (the HBM copy also runs first, before the others).
TABLE_FILES = ("gemm", "attention_decode", "attention_prefill", "decode_step", "prefill_step", "hbm_copy")
#: A tiny config for the CPU smoke test (same code path).
TINY = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 512, "vocab_size": 1000, "rms_norm_eps": 1e-5, "rope_theta": 500000.0}


def timer(torch, device: str):
    """A function timing a callable, returning ``{"latency_ms": ms per call, "timing": method}``.

    On a GPU the calls are captured in one CUDA graph and the graph is replayed (median of 5 replays):
    the kernels run back to back as an engine's graph-captured step runs them, so small shapes measure
    the kernel and not Python's launch cost (eager launches put a ~15-40 us floor under every call).
    Where capture fails, eager launches between CUDA events (``timing`` says which). On a CPU: perf_counter.
    """
    if device != "cuda":
        def run_cpu(fn, iters: int, graph: bool = False) -> dict:
            fn()
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            return {"latency_ms": (time.perf_counter() - t0) * 1e3 / iters, "timing": "eager"}
        return run_cpu

    def elapsed(launch, iters: int) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / iters

    def run(fn, iters: int, graph: bool = True) -> dict:
        if not graph:
            fn()
            torch.cuda.synchronize()

            def eager():
                for _ in range(iters):
                    fn()
            return {"latency_ms": elapsed(eager, iters), "timing": "eager"}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the default stream, as graph capture wants
            fn()
            fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        try:
            captured = torch.cuda.CUDAGraph()
            with torch.cuda.graph(captured):
                for _ in range(iters):
                    fn()
            captured.replay()
            torch.cuda.synchronize()
            times = sorted(elapsed(captured.replay, iters) for _ in range(5))
            return {"latency_ms": times[2], "timing": "cuda_graph"}
        except RuntimeError as err:
            print(f"graph capture failed ({str(err).splitlines()[0][:120]}); timing eager launches")
            torch.cuda.synchronize()
            return run(fn, iters, graph=False)
    return run


def copies_for(device: str, nbytes: float) -> int:
    """How many copies of an operand of ``nbytes`` to cycle through so that it is read from HBM."""
    return 1 if device == "cpu" else max(2, int(-(-CYCLE_BYTES // max(nbytes, 1))))


def attempt(what: str, fn, *args) -> dict | None:
    """``fn(*args)``, or None (printed) where the GPU or library rejects that shape or dtype."""
    try:
        return fn(*args)
    except (RuntimeError, ValueError, TypeError) as err:
        print(f"skipped {what}: {type(err).__name__}: {str(err).splitlines()[0][:160]}")
        return None


def rotating(calls: list):
    """One callable that runs the next of ``calls`` each time (copies defeat L2 reuse between timings)."""
    state = {"i": 0}

    def step():
        state["i"] = (state["i"] + 1) % len(calls)
        calls[state["i"]]()
    return step


def gemm_calls(torch, device: str, dtype: str, m: int, weights: list) -> list:
    """One Y = X W^T callable per weight copy (fp8: per-tensor scaled ``torch._scaled_mm``, bf16 out)."""
    x = torch.randn(m, weights[0].shape[1], device=device, dtype=torch.bfloat16)
    if dtype != "fp8":
        return [lambda a=a: x @ a.t() for a in weights]
    xq, one = x.to(torch.float8_e4m3fn), torch.tensor(1.0, device=device)
    return [lambda a=a: torch._scaled_mm(xq, a.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            for a in weights]


def gemm_rows(torch, device: str, quick: bool, meta: dict) -> list[dict]:
    """Time Y = X W^T for each (m, n, k) and dtype; rotate weight copies to defeat cache reuse."""
    run = timer(torch, device)
    shapes = SHAPES_NK[:2] if quick else SHAPES_NK
    ms = (DECODE_M[:2] + PREFILL_M[:1]) if quick else DECODE_M + PREFILL_M
    dtypes = ["bfloat16"]
    if device == "cuda" and hasattr(torch, "_scaled_mm") and torch.cuda.get_device_capability() >= (8, 9):
        dtypes.append("fp8")
    rows = []
    for dtype in dtypes:
        for n, k in shapes:
            copies = copies_for(device, n * k * (1 if dtype == "fp8" else 2))
            weights = [torch.randn(n, k, device=device, dtype=torch.bfloat16) for _ in range(copies)]
            if dtype == "fp8":
                weights = [w.to(torch.float8_e4m3fn) for w in weights]
            for m in ms:
                iters = 3 if quick else max(5, copies, min(200, int(2e10 / (2 * m * n * k) + 5)))
                calls = attempt(f"{dtype} GEMM m={m} n={n} k={k}", gemm_calls, torch, device, dtype, m, weights)
                timed = calls and attempt(f"{dtype} GEMM m={m} n={n} k={k}", run, rotating(calls), iters)
                if timed:
                    rows.append({**meta, "kernel_source": "torch_matmul" if dtype == "bfloat16" else "torch_scaled_mm",
                                 "dtype": dtype, "m": m, "n": n, "k": k, **timed})
    return rows


def time_attention(torch, device: str, run, phase: str, batch: int, length: int, heads: tuple, iters: int
                   ) -> dict:
    """SDPA over ``length`` cached tokens: one query token (decode) or ``length`` causal ones (prefill)."""
    h, hkv, d = heads
    q = torch.randn(batch, h, 1 if phase == "decode" else length, d, device=device, dtype=torch.bfloat16)
    copies = copies_for(device, 2 * batch * hkv * length * d * 2)
    kv = [[torch.randn(batch, hkv, length, d, device=device, dtype=torch.bfloat16) for _ in "kv"]
          for _ in range(copies)]
    sdpa = torch.nn.functional.scaled_dot_product_attention
    calls = [lambda k=k, v=v: sdpa(q, k, v, is_causal=phase == "prefill", enable_gqa=True) for k, v in kv]
    return run(rotating(calls), max(iters, copies))


def attention_rows(torch, device: str, quick: bool, meta: dict, phase: str) -> list[dict]:
    """Time SDPA for decode (one query token over ``kv_len`` cached tokens) or causal prefill."""
    run = timer(torch, device)
    if phase == "decode":
        points = [(b, kv) for b in (DECODE_BATCH[:2] if quick else DECODE_BATCH)
                  for kv in (DECODE_KV[:1] if quick else DECODE_KV)]
    else:
        points = [(1, isl) for isl in (PREFILL_ISL[:1] if quick else PREFILL_ISL)]
    rows = []
    for heads in ATTENTION_HEADS[:1] if quick else ATTENTION_HEADS:
        for batch, length in points:
            timed = attempt(f"{phase} attention b={batch} len={length} heads={heads}", time_attention, torch,
                            device, run, phase, batch, length, heads, 3 if quick else 20)
            if timed:
                isl, step = (1, length - 1) if phase == "decode" else (length, 0)
                rows.append({**meta, "kernel_source": "torch_sdpa", "batch_size": batch, "isl": isl, "step": step,
                             "kv_len": length, "num_heads": heads[0], "num_key_value_heads": heads[1],
                             "head_dim": heads[2], "window_size": 0, "attn_dtype": "bfloat16",
                             "kv_cache_dtype": "bfloat16", **timed})
    return rows


def plain_step_gaps(cfg: dict) -> list[str]:
    """Features of a model config that ``step_fn`` (dense Llama-style decoder) would silently ignore."""
    gaps = [] if cfg.get("model_type") == "llama" else [f"model_type {cfg.get('model_type')!r} (not a Llama decoder)"]
    heads = cfg.get("num_attention_heads") or 1
    if cfg.get("head_dim") and cfg["head_dim"] != cfg["hidden_size"] // heads:
        gaps.append(f"head_dim {cfg['head_dim']} != hidden_size / heads")
    if cfg.get("sliding_window") or cfg.get("layer_types"):
        gaps.append("sliding-window layers")
    if cfg.get("num_local_experts") or cfg.get("n_routed_experts") or cfg.get("num_experts"):
        gaps.append("MoE experts")
    if cfg.get("attention_bias") or cfg.get("qk_norm") or "q_lora_rank" in cfg:
        gaps.append("attention bias / QK norm / MLA")
    return gaps


def decoder_weights(torch, device: str, cfg: dict) -> dict:
    """Random bf16 weights of a Llama-style decoder (per layer: fused QKV, O, fused gate/up, down)."""
    h, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = h // heads

    def w(*shape):
        return torch.randn(*shape, device=device, dtype=torch.bfloat16) * 0.02
    layers = [{"qkv": w((heads + 2 * kv) * d, h), "o": w(h, heads * d), "gate_up": w(2 * cfg["intermediate_size"], h),
               "down": w(h, cfg["intermediate_size"]), "n1": torch.ones(h, device=device, dtype=torch.bfloat16),
               "n2": torch.ones(h, device=device, dtype=torch.bfloat16)} for _ in range(cfg["num_hidden_layers"])]
    return {"layers": layers, "norm": torch.ones(h, device=device, dtype=torch.bfloat16), "lm_head": w(cfg["vocab_size"], h)}


def step_fn(torch, device: str, cfg: dict, weights: dict, batch: int, context: int, tokens: int = 1):
    """A callable running one forward step: ``batch`` sequences each add ``tokens`` tokens after
    ``context`` cached ones (decode: tokens = 1; prefill: context = 0, causal over the prompt)."""
    if tokens > 1 and context:
        raise ValueError("a multi-token step needs context = 0 (no chunked prefill here)")
    f = torch.nn.functional
    h, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d, eps = h // heads, cfg["rms_norm_eps"]
    length = context + tokens
    caches = [[torch.zeros(batch, kv, length, d, device=device, dtype=torch.bfloat16) for _ in "kv"]
              for _ in weights["layers"]]
    x = torch.randn(batch * tokens, h, device=device, dtype=torch.bfloat16)
    inv = 1.0 / (cfg.get("rope_theta") or 10000.0) ** (torch.arange(0, d, 2, device=device).float() / d)
    angle = torch.arange(context, length, device=device).float()[:, None] * inv[None, :]
    cos, sin = (torch.cat([t, t], dim=-1).to(torch.bfloat16) for t in (angle.cos(), angle.sin()))

    def rope(t):  # t: (batch, heads, tokens, d)
        half = t.shape[-1] // 2
        return t * cos + torch.cat([-t[..., half:], t[..., :half]], dim=-1) * sin

    def heads_first(t, n):
        return t.view(batch, tokens, n, d).transpose(1, 2)

    def step():
        hidden = x
        for lw, (k_cache, v_cache) in zip(weights["layers"], caches, strict=True):
            qkv = f.rms_norm(hidden, (h,), lw["n1"], eps) @ lw["qkv"].t()
            q, k, v = qkv.split([heads * d, kv * d, kv * d], dim=-1)
            k_cache[:, :, context:] = rope(heads_first(k, kv))
            v_cache[:, :, context:] = heads_first(v, kv)
            att = f.scaled_dot_product_attention(rope(heads_first(q, heads)), k_cache, v_cache,
                                                 is_causal=tokens > 1, enable_gqa=True)
            hidden = hidden + att.transpose(1, 2).reshape(batch * tokens, heads * d) @ lw["o"].t()
            gate, up = (f.rms_norm(hidden, (h,), lw["n2"], eps) @ lw["gate_up"].t()).chunk(2, dim=-1)
            hidden = hidden + (f.silu(gate) * up) @ lw["down"].t()
        last = hidden.view(batch, tokens, h)[:, -1]  # logits of each sequence's last token only
        return (f.rms_norm(last, (h,), weights["norm"], eps) @ weights["lm_head"].t()).argmax(dim=-1)
    return step


def step_rows(torch, device: str, quick: bool, meta: dict, phase: str, spec: Path = STEP_MODEL) -> list[dict]:
    """Time whole decode steps (batch x context) or prompt prefills (one sequence of N tokens) of a
    Llama-style model (``spec``: a shipped model JSON; a tiny config on the CPU). A point that does not
    fit in memory is skipped."""
    run = timer(torch, device)
    doc = json.loads(spec.read_text())
    cfg = TINY if device == "cpu" else doc["config"]
    model = "tiny" if device == "cpu" else doc["hf_repo_id"].split(" (")[0]
    weights = attempt("step weights", decoder_weights, torch, device, cfg)
    points = STEP_POINTS if phase == "decode" else [(1, 0, n) for n in PREFILL_TOKENS]
    rows = []
    for point in (points[:2] if quick else points) if weights else []:
        batch, context, tokens = (*point, 1) if phase == "decode" else point
        what = f"{phase} step b={batch} ctx={context} tokens={tokens}"
        step = attempt(what, step_fn, torch, device, cfg, weights, batch, context, tokens)
        timed = step and attempt(what, run, step, 2 if quick else 5)
        if timed:
            shape = ({"batch_size": batch, "context": context} if phase == "decode" else
                     {"batch_size": 0, "context": 0, "prefill_tokens": tokens})
            rows.append({**meta, "kernel_source": "torch_ops_graph", "model": model, "weights": "bfloat16",
                         "kv_cache_dtype": "bfloat16", **shape, **timed})
        del step
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


def copy_rows(torch, device: str, quick: bool, meta: dict) -> list[dict]:
    """Achieved bandwidth of one large copy: 2 × size bytes moved per call."""
    run = timer(torch, device)
    size = (64 if quick else 4096) * 2**20
    a = torch.empty(size, dtype=torch.uint8, device=device)
    b = torch.empty_like(a)
    # Eager: inside a CUDA graph a device-to-device copy becomes a memcpy node served by the copy
    # engines (about 2.7 of 4.2 TB/s on an H200), not the SM copy kernel a model's memory traffic uses.
    timed = run(lambda: b.copy_(a), 3 if quick else 20, graph=False)
    return [{**meta, "bytes": size, **timed, "bandwidth_GBps": 2 * size / (timed["latency_ms"] * 1e-3) / 1e9}]


def driver_version() -> str:
    """The NVIDIA driver version nvidia-smi reports, or 'unknown'."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def write(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the tables (<table>.csv)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--quick", action="store_true", help="a few shapes only (smoke test)")
    ap.add_argument("--step-model", default="llama-3.1-8b",
                    help="shipped model id (perfmodel/data/models/<id>.json, Llama-style) of the whole steps")
    ap.add_argument("--tables", default=",".join(TABLE_FILES),
                    help="comma-separated subset of: " + ", ".join(TABLE_FILES))
    args = ap.parse_args(argv)
    wanted = [t.strip() for t in args.tables.split(",") if t.strip()]
    unknown = sorted(set(wanted) - set(TABLE_FILES))
    if unknown:
        raise SystemExit(f"--tables: unknown {unknown}; known: {', '.join(TABLE_FILES)}")
    spec = MODELS / f"{args.step_model}.json"
    if not spec.exists():
        known = sorted(p.stem for p in MODELS.glob("*.json"))
        raise SystemExit(f"--step-model: no {spec.name} in {MODELS}; known: {', '.join(known)}")
    unsupported = plain_step_gaps(json.loads(spec.read_text())["config"])
    if unsupported and {"decode_step", "prefill_step"} & set(wanted):
        raise SystemExit(f"--step-model {args.step_model}: the plain-PyTorch step cannot represent its "
                         f"{', '.join(unsupported)}; pick a dense Llama-style model (llama-3.1-8b, llama-2-7b)")
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible; use --device cpu for a smoke test")
    name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or "cpu"
    words = name.lower().split()
    # the per-op tables' ids are SXM parts: a PCIe or NVL board keeps its own name (other clocks, power)
    system = next((sid for key, sid in SYSTEM_IDS.items() if key in words and not {"pcie", "nvl"} & set(words)),
                  name.lower().replace(" ", "_"))
    meta = {"system": system, "backend": "torch", "backend_version": torch.__version__, "device": name,
            "driver": driver_version() if args.device == "cuda" else "n/a",
            "cuda": torch.version.cuda or "n/a", "date": dt.date.today().isoformat()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # the copy runs first and again last (after the large step allocations); both rows say when they ran
    dev, quick = args.device, args.quick
    first = [{**r, "order": "first"} for r in copy_rows(torch, dev, quick, meta)] if "hbm_copy" in wanted else []
    measure = {"gemm": lambda: gemm_rows(torch, dev, quick, meta),
               "attention_decode": lambda: attention_rows(torch, dev, quick, meta, "decode"),
               "attention_prefill": lambda: attention_rows(torch, dev, quick, meta, "prefill"),
               "decode_step": lambda: step_rows(torch, dev, quick, meta, "decode", spec),
               "prefill_step": lambda: step_rows(torch, dev, quick, meta, "prefill", spec),
               "hbm_copy": lambda: first + [{**r, "order": "last"} for r in copy_rows(torch, dev, quick, meta)]}
    tables = {f"{t}.csv": measure[t]() for t in TABLE_FILES if t in wanted}
    for file, rows in tables.items():
        if rows:
            write(out / file, rows)
    print(", ".join(f"{len(rows)} rows in {file}" for file, rows in tables.items()) + f" for {name} ({out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
