"""Start-up cost: ``import perfmodel``, ``perfmodel --help`` and the first use of a few public names.

Run: ``python benchmarks/bench_startup.py [--repeat N]``. Each figure is the best of N fresh interpreters
(subprocesses, this checkout first on the path); prints figures, asserts nothing (timings are not tests).
Targets (issue #21): ``python -X importtime -c "import perfmodel"`` total ≤ 0.3 s; ``perfmodel --help``
≤ 0.5 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def wall(args: list[str], repeat: int) -> float:
    """Best wall time [s] of ``repeat`` runs of ``python ARGS``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], env=ENV, cwd=ROOT, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def importtime_total(module: str, repeat: int) -> float:
    """Best cumulative import time [s] of ``module`` as ``python -X importtime`` reports it."""
    best = float("inf")
    pattern = re.compile(rf"import time:\s+\d+ \|\s+(\d+) \| {re.escape(module)}$", re.MULTILINE)
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], env=ENV,
                             cwd=ROOT, check=True, capture_output=True, text=True)
        best = min(best, int(pattern.search(out.stderr).group(1)) * 1e-6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="fresh interpreters per figure (best of)")
    repeat = parser.parse_args().repeat
    print(f"python {platform.python_version()}, cores {os.cpu_count()}, best of {repeat} fresh interpreters")
    rows = [("interpreter alone (python -c pass)", wall(["-c", "pass"], repeat)),
            ("import perfmodel: -X importtime total", importtime_total("perfmodel", repeat)),
            ("import perfmodel: wall, with the interpreter", wall(["-c", "import perfmodel"], repeat)),
            ("perfmodel --help (python -m perfmodel --help)", wall(["-m", "perfmodel", "--help"], repeat))]
    rows += [(f"first use of perfmodel.{name} (wall)", wall(["-c", f"import perfmodel; perfmodel.{name}"],
                                                           max(1, repeat // 2)))
             for name in ("predict", "simulate", "sweep", "plots.roofline_chart")]
    for label, seconds in rows:
        print(f"{label:<52s} {seconds * 1e3:7.1f} ms")

if __name__ == "__main__":
    main()
