"""Speed of the analytic core: one scalar predict, and a vectorised call over 10^6 operating points.

Run: ``python benchmarks/bench_predict.py``. Prints figures; asserts nothing (timings are not tests).
Targets (issue "Core model"): scalar ≤ 1 ms; ≥ 10^6 points/s on one core.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np

import perfmodel as pm


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_case(model: str, hw: str, tp: int, n: int = 200, points: int = 10**6) -> str:
    """Time one configuration: scalar predict (fresh and reused StepModel) and 10^6 points."""
    pm.predict(model, hw, tp=tp)  # warm the spec caches (YAML parsing is a one-off)

    def scalar() -> None:
        for _ in range(n):
            pm.predict(model, hw, tp=tp, isl=2048, osl=256, batch=8)

    sm = pm.StepModel(model, hw, tp=tp)

    def reused() -> None:
        for _ in range(n):
            pm.predict(None, None, isl=2048, osl=256, batch=8, step_model=sm)

    rng = np.random.default_rng(0)
    batch = rng.integers(1, 257, points)
    isl = rng.integers(128, 8193, points)
    osl = rng.integers(16, 2049, points)

    def vectorised() -> None:
        pm.predict(None, None, isl=isl, osl=osl, batch=batch, step_model=sm)

    t, t_reuse = best_of(scalar, 3) / n, best_of(reused, 3) / n
    t_vec = best_of(vectorised, 2)
    return (f"{model:15s} on {tp}x {hw:9s}: scalar predict {t * 1e3:.3f} ms "
            f"({t_reuse * 1e3:.3f} ms reusing a StepModel); 10^6 points in {t_vec:.2f} s "
            f"= {points / t_vec / 1e6:.2f} M points/s")


def main() -> None:
    print(f"python {platform.python_version()}, numpy {np.__version__}, cores {os.cpu_count()}")
    for model, hw, tp in [("llama-3.1-8b", "h100-sxm", 1), ("llama-3.1-70b", "h100-sxm", 8),
                          ("deepseek-v3", "b200", 8)]:
        print(bench_case(model, hw, tp))


if __name__ == "__main__":
    main()
