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


def main() -> None:
    print(f"python {platform.python_version()}, numpy {np.__version__}, cores {os.cpu_count()}")
    cases = [("llama-3.1-8b", "h100-sxm", 1), ("llama-3.1-70b", "h100-sxm", 8), ("deepseek-v3", "b200", 8)]
    for model, hw, tp in cases:
        pm.predict(model, hw, tp=tp)  # warm the spec caches (YAML parsing is a one-off)
        n = 200
        t = best_of(lambda m=model, h=hw, k=tp: [pm.predict(m, h, tp=k, isl=2048, osl=256, batch=8)
                                                  for _ in range(n)], repeat=3) / n
        sm = pm.StepModel(model, hw, tp=tp)
        t_reuse = best_of(lambda s=sm: [pm.predict(None, None, isl=2048, osl=256, batch=8, step_model=s)
                                        for _ in range(n)], repeat=3) / n
        rng = np.random.default_rng(0)
        points = 10**6
        batch = rng.integers(1, 257, points)
        isl = rng.integers(128, 8193, points)
        osl = rng.integers(16, 2049, points)
        t_vec = best_of(lambda s=sm: pm.predict(None, None, isl=isl, osl=osl, batch=batch, step_model=s),
                        repeat=2)
        print(f"{model:15s} on {tp}x {hw:9s}: scalar predict {t * 1e3:.3f} ms "
              f"({t_reuse * 1e3:.3f} ms reusing a StepModel); 10^6 points in {t_vec:.2f} s "
              f"= {points / t_vec / 1e6:.2f} M points/s")


if __name__ == "__main__":
    main()
