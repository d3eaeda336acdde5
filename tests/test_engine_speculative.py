"""Speculative decoding: acceptance arithmetic, the CLI spelling, the sourced acceptance table, the
draft / verification costs, invariants, and published speed-ups (perfmodel.engine.speculative)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel.core.step import StepModel
from perfmodel.engine.speculative import (
    AcceptanceProfile,
    SpecDecode,
    acceptance_profiles,
    as_spec_decode,
    expected_tokens,
    parse_spec_decode,
    rates_from_lengths,
    speculative_speedup,
    speculative_step,
    uniform_expected_tokens,
    uniform_rate_for_length,
)
from perfmodel.engine.speculative_draft import (
    draft_memory,
    draft_step_model,
    verify_attention_time,
    verify_time,
)
from perfmodel.errors import ConfigError, SpecError, UnknownNameError
from perfmodel.modelspec import load_model

LLAMA70 = dict(model="llama-3.1-70b", hardware="h100-sxm", tp=8, weights="fp8", kv_cache="fp8")


# ------------------------------------------------------------------ acceptance arithmetic (by hand)
def test_expected_tokens_by_hand():
    assert expected_tokens([0.8, 0.5]) == pytest.approx(1 + 0.8 + 0.8 * 0.5)          # 2.2
    assert expected_tokens([0.5, 0.5, 0.5]) == pytest.approx(1.875)                    # 1 + .5 + .25 + .125
    assert uniform_expected_tokens(0.5, 3) == pytest.approx((1 - 0.5 ** 4) / (1 - 0.5))  # same, closed form
    assert uniform_expected_tokens(1.0, 4) == 5.0
    assert expected_tokens([0.0, 1.0, 1.0]) == 1.0  # a rejected first draft ends the step


def test_rates_from_lengths_round_trip():
    lengths = [1.92, 2.58, 2.82]
    rates = rates_from_lengths(lengths)
    assert rates == pytest.approx((0.92, 0.66 / 0.92, 0.24 / 0.66))
    for k in (1, 2, 3):
        assert expected_tokens(rates[:k]) == pytest.approx(lengths[k - 1])
    assert rates_from_lengths([2.0, 2.0, 2.0])[-1] == 0.0  # no gain after a zero step


def test_uniform_rate_for_length():
    a = uniform_rate_for_length(1.37, 5)
    assert uniform_expected_tokens(a, 5) == pytest.approx(1.37, abs=1e-9)
    assert 0.26 < a < 0.28


# ------------------------------------------------------------------ the CLI spelling
def test_parse_spellings():
    assert all(parse_spec_decode(t) is None for t in ("off", None, "", "none"))
    s = parse_spec_decode("eagle:k=4,accept=0.7")
    assert (s.method, s.k, s.acceptance, s.acceptance_source) == ("eagle", 4, (0.7,) * 4, "user")
    s = parse_spec_decode("draft:llama-3.2-1b,k=4,accept=0.6")
    assert (s.method, s.draft_model, s.k) == ("draft", "llama-3.2-1b", 4)
    s = parse_spec_decode("ngram:k=3,accept=0.9/0.5/0.2")
    assert s.acceptance == (0.9, 0.5, 0.2)
    assert s.expected_tokens == pytest.approx(1 + 0.9 + 0.45 + 0.09)
    assert parse_spec_decode(s.label()) == s
    assert parse_spec_decode("draft:model=llama-3.2-1b,k=2,accept=0.5").draft_model == "llama-3.2-1b"


@pytest.mark.parametrize("text, words", [
    ("mtpp:k=3", ["mtpp", "'mtp'"]),
    ("mtp", ["missing k", "mtp:k=3"]),
    ("mtp:k=0", ["k", ">= 1"]),
    ("mtp:k=two", ["k must be an integer", "'two'"]),
    ("eagle:k=3,accept=1.5", ["within [0, 1]", "1.5"]),
    ("eagle:k=3,accept=0.5/0.5", ["k=3", "got 2"]),
    ("eagle:k=3,accept=high", ["accept", "'high'"]),
    ("eagle:k=3,foo=1", ["unknown key 'foo'", "k, accept, model"]),
    ("eagle:k=3,k=4", ["'k' given twice"]),
    ("mtp:llama,k=3", ["'llama'", "KEY=VALUE"]),
    ("draft:k=4,accept=0.5", ["draft_model", "required"]),
    ("draft:llama-3.2-1b,k=4", ["no sourced default", "accept="]),
    ("eagle:model=x,k=2", ["only method 'draft'"]),
])
def test_parse_errors_name_the_part(text, words):
    with pytest.raises((ConfigError, UnknownNameError)) as err:
        parse_spec_decode(text)
    for w in words:
        assert w in str(err.value)


def test_yaml_values():
    assert as_spec_decode(None) is None and as_spec_decode("off") is None
    assert as_spec_decode({"method": "off", "k": 1}) is None
    assert as_spec_decode("mtp:k=2") == SpecDecode("mtp", 2)
    s = as_spec_decode({"method": "draft", "model": "llama-3.2-1b", "k": 3, "accept": [0.8, 0.6, 0.4]})
    assert (s.draft_model, s.acceptance) == ("llama-3.2-1b", (0.8, 0.6, 0.4))
    assert as_spec_decode(s) is s
    with pytest.raises(ConfigError, match="unknown field.*'tree'"):
        as_spec_decode({"method": "eagle", "k": 3, "tree": 8})
    with pytest.raises(ConfigError, match="missing k"):
        as_spec_decode({"method": "eagle"})
    with pytest.raises(ConfigError, match="two names"):
        as_spec_decode({"method": "eagle", "k": 2, "accept": 0.5, "acceptance": 0.6})
    with pytest.raises(ConfigError, match="got int 3"):
        as_spec_decode(3)


def test_spec_is_frozen_and_strict():
    s = SpecDecode("mtp", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.k = 3  # type: ignore[misc]
    with pytest.raises(ConfigError, match="integer >= 1"):
        SpecDecode("mtp", True)  # type: ignore[arg-type]
    with pytest.raises(UnknownNameError, match="known: draft, eagle, mtp, ngram"):
        SpecDecode("medusa", 2)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the sourced acceptance table
def test_acceptance_table_matches_sources():
    """Each shipped length against its source (typed from the cited page)."""
    p = acceptance_profiles()
    # TensorRT-LLM tech blog 1, table "Autoregressive MTP Layers" (DeepSeek-R1, 8x B200)
    assert [e for _, e in p["trtllm-dsr1-mtp"].lengths] == [1.92, 2.58, 2.82, 2.99, 3.01]
    # RedHatAI Llama-4-Maverick EAGLE-3 speculator card, acceptance lengths k = 1..7
    def lengths(pid):
        return [e for _, e in p[pid].lengths]

    assert lengths("redhat-maverick-eagle3-humaneval") == [1.83, 2.45, 2.94, 3.26, 3.47, 3.57, 3.62]
    assert lengths("redhat-maverick-eagle3-gsm8k") == [1.86, 2.56, 3.08, 3.53, 3.73, 3.91, 4.02]
    assert lengths("redhat-maverick-eagle3-cnndm") == [1.69, 2.12, 2.37, 2.52, 2.60, 2.63, 2.63]
    # TensorRT-LLM tech blog 7 (N-gram): accepted length 1.37 / 1.66 at max_draft_len 5, 3.62 at 7
    assert p["trtllm-ngram-magpie-turn1"].lengths == ((5, 1.37),)
    assert p["trtllm-ngram-magpie-turn2"].lengths == ((5, 1.66),)
    assert p["trtllm-ngram-translation"].lengths == ((7, 3.62),)
    # DeepSeek-V3 report: second-token acceptance 85-90 %
    assert p["deepseek-v3-report-mtp"].lengths == ((1, 1.85),)
    for prof in p.values():
        assert prof.source.startswith("https://") and prof.dataset
        assert all(0.0 <= a <= 1.0 for a in prof.rates(8))


def test_lengths_implying_a_rate_above_one_are_rejected():
    bad = AcceptanceProfile("bad", "eagle", False, ((1, 1.2), (2, 1.8)), "m", "d", "https://x", "")
    with pytest.raises(SpecError, match="rate above 1"):
        bad.rates(2)


def test_defaults_state_their_source():
    s = SpecDecode("mtp", 3)
    assert s.expected_tokens == pytest.approx(2.82)  # the published accepted length at k = 3
    assert "trtllm-dsr1-mtp" in s.acceptance_source and "ISL 1k" in s.acceptance_source
    assert "repeat the last rate" in SpecDecode("mtp", 7).acceptance_source
    ng = SpecDecode("ngram", 5)
    assert ng.expected_tokens == pytest.approx(1.37, abs=1e-9) and "Magpie" in ng.acceptance_source
    assert SpecDecode("eagle", 7).expected_tokens == pytest.approx(3.62)


# ------------------------------------------------------------------ model specs and draft layers
def test_mtp_layers_from_config():
    assert load_model("deepseek-r1").mtp_layers == 1
    assert load_model("kimi-k2").mtp_layers == 0
    assert load_model("llama-3.1-8b").mtp_layers == 0
    target = StepModel("llama-3.1-8b", "h100-sxm")
    with pytest.raises(ConfigError, match="no MTP layers"):
        draft_step_model(target, SpecDecode("mtp", 2))


def test_draft_models_are_one_layer_on_the_same_layout():
    target = StepModel("deepseek-r1", "b200", tp=8, ep=4, weights="nvfp4")
    mtp = draft_step_model(target, SpecDecode("mtp", 3), weights="bf16")
    assert mtp.model.num_layers == 1 and mtp.model.groups[0].ffn == "moe"
    assert (mtp.parallel.tp, mtp.parallel.ep, mtp.precision.weights.name) == (8, 4, "bf16")
    eagle = draft_step_model(target, SpecDecode("eagle", 3), draft_vocab=32000)
    assert eagle.model.groups[0].ffn == "dense" and eagle.model.vocab_size == 32000
    assert draft_step_model(target, SpecDecode("ngram", 3)) is None
    with pytest.raises(ConfigError, match="draft model 'qwen2.5-7b' at the target's tp=8: tp=8 does not divide"):
        draft_step_model(StepModel(**LLAMA70), SpecDecode("draft", 2, 0.5, "qwen2.5-7b"))
    with pytest.raises(ConfigError, match="pp=2 is not modelled"):
        verify_time(StepModel("llama-3.1-70b", "h100-sxm", tp=4, pp=2), 3, 1, 1024)


def test_draft_memory_by_hand():
    """EAGLE head of Llama-3.1-8B, bf16, one GPU, draft vocabulary 32000."""
    target = StepModel("llama-3.1-8b", "h100-sxm")
    spec = SpecDecode("eagle", 3)
    mem = draft_memory(spec, draft_step_model(target, spec, draft_vocab=32000))
    h = 4096
    attention = h * (32 + 2 * 8) * 128 + 32 * 128 * h
    ffn = 3 * h * 14336
    assert mem.weights == (attention + ffn + 2 * h * h + 32000 * h) * 2.0  # 765.5 MB
    assert mem.kv_per_token == 2 * 8 * 128 * 2.0  # one layer's K and V, bf16
    none = draft_memory(SpecDecode("ngram", 3), None)
    assert (none.weights, none.kv_per_token) == (0.0, 0.0)


# ------------------------------------------------------------------ verification
def test_verify_without_drafts_is_the_decode_step():
    """k = 0: one token per sequence, exactly the plain decode step."""
    target = StepModel("deepseek-r1", "b200", tp=8, ep=4, weights="nvfp4")
    n, c = np.array([1.0, 16.0, 256.0]), np.array([512.0, 4096.0, 2048.0])
    assert np.allclose(verify_time(target, 0, n, c), target.step_time(n, c), rtol=1e-12)


def test_verification_reads_the_kv_cache_once():
    """k + 1 query tokens of a sequence share one KV read: memory-bound attention costs ~ one token's."""
    target = StepModel(**LLAMA70, efficiency="datasheet")
    one = target.decode_attention_time(4, 8192)
    four = verify_attention_time(target, 4, 4, 8192)
    assert four == pytest.approx(one, rel=0.02)
    assert four < 0.3 * target.decode_attention_time(16, 8192)


