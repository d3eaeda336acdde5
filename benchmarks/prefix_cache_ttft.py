"""TTFT under load vs the number of distinct shared prefixes, with the simulator's prefix cache.

Run:  python benchmarks/prefix_cache_ttft.py [--rate 7] [--requests 3000] [--pools 1,16,64,128,256,1024]

Llama-3.1-8B, BF16, one H100-SXM, vLLM engine (fitted terms); Poisson arrivals; ISL 4096 of which the
first ``--prefix`` (3072) tokens are one of P shared prefixes drawn uniformly; OSL 256. For each pool
size P the table gives the hit rate the simulator achieved (token-weighted, after a 10 % warm-up), the
rule's steady-state value (:func:`perfmodel.serving.expected_hit_rate` with the replica's whole KV
capacity), evicted blocks, TTFT p50 / p95, TPOT p50 and preemptions; the first row is the same load
without any reuse. Prints a Markdown table (the one in docs/serving.md).
"""

from __future__ import annotations

import argparse
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=7.0, help="Poisson arrivals per second (default 7)")
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--isl", type=int, default=4096)
    ap.add_argument("--prefix", type=int, default=3072, help="shared prefix length S [tokens]")
    ap.add_argument("--osl", type=int, default=256)
    ap.add_argument("--pools", default="1,16,64,128,256,1024", help="pool sizes P, comma-separated")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    from perfmodel.core.step import StepModel
    from perfmodel.engine.engine import Engine
    from perfmodel.serving import Workload, expected_hit_rate, simulate

    sm = StepModel("llama-3.1-8b", "h100-sxm", tp=1, weights="bf16", kv_cache="bf16")
    eng = Engine.load("vllm")
    kv = float(eng.step(sm).kv_capacity_tokens) * eng.profile.kv_capacity_fraction
    base = Workload.fixed(args.isl, args.osl, rate=args.rate)
    print(f"Llama-3.1-8B BF16 on 1x H100-SXM, vLLM, Poisson {args.rate:g}/s, ISL {args.isl} "
          f"(shared prefix {args.prefix}), OSL {args.osl}, {args.requests} requests, seed {args.seed}; "
          f"KV capacity {kv:,.0f} tokens = {kv / args.prefix:.0f} prefixes")
    print()
    print("| pool P | hit rate (sim) | hit rate (rule) | evicted blocks | TTFT p50 [ms] | TTFT p95 [ms] "
          "| TPOT p50 [ms] | preemptions |")
    print("|---|---|---|---|---|---|---|---|")
    wall = time.perf_counter()
    for pool in [None] + [int(p) for p in args.pools.split(",")]:
        w = base if pool is None else base.replace(prefix={"tokens": args.prefix, "pool": pool})
        res = simulate(sm, w, engine=eng, requests=args.requests, seed=args.seed)
        s = res.summary(warmup=0.1)
        hit = "-" if pool is None else f"{s['prefix_hit_rate']:.3f}"
        rule = "-" if pool is None else f"{expected_hit_rate(w, kv):.3f}"
        ev = "-" if pool is None else f"{res.meta['prefix_cache_evicted_blocks']:,}"
        print(f"| {'no reuse' if pool is None else pool} | {hit} | {rule} | {ev} | {1e3 * s['ttft_p50_s']:.0f} "
              f"| {1e3 * s['ttft_p95_s']:.0f} | {1e3 * s['tpot_p50_s']:.1f} | {s['preemptions']} |")
    print()
    print(f"({time.perf_counter() - wall:.1f} s wall)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
