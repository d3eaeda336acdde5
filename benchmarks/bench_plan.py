"""Time of the README's ``perfmodel plan`` examples (issue 20: each within 5 s on 2 cores), and of the
first one searching three engines, then three engines × three sequence limits, and of the P/D one
× three sequence limits (P/D pairs collapse too; no target: reported).

Run: ``python benchmarks/bench_plan.py [--repeat N] [--root CHECKOUT] [--only NAME...]``. Each example
runs N times as a fresh ``python -m perfmodel plan ... --quiet`` process (this checkout, or ``--root``'s
for a before/after comparison, first on the path); prints, per run, the wall time, the CPU time of the
process (user + sys, from ``os.wait4``) and the 1-minute load average
before the run, since on a shared machine the wall time grows with the load while the CPU time does
not. Prints figures, asserts nothing (timings are not tests).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

EXAMPLES = {
    "llama-3.1-70b": ["--model", "llama-3.1-70b", "--rate", "20", "--isl", "2048", "--osl", "256",
                      "--slo-ttft", "2s", "--slo-tpot", "50ms", "--target", "0.95",
                      "--hardware", "h100-sxm,h200-sxm,b200", "--format", "json"],
    "deepseek-v3 P/D": ["--model", "deepseek-v3", "--rate", "8", "--isl", "8192", "--osl", "1024",
                        "--slo-ttft", "3s", "--slo-tpot", "40ms", "--target", "0.95",
                        "--hardware", "gb200-nvl72,hgx-b200,hgx-h200", "--weights", "fp8", "--tp", "1,8",
                        "--dp-attention", "1,8", "--disaggregated"],
}
EXAMPLES["llama-3.1-70b 3 engines"] = [*EXAMPLES["llama-3.1-70b"], "--engine", "vllm,sglang,trtllm"]
EXAMPLES["llama-3.1-70b 3 eng x 3 seqs"] = [*EXAMPLES["llama-3.1-70b 3 engines"], "--max-num-seqs", "128,256,1024"]
EXAMPLES["deepseek-v3 P/D x 3 seqs"] = [*EXAMPLES["deepseek-v3 P/D"], "--max-num-seqs", "128,256,1024"]


def run_once(args: list[str], root: Path) -> tuple[float, float]:
    """(wall [s], CPU user + sys [s]) of one ``perfmodel plan`` process of the checkout ``root``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "perfmodel", "plan", *args, "--quiet"], env=env, cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"perfmodel plan {' '.join(args)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per example (default 3)")
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout to time (default: this one)")
    ap.add_argument("--only", nargs="+", choices=list(EXAMPLES), metavar="NAME",
                    help=f"examples to run (default all: {', '.join(EXAMPLES)})")
    args = ap.parse_args()
    print(f"{args.root}; {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    print(f"{'example':<28} {'run':>3} {'load':>5} {'wall s':>7} {'cpu s':>6}")
    for name, cli in EXAMPLES.items():
        if args.only and name not in args.only:
            continue
        for k in range(args.repeat):
            load = os.getloadavg()[0]
            wall, cpu = run_once(cli, args.root)
            print(f"{name:<28} {k + 1:>3} {load:>5.2f} {wall:>7.2f} {cpu:>6.2f}")


if __name__ == "__main__":
    main()