# ------------------------------------------------------------------ invariants
@pytest.mark.parametrize("spec", [SpecDecode("eagle", 3, 0.0), SpecDecode("ngram", 5, 0.0),
                                  SpecDecode("draft", 4, 0.0, "llama-3.2-1b")])
def test_zero_acceptance_never_helps(spec):
    target = StepModel(**LLAMA70)
    n = np.array([1, 4, 32, 256])[:, None]
    c = np.array([128, 2048, 16384])[None, :]
    assert np.all(speculative_step(target, spec, n, c).tpot >= target.step_time(n, c))


def test_zero_acceptance_mtp_never_helps():
    target = StepModel("deepseek-r1", "b200", tp=8, ep=4, weights="nvfp4")
    n, c = np.array([1, 8, 64, 512]), 2048
    assert np.all(speculative_step(target, SpecDecode("mtp", 2, 0.0), n, c).tpot >= target.step_time(n, c))


@settings(max_examples=300, deadline=None)
@given(rates=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8), pos=st.integers(0, 7),
       bump=st.floats(0.0, 1.0))
def test_expected_tokens_bounded_and_monotone(rates, pos, bump):
    e = expected_tokens(rates)
    assert 1.0 <= e <= len(rates) + 1 + 1e-12
    higher = list(rates)
    i = pos % len(rates)
    higher[i] = max(higher[i], bump)
    assert expected_tokens(higher) >= e - 1e-12


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 512), context=st.integers(1, 32768), k=st.integers(1, 6),
       method=st.sampled_from(["eagle", "ngram"]))
