"""Recover the pool layouts of the InferenceX disaggregated rows of ``serving_measured.csv``.

Usage::

    python scripts/disagg_workers_table.py --inferencex PATH_TO_InferenceX_GIT [--out CSV]

700 ``disagg`` rows (``source_file=2026-03-25.csv`` / ``2026-04-06.csv`` in ``silicon_data_source``) are
SemiAnalysis InferenceX runs whose export kept only the GPUs per worker of each pool (as ``*_tp_size``),
the prefill pool's expert-parallel degree (copied to both pools) and the total concurrency, not the
worker counts, the attention-DP flag or the batch sizes. InferenceX launched each run from a search-space
entry of its ``.github/configs/nvidia-master.yaml`` (``prefill``/``decode``: ``num-worker``, ``tp``,
``ep``, ``dp-attn``, per ``conc-list``). Rule, per row:

1. config version: the newest commit of that file on ``main`` at or before the row's ``measured=`` time
   (a date without a time means the end of that day); if it has no matching entry, the next older one;
2. entry: same model prefix, precision, system, framework (``dynamo-trt``/``dynamo-sglang``), ISL, OSL,
   the row's concurrency in ``conc-list``, the container image when the row records one, prefill
   ``tp`` = recorded ``prefill_tp_size``, prefill ``ep`` = recorded ``prefill_moe_ep_size`` and decode
   ``tp`` = recorded ``decode_tp_size``;
3. filled only when every matching entry gives the same layout, and not when an entry says
   ``tp: 1`` with ``dp-attn: true`` (that older form keeps the GPU count in the recipe file).

A pool with ``dp-attn`` runs attention DP over its ``tp`` GPUs (``tp_size`` 1, ``attention_dp_size`` =
tp); the MoE layers run ``moe_ep_size`` = ep and ``moe_tp_size`` = tp / ep (the convention of the rows
that record their layout). ``decode_batch_size`` = concurrency / (decode workers × attention-DP ranks);
``prefill_batch_size`` = 1. ``spec_decode`` is ``mtp:k=K`` when every matching entry runs MTP with K
draft tokens named in its recipe file (``..._mtp3.yaml``), ``off`` when none speculates, else empty (not
known). Rows that cannot be filled keep a ``status`` and ``reason``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "perfmodel" / "data" / "validation"
CONFIG = ".github/configs/nvidia-master.yaml"
REPO = "SemiAnalysisAI/InferenceX"
MODEL_PREFIX = {"deepseek-ai/DeepSeek-R1": "dsr1", "zhipuai/GLM-5": "glm5", "moonshotai/Kimi-K2.5": "kimik2.5",
                "openai/gpt-oss-120b": "gptoss"}
SYSTEM = {"b200_sxm": "b200", "gb200": "gb200", "h100_sxm": "h100", "h200_sxm": "h200"}
FRAMEWORK = {"trtllm": "dynamo-trt", "sglang": "dynamo-sglang"}
POOL_FIELDS = ("num_workers", "batch_size", "tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
COLUMNS = ("id", "status", "reason", *[f"{p}_{f}" for p in ("prefill", "decode") for f in POOL_FIELDS],
           "spec_decode", "spec_decoding", "config_key", "recipe", "source_commit", "source_path")
#: Draft tokens per step in a TensorRT-LLM recipe name: ``..._eplb0_mtp3.yaml``, ``..._mtp3_256.yaml``.
RECIPE_MTP = re.compile(r"_mtp(\d+)(?:_\d+)?\.yaml")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def config_versions(repo: Path, before: dt.datetime) -> list[dict]:
    """``main`` versions of the config committed before ``before``: commit, UTC time and disagg entries
    (one per concurrency). A version that does not parse is reported and left out."""
    out = []
    log = _git(repo, "log", "--first-parent", "--format=%H %cI", f"--before={before.isoformat()}", "main", "--", CONFIG)
    for line in log.splitlines():
        commit, when = line.split()
        try:
            doc = yaml.load(_git(repo, "show", f"{commit}:{CONFIG}"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            print(f"{commit}: {CONFIG} does not parse ({exc.__class__.__name__}); version left out", file=sys.stderr)
            continue
        entries = []
        for key, spec in (doc or {}).items():
            if not isinstance(spec, dict) or not spec.get("disagg"):
                continue
            for seq in spec.get("seq-len-configs") or []:
                for space in seq.get("search-space") or []:
                    pre, dec = space.get("prefill") or {}, space.get("decode") or {}
                    for conc in space.get("conc-list") or []:
                        entries.append({
                            "key": key, "image": str(spec.get("image", "")), "precision": spec.get("precision"),
                            "framework": spec.get("framework"), "isl": seq.get("isl"), "osl": seq.get("osl"),
                            "conc": conc, "spec": str(space.get("spec-decoding", "none")),
                            "recipe": ";".join(map(str, pre.get("additional-settings") or [])),
                            "layout": (pre.get("num-worker"), pre.get("tp"), pre.get("ep"), bool(pre.get("dp-attn")),
                                       dec.get("num-worker"), dec.get("tp"), dec.get("ep"), bool(dec.get("dp-attn")))})
        out.append({"commit": commit, "time": dt.datetime.fromisoformat(when).astimezone(dt.timezone.utc),
                    "entries": entries})
    return sorted(out, key=lambda v: v["time"])


def _field(source: str, name: str) -> str | None:
    m = re.search(rf"{name}=([^;]+)", source)
    return m.group(1).strip() if m else None


def measured_time(source: str) -> dt.datetime:
    """``measured=`` of a provenance string as UTC; a bare date (``T00:00:00.000Z``) is its day's end."""
    text = _field(source, "measured")
    when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when + dt.timedelta(days=1) if text.endswith("T00:00:00.000Z") else when


