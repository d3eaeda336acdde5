"""Benchmark: 10,000 requests through the serving simulator, one core, an 8B model on one GPU.

Run:  python benchmarks/bench_simulate.py [--requests 10000] [--rate 15] [--repeat 3]
      [--prefix-tokens 768 --prefix-pool 16 | --session-turns 4]  (with the prefix cache)

Uses the first-principles ``perfmodel.core.step.StepModel`` (Llama-3.1-8B, BF16, one H100-SXM) if it
can be imported, else the roofline stand-in of :mod:`perfmodel.serving.stand_in`, and says which.
Reports wall and CPU time of :func:`perfmodel.serving.simulate` with cold step tables (built inside the
call) and warm ones (shared through ``timer_cache``), the events processed, and the time of a plain
Python loop of 10^7 additions as a yardstick of the machine's single-core speed (about 0.3-0.5 s on a
recent desktop core). Target: <= 1 s per 10,000 requests.
"""

from __future__ import annotations

import argparse
import time


def _step_model():
    try:
        from perfmodel.core.step import StepModel
    except ImportError as exc:  # the core cost model is not available
        from perfmodel.serving.stand_in import RooflineStepModel

        return RooflineStepModel.llama_8b_h100(), f"stand-in RooflineStepModel (core not importable: {exc})"
    sm = StepModel(model="llama-3.1-8b", hardware="h100-sxm", tp=1, weights="bf16", kv_cache="bf16")
    return sm, f"core {sm!r}"


def _yardstick() -> float:
    t = time.perf_counter()
    s = 0
    for i in range(10**7):
        s += i
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--rate", type=float, default=15.0, help="Poisson arrivals per second (default 15)")
    ap.add_argument("--isl", type=int, default=1024)
    ap.add_argument("--osl", type=int, default=256)
    ap.add_argument("--engine", default="vllm")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--prefix-tokens", type=int, default=0, help="shared prefix S [tokens] (0: none)")
    ap.add_argument("--prefix-pool", type=int, default=1, help="distinct shared prefixes P")
    ap.add_argument("--session-turns", type=int, default=0,
                    help="multi-turn sessions of this many turns, 64 new tokens each, 5 s apart (0: none)")
    args = ap.parse_args(argv)

    from perfmodel.serving import Workload, simulate

    model, which = _step_model()
    reuse: dict = {}
    if args.prefix_tokens:
        reuse["prefix"] = {"tokens": args.prefix_tokens, "pool": args.prefix_pool}
    if args.session_turns:
        reuse["sessions"] = {"turns": args.session_turns, "user_tokens": 64, "think_time": 5.0}
    w = Workload.fixed(args.isl, args.osl, rate=args.rate, slo={"ttft": "2 s", "tpot": "50 ms"}, **reuse)
    print(f"step model: {which}")
    print(f"workload: {args.requests} requests, Poisson {args.rate:g}/s, ISL {args.isl}, OSL {args.osl}, "
          f"engine {args.engine}" + (f", reuse {reuse}" if reuse else ""))
    cold, cold_cpu, warm, warm_cpu = [], [], [], []
    res = None
    for _ in range(args.repeat):
        t, c = time.perf_counter(), time.process_time()
        res = simulate(model, w, engine=args.engine, requests=args.requests, seed=1)
        cold.append(time.perf_counter() - t)
        cold_cpu.append(time.process_time() - c)
        cache: dict = {}
        simulate(model, w, engine=args.engine, requests=10, seed=1, timer_cache=cache)
        t, c = time.perf_counter(), time.process_time()
        simulate(model, w, engine=args.engine, requests=args.requests, seed=1, timer_cache=cache)
        warm.append(time.perf_counter() - t)
        warm_cpu.append(time.process_time() - c)
    assert res is not None
    s = res.summary()
    print(f"simulated {s['duration_s']:.0f} s of serving: {s['completed']} completed, "
          f"{res.meta['iterations']} events, {res.meta['steps']} forward steps, "
          f"{res.meta['table_points']} step-model points tabulated")
    if reuse:
        print(f"  prefix hit rate {s['prefix_hit_rate']:.3f}, "
              f"{res.meta['prefix_cache_evicted_blocks']} blocks evicted")
    print(f"  TTFT p50 {s['ttft_p50_s'] * 1e3:.1f} ms, TPOT p50 {s['tpot_p50_s'] * 1e3:.2f} ms, "
          f"{s['output_tokens_per_s']:.0f} output tok/s, SLO attainment {s['slo_attainment']:.3f}")
    print(f"wall time, cold tables: best {min(cold):.3f} s (CPU {min(cold_cpu):.3f} s) of {args.repeat}")
    print(f"wall time, warm tables: best {min(warm):.3f} s (CPU {min(warm_cpu):.3f} s) of {args.repeat}")
    y = _yardstick()
    print(f"yardstick: 10^7-iteration Python loop {y:.2f} s on this machine")
    verdict = "met" if min(cold) <= 1.0 else "NOT met"
    print(f"target <= 1 s per 10,000 requests (cold): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
