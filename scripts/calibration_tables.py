"""Print the fitted values and per-op errors of the shipped efficiency profiles as Markdown.

docs/calibration.md quotes these tables between ``<!-- generated-md: calibration-NAME -->`` markers;
``scripts/gen_doc_blocks.py`` refreshes them from ``perfmodel/data/calibration/*.yaml`` (written by
``python -m perfmodel.calibration.fit_ops``), so the page cannot drift from the profiles.

    python scripts/calibration_tables.py {scalars,op-params,errors-calibrated,errors-plain,errors-datasheet}
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ["h100-sxm", "h200-sxm", "b200", "gb200"]
#: op_params keys that are times [s], shown in µs
SECONDS = {"kernel_overhead", "kernel_overhead_fp8", "unit_cost", "unit_cost_group", "unit_cost_group_fp8",
           "split_cost", "expert_overhead", "alpha"}
#: rows of the error tables: (label, table kind, form key)
ERROR_ROWS = [("gemm", "gemm", None), ("attention_decode (kernel-level form)", "attention_decode", None),
              ("attention_decode (fallback form, no kernel terms)", "attention_decode", "nokernel"),
              ("mla_decode", "mla_decode", None), ("attention_prefill", "attention_prefill", None),
              ("mla_prefill", "mla_prefill", None), ("custom_allreduce", "custom_allreduce", None),
              ("nccl", "nccl", None), ("moe", "moe", None)]


def load() -> dict[str, dict]:
    """Profile documents by accelerator id."""
    folder = ROOT / "perfmodel" / "data" / "calibration"
    return {p: yaml.safe_load((folder / f"{p}.yaml").read_text(encoding="utf-8")) for p in PROFILES}


def fmt(value, seconds: bool = False) -> str:
    """Three significant figures; times in µs; '–' where a profile has no value."""
    if value is None:
        return "–"
    return f"{value * 1e6:.3g}" if seconds else f"{value:.3g}"


def scalars(docs: dict[str, dict]) -> str:
    params = {p: d["parameters"] for p, d in docs.items()}
    rows = [(f"`gemm_compute.{k}`", lambda q, k=k: q["gemm_compute"].get(k), False)
            for k in ("bf16", "fp8", "fp8_block", "fp4")]
    rows += [("`gemm_m_half [tokens]`", lambda q: q["gemm_m_half"], False),
             ("`memory (η_m)`", lambda q: q["memory"], False),
             ("`kernel_overhead [µs]`", lambda q: q["kernel_overhead"], True),
             ("`attention_compute`", lambda q: q["attention_compute"], False),
             ("`attention_memory`", lambda q: q["attention_memory"], False),
             ("`collective_alpha [µs]`", lambda q: q["collective_alpha"], True),
             ("`collective_bandwidth`", lambda q: q["collective_bandwidth"], False),
             ("`step_overhead`", lambda q: q["step_overhead"], False)]
    out = ["| parameter | " + " | ".join(PROFILES) + " |", "|---" * (len(PROFILES) + 1) + "|"]
    out += [f"| {label} | " + " | ".join(fmt(get(params[p]), sec) for p in PROFILES) + " |"
            for label, get, sec in rows]
    return "\n".join(out)


def op_params(docs: dict[str, dict]) -> str:
    ops = {p: d["parameters"]["op_params"] for p, d in docs.items()}
    families = sorted({f for o in ops.values() for f in o})
    lines = []
    for fam in families:
        keys = list(dict.fromkeys(k for p in PROFILES for k in ops[p].get(fam, {})))
        parts = []
        for k in keys:
            sec = k in SECONDS
            vals = " / ".join(fmt(ops[p].get(fam, {}).get(k), sec) for p in PROFILES)
            parts.append(f"{k} {vals}" + (" µs" if sec else ""))
        lines.append(f"**`{fam}`**: " + "; ".join(parts))
    return "\n\n".join(lines)


def errors(docs: dict[str, dict], form: str) -> str:
    head = "| table | " + " | ".join(f"{p} train | {p} test" for p in PROFILES) + " |"
    out = [head, "|---" * (2 * len(PROFILES) + 1) + "|"]
    for label, kind, alt in ERROR_ROWS:
        if alt is not None and form != "calibrated":
            continue
        cells = []
        for p in PROFILES:
            entry = docs[p]["provenance"]["errors_pct"].get(kind, {}).get(alt or form)
            for split in ("train", "test"):
                s = entry[split] if entry else None
                cells.append("–" if not s else f"{s['median_abs_pct_error']:.1f} / {s['p90_abs_pct_error']:.1f}")
        out.append(f"| {label if form == 'calibrated' else kind} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    tables = {"scalars": scalars, "op-params": op_params,
              "errors-calibrated": lambda d: errors(d, "calibrated"),
              "errors-plain": lambda d: errors(d, "plain"), "errors-datasheet": lambda d: errors(d, "datasheet")}
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", choices=sorted(tables), help="which table to print")
    args = ap.parse_args(argv)
    print(tables[args.table](load()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
