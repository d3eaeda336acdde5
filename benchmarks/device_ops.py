"""Measure per-op kernels on a lent accelerator, in the schema of the project's per-op tables.

For a session that has a GPU machine (the ``device`` tool): runs in well under five minutes and writes
rows that ``perfmodel validate --data FILE`` and the calibration fit read like the shipped tables.

- ``gemm.csv``: bf16 (and fp8 via ``torch._scaled_mm`` where the GPU supports it) GEMMs over decode-like
  (M = 1..256) and prefill-like (M = 512..16384) shapes of common models; columns as ``gemm.csv.gz``
  (system, backend, backend_version, kernel_source, dtype, m, n, k, latency_ms) plus device, driver, date.
- ``hbm_copy.csv``: achieved copy bandwidth of a large device-to-device copy (bytes read + written / time).

Usage on the device machine::

    python3 benchmarks/device_ops.py --out "$OUT" [--quick]

It also runs on a CPU (``--device cpu --quick``) so the script itself is tested without a GPU; CPU
rows are for that test only and are never added to validation data.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import platform
import time
from pathlib import Path

#: (n, k) of the projections of Llama-3.1-8B/70B and a DeepSeek-like MoE expert (per GPU at TP 1).
SHAPES_NK = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (10240, 8192), (8192, 8192),
             (57344, 8192), (8192, 28672), (4096, 7168), (7168, 2048)]
DECODE_M = [1, 4, 16, 64, 256]
PREFILL_M = [512, 2048, 8192, 16384]


def timer(torch, device: str):
    """A function timing a callable: CUDA events on a GPU, perf_counter on a CPU [ms per call]."""
    if device == "cuda":
        def run(fn, iters: int) -> float:
            fn()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / iters
    else:
        def run(fn, iters: int) -> float:
            fn()
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            return (time.perf_counter() - t0) * 1e3 / iters
    return run


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
            copies = 1 if device == "cpu" else 4
            w = [torch.randn(n, k, device=device, dtype=torch.bfloat16) for _ in range(copies)]
            if dtype == "fp8":
                w = [x.to(torch.float8_e4m3fn) for x in w]
                one = torch.tensor(1.0, device=device)
            for m in ms:
                x = torch.randn(m, k, device=device, dtype=torch.bfloat16)
                if dtype == "fp8":
                    xq = x.to(torch.float8_e4m3fn)
                    calls = [lambda a=a, q=xq, s=one: torch._scaled_mm(q, a.t(), scale_a=s, scale_b=s,
                                                                       out_dtype=torch.bfloat16) for a in w]
                else:
                    calls = [lambda a=a, q=x: q @ a.t() for a in w]
                state = {"i": 0}

                def step(calls=calls, state=state):
                    state["i"] = (state["i"] + 1) % len(calls)
                    calls[state["i"]]()

                iters = 3 if quick else max(5, min(200, int(2e10 / (2 * m * n * k) + 5)))
                rows.append({**meta, "kernel_source": "torch_matmul" if dtype == "bfloat16" else "torch_scaled_mm",
                             "dtype": dtype, "m": m, "n": n, "k": k, "latency_ms": run(step, iters)})
    return rows


def copy_rows(torch, device: str, quick: bool, meta: dict) -> list[dict]:
    """Achieved bandwidth of one large copy: 2 × size bytes moved per call."""
    run = timer(torch, device)
    size = (64 if quick else 4096) * 2**20
    a = torch.empty(size, dtype=torch.uint8, device=device)
    b = torch.empty_like(a)
    ms = run(lambda: b.copy_(a), 3 if quick else 20)
    return [{**meta, "bytes": size, "latency_ms": ms, "bandwidth_GBps": 2 * size / (ms * 1e-3) / 1e9}]


def write(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for gemm.csv and hbm_copy.csv")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--quick", action="store_true", help="a few shapes only (smoke test)")
    args = ap.parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible; use --device cpu for a smoke test")
    name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or "cpu"
    driver = torch.version.cuda if args.device == "cuda" else "n/a"
    meta = {"system": name.lower().replace(" ", "_"), "backend": "torch", "backend_version": torch.__version__,
            "device": name, "driver_cuda": driver, "date": dt.date.today().isoformat()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    g, c = gemm_rows(torch, args.device, args.quick, meta), copy_rows(torch, args.device, args.quick, meta)
    write(out / "gemm.csv", g)
    write(out / "hbm_copy.csv", c)
    print(f"{len(g)} GEMM rows and {len(c)} copy rows for {name} written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
