"""GPU/LPU split: TPOT against micro-batches, and whether the split pays (quoted in docs/placement.md).

Run: ``python benchmarks/split_micro_batches.py [micro-batches|offload]``. Prints (asserts nothing);
``scripts/gen_doc_blocks.py`` copies the output into docs/placement.md.

1. ``micro-batches``: TPOT and exposed exchange for 1, 2 and 4 micro-batches, for the shipped Kimi-K2
   Vera Rubin + LPX deployment (as shipped: calibrated GPU profile, LP30 datasheet) and for
   Llama-3.1-70B on 8 H200 + 512 LP30 (datasheet, 25 us per message);
2. ``offload``: T_local, T_remote and T_comm of :func:`perfmodel.deployment.offload_analysis` for the
   shipped Kimi-K2 deployment with the datasheet profile, at batch 1 and 64.
"""

from __future__ import annotations

import argparse
import copy

import numpy as np

from perfmodel.deployment import offload_analysis, predict_deployment
from perfmodel.hardware.registry import read_yaml

SHIPPED = "deployments/kimi-k2-vera-rubin-lpx-split.yaml"
BATCHES = [1, 64, 1024]
LLAMA = {"model": "llama-3.1-70b", "precision": {"weights": "fp8", "kv_cache": "fp8"}, "efficiency": "datasheet",
         "pools": {"gpu": {"hardware": "h200-sxm", "count": 8, "tp": 8},
                   "lpu": {"hardware": "groq-lp30", "count": 512}},
         "placement": {"prefill": "gpu", "decode_attention": "gpu", "decode_ffn": "lpu"},
         "links": {"gpu-lpu": {"bandwidth": "200 GB/s", "alpha": "25 us"}}}


def _with(dep: dict, n: int) -> dict:
    out = copy.deepcopy(dep)
    out.setdefault("options", {})["micro_batches"] = n
    return out


def micro_batches() -> str:
    lines = []
    for title, dep, isl in (("kimi-k2, shipped split deployment (ISL 2048, OSL 256)",
                             read_yaml(SHIPPED), 2048),
                            ("llama-3.1-70b, 8 H200 + 512 LP30, datasheet, 25 us per message (ISL 4096, OSL 256)",
                             LLAMA, 4096)):
        lines.append(title)
        lines.append("micro-batches  " + "  ".join(f"TPOT b={b} ms / exchange ms".ljust(28) for b in BATCHES))
        for n in (1, 2, 4):
            p = predict_deployment(_with(dep, n), isl=isl, osl=256, batch=BATCHES)
            cells = [f"{t * 1e3:.3f} / {c * 1e3:.3f}".ljust(28)
                     for t, c in zip(np.asarray(p.tpot_s), np.asarray(p.comm_s_per_token), strict=True)]
            lines.append(f"{n:<13}  " + "  ".join(cells))
        lines.append("")
    return "\n".join(lines).rstrip()


def offload() -> str:
    dep = {**read_yaml(SHIPPED), "efficiency": "datasheet"}
    a = offload_analysis(dep, isl=2048, osl=256, batch=[1, 64]).to_dataframe()
    cols = ["batch", "t_local_ffn_s", "t_remote_ffn_s", "t_comm_s", "pays", "local_fits"]
    rows = ["  ".join(c.ljust(14) for c in cols)]
    for _, r in a.iterrows():
        rows.append("  ".join((f"{r[c] * 1e3:.3f} ms" if c.endswith("_s") else str(r[c] if c != "batch"
                                                                                   else int(r[c]))).ljust(14)
                              for c in cols))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", nargs="?", choices=("micro-batches", "offload"), default="micro-batches")
    args = p.parse_args(argv)
    print(micro_batches() if args.what == "micro-batches" else offload())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
