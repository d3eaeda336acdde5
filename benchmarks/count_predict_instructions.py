"""Instructions one scalar ``predict`` executes, counted by valgrind: a measure of its cost that a loaded
machine does not change (CPU time on a shared VM varies by ±40 % from run to run).

Run from the repository root: ``python benchmarks/count_predict_instructions.py [--case K] [--calls N]``
(needs ``valgrind``; each case runs Python twice under cachegrind, about a minute each). The count of a
run with N calls minus that of a run with none, over N, is the cost of one call; both runs import
perfmodel and make two warm-up calls first (the second forms the step model's compiled op plan). The runs import perfmodel from ``PYTHONPATH`` (``PYTHONPATH=.``
counts this checkout, ``PYTHONPATH=path/to/other`` another one) or else the installed package: they run in
a temporary directory, so that the current one does not shadow it. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_predict import CASES  # noqa: E402 - the same configurations as the timing benchmark

#: The measured program: warm up (spec parsing is a one-off; a step model forms its compiled op plan on its
#: second call, also a one-off), then N calls, each at another point.
PROGRAM = """
import sys
import perfmodel as pm
model, hw, tp, extra, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), eval(sys.argv[4]), int(sys.argv[5])
pm.predict(model, hw, tp=tp, **extra)
pm.predict(model, hw, tp=tp, **extra)
for k in range(n):
    pm.predict(model, hw, tp=tp, isl=2048 + 16 * (k % 7), osl=256 + 8 * (k % 5), batch=8 + k % 3, **extra)
"""


def instructions(case: tuple, calls: int) -> int:
    """Instructions of one run of :data:`PROGRAM` with ``calls`` calls (user space, valgrind's count)."""
    model, hw, tp, extra = case
    env = dict(os.environ)
    if env.get("PYTHONPATH"):  # absolute: the run's working directory is another one
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep))
    with tempfile.TemporaryDirectory() as where:
        out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                              sys.executable, "-c", PROGRAM, model, hw, str(tp), repr(extra), str(calls)],
                             capture_output=True, text=True, check=True, cwd=where, env=env).stderr
    return int(re.search(r"I\s+refs:\s+([\d,]+)", out).group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", type=int, choices=range(len(CASES)), help="one configuration only")
    parser.add_argument("--calls", type=int, default=200, help="calls in the measured run (default 200)")
    args = parser.parse_args()
    for k, case in enumerate(CASES):
        if args.case is None or args.case == k:
            per_call = (instructions(case, args.calls) - instructions(case, 0)) / args.calls
            label = f"{case[0]} on {case[2]}x {case[1]}" + "".join(f" {v}" for v in case[3].values())
            print(f"{label:34s}: {per_call / 1e6:.2f} M instructions per scalar predict")


if __name__ == "__main__":
    main()