def test_zero_acceptance_never_helps_anywhere(n, context, k, method):
    target = StepModel("llama-3.1-8b", "h100-sxm", weights="fp8")
    spec = SpecDecode(method, k, 0.0)
    assert speculative_step(target, spec, n, context).tpot >= target.step_time(n, context) * (1 - 1e-12)


def test_full_acceptance_gives_k_plus_one():
    for k in (1, 3, 6):
        assert SpecDecode("eagle", k, 1.0).expected_tokens == k + 1


def test_speedup_shrinks_with_batch_and_turns_into_a_loss():
    """Llama-3.1-70B FP8 on 8x H100, EAGLE k=3 with the default acceptance, context 2048."""
    target = StepModel(**LLAMA70)
    spec = SpecDecode("eagle", 3)
    n = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
    s = speculative_speedup(target, spec, n, 2048)
    assert np.all(np.diff(s) <= 1e-12)
    assert s[0] > 2.0 and s[-1] < 1.0
    assert s[n == 128][0] > 1.0 > s[n == 512][0]  # the break-even lies between 128 and 512 sequences


# ------------------------------------------------------------------ published pairs (20 % tolerance)
#: TensorRT-LLM tech blog 1 (DeepSeek-R1 min latency, 8x B200, ISL 1k / OSL 2k), table "Autoregressive
#: MTP Layers": TPS/user without MTP 111, and with k MTP tokens (accepted length in parentheses).
DSR1_B200_TPS = {0: 111, 1: 198, 2: 250, 3: 253, 4: 245, 5: 239}


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_deepseek_r1_mtp_b200_speedup(k):
    target = StepModel("deepseek-r1", "b200", tp=8, ep=4, weights="nvfp4")  # the blog's EP4 TP2 MoE step
    spec = SpecDecode("mtp", k)  # accepted lengths of the same table (shipped default)
    draft = draft_step_model(target, spec, weights="bf16")  # the blog keeps MTP layers in bf16
    predicted = float(speculative_speedup(target, spec, 1, 1024 + 1024, draft))
    published = DSR1_B200_TPS[k] / DSR1_B200_TPS[0]
    assert predicted == pytest.approx(published, rel=0.20)


