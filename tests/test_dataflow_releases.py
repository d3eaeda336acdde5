"""One stream efficiency for both Cerebras software releases, speculative decoding as the only difference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfmodel.dataflow import load_arch, predict_dataflow
from perfmodel.dataflow.releases import joint_fit, needed_expected_tokens, one_eta_table, release_rows
from perfmodel.engine.speculative import SpecDecode
from perfmodel.errors import ConfigError


@pytest.fixture(scope="module")
def table():
    return one_eta_table()


def test_rows_are_both_releases_on_their_layouts():
    """The launch file's fit rows (8B on 1 wafer, 70B on 4) run plain; every row of the later file
    (70B on 4, 405B on 21 whole-layer stages) speculates."""
    rows = {r["label"]: r for r in release_rows()}
    assert set(rows) == {"8b launch", "70b launch", "70b later", "405b later"}
    assert [rows[k]["pp"] for k in ("8b launch", "70b launch", "405b later")] == [1, 4, 21]
    assert not rows["70b launch"]["speculative"] and rows["405b later"]["speculative"]


def test_zero_acceptance_only_slows_the_later_rows():
    """With acceptance 0 a step emits one token for a verify pass of 2 tokens per sequence plus one
    draft pass, so at the same η every later row is slower than plain decode; the one η lies between
    the two shipped values and leaves both later figures under-predicted by more than 2x."""
    rows = release_rows()
    eta, ratios = joint_fit(rows, SpecDecode("draft", 1, acceptance=0.0, draft_model="llama-3.2-1b"))
    launch, later = (load_arch(a).stream_efficiency.value for a in ("cerebras-wse3", "cerebras-wse3-oct2024"))
    assert launch < eta < later
    for r, x in zip(rows, ratios, strict=True):
        if r["speculative"]:
            plain = predict_dataflow(r["model"], "cerebras-wse3", tp=r["tp"], pp=r["pp"], isl=r["isl"],
                                     osl=r["osl"], stream_efficiency=eta)
            assert x < float(np.ravel(plain.per_user_tokens_per_s)[0]) / r["public"] < 0.5


def test_joint_fit_is_a_least_squares_optimum(table):
    """Moving η by 5 % either way from the fitted value raises the sum of squared log ratios."""
    rows = release_rows()
    spec = SpecDecode("draft", 4, acceptance=0.7, draft_model="llama-3.2-1b")
    eta, ratios = joint_fit(rows, spec)

    def loss(e):
        out = []
        for r in rows:
            p = predict_dataflow(r["model"], "cerebras-wse3", tp=r["tp"], pp=r["pp"], isl=r["isl"], osl=r["osl"],
                                 stream_efficiency=e, spec_decode=spec if r["speculative"] else None)
            out.append(float(np.ravel(p.per_user_tokens_per_s)[0]) / r["public"])
        return float(np.sum(np.log(out) ** 2))

    assert math.isclose(loss(eta), float(np.sum(np.log(ratios) ** 2)), rel_tol=1e-9)
    assert loss(eta * 1.05) > loss(eta) and loss(eta / 1.05) > loss(eta)


def test_no_default_acceptance_brings_both_releases_within_1p5x(table):
    """The finding for issue 18: with every sourced acceptance the launch 8B figure stays the worst row
    (over-predicted), and every row is within 1.5x only for the most favourable profile (EAGLE-3 on
    Llama-4-Maverick, gsm8k) at k = 6 and 7 (E >= 3.9): 2 of 30 (profile, k) pairs. The EAGLE default
    profile at k = 4 leaves 1.62x; at k = 4 every row within 1.5x needs E = 3.79, above every sourced
    accepted length at k = 4 (2.52-3.53)."""
    assert len(table) == 30
    assert (table["worst"] == table["8b launch"]).all()
    ok = table[table["worst"] <= 1.5]
    assert sorted(zip(ok["profile"], ok["k"], strict=True)) == [("redhat-maverick-eagle3-gsm8k", 6),
                                                    ("redhat-maverick-eagle3-gsm8k", 7)]
    assert (ok["expected_tokens"] > 3.9).all()
    default = table[(table["profile"] == "redhat-maverick-eagle3-humaneval") & (table["k"] == 4)].iloc[0]
    assert math.isclose(default["worst"], 1.62, rel_tol=0.02)
    e4 = needed_expected_tokens(4)
    assert math.isclose(e4, 3.79, rel_tol=0.02)
    assert e4 > table.loc[table["k"] == 4, "expected_tokens"].max()


def test_more_accepted_tokens_never_widen_the_spread(table):
    """Within one profile the accepted length grows with k, and the worst ratio of the one-η fit does
    not grow by more than rounding as E grows."""
    for _, grp in table.groupby("profile"):
        grp = grp.sort_values("expected_tokens")
        assert (np.diff(grp["worst"].to_numpy()) < 0.02).all()


def test_a_draft_that_does_not_fit_is_named():
    """Llama-3.1-8B (16 GB in bf16) as the draft overflows the 405B pipeline's 44 GB wafers (6 layers
    of 6.4 GB each already sit on each): a clear error naming the draft, not a silent misfit."""
    spec = SpecDecode("draft", 4, acceptance=0.7, draft_model="llama-3.1-8b")
    with pytest.raises(ConfigError, match="draft 'llama-3.1-8b'.*llama-3.1-405b on tp1-pp21"):
        joint_fit(release_rows(), spec)
