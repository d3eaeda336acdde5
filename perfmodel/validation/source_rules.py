"""What a measured row's public source documents about the run but the row's columns do not.

Rows of ``serving_measured.csv`` whose ``silicon_data_source`` starts ``source_file=2026-03-25.csv`` or
``source_file=2026-04-06.csv`` are runs of SemiAnalysis InferenceX (github.com/SemiAnalysisAI/InferenceX):
their ``image`` fields spell the images as its ``nvidia-master.yaml`` configs do
(``nvcr.io#nvidia/tensorrt-llm/release:…``), and their ``measured`` times are the commit times of the
InferenceX commits whose ``perf-changelog.yaml`` entries triggered the sweeps (2026-02-05T19:55:05Z:
commit 5d517074c, 11:55:01 −0800; 2026-01-14T22:26:21Z: bf3456727; 2026-03-25T16:34:14Z: 12ba0ae07).
InferenceX configs say whether a point ran speculative decoding (``spec-decoding: mtp``) and the launch
scripts set its depth; the CSV records neither. :data:`SPEC_RULES` read the depth from there by rule
(image, measurement date, system, engine, format, layout and concurrency; never from the measured
times), and :data:`LAYOUT_RULES` name rows whose recorded layout is not the one that ran. Citations
and the rows each rule covers: ``perfmodel/data/validation/README.md``.

A rule fills ``spec_decode`` only where the row's own ``spec_decode`` cell is empty.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

#: ``silicon_data_source`` prefixes of the InferenceX dumps in ``serving_measured.csv``.
INFERENCEX_FILES = ("source_file=2026-03-25.csv", "source_file=2026-04-06.csv")


@dataclass(frozen=True)
class SpecRule:
    """Speculative decoding one InferenceX sweep ran, by image, date, system, engine and format.

    Attributes
    ----------
    name : str
        Rule id (reported in ``spec_decode_rule``).
    backend, image, measured, systems, precision : str, str, str, tuple[str, ...], str
        The row's engine, a regex searched in its ``image=`` field, the date its ``measured=`` field
        starts with ('' for any), its ``system`` values and ``precision`` ('' for any).
    k, k_attention_dp : int
        MTP depth (draft tokens per step) without and with attention DP (the launch script's rule).
    mtp_world : int
        World size (``tp_size`` × ``attention_dp_size``) the MTP config ran; 0 = any.
    plain_max_concurrency : tuple[tuple[int, int, int], ...]
        (ISL, OSL, C_max) of the same sweep's non-speculative config at world size ``mtp_world``:
        a row at C ≤ C_max could be either run (flagged ambiguous, not predicted with MTP).
    source : str
        Repository, commit and files that show it.
    """

    name: str
    backend: str
    image: str
    measured: str
    systems: tuple[str, ...]
    precision: str
    k: int
    k_attention_dp: int
    mtp_world: int
    plain_max_concurrency: tuple[tuple[int, int, int], ...]
    source: str


_IX = "SemiAnalysisAI/InferenceX"
SPEC_RULES: tuple[SpecRule, ...] = (
    SpecRule("inferencex-trtllm-1.2.0rc6.post3", "trtllm", r"tensorrt-llm/release:1\.2\.0rc6\.post3$", "",
             ("b200_sxm",), "", 3, 1, 0, (),
             f"{_IX} 5d517074c (2026-02-05) and 0aae52d4c (2026-02-06): the image is set only in "
             "dsr1-fp8-b200-trt-mtp and dsr1-fp4-b200-trt-mtp (.github/configs/nvidia-master.yaml, until "
             "e43ae2f1b/0d8d1f93d of 2026-05-18); benchmarks/dsr1_fp{8,4}_b200_trt_mtp.sh: "
             "num_nextn_predict_layers MTP=3, MTP=1 with DP_ATTENTION"),
    SpecRule("inferencex-trtllm-mtp-2026-01-14", "trtllm", r"tensorrt-llm/release:1\.1\.0rc2\.post2$",
             "2026-01-14", ("b200_sxm", "h200_sxm"), "", 3, 1, 0, (),
             f"{_IX} bf3456727 (2026-01-14T22:26:18Z, 'Add MTP Benchmark Support for DeepSeek-R1 TRT'): "
             "perf-changelog.yaml config-keys dsr1-fp4-b200-trt-mtp, dsr1-fp8-b200-trt-mtp, "
             "dsr1-fp8-h200-trt-mtp only; benchmarks/dsr1_*_trt_mtp_slurm.sh: MTP=3, MTP=1 with DP_ATTENTION"),
    SpecRule("inferencex-sglang-b200-fp8-2026-03-25", "sglang", r"sglang:v0\.5\.9-cu130$", "2026-03-25",
             ("b200_sxm",), "fp8", 2, 2, 8, ((1024, 1024, 64), (1024, 8192, 64), (8192, 1024, 4)),
             f"{_IX} 12ba0ae07 (2026-03-25T16:34:10Z): perf-changelog.yaml config-keys dsr1-fp8-b200-sglang "
             "(TP8 C 4-64; 8192/1024 TP8 C 4, TP4 C 4-32) and dsr1-fp8-b200-sglang-mtp (TP8 C 4-512); "
             "benchmarks/single_node/dsr1_fp8_b200_mtp.sh: --speculative-algorithm EAGLE, num-steps 2, "
             "topk 1, 3 draft tokens (a chain of k = 2)"),
)

#: Reason prefix of a row whose source ran its point both with and without speculation.
AMBIGUOUS = "spec_decode_ambiguous"
#: Reason prefix of a P/D run recorded as aggregated.
DISAGG_AS_AGG = "disagg_recorded_as_agg"

#: (rule, reason) of rows whose recorded layout is not the one that ran.
LAYOUT_RULES = (
    ("inferencex-gb200-agg",
     f"{DISAGG_AS_AGG}: InferenceX ran DeepSeek-R1 on GB200 only as Dynamo P/D deployments "
     f"({_IX} a2f2a544c runners/launch_gb200-nv.sh: submit_disagg.sh, MTP on or off); tp_size is the "
     "total GPU count (4 per context node + generation TP x workers); pools and MTP not recorded"),
)


def _field(source: str, key: str) -> str:
    m = re.search(rf"(?:^|;)\s*{key}=([^;]*)", source)
    return m.group(1).strip() if m else ""


def _is_inferencex(row: dict) -> bool:
    return str(row.get("silicon_data_source") or "").startswith(INFERENCEX_FILES)


def _matches(rule: SpecRule, row: dict) -> bool:
    source = str(row.get("silicon_data_source") or "")
    return (_is_inferencex(row) and row.get("backend") == rule.backend and row.get("mode", "agg") == "agg"
            and row.get("system") in rule.systems
            and (not rule.precision or str(row.get("precision")) == rule.precision)
            and re.search(rule.image, _field(source, "image")) is not None
            and _field(source, "measured").startswith(rule.measured))


def documented_spec(row: dict) -> tuple[str, str, str]:
    """(``spec_decode`` spelling, rule name, flag reason) a source rule gives one CSV row.

    The spelling is '' where no rule applies or the row is ambiguous; the flag reason is '' unless
    the source ran the row's point both with and without speculation (:data:`AMBIGUOUS`).
    """
    from .rows import _degree  # rows imports this module

    for rule in SPEC_RULES:
        if not _matches(rule, row):
            continue
        dp = _degree(row.get("attention_dp_size"))
        world = _degree(row.get("tp_size")) * dp
        if rule.mtp_world and world != rule.mtp_world:
            return "", "", ""   # only the non-speculative config ran this world size
        conc = _degree(row.get("batch_size")) * dp
        isl, osl = _degree(row.get("isl")), _degree(row.get("osl"))
        for i, o, c_max in rule.plain_max_concurrency:
            if (isl, osl) == (i, o) and conc <= c_max:
                return "", rule.name, (f"{AMBIGUOUS}: the source ran this point with and without MTP "
                                       f"under one image and commit ({rule.source}); the row does not say which")
        k = rule.k_attention_dp if dp > 1 else rule.k
        return f"mtp:k={k}", rule.name, ""
    return "", "", ""


def layout_flag(row: dict) -> str:
    """Reason the row's recorded layout is not the one that ran ('' when none is known)."""
    if _is_inferencex(row) and row.get("system") == "gb200" and (row.get("mode") or "agg") == "agg":
        return LAYOUT_RULES[0][1]
    return ""


def apply_source_rules(row: dict) -> tuple[dict, dict]:
    """The row with a rule's ``spec_decode`` filled in where its own cell is empty, and the fields
    ``spec_decode_rule`` (rule name or '') and ``source_flag`` (reason or '') for the mapped row."""
    own = row.get("spec_decode")
    if own is not None and not (isinstance(own, float) and math.isnan(own)) and str(own).strip():
        return row, {"spec_decode_rule": "column", "source_flag": layout_flag(row)}
    spelling, name, flag = documented_spec(row)
    flags = "; ".join(f for f in (flag, layout_flag(row)) if f)
    if spelling:
        row = {**row, "spec_decode": spelling}
    return row, {"spec_decode_rule": name if spelling else "", "source_flag": flags}
