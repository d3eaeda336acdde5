"""Speed of the analytic core: one scalar predict, and a vectorised call over 10^6 operating points.

Run from the repository root: ``python benchmarks/bench_predict.py [--quick] [--case K] [--points N]``
with this checkout installed (``pip install -e .``), or with ``PYTHONPATH=.`` to time a checkout that is
not the installed one. Prints figures; asserts nothing (timings are not tests). Targets (issue 21): scalar ``predict`` ≤ 0.3 ms for dense models and ≤ 0.5 ms for MLA + MoE on
one idle core, without giving up the vectorised path's speed (≥ 10^6 points/s on one core).

Times are CPU seconds of this process (``time.process_time``), best of several repeats, so that other
processes on a shared machine slow the figures less than wall time would. Each scalar call gets a
different (batch, ISL, OSL) near 8 / 2048 / 256, so nothing can be answered from a cache of results.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import perfmodel as pm

#: (model, hardware, tp, extra predict arguments): the configurations quoted in the README.
CASES = (
    ("llama-3.1-8b", "h100-sxm", 1, {}),
    ("llama-3.1-70b", "h100-sxm", 8, {}),
    ("deepseek-v3", "h200-sxm", 8, {"weights": "fp8"}),
    ("gpt-oss-120b", "b200", 1, {"weights": "mxfp4"}),
)


def best_of(fn, repeat: int) -> float:
    """Least CPU time of ``repeat`` runs of ``fn`` [s]."""
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def bench_case(model: str, hw: str, tp: int, extra: dict, n: int, repeat: int, points: int) -> str:
    """Time one configuration: scalar predict (by ids; reusing a StepModel) and ``points`` points."""
    for _ in range(2):  # warm the spec caches (YAML parsing is a one-off) and form the compiled op plan
        pm.predict(model, hw, tp=tp, **extra)
    args = [(8 + k % 3, 2048 + 16 * (k % 7), 256 + 8 * (k % 5)) for k in range(n)]

    def scalar() -> None:
        for b, i, o in args:
            pm.predict(model, hw, tp=tp, isl=i, osl=o, batch=b, **extra)

    sm = pm.StepModel(model, hw, tp=tp, **extra)
    for _ in range(2):  # a step model forms its compiled op plan on its second call
        pm.predict(None, None, step_model=sm)

    def reused() -> None:
        for b, i, o in args:
            pm.predict(None, None, isl=i, osl=o, batch=b, step_model=sm)

    def engine() -> None:
        for b, i, o in args:
            pm.predict(model, hw, tp=tp, isl=i, osl=o, batch=b, engine="vllm", **extra)

    rng = np.random.default_rng(0)
    batch = rng.integers(1, 257, points)
    isl = rng.integers(128, 8193, points)
    osl = rng.integers(16, 2049, points)

    def vectorised() -> None:
        pm.predict(None, None, isl=isl, osl=osl, batch=batch, step_model=sm)

    t, t_reuse = (best_of(f, repeat) / n for f in (scalar, reused))
    args = args[: n // 4]  # the engine path costs several steps per call
    t_engine = best_of(engine, repeat) / len(args)
    t_vec = best_of(vectorised, 2) if points else float("nan")
    label = f"{model} on {tp}x {hw}" + "".join(f" {v}" for v in extra.values())
    return (f"{label:34s}: scalar predict {t * 1e3:.3f} ms ({t_reuse * 1e3:.3f} ms reusing a StepModel, "
            f"{t_engine * 1e3:.3f} ms with engine='vllm'); {points:.0e} points in {t_vec:.2f} s "
            f"= {points / t_vec / 1e6:.2f} M points/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and 10^5 points (a smoke run)")
    parser.add_argument("--case", type=int, choices=range(len(CASES)), help="run one configuration only")
    parser.add_argument("--points", type=float, help="points of the vectorised call (0: skip it)")
    args = parser.parse_args()
    n, repeat, points = (40, 3, 10**5) if args.quick else (100, 5, 10**6)
    points = points if args.points is None else int(args.points)
    print(f"python {platform.python_version()}, numpy {np.__version__}, cores {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}; CPU time per call, best of {repeat} x {n} calls "
          f"({n // 4} with the engine)")
    for k, (model, hw, tp, extra) in enumerate(CASES):
        if args.case is None or args.case == k:
            print(bench_case(model, hw, tp, extra, n, repeat, points))


if __name__ == "__main__":
    main()
