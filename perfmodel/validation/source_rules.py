"""What a measured row's public source documents about the run but the row's columns do not.

Rows of ``serving_measured.csv`` whose ``silicon_data_source`` starts ``source_file=2026-03-25.csv`` or
``source_file=2026-04-06.csv`` are runs of SemiAnalysis InferenceX (github.com/SemiAnalysisAI/InferenceX):
their ``image`` fields spell the images as its ``nvidia-master.yaml`` configs do
(``nvcr.io#nvidia/tensorrt-llm/release:…``), and their ``measured`` times are the commit times of the
InferenceX commits whose ``perf-changelog.yaml`` entries triggered the sweeps (2026-02-05T19:55:05Z:
commit 5d517074c, 11:55:01 −0800; 2026-01-14T22:26:21Z: bf3456727; 2026-03-25T16:34:14Z: 12ba0ae07).
InferenceX configs say whether a point ran speculative decoding (``spec-decoding: mtp``) and the launch
scripts set its depth; the CSV records neither. :data:`SPEC_RULES` read the depth from there by rule
(image, measurement date, system, engine and attention DP; never from the measured times), and
:data:`LAYOUT_RULES` name rows whose recorded layout is not the one that ran. Citations, the rows each
rule covers, and the SGLang MTP sweep left without a rule (and why): ``perfmodel/data/validation/README.md``.

The same MTP launch scripts set the engine's token budget from the run's own batch:
``MAX_NUM_TOKENS = ((MTP + 1)·MAX_BATCH_SIZE + ISL + 64 + 63) / 64 · 64`` (integer division; ``--max_num_tokens``),
with ``MAX_BATCH_SIZE`` the concurrency per attention-DP rank (``CONC``, or ``CONC/TP`` with attention DP),
the ``batch_size`` the CSV records (:data:`BUDGET_SOURCE`); :func:`documented_budget` applies it to the rows
a :data:`SPEC_RULES` rule covers (the TensorRT-LLM default 8192 would let a step take eight 1k prompts,
the launch lets it take one). The plain TensorRT-LLM launches of two other models pass a fixed
``--max_num_tokens`` (:data:`FIXED_BUDGET_RULES`: Llama-3.1-70B 16384, gpt-oss-120b 20000).

A rule fills ``spec_decode`` (``max_num_batched_tokens``) only where the row's own cell is empty.

:func:`harness_lengths` gives an aggregated InferenceX row the mean prompt and output lengths its
benchmark drew (see :data:`INFERENCEX_HARNESS`); the budget rule reads the recorded ISL (the launch's own).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .cells import blank, degree, number

#: ``silicon_data_source`` prefixes of the InferenceX dumps in ``serving_measured.csv``.
INFERENCEX_FILES = ("source_file=2026-03-25.csv", "source_file=2026-04-06.csv")


@dataclass(frozen=True)
class SpecRule:
    """Speculative decoding one InferenceX sweep ran, by image, date, system, engine and format.

    Attributes
    ----------
    name : str
        Rule id (reported in ``spec_decode_rule``).
    backend, image, measured, systems : str, str, str, tuple[str, ...]
        The row's engine, a regex searched in its ``image=`` field, the date its ``measured=`` field
        starts with ('' for any) and its ``system`` values.
    k, k_attention_dp : int
        MTP depth (draft tokens per step) without and with attention DP (the launch script's rule).
    source : str
        Repository, commit and files that show it.
    """

    name: str
    backend: str
    image: str
    measured: str
    systems: tuple[str, ...]
    k: int
    k_attention_dp: int
    source: str


_IX = "SemiAnalysisAI/InferenceX"
SPEC_RULES: tuple[SpecRule, ...] = (
    SpecRule("inferencex-trtllm-1.2.0rc6.post3", "trtllm", r"tensorrt-llm/release:1\.2\.0rc6\.post3$", "",
             ("b200_sxm",), 3, 1,
             f"{_IX} 5d517074c (2026-02-05) and 0aae52d4c (2026-02-06): the image is set only in "
             "dsr1-fp8-b200-trt-mtp and dsr1-fp4-b200-trt-mtp (.github/configs/nvidia-master.yaml, until "
             "e43ae2f1b/0d8d1f93d of 2026-05-18); benchmarks/dsr1_fp{8,4}_b200_trt_mtp.sh: "
             "num_nextn_predict_layers MTP=3, MTP=1 with DP_ATTENTION"),
    SpecRule("inferencex-trtllm-mtp-2026-01-14", "trtllm", r"tensorrt-llm/release:1\.1\.0rc2\.post2$",
             "2026-01-14", ("b200_sxm", "h200_sxm"), 3, 1,
             f"{_IX} bf3456727 (2026-01-14T22:26:18Z, 'Add MTP Benchmark Support for DeepSeek-R1 TRT'): "
             "perf-changelog.yaml config-keys dsr1-fp4-b200-trt-mtp, dsr1-fp8-b200-trt-mtp, "
             "dsr1-fp8-h200-trt-mtp only; benchmarks/dsr1_*_trt_mtp_slurm.sh: MTP=3, MTP=1 with DP_ATTENTION"),
)

#: Where the MTP launch scripts of the :data:`SPEC_RULES` sweeps set ``--max_num_tokens``.
BUDGET_SOURCE = (
    f"{_IX} benchmarks/dsr1_fp4_b200_trt_mtp_slurm.sh, dsr1_fp8_b200_trt_mtp_slurm.sh, "
    "dsr1_fp8_h200_trt_mtp_slurm.sh @ bf3456727 (line 70/70/75) and dsr1_fp4_b200_trt_mtp.sh @ 5d517074c, "
    "13dd0c2a0 (line 73), dsr1_fp8_b200_trt_mtp.sh @ 5d517074c (line 92), dsr1_fp8_h200_trt_mtp.sh "
    "@ 1fc5d73cd (line 78): MAX_NUM_TOKENS=$(( ((MTP+1)*MAX_BATCH_SIZE+ISL+64+63)/64*64 )), "
    "MAX_BATCH_SIZE = CONC, or CONC/TP (fp8 B200: CONC/8 from CONC 8) with DP_ATTENTION")


def mtp_token_budget(k: int, batch_per_rank: float, isl: float) -> int:
    """``--max_num_tokens`` of an InferenceX TensorRT-LLM MTP launch [tokens]:
    ⌊((k + 1)·b + I + 127)/64⌋·64 for MTP depth k, b sequences per rank and prompt length I."""
    return ((int(k) + 1) * int(batch_per_rank) + int(isl) + 127) // 64 * 64


@dataclass(frozen=True)
class FixedBudgetRule:
    """A fixed ``--max_num_tokens`` [tokens] that InferenceX launch scripts pass for one model and engine.

    Attributes
    ----------
    name : str
        Rule id (reported in ``token_budget_rule``).
    backend, model_path, systems : str, str, tuple[str, ...]
        The row's engine, ``model_path`` and ``system`` values.
    measured_from, measured_to : str
        ISO dates bounding the row's ``measured=`` field (from inclusive, to exclusive): the span in
        which the scripts held this value.
    budget : int
        Token budget per step [tokens].
    source : str
        Repository, commits and files that show it.
    """

    name: str
    backend: str
    model_path: str
    systems: tuple[str, ...]
    measured_from: str
    measured_to: str
    budget: int
    source: str


FIXED_BUDGET_RULES: tuple[FixedBudgetRule, ...] = (
    FixedBudgetRule("inferencex-trtllm-llama70b-max-num-tokens", "trtllm", "meta-llama/Llama-3.1-70B",
                    ("b200_sxm", "h200_sxm"), "2025-09-19", "2025-10-31", 16384,
                    f"{_IX} 1b563c858 (2025-09-18, 'Update 70B TRT To use latest container and flags') to "
                    "2582bce40^ (2025-10-29, 'remove llama 70b'): benchmarks/70b_fp8_b200_trt_slurm.sh, "
                    "70b_fp4_b200_trt_slurm.sh, 70b_fp8_h200_trt_slurm.sh: trtllm-serve --max_num_tokens 16384"),
    FixedBudgetRule("inferencex-trtllm-gptoss-max-num-tokens", "trtllm", "openai/gpt-oss-120b",
                    ("b200_sxm", "h200_sxm"), "2025-09-20", "2026-02-07", 20000,
                    f"{_IX} 28e5a01ea (2025-09-19) benchmarks/gptoss_fp4_b200_trt_slurm.sh and 551d81e95 "
                    "(2025-09-15) gptoss_fp4_h200_trt_slurm.sh: --max_num_tokens 20000 (MAX_NUM_TOKENS=20000), "
                    "unchanged in gptoss_fp4_{b,h}200_trt.sh @ b0c4ed21b (2026-01-22) and 5d517074c (2026-02-05)"),
)


#: Reason prefix of a P/D run recorded as aggregated.
DISAGG_AS_AGG = "disagg_recorded_as_agg"

#: (rule, reason) of rows whose recorded layout is not the one that ran.
LAYOUT_RULES = (
    ("inferencex-gb200-agg",
     f"{DISAGG_AS_AGG}: InferenceX ran DeepSeek-R1 on GB200 only as Dynamo P/D deployments "
     f"({_IX} a2f2a544c runners/launch_gb200-nv.sh: submit_disagg.sh, MTP on or off); tp_size is the "
     "total GPU count (4 per context worker + generation TP x workers); pools and MTP not recorded"),
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
            and re.search(rule.image, _field(source, "image")) is not None
            and _field(source, "measured").startswith(rule.measured))


def documented_spec(row: dict) -> tuple[str, str]:
    """(``spec_decode`` spelling, rule name) a source rule gives one CSV row; ('', '') when none applies."""

    for rule in SPEC_RULES:
        if _matches(rule, row):
            k = rule.k_attention_dp if degree(row.get("attention_dp_size")) > 1 else rule.k
            return f"mtp:k={k}", rule.name
    return "", ""


def layout_flag(row: dict) -> str:
    """Reason the row's recorded layout is not the one that ran ('' when none is known)."""
    if _is_inferencex(row) and row.get("system") == "gb200" and (row.get("mode") or "agg") == "agg":
        return LAYOUT_RULES[0][1]
    return ""


#: The InferenceX single-node benchmark (SemiAnalysisAI/InferenceX @ 12ba0ae07289e3212840f8f59913ddee97b07f73):
#: ``.github/workflows/benchmark-tmpl.yml`` sets ``RANDOM_RANGE_RATIO: 0.8``; ``benchmarks/benchmark_lib.sh``
#: runs ``utils/bench_serving/benchmark_serving.py --dataset-name random --random-range-ratio 0.8
#: --num-prompts 10·C --max-concurrency C --request-rate inf --ignore-eos --num-warmups 2·C`` (the
#: single-node scripts, e.g. ``benchmarks/single_node/dsr1_fp4_b200.sh``, pass ``--num-prompts $((CONC * 10))``);
#: ``sample_random_requests``' ``sample_uniform`` draws each prompt and output length as
#: ``np.random.randint(int(L * ratio), L + 1)``, uniform over the integers ⌊0.8 L⌋..L, and ``--ignore-eos``
#: makes every request produce its drawn output length. (The warm-ups are awaited together before the
#: measured run, whose C first requests then start at once: one synchronised wave out of 10 rounds; the
#: engines' fitted ``sync_fraction`` is kept, as a sourced 1/10 made SGLang P/D and >128-client rows worse.)
INFERENCEX_HARNESS = {"name": "inferencex-random-0.8", "range_ratio": 0.8, "rounds": 10,
                      "source": f"{_IX} 12ba0ae07: .github/workflows/benchmark-tmpl.yml, benchmarks/benchmark_lib.sh, "
                                "utils/bench_serving/benchmark_serving.py (sample_random_requests, benchmark)"}


def uniform_mean_length(length: float, range_ratio: float) -> float:
    """Mean of a length drawn uniformly over the integers ⌊r·L⌋..L [tokens]: (⌊r·L⌋ + L) / 2.

    ``int(L * r)`` as the benchmark computes it (float product, truncated)."""
    return (int(length * range_ratio) + length) / 2.0


def harness_lengths(row: dict) -> dict:
    """What the row's benchmark harness ran, by its source: ``harness`` (name or '') and the mean prompt and
    output lengths ``isl_mean``, ``osl_mean`` [tokens] (NaN where the source does not say).

    Only aggregated InferenceX rows (the single-node harness, :data:`INFERENCEX_HARNESS`): the
    multi-node P/D launchers are not checked.
    """
    if not _is_inferencex(row) or (row.get("mode") or "agg") != "agg" or layout_flag(row):
        return {"harness": "", "isl_mean": math.nan, "osl_mean": math.nan}
    h = INFERENCEX_HARNESS
    isl, osl = float(row["isl"]), float(row["osl"])
    return {"harness": h["name"], "isl_mean": uniform_mean_length(isl, h["range_ratio"]),
            "osl_mean": uniform_mean_length(osl, h["range_ratio"])}
def documented_budget(row: dict) -> tuple[float, str]:
    """(per-rank token budget [tokens], rule name) a launch script sets for one CSV row; (NaN, '') when
    no rule applies (the engine profile's budget then holds)."""
    for rule in SPEC_RULES:
        if _matches(rule, row):
            k = rule.k_attention_dp if degree(row.get("attention_dp_size")) > 1 else rule.k
            batch, isl = number(row.get("batch_size")), number(row.get("isl"))
            if math.isfinite(batch) and math.isfinite(isl) and batch >= 1:
                return float(mtp_token_budget(k, batch, isl)), f"{rule.name}-max-num-tokens"
    if _is_inferencex(row) and (row.get("mode") or "agg") == "agg":
        measured = _field(str(row.get("silicon_data_source") or ""), "measured")[:10]
        for fixed in FIXED_BUDGET_RULES:
            if (row.get("backend") == fixed.backend and row.get("model_path") == fixed.model_path
                    and row.get("system") in fixed.systems and fixed.measured_from <= measured < fixed.measured_to):
                return float(fixed.budget), fixed.name
    return math.nan, ""


def apply_source_rules(row: dict) -> tuple[dict, dict]:
    """The row with a rule's ``spec_decode`` filled in where its own cell is empty, and the fields
    ``spec_decode_rule`` (rule name or ''), ``source_flag`` (reason or ''), ``max_num_batched_tokens``
    (per-rank token budget [tokens] of the row's own cell, else of a rule, else NaN) and
    ``token_budget_rule`` ('column', rule name or '') for the mapped row."""
    own_budget = row.get("max_num_batched_tokens")
    if not blank(own_budget):
        budget = {"max_num_batched_tokens": number(own_budget), "token_budget_rule": "column"}
    else:
        value, rule = documented_budget(row)
        budget = {"max_num_batched_tokens": value, "token_budget_rule": rule}
    own = row.get("spec_decode")
    if not blank(own):
        return row, {"spec_decode_rule": "column", "source_flag": layout_flag(row), **budget}
    spelling, name = documented_spec(row)
    if spelling:
        row = {**row, "spec_decode": spelling}
    return row, {"spec_decode_rule": name, "source_flag": layout_flag(row), **budget}