def _image(text: str | None) -> str:
    return (text or "").replace("#", "/")   # enroot writes registry#image


def _number(x: float) -> int | float:
    """An integral value as int (``6``, not ``6.0``), else rounded to 6 decimals."""
    return int(x) if float(x).is_integer() else round(x, 6)


def spec_decode(hits: list[dict]) -> str:
    """``spec_decode`` cell of a filled row: ``mtp:k=K`` when every matching entry runs MTP and its recipe
    names the same K >= 1, ``off`` when none runs speculative decoding, '' (not known) otherwise."""
    specs = {e["spec"] for e in hits}
    if specs == {"none"}:
        return "off"
    ks = {m.group(1) if (m := RECIPE_MTP.search(e["recipe"])) else None for e in hits}
    if specs == {"mtp"} and len(ks) == 1 and None not in ks and int(next(iter(ks))) >= 1:
        return f"mtp:k={int(next(iter(ks)))}"
    return ""


def pool_columns(prefix: str, workers: int, tp: int, ep: int, dp_attn: bool) -> dict:
    """Schema columns of one pool from InferenceX's (num-worker, tp, ep, dp-attn)."""
    return {f"{prefix}_num_workers": workers, f"{prefix}_tp_size": 1 if dp_attn else tp,
            f"{prefix}_attention_dp_size": tp if dp_attn else 1, f"{prefix}_moe_tp_size": tp // ep,
            f"{prefix}_moe_ep_size": ep}


def resolve(row: dict, versions: list[dict]) -> dict:
    """Table row for one measured row: the filled layout with its source, or status and reason."""
    src = row["silicon_data_source"]
    model = MODEL_PREFIX.get(row["model_path"])
    conc = int(_field(src, "silicon_concurrency"))
    key = (model, row["precision"], SYSTEM[row["system"]], FRAMEWORK[row["backend"]], int(row["isl"]), int(row["osl"]),
           conc)
    image = _field(src, "image")
    recorded = (int(row["prefill_tp_size"]), int(row["prefill_moe_ep_size"]), int(row["decode_tp_size"]))
    out = {"id": row["id"]}
    when = measured_time(src)
    for version in reversed([v for v in versions if v["time"] <= when]):
        hits = [e for e in version["entries"]
                if (e["key"].split("-")[0], e["precision"], e["key"].split("-")[2], e["framework"], e["isl"],
                    e["osl"], e["conc"]) == key
                and (image is None or _image(e["image"]) == _image(image))
                and (e["layout"][1], e["layout"][2], e["layout"][5]) == recorded]
        if not hits:
            continue
        layouts = {e["layout"] for e in hits}
        base = {"source_commit": version["commit"], "source_path": CONFIG,
                "config_key": "|".join(sorted({e["key"] for e in hits})),
                "spec_decoding": "|".join(sorted({e["spec"] for e in hits}))}
        if len(layouts) > 1:
            alts = "; ".join(f"{lay[0]}P x tp{lay[1]} + {lay[4]}D x tp{lay[5]}" for lay in sorted(layouts))
            return {**out, **base, "status": "ambiguous",
                    "reason": f"{len(layouts)} config entries share this concurrency and recorded layout ({alts})"}
        lay = layouts.pop()
        if (lay[1] == 1 and lay[3]) or (lay[5] == 1 and lay[7]):
            return {**out, **base, "status": "recipe-only",
                    "reason": "config entry says tp 1 with dp-attn: the GPUs per worker are only in its recipe file"}
        ranks = lay[5] if lay[7] else 1
        return {**out, **base, "status": "filled", "reason": "",
                **pool_columns("prefill", lay[0], lay[1], lay[2], lay[3]), "prefill_batch_size": 1,
                **pool_columns("decode", lay[4], lay[5], lay[6], lay[7]),
                "decode_batch_size": _number(conc / (lay[4] * ranks)),
                "spec_decode": spec_decode(hits), "recipe": "|".join(sorted({e["recipe"] for e in hits}))}
    why = ("a work-in-progress run (wip=True) of a config that main never carried before it was measured"
           if "wip=True" in src else "no main config version before the run has an entry with this "
           "concurrency, image and recorded GPUs per worker")
    return {**out, "status": "no-config", "reason": why}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inferencex", type=Path, required=True, help="git directory of SemiAnalysisAI/InferenceX")
    ap.add_argument("--out", type=Path, default=DATA / "disagg_workers.csv")
    args = ap.parse_args(argv)
    with open(DATA / "serving_measured.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["mode"] == "disagg" and not r["prefill_num_workers"]
                and (_field(r["silicon_data_source"], "source_file") or "").startswith("2026-")]
    versions = config_versions(args.inferencex, max(measured_time(r["silicon_data_source"]) for r in rows))
    table = [resolve(r, versions) for r in rows]
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(table)
    counts: dict[str, int] = {}
    for t in table:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    print(f"{len(table)} rows from {len(versions)} config versions ({REPO} main): {counts}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