def test_llama_eagle3_h100_speedup():
    """SGLang docs (docs/advanced_features/speculative_decoding.md, "Performance Highlights"):
    Llama-3.1-8B-Instruct on 1x H100, batch 1, MT-bench: 158.34 -> 373.25 tok/s (2.36x).

    Acceptance: the EAGLE-3 head's MT-bench accepted length 2.77 at K = 7 (nebius/EAGLE3-Llama-3.3-70B-
    Instruct card, comparison table: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, chain drafts, temperature 1),
    one uniform rate; draft vocabulary 32000 (SpecForge configs/llama3-8B-eagle3.json). SGLang ran tree
    drafts whose acceptance is not published, so this pair checks the order of magnitude only.
    """
    target = StepModel("llama-3.1-8b", "h100-sxm", weights="bf16")
    spec = SpecDecode("eagle", 7, uniform_rate_for_length(2.77, 7), acceptance_source="MT-bench 2.77 @ K=7")
    draft = draft_step_model(target, spec, draft_vocab=32000)
    predicted = float(speculative_speedup(target, spec, 1, 512, draft))
    assert predicted == pytest.approx(373.25 / 158.34, rel=0.20)


def test_yaml_false_reads_as_off_and_true_names_no_method():
    import yaml

    from perfmodel.engine.speculative import as_spec_decode

    assert yaml.safe_load("spec_decode: off")["spec_decode"] is False  # why the bool is accepted
    assert as_spec_decode(False) is None
    with pytest.raises(ConfigError, match="true names no method"):
        as_spec_decode(True)
