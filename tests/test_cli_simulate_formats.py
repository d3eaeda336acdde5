"""``simulate`` and ``max-load`` name the formats as predict's records do (``weights``, ``activations``,
``kv_cache``), not as a label string."""

from __future__ import annotations

import contextlib
import csv
import io
import json

from perfmodel.cli import main
from perfmodel.cli.simulate_cmd import _formats
from perfmodel.core.step import StepModel
from perfmodel.serving import Disaggregated

M = ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--isl", "512", "--osl", "64", "--weights", "fp8",
     "--kv-cache", "bf16", "--quiet"]
WANT = {"weights": "fp8", "activations": "fp8", "kv_cache": "bf16"}


def _out(argv: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0, argv
    return buf.getvalue()


def test_simulate_json_and_csv_carry_the_three_format_keys():
    argv = ["simulate", *M, "--rate", "2", "--requests", "40"]
    predicted = json.loads(_out(["predict", *M[:-1], "--batch", "1", "--format", "json"]))[0]
    doc = json.loads(_out([*argv, "--format", "json"]))
    assert "formats" not in doc
    assert {k: doc[k] for k in WANT} == WANT == {k: predicted[k] for k in WANT}
    row = next(csv.DictReader(io.StringIO(_out([*argv, "--format", "csv"]))))
    assert {k: row[k] for k in WANT} == WANT


def test_max_load_json_csv_and_table_name_the_formats():
    argv = ["max-load", *M, "--requests", "40", "--slo-ttft", "1s", "--max-simulations", "2"]
    doc = json.loads(_out([*argv, "--format", "json"]))
    assert "formats" not in doc and {k: doc[k] for k in WANT} == WANT
    rows = list(csv.DictReader(io.StringIO(_out([*argv, "--format", "csv"]))))
    assert rows and all({k: r[k] for k in WANT} == WANT for r in rows)
    assert "formats: weights fp8, activations fp8, kv_cache bf16" in _out([*argv, "--format", "table"])


def test_pools_with_different_formats_are_named_per_pool():
    bf16 = StepModel("llama-3.1-8b", "h100-sxm", weights="bf16", kv_cache="bf16")
    fp8 = StepModel("llama-3.1-8b", "h100-sxm", weights="fp8", kv_cache="fp8")
    assert _formats(Disaggregated(prefill=bf16, decode=bf16)) == {"weights": "bf16", "activations": "bf16",
                                                                  "kv_cache": "bf16"}
    assert _formats(Disaggregated(prefill=bf16, decode=fp8)) == {
        "prefill_weights": "bf16", "prefill_activations": "bf16", "prefill_kv_cache": "bf16",
        "decode_weights": "fp8", "decode_activations": "fp8", "decode_kv_cache": "fp8"}
