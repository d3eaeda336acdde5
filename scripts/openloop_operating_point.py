"""Open-loop runs: the engine step time at each run's measured operating point against its measured TPOT.

Usage::

    python scripts/openloop_operating_point.py [--data perfmodel/data/validation/openloop/mlperf_llama2_70b_server.csv]

For each open-loop row (:mod:`perfmodel.validation.arrivals` columns) the measured operating point of one
replica is n = λ_r·W decoding sequences (λ_r = rate / replicas, W the measured mean latency, Little's
law) and p = λ_r·I·TPOT prompt tokens per step: the prompts that arrive during one step, which a
decode-first engine prefills in the steps the decodes ride in. Prints the engine step (the engine's
fitted terms, :func:`perfmodel.engine.engine.Engine.step`) at (n, I + O/2) without those prompt
tokens (the "static batch") and with them (the mixed step), and measured TPOT / mixed step; KV cache
FP8, as the open-loop README maps these runs. Near
saturation the open loop amplifies a step-time error: the in-flight count solves
n = λ_r·(O − 1)·T(n), so a model step a few per cent too fast gives a much smaller simulated n.
"""

from __future__ import annotations

import argparse

import pandas as pd

import perfmodel as pm
from perfmodel.engine.engine import Engine

DEFAULT = "perfmodel/data/validation/openloop/mlperf_llama2_70b_server.csv"
MODEL_OF_PATH = {"meta-llama/Llama-2-70b-chat-hf": "llama-2-70b"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=DEFAULT)
    a = ap.parse_args()
    rows = pd.read_csv(a.data)
    print(f"{'run':<50} {'engine':<7} {'n':>6} {'p':>5}  TPOT ms: measured  static   mixed  measured/mixed")
    for _, r in rows.iterrows():
        lam = float(r.request_rate_rps) / float(r.replicas)
        n = lam * float(r.mean_latency_ms) / 1e3
        isl, osl, tpot = float(r.isl), float(r.osl), float(r.silicon_tpot_ms) / 1e3
        p = lam * isl * tpot
        sm = pm.StepModel(MODEL_OF_PATH.get(r.model_path, r.model_path), r.system, tp=int(r.tp_size),
                          weights=str(r.precision), kv_cache="fp8")
        step = Engine.load(r.backend).step(sm)
        static = float(step.step_time(n, isl + osl / 2, 0.0, 0.0))
        mixed = float(step.step_time(n, isl + osl / 2, p, 0.0))
        print(f"{r.id[:50]:<50} {r.backend:<7} {n:6.0f} {p:5.0f}  {tpot * 1e3:16.1f} {static * 1e3:7.1f} "
              f"{mixed * 1e3:7.1f}  {tpot / mixed:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
