"""Print the figures of ``docs/speculative.md``: published speculative-decoding pairs against the model,
and where speculation stops paying for a dense model as the batch grows.

1. DeepSeek-R1 on 8x B200 (TensorRT-LLM min latency, ISL 1k / OSL 2k, batch 1) without MTP and with
   k = 1..5 MTP tokens, acceptance from the same table.
2. Llama-3.1-8B on 1x H100 with EAGLE-3 (SGLang docs, MT-bench, batch 1).
3. Llama-3.1-70B FP8 on 8x H100: speed-up of EAGLE k = 3 (default acceptance) against batch, and the
   batch where it falls below 1.

Usage::

    python scripts/speculative_pairs.py [--context 2048]
"""

from __future__ import annotations

import argparse

import numpy as np

from perfmodel.core.step import StepModel
from perfmodel.engine.speculative import (
    SpecDecode,
    speculative_speedup,
    speculative_step,
    uniform_rate_for_length,
)
from perfmodel.engine.speculative_draft import draft_step_model

DSR1_B200_TPS = {0: 111, 1: 198, 2: 250, 3: 253, 4: 245, 5: 239}


def deepseek_pairs() -> None:
    target = StepModel("deepseek-r1", "b200", tp=8, ep=4, weights="nvfp4", kv_cache="bf16")
    base = float(target.step_time(1, 2048))
    print("DeepSeek-R1, 8x B200, nvfp4 (MTP layers bf16), TP8 / EP4, batch 1, context 2048")
    print(f"  no MTP: predicted {1 / base:.0f} TPS/user, published {DSR1_B200_TPS[0]}")
    print("  k  E     published TPS  ratio   predicted TPS  ratio   ratio error")
    for k in range(1, 6):
        spec = SpecDecode("mtp", k)
        step = speculative_step(target, spec, 1, 2048, draft_step_model(target, spec, weights="bf16"))
        pred, pub = base / float(step.tpot), DSR1_B200_TPS[k] / DSR1_B200_TPS[0]
        print(f"  {k}  {spec.expected_tokens:.2f}  {DSR1_B200_TPS[k]:13d}  {pub:5.2f}   "
              f"{1 / float(step.tpot):13.0f}  {pred:5.2f}   {100 * (pred / pub - 1):+.1f} %")


def llama_eagle_pair() -> None:
    target = StepModel("llama-3.1-8b", "h100-sxm", weights="bf16")
    spec = SpecDecode("eagle", 7, uniform_rate_for_length(2.77, 7), acceptance_source="MT-bench 2.77 @ K=7")
    draft = draft_step_model(target, spec, draft_vocab=32000)
    pred, pub = float(speculative_speedup(target, spec, 1, 512, draft)), 373.25 / 158.34
    print("Llama-3.1-8B bf16, 1x H100, batch 1, EAGLE-3 k=7, accepted length 2.77, draft vocabulary 32000")
    print(f"  no speculation: predicted {1 / float(target.step_time(1, 512)):.0f} tok/s, published 158.34")
    print(f"  speed-up: predicted {pred:.2f}, published {pub:.2f} ({100 * (pred / pub - 1):+.1f} %)")


def break_even(context: float) -> None:
    target = StepModel("llama-3.1-70b", "h100-sxm", tp=8, weights="fp8", kv_cache="fp8")
    spec = SpecDecode("eagle", 3)
    draft = draft_step_model(target, spec)
    n = np.array([1, 8, 32, 64, 128, 256, 512, 1024])
    s = speculative_speedup(target, spec, n, context, draft)
    print(f"Llama-3.1-70B FP8, 8x H100, EAGLE k=3, accepted length {spec.expected_tokens:.2f}, context {context:.0f}")
    print("  batch    " + "  ".join(f"{int(x):5d}" for x in n))
    print("  speed-up " + "  ".join(f"{x:5.2f}" for x in s))
    grid = np.arange(1, 2049)
    s_grid = speculative_speedup(target, spec, grid, context, draft)
    loss = grid[s_grid < 1.0]
    print(f"  speculation costs more than it gains from batch {loss[0] if loss.size else 'none up to 2048'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--context", type=float, default=2048.0,
                        help="context of the Llama-3.1-70B batch sweep [tokens] (default 2048)")
    args = parser.parse_args()
    deepseek_pairs()
    print()
    llama_eagle_pair()
    print()
    break_even(args.context)


if __name__ == "__main__":
    main()
