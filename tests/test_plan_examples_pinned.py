"""The README's two ``plan`` examples, pinned to what the code gave before the plan speed work (issue 20).

``tests/data/plan_examples_pinned.json`` was written by main's code at 2de1af4 (before any change of
the speed work) with ``python -m tests.test_plan_examples_pinned --write``, and again by main's code at
e62502a (still without the speed work), whose KV pool as the engines size it (9e3e480) moved the
simulated figures (Llama-3.1-70B: TTFT p95 0.533 -> 0.563 s; DeepSeek-V3's B200 row: goodput 7.923 ->
7.943 req/s) and the Llama-3.1-70B search's counts (3 candidates simulated instead of 2), not the
ranked plans; and again at e1f8c47, after the engine terms were refitted to those pools, which moved
only simulated figures (DeepSeek-V3's P/D row: TTFT p95 2.558 -> 2.647 s, attainment 1.0 -> 0.996;
Llama-3.1-70B: TTFT p95 0.563 -> 0.550 s), not the ranked plans or the counts; and again when the KV
cache came to follow the weights (issue 21: the DeepSeek-V3 ``weights=["fp8"]`` example's KV cache is
fp8, was bf16; its P/D row: TTFT p95 2.647 -> 2.473 s, TPOT p95 25.5 -> 23.8 ms, attainment 0.996 ->
1.0), not the ranked plans or the counts. A change that only makes
``plan`` faster must leave the ranked plans (deployment, devices, replicas, P/D worker counts), the
counts of candidates and every simulated figure where they were; an intended modelling change
re-records the file in its own commit that says which figures moved and why.

Both examples take a few seconds each, so they run in the slow tier.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from perfmodel.planning import plan
from perfmodel.serving import SLO, Workload

PINNED = Path(__file__).parent / "data" / "plan_examples_pinned.json"

#: (model, workload, SLO, keyword arguments) of each README example, as the CLI passes them.
EXAMPLES = {
    "llama-3.1-70b": ("llama-3.1-70b", (2048, 256, 20.0), {"ttft": "2 s", "tpot": "50 ms"},
                      dict(hardware=["h100-sxm", "h200-sxm", "b200"], tp=[1, 2, 4, 8])),
    "deepseek-v3 P/D": ("deepseek-v3", (8192, 1024, 8.0), {"ttft": "3 s", "tpot": "40 ms"},
                        dict(hardware=["gb200-nvl72", "hgx-b200", "hgx-h200"], weights=["fp8"], tp=[1, 8],
                             dp_attention=[1, 8], disaggregated=True)),
}

#: Ranked-row fields compared exactly (the plan's structure) and within REL (simulated figures).
EXACT = ("deployment", "devices", "replicas", "prefill_workers", "decode_workers", "rank")
FIGURES = ("goodput_requests_per_s", "slo_attainment", "ttft_p95_s", "tpot_p95_s", "output_tokens_per_s", "power_w",
           "cost_per_hour")
REL = 1e-9


def run_example(name: str, **extra) -> dict:
    """The example's plan as the pinned record: ranked rows (pinned fields) and the counts."""
    model, (isl, osl, rate), limits, kw = EXAMPLES[name]
    r = plan(model, Workload.fixed(isl, osl, rate=rate), SLO(**limits, target=0.95), rate=rate, **kw, **extra)
    return {"ranked": [{k: row.get(k) for k in EXACT + FIGURES} for row in r.ranked], "counts": r.counts}


def _same(got: dict, want: dict) -> None:
    assert len(got["ranked"]) == len(want["ranked"])
    for g, w in zip(got["ranked"], want["ranked"], strict=True):
        assert {k: g[k] for k in EXACT} == {k: w[k] for k in EXACT}
        for k in FIGURES:
            if w[k] is None or w[k] != w[k]:   # no figure (NaN) stays none
                assert g[k] is None or g[k] != g[k], k
            else:
                assert g[k] == pytest.approx(w[k], rel=REL), (g["deployment"], k)


@pytest.mark.slow   # a few seconds each on the 2-core VM
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_plan_example_pinned(name):
    want = json.loads(PINNED.read_text())[name]
    got = run_example(name)
    _same(got, want)
    assert got["counts"] == want["counts"]


@pytest.mark.slow   # about 11 s of CPU: every one of the 24 feasible candidates is simulated
def test_deepseek_example_without_pruning_ranks_the_same_winner():
    want = json.loads(PINNED.read_text())["deepseek-v3 P/D"]["ranked"][0]
    full = run_example("deepseek-v3 P/D", prune=False)
    assert full["counts"]["simulated"] == 24 and full["counts"]["pruned_by"]["frontier"] == 0
    _same({"ranked": full["ranked"][:1]}, {"ranked": [want]})


if __name__ == "__main__":
    if "--write" not in sys.argv:
        sys.exit("usage: python -m tests.test_plan_examples_pinned --write")
    PINNED.write_text(json.dumps({n: run_example(n) for n in EXAMPLES}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED}")
