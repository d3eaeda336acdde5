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
        frames.append(df)
    frames += _split_rows(sc)
    return pd.concat(frames, ignore_index=True)


def _split_rows(sc: DemoScenario) -> list[pd.DataFrame]:
    try:
        from .deployment import demo_split_frame  # provided by the placement package
    except ImportError:
        return []
    return [demo_split_frame(sc)]


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """The columns the demo prints, in readable units."""
    out = pd.DataFrame({
        "deployment": df["deployment"], "batch": df["batch"].astype(int),
        "TTFT [ms]": df["ttft_s"] * 1e3, "TPOT [ms]": df["tpot_s"] * 1e3,
        "tok/s/user": df["per_user_tokens_per_s"], "tok/s (system)": df["decode_tokens_per_s"],
        "tok/s/device": df["decode_tokens_per_s"] / df["devices"], "fits": df["fits"],
        "decode bound": df["decode_bound"],
    })
    return out


def write_outputs(df: pd.DataFrame, outdir: str | Path) -> list[Path]:
    """Write the table (CSV) and the plots (PNG) into ``outdir``; return the paths written."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "comparison.csv"]
    df.to_csv(paths[0], index=False)
    try:
        from .plots import demo_figures
    except ImportError:
        return paths
    for name, fig in demo_figures(df).items():
        path = out / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        paths.append(path)
    return paths
