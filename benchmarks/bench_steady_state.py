"""Benchmark: closed-form serving estimates (no simulation), one core.

Run:  python benchmarks/bench_steady_state.py [--points 1000] [--repeat 3]

Times, with the first-principles step model of Llama-3.1-8B BF16 on one H100-SXM:

- :func:`perfmodel.serving.steady_state` over ``--points`` concurrencies in one vectorised call;
- :func:`perfmodel.serving.steady_state_disagg` (one prefill and two decode replicas of that model)
  over the same points;
- :func:`perfmodel.estimate` for 8 concurrencies (format rules, step model and the fitted engine
  included: the cost of one ``perfmodel estimate``).

Prints the best of ``--repeat`` runs and points per second.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from perfmodel import estimate
    from perfmodel.core.step import StepModel
    from perfmodel.serving import steady_state, steady_state_disagg

    sm = StepModel(model="llama-3.1-8b", hardware="h100-sxm", tp=1, weights="bf16", kv_cache="bf16")
    c = np.geomspace(1, 512, args.points)
    agg = _best(lambda: steady_state(sm, c, 1024, 256, engine="vllm"), args.repeat)
    dis = _best(lambda: steady_state_disagg(sm, sm, c, 1024, 256, decode_replicas=2, prefill_engine="vllm"),
                args.repeat)
    est = _best(lambda: estimate("llama-3.1-8b", "h100-sxm", engine="vllm",
                                 concurrency=[1, 2, 4, 8, 16, 32, 64, 128], isl=1024, osl=256), args.repeat)
    print(f"steady_state, {args.points} concurrencies: {agg * 1e3:.1f} ms ({args.points / agg:,.0f} points/s)")
    print(f"steady_state_disagg, {args.points} concurrencies: {dis * 1e3:.1f} ms ({args.points / dis:,.0f} points/s)")
    print(f"estimate, 8 concurrencies (step model, fitted engine): {est * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
