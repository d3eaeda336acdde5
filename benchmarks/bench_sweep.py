"""Speed of :func:`perfmodel.planning.sweep` on the analytic path (one core).

Run: ``python benchmarks/bench_sweep.py``. Prints operating points per second (wall clock and CPU time
of this process) and the time per point; asserts nothing (timings are not tests). Target (issue
"Planning"): >= 10^6 operating points per second on one core. The development machine has 2 cores and
may be loaded by other work: the CPU-time figure is the one to compare with the target; numpy's
element-wise work is single-threaded, and BLAS threads are pinned to 1 below.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from perfmodel.planning import sweep  # noqa: E402


def timed(fn):
    """Best of three: (wall seconds, CPU seconds, result)."""
    best = None
    for _ in range(3):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        if best is None or c < best[1]:
            best = (w, c, out)
    return best


def report(label: str, fn) -> None:
    wall, cpu, df = timed(fn)
    n = len(df)
    print(f"{label}: {n:,} points ({int(df['valid'].sum()):,} valid) | wall {wall:.2f} s = "
          f"{n / wall / 1e6:.2f} M points/s, {wall / n * 1e9:.0f} ns/point | CPU {cpu:.2f} s = "
          f"{n / cpu / 1e6:.2f} M points/s, {cpu / n * 1e9:.0f} ns/point")


def main() -> None:
    print(f"python {platform.python_version()}, numpy {np.__version__}, cores {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    sweep("llama-3.1-8b", "h100-sxm", batch=1, isl=128, osl=16)  # load specs once (YAML parsing)
    batch = np.arange(1, 257)
    isl = np.geomspace(128, 131072, 64).round()
    osl = np.geomspace(16, 16384, 64).round()
    report("one group   (llama-3.1-70b, tp8 h100-sxm, 256 batch x 64 ISL x 64 OSL)",
           lambda: sweep("llama-3.1-70b", "h100-sxm", tp=8, batch=batch, isl=isl, osl=osl))
    report("many groups (llama-3.1-70b x {h100,h200,b200} x tp{1,2,3,4,8} x dp{1,2} x {bf16,fp8}, "
           "64 batch x 32 ISL x 32 OSL)",
           lambda: sweep("llama-3.1-70b", ["h100-sxm", "h200-sxm", "b200"], tp=[1, 2, 3, 4, 8], dp=[1, 2],
                         weights=["bf16", "fp8"], batch=np.arange(1, 257, 4), isl=isl[::2], osl=osl[::2]))


if __name__ == "__main__":
    main()
