"""The built-in scenario of ``perfmodel demo``: the reference article's comparison.

One model served three ways — an 8-GPU HGX node, an 8-GPU slice of a GB200 NVL72 rack, and (when the
placement package is available) a GPU/LPU attention–FFN split — at a few batch sizes. Every
assumption is a named constant here and printed with the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .core.predict import predict


@dataclass(frozen=True)
class DemoScenario:
    """Inputs of the demo (all visible in its output)."""

    model: str = "llama-3.1-70b"
    weights: str = "fp8"
    kv_cache: str = "fp8"
    isl: int = 2048
    osl: int = 256
    batches: tuple[int, ...] = (1, 8, 32, 128)
    configs: tuple[tuple[str, str, int], ...] = field(default=(
        ("8-GPU node (HGX H100)", "h100-sxm", 8),
        ("8-GPU node (HGX H200)", "h200-sxm", 8),
        ("GB200 NVL72 slice (8 GPUs)", "gb200", 8),
    ))


def run_demo(scenario: DemoScenario | None = None) -> pd.DataFrame:
    """Predict every configuration of the scenario; one row per (configuration, batch)."""
    sc = scenario or DemoScenario()
    frames = []
    for label, hardware, tp in sc.configs:
        p = predict(sc.model, hardware, tp=tp, isl=sc.isl, osl=sc.osl, batch=list(sc.batches),
                    weights=sc.weights, kv_cache=sc.kv_cache)
        df = p.to_dataframe()
        df.insert(0, "deployment", label)
        df["gpus"] = df["devices"]  # every configuration here is GPUs only
        frames.append(df)
    frames += _split_rows(sc)
    return pd.concat(frames, ignore_index=True)


#: The GPU/LPU split of the demo: attention on 8 Rubin GPUs, FFN on LP30 LPUs. Rubin publishes only an
#: NVFP4 peak and no GPU<->LPU link figures are published: every such number below is an assumption,
#: printed by ``perfmodel demo`` and sensitivity-tested in docs/placement.md.
SPLIT_ASSUMPTIONS = {
    "rubin fp8 / bf16 dense peak": "25 / 12.5 PFLOP/s (assumed: NVFP4 50 PF / 2 and / 4)",
    "gpu<->lpu link": "200 GB/s per direction per GPU, alpha 5 us per message (assumed)",
    "lp30 count": "enough SRAM for the FFN weights at the weight format, plus 10 % reserve",
}


def split_deployment(sc: DemoScenario) -> dict:
    """The demo's GPU/LPU attention–FFN split as a deployment mapping."""
    from .deployment import min_devices_for_weights

    lpus = int(min_devices_for_weights(sc.model, "groq-lp30", sc.weights, part="ffn", reserve=0.10))
    return {
        "schema_version": 1, "kind": "deployment", "name": f"8 Rubin + {lpus} LP30 split",
        "model": sc.model, "precision": {"weights": sc.weights, "kv_cache": sc.kv_cache},
        "pools": {
            "gpu": {"hardware": "rubin", "count": 8, "tp": 8,
                    "assumed_compute": {"fp8": "25 PFLOP/s", "bf16": "12.5 PFLOP/s"}},
            "lpu": {"hardware": "groq-lp30", "count": lpus, "reserve": 0.10, "efficiency": "datasheet",
                    "collective_alpha": "3 us"},
        },
        "placement": {"prefill": "gpu", "decode_attention": "gpu", "decode_ffn": "lpu"},
        "links": {"gpu-lpu": {"bandwidth": "200 GB/s", "alpha": "5 us"}},
    }


def _split_rows(sc: DemoScenario) -> list[pd.DataFrame]:
    from .deployment import load_deployment, predict_deployment
    from .hardware import load_accelerator

    dep = load_deployment(split_deployment(sc))
    df = predict_deployment(dep, isl=sc.isl, osl=sc.osl, batch=list(sc.batches)).to_dataframe()
    df.insert(0, "deployment", f"GPU/LPU split ({dep.name})")
    # GPUs are the HBM pools; the SRAM LPUs are counted in `devices` only
    df["gpus"] = sum(p.count for p in dep.pools.values() if load_accelerator(p.hardware).main_memory == "hbm")
    return [df]


#: Columns the demo prints, named as in comparison.csv and every other result table (SI units).
SUMMARY_COLUMNS = ("deployment", "batch", "ttft_s", "tpot_s", "per_user_tokens_per_s", "decode_tokens_per_s",
                   "decode_tokens_per_s_per_device", "decode_tokens_per_s_per_gpu", "fits", "decode_bound")

#: What the printed rates are: the decode-only rates and the static batch's output rate differ (the
#: latter includes the prefill), so they carry different names.
RATES_NOTE = ("per_user_tokens_per_s = 1/TPOT; decode_tokens_per_s = batch/TPOT (decode only), "
              "decode_tokens_per_s_per_device = that / every chip of the deployment, _per_gpu = that / its GPUs "
              "(the Pareto figure's axis; they differ for the GPU/LPU split alone); comparison.csv's "
              "output_tokens_per_s = batch x OSL / E2E (prefill included) and output_tokens_per_s_per_device = that / devices")


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """The columns the demo prints (:data:`SUMMARY_COLUMNS`), one row per (configuration, batch)."""
    out = df.assign(batch=df["batch"].astype(int),
                    decode_tokens_per_s_per_device=df["decode_tokens_per_s"] / df["devices"],
                    decode_tokens_per_s_per_gpu=df["decode_tokens_per_s"] / df["gpus"])
    return out[list(SUMMARY_COLUMNS)]


def write_outputs(df: pd.DataFrame, outdir: str | Path) -> list[Path]:
    """Write the table (CSV) and the plots (PNG) into ``outdir``; return the paths written."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "comparison.csv"]
    df.to_csv(paths[0], index=False)
    from .plots import demo_figures

    for name, fig in demo_figures(df).items():
        path = out / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        paths.append(path)
    return paths
