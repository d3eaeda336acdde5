"""Where a framework-free prefill step spends its time: kernel categories and SM clocks under load.

For a session with a GPU machine (``device`` tool). Runs one Llama-3.1-8B prefill step of
``--tokens`` tokens (the step of ``device_ops.py``) under ``torch.profiler`` and sums the CUDA kernel
time per category (GEMM, attention, elementwise/norm/copy, other); then replays the step in a CUDA graph
for ``--seconds`` while sampling the SM clock, power and temperature with nvidia-smi, to see whether a
sustained prefill runs at the clocks the per-op tables were measured at. Writes
``prefill_breakdown.csv`` and ``clocks.csv`` to ``--out``::

    python3 benchmarks/device_prefill_breakdown.py --out "$OUT" [--tokens 8192] [--seconds 10]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import device_ops  # noqa: E402  (the same step and weights)

#: Kernel-name keywords per category, attention first (a CUTLASS FMHA kernel is attention, not GEMM).
CATEGORIES = (("attention", ("flash", "fmha", "attention", "sdpa")),
              ("gemm", ("gemm", "cutlass", "sm90_xmma", "nvjet", "cublas")))


def category(name: str) -> str:
    low = name.lower()
    for cat, keys in CATEGORIES:
        if any(k in low for k in keys):
            return cat
    return "elementwise/other"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = ap.parse_args(argv)
    import torch

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = device_ops.TINY if args.device == "cpu" else json.loads(device_ops.STEP_MODEL.read_text())["config"]
    weights = device_ops.decoder_weights(torch, args.device, cfg)
    step = device_ops.step_fn(torch, args.device, cfg, weights, 1, 0, args.tokens)
    step()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if args.device == "cuda":
        torch.cuda.synchronize()
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        step()
        if args.device == "cuda":
            torch.cuda.synchronize()
    sums: dict[str, float] = {}
    names: dict[str, float] = {}
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", 0.0) if args.device == "cuda" else ev.self_cpu_time_total
        if t <= 0 or (args.device == "cuda" and ev.device_type != torch.autograd.DeviceType.CUDA):
            continue
        sums[category(ev.key)] = sums.get(category(ev.key), 0.0) + t / 1e3
        names[ev.key] = names.get(ev.key, 0.0) + t / 1e3
    with (out / "prefill_breakdown.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["tokens", "category", "kernel", "time_ms"])
        for k, v in sorted(names.items(), key=lambda kv: -kv[1]):
            w.writerow([args.tokens, category(k), k[:120], round(v, 4)])
    print({k: round(v, 2) for k, v in sums.items()}, "ms per step by category")
    clocks = []
    if args.device == "cuda":
        run = device_ops.timer(torch, "cuda")
        t_end = time.time() + args.seconds
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu",
                                "--format=csv,noheader", "-lms", "200"], stdout=subprocess.PIPE, text=True)
        timings = []
        while time.time() < t_end:
            timings.append(run(step, 3)["latency_ms"])
        smi.terminate()
        clocks = [line.split(", ") for line in smi.communicate()[0].splitlines() if line.strip()]
        print(f"sustained: {len(timings)} graph timings, first {timings[0]:.1f} ms, last {timings[-1]:.1f} ms")
        with (out / "clocks.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["timestamp", "sm_clock", "mem_clock", "power", "temperature"])
            w.writerows(clocks)
        with (out / "sustained.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["index", "latency_ms"])
            w.writerows(enumerate(timings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
