"""Speculative decoding on dataflow machines: a separate draft model on the same chips (a what-if)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfmodel.cli import main
from perfmodel.dataflow import predict_dataflow
from perfmodel.dataflow.speculative import draft_model, needed_expected_tokens, speculative_decode
from perfmodel.dataflow.step import DataflowModel
from perfmodel.engine.speculative import SpecDecode
from perfmodel.errors import ConfigError


@pytest.fixture(scope="module")
def target():
    return DataflowModel("llama-3.1-405b", "sambanova-sn40l", tp=16)


def test_step_over_expected_tokens(target):
    """accept 0.5 at k = 2: E = 1 + 0.5 + 0.25 = 1.75 tokens per step; TPOT = (t_verify + 2 t_draft) / 1.75,
    and the two draft passes are the draft model's own decode at the mean draft context c + (k - 1)/2."""
    s = speculative_decode(target, "draft:llama-3.2-1b,k=2,accept=0.5", 1, 1024.0)
    assert float(s["expected_tokens"]) == 1.75
    assert math.isclose(float(s["tpot_s"]), (float(s["verify_s"]) + float(s["draft_s"])) / 1.75)
    draft = draft_model(target, SpecDecode("draft", 2, 0.5, draft_model="llama-3.2-1b"))
    assert (draft.parallel.tp, draft.eta) == (16, target.eta)
    assert math.isclose(float(s["draft_s"]), 2 * float(draft.decode(1, 1024.5)["tpot_s"]))


def test_verification_streams_the_weights_once(target):
    """Five tokens of one sequence cost little more than one: the 51 GB of weights per socket are read
    once; only activations, KV reads and the LM head grow with the tokens."""
    one = float(target.decode(1, 1024.0)["tpot_s"])
    five = float(target.decode(1, 1024.0, tokens_per_sequence=5)["tpot_s"])
    assert one < five < 1.1 * one
    with pytest.raises(ConfigError, match="tokens_per_sequence"):
        target.decode(1, 1024.0, tokens_per_sequence=0)


def test_needed_tokens_inverts_the_step(target):
    """The E a speed needs is v (t_verify + k t_draft): at the speed of accept 0.6, k = 3 it is
    1 + 0.6 + 0.36 + 0.216 = 2.176."""
    s = speculative_decode(target, "draft:llama-3.2-1b,k=3,accept=0.6", 1, 1024.0)
    v = 1.0 / float(s["tpot_s"])
    assert math.isclose(needed_expected_tokens(target, "llama-3.2-1b", 3, v), 2.176, rel_tol=1e-9)


def test_prediction_holds_the_draft_and_says_it_is_a_what_if():
    plain = predict_dataflow("llama-3.1-70b", "sambanova-sn40l", tp=16, isl=1024, osl=256)
    spec = predict_dataflow("llama-3.1-70b", "sambanova-sn40l", tp=16, isl=1024, osl=256,
                            spec_decode="draft:llama-3.2-1b,k=4,accept=0.8")
    extra = float(np.ravel(spec.columns["draft_bytes_per_device"])[0])
    assert extra > 2.4e9 / 16  # 1.24 B parameters in bf16 split 16 ways, plus the draft's KV
    assert math.isclose(float(np.ravel(spec.hbm_used_bytes_per_device)[0]),
                        float(np.ravel(plain.hbm_used_bytes_per_device)[0]) + extra)
    assert float(spec.per_user_tokens_per_s[()]) > float(plain.per_user_tokens_per_s[()])
    assert spec.config["spec_decode"].endswith("(user)")
    with pytest.raises(ConfigError, match="separate draft model"):
        predict_dataflow("llama-3.1-70b", "sambanova-sn40l", tp=16, spec_decode="eagle:k=3,accept=0.7")


def test_cli_spec_decode_on_a_dataflow_machine(capsys):
    rc = main(["predict", "--model", "llama-3.1-70b", "--hardware", "sambanova-sn40l", "--tp", "16",
               "--spec-decode", "draft:llama-3.2-1b,k=4,accept=0.8"])
    out = capsys.readouterr().out
    assert rc == 0 and "speculative decoding: draft:llama-3.2-1b,k=4" in out and "what-if" in out
