"""The low-load TTFT the step model misses, by layout and model size (diagnosis for issue 19).

Usage::

    python scripts/ttft_lowload.py --max-c 8 --out parts.csv
    python scripts/ttft_floor_layout.py parts.csv

Reads the rows and parts written by ``scripts/ttft_lowload.py`` (in sample, shipped engine fit) and prints
the median ``need`` [ms] (measured TTFT less prefill compute, per-kernel times and late first-token steps:
the request-path time the measurement asks for) of the DeepSeek rows at ISL 1024 by expert parallelism,
weight format, speculation, accelerator and engine version, and per engine the in-sample median TTFT
error of three forms fitted on the low-load rows (rows of the aic gap-analysis source left out):

* ``RO``: one request overhead R per engine (the shipped form);
* ``RO + b X``: plus b [s] per routed expert and MoE layer, once per request;
* ``max(T, h X)``: a prompt step lasting at least h X (a host floor, hidden when the device is longer).

X = routed experts × MoE layers (:func:`perfmodel.engine.step.expert_layers` of branch h_D2's history).
In-sample only: the held-out test of the floor (TensorRT-LLM worse) is in the commit history.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from perfmodel.modelspec.registry import load_model
from perfmodel.validation.data import shipped_path

#: Model names of the rows whose spec file is named differently.
ALIAS = {"kimi-k2.5": "kimi-k2"}


def expert_layers(name: str) -> float:
    """Routed experts × MoE layers of a model (0 for a dense one)."""
    spec = load_model(ALIAS.get(name, name))
    if spec.moe is None:
        return 0.0
    return float(spec.moe.num_experts * sum(g.count for g in spec.layer_groups if g.ffn == "moe"))


def fit(x: pd.DataFrame, form: str) -> tuple[float, float, float]:
    """(median |error|, R [ms], b or h [us]) of the best grid point of ``form`` on rows ``x``."""
    pdev = (x["core"] + x["pkern"]).to_numpy()
    base = (x["FTS"] + x["wave"]).to_numpy()
    meas, xl = x["meas"].to_numpy(), x["X"].to_numpy() / 1e3
    best = (np.inf, 0.0, 0.0)
    for b in ([0.0] if form == "RO" else np.arange(0.0, 20.0, 0.25)):
        step = pdev + b * xl if form == "add" else np.maximum(pdev, b * xl)
        for r in np.arange(1.0, 300.0, 1.0):
            e = float(np.median(np.abs(meas / (r + base + step) - 1.0)))
            if e < best[0]:
                best = (e, r, b)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", help="CSV written by `python scripts/ttft_lowload.py --max-c 8 --out parts.csv`")
    d = pd.read_csv(ap.parse_args().parts)
    source = pd.read_csv(shipped_path("serving")).set_index("id")["silicon_data_source"]
    d = d[~d["id"].map(source).str.contains("aic-auto-gap", na=False)].copy()
    d["X"] = d["model"].map({m: expert_layers(m) for m in d["model"].unique()})
    pd.set_option("display.width", 200)
    ds = d[d["model"].str.contains("deepseek") & (d["isl"] == 1024)].assign(ep_gt_1=lambda f: f["ep"] > 1)
    for by in ("ep_gt_1", "weights", "spec_decode", "hardware", "backend_version"):
        g = ds.groupby(["backend", by], dropna=False)["need"].agg(["size", "median"]).round(1)
        print(g.to_string(), "\n")
    print("X = routed experts x MoE layers:", d.groupby("model")["X"].first().astype(int).to_dict(), "\n")
    for backend, x in d.groupby("backend"):
        line = [f"{backend:<7} n={len(x):3d}"]
        for form in ("RO", "add", "max"):
            e, r, b = fit(x, form)
            line.append(f"{form}: {100 * e:5.1f} % (R {r:.0f} ms, {b:.2f} us)")
        print("  ".join(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
