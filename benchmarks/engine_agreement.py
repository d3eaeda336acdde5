"""How far the closed-form steady state is from the simulator under load, with the fitted engines.

Prints, for Llama-3.1-8B BF16 on one H100 (ISL 1024, OSL 256) and each shipped engine, the mean TTFT,
TPOT and throughput of ``pm.steady_state`` and of ``pm.simulate`` (closed loop, clients started as
``simulate`` starts them by default, ``ramp_up: auto``, over one mean request duration; ``--ramp-up 0``
starts them together; 20·C requests, the first 30 % dropped) at C = 1 … 256, and their ratio. The steady state is run with ``sync_fraction=0`` (the simulated arrivals are spread); the
fitted value describes the synchronised waves of the measured benchmark clients.

Usage::

    python benchmarks/engine_agreement.py [--engines vllm,sglang,trtllm] [--concurrency 1,8,32,128,256]
                                          [--ramp-up auto|0|<time>]
"""

from __future__ import annotations

import argparse
import time

from perfmodel.core.step import StepModel
from perfmodel.serving import Workload, simulate, steady_state


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default="vllm,sglang,trtllm")
    ap.add_argument("--concurrency", default="1,8,32,128,256")
    ap.add_argument("--ramp-up", default="auto", help="the simulated clients' ramp-up (default auto)")
    args = ap.parse_args(argv)
    sm = StepModel("llama-3.1-8b", "h100-sxm")
    print(f"{'engine':8} {'C':>4} {'TTFT ss/sim [ms]':>20} {'ratio':>6} {'TPOT ss/sim [ms]':>18} {'ratio':>6} "
          f"{'X ratio':>7} {'ramp s':>6} {'wall s':>6}")
    for engine in args.engines.split(","):
        timers: dict = {}
        for c in (int(x) for x in args.concurrency.split(",")):
            t0 = time.perf_counter()
            ss = steady_state(sm, c, 1024, 256, engine=engine, sync_fraction=0.0)
            w = Workload.fixed(1024, 256, concurrency=c, ramp_up=args.ramp_up)
            res = simulate(sm, w, engine=engine, requests=max(20 * c, 200), seed=1, timer_cache=timers)
            s = res.summary(warmup=0.3)
            a, b = float(ss.ttft_mean_s) * 1e3, s["ttft_mean_s"] * 1e3
            p, q = float(ss.tpot_mean_s) * 1e3, s["tpot_mean_s"] * 1e3
            print(f"{engine:8} {c:4d} {a:9.1f} / {b:8.1f} {a / b:6.2f} {p:8.2f} / {q:7.2f} {p / q:6.2f} "
                  f"{float(ss.requests_per_s) / s['requests_per_s']:7.2f} {res.meta['ramp_up']['ramp_up_s']:6.2f} "
                  f"{time.perf_counter() - t0:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
