"""Monotonicity of predicted TTFT and TPOT over random valid configurations (issue #22, "Physics").

Time cannot fall as work grows on the same hardware, and cannot rise when the hardware gets faster.
For random draws of (model, accelerator, TP, weight precision, engine) this script evaluates a grid of
batch x ISL x OSL points with :func:`perfmodel.predict` and checks, with a relative tolerance of 1e-9:

* TTFT and TPOT never decrease as batch, ISL or OSL grows (neighbours along each grid axis);
* TTFT and TPOT never increase when the memory bandwidth (HBM and scale-up link) or every peak compute
  figure is scaled up (factors 1.25, 1.6, 2 on copies of the accelerator spec; the fitted efficiency
  profile of the accelerator still applies).

Each grid point is one configuration; the default (``--draws 400``, up to 8 x 6 x 6 points) checks about 115,000
configurations in the grid axes and each of them again under 3 bandwidth and 3 compute scalings. Points
whose weights and KV cache do not fit are checked too (they are reported apart: the model still gives
numbers there, marked ``fits=False``). Draws whose layout is invalid for the model (TP not dividing the
heads ...) are redrawn. Prints the counts and the first violations; exit status 1 if any.

Usage::

    python benchmarks/monotonicity.py [--draws 360] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mistral-7b", "mixtral-8x7b", "qwen3-30b-a3b", "qwen3-32b",
          "gpt-oss-20b", "gpt-oss-120b", "deepseek-v3", "llama-4-scout", "qwen3-next-80b-a3b", "gptj-6b",
          "nemotron-h-56b", "llama-3.2-1b"]
HARDWARE = ["h100-sxm", "h200-sxm", "b200", "gb200", "a100-sxm", "h20", "mi300x", "l40s"]
ENGINES = [None, "vllm", "sglang", "trtllm"]
SCALES = (1.25, 1.6, 2.0)
TOL = 1e-9


def scaled(hw, bandwidth: float = 1.0, compute: float = 1.0):
    """A copy of an accelerator spec with its memory/link bandwidths and peak compute multiplied."""
    memory = {k: lvl.model_copy(update={"bandwidth": lvl.bandwidth.model_copy(
        update={"value": lvl.bandwidth.value * bandwidth})}) if lvl.bandwidth is not None else lvl
        for k, lvl in hw.memory.items()}
    peaks = {k: f.model_copy(update={"value": f.value * compute}) for k, f in hw.compute.items()}
    update = {"memory": memory, "compute": peaks}
    if hw.scale_up is not None and getattr(hw.scale_up, "bandwidth", None) is not None:
        bw = hw.scale_up.bandwidth
        update["scale_up"] = hw.scale_up.model_copy(update={"bandwidth": bw.model_copy(
            update={"value": bw.value * bandwidth})})
    return hw.model_copy(update=update)


def falls(t: np.ndarray, axis: int) -> np.ndarray:
    """Mask of points where t drops below its predecessor along ``axis`` (relative tolerance TOL)."""
    t = np.moveaxis(t, axis, 0)
    return np.moveaxis(np.concatenate([np.zeros_like(t[:1], bool), t[1:] < t[:-1] * (1 - TOL)]), 0, axis)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import perfmodel as pm
    from perfmodel.errors import PerfmodelError

    rng = np.random.default_rng(args.seed)
    hw_specs = {h: pm.load_hardware(h) for h in HARDWARE}
    counts = {"configurations": 0, "not fitting": 0, "grid": 0, "bandwidth": 0, "compute": 0,
              "redrawn": 0}
    examples: list[str] = []
    t0 = time.perf_counter()
    done = 0
    while done < args.draws:
        model, hw = str(rng.choice(MODELS)), str(rng.choice(HARDWARE))
        tp = int(rng.choice([1, 2, 4, 8]))
        formats = [p for p in ("bf16", "fp8", "fp4") if p in hw_specs[hw].compute or p == "bf16"]
        weights = str(rng.choice(formats))
        engine = ENGINES[int(rng.integers(len(ENGINES)))]
        grid = {"batch": np.unique(rng.integers(1, 257, 8)).astype(float)[:, None, None],
                "isl": np.unique(rng.integers(16, 8193, 6)).astype(float)[None, :, None],
                "osl": np.unique(rng.integers(2, 2049, 6)).astype(float)[None, None, :]}
        kw = dict(tp=tp, weights=weights, engine=engine, **grid)
        try:
            base = pm.predict(model, hw_specs[hw], **kw)
        except PerfmodelError:
            counts["redrawn"] += 1
            continue
        label = f"{model} {hw} tp{tp} {weights} engine={engine}"
        times = {"ttft": np.asarray(base.ttft_s, float), "tpot": np.asarray(base.tpot_s, float)}
        counts["configurations"] += times["ttft"].size
        counts["not fitting"] += int(np.size(base.fits) - np.count_nonzero(base.fits))
        for name, t in times.items():
            if not np.all(np.isfinite(t)) or np.any(t <= 0):
                examples.append(f"{label}: non-finite or non-positive {name}")
            for axis, dim in enumerate(("batch", "isl", "osl")):
                bad = falls(t, axis)
                if bad.any():
                    counts["grid"] += int(bad.sum())
                    i = tuple(int(x) for x in np.argwhere(bad)[0])
                    j = tuple(x - 1 if a == axis else x for a, x in enumerate(i))
                    at = {d: float(np.ravel(grid[d])[i[a]]) for a, d in enumerate(("batch", "isl", "osl"))}
                    examples.append(f"{label}: {name} falls as {dim} grows to {at}: {t[j]:.6g} -> {t[i]:.6g} s "
                                    f"(from {dim} {float(np.ravel(grid[dim])[j[axis]]):g})")
        for kind in ("bandwidth", "compute"):
            prev = times
            for f in SCALES:
                p = pm.predict(model, scaled(hw_specs[hw], **{kind: f}), **kw)
                now = {"ttft": np.asarray(p.ttft_s, float), "tpot": np.asarray(p.tpot_s, float)}
                for name in now:
                    bad = now[name] > prev[name] * (1 + TOL)
                    if bad.any():
                        counts[kind] += int(bad.sum())
                        examples.append(f"{label}: {name} rises when {kind} x{f}")
                prev = now
        done += 1
    elapsed = time.perf_counter() - t0
    print(f"{args.draws} draws ({counts['redrawn']} invalid layouts redrawn), "
          f"{counts['configurations']:,} configurations ({counts['not fitting']:,} not fitting), "
          f"each also under {len(SCALES)} bandwidth and {len(SCALES)} compute scalings; {elapsed:.0f} s")
    print(f"violations: grid axes {counts['grid']}, bandwidth {counts['bandwidth']}, "
          f"compute {counts['compute']}")
    for line in examples[:20]:
        print("  " + line)
    return 1 if examples else 0


if __name__ == "__main__":
    sys.exit(main())
