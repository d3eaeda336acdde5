"""Vendor-claim checks: shipped claims load and check; synthetic claims with hand-computable answers."""

from __future__ import annotations

import math

import pytest

import perfmodel as pm
from perfmodel.errors import SpecError, UnknownNameError
from perfmodel.planning import check_claim, list_claims, load_claim

DEP = {"pools": {"g": {"hardware": "h100-sxm", "power_per_device": "1000 W"}}}


def _claim(**over):
    base = {
        "id": "test", "title": "test", "claimed_by": "test", "source": "https://example.org",
        "metric": "output_tokens_per_s_per_mw", "claim_type": "ratio", "claimed": 4.0, "model": "llama-3.1-8b",
        "operating_point": {"per_user_tokens_per_s": 100, "isl": 512, "osl": 64, "max_batch": 64},
        "baseline": DEP,
        "candidate": {"pools": {"g": {"hardware": "h100-sxm", "power_per_device": "500 W"}}},
        "unknowns": [
            {"name": "candidate_power", "path": "candidate.pools.g.power_per_device", "dimension": "power",
             "nominal": "500 W", "low": "100 W", "high": "2 kW", "log": True},
            {"name": "speedup", "path": "candidate.speedup", "nominal": 1.0, "values": [1.0, 2.0]},
        ],
    }
    base.update(over)
    return base


def test_shipped_claims_include_lpx_and_two_others():
    ids = list_claims()
    assert "nvidia-lpx-35x-tokens-per-mw" in ids and len(ids) >= 3
    lpx = load_claim("nvidia-lpx-35x-tokens-per-mw")
    assert lpx.claimed == 35 and lpx.operating_point.per_user_tokens_per_s == 400
    assert lpx.source.startswith("https://") and lpx.source_rows == ["e0938"]


@pytest.mark.parametrize("cid", ["nvidia-lpx-35x-tokens-per-mw", "nvidia-gb200-vs-h200-15x-per-gpu",
                                 "nvidia-dgx-b200-dsr1-250-tps-per-user"])
def test_shipped_claim_check_returns_fields(cid):
    r = check_claim(cid, points=3)
    d = r.as_dict()
    for key in ("claimed", "predicted_ratio", "operating_point", "candidate", "assumptions_needed",
                "sensitivity", "verdict", "source", "assumed"):
        assert key in d
    assert (r.ratio is None and r.ratio_note) or (math.isfinite(r.ratio) and r.ratio >= 0)
    assert len(r.needed) == len(r.claim.unknowns)
    assert all("finding" in n for n in r.needed)
    assert set(r.sensitivity.unknown) == {u.name for u in r.claim.unknowns}


def test_ratio_claim_by_hand_power_only():
    # identical hardware and model: the tokens/s per MW ratio is the inverse power ratio, 1000/500 = 2
    r = check_claim(_claim())
    assert r.ratio == pytest.approx(2.0)
    assert r.candidate["batch"] == r.baseline["batch"]
    power = next(n for n in r.needed if n["unknown"] == "candidate_power")
    assert power["value_needed"] == pytest.approx(250.0, rel=1e-3)  # 1000 W / 4
    spd = next(n for n in r.needed if n["unknown"] == "speedup")
    assert spd["values_meeting_claim"] == [2.0]  # 2 x 2 = 4 exactly
    assert r.interactivity is not None and (r.interactivity.ratio.dropna() >= 2.0 - 1e-9).all()


def test_value_claim_by_hand_speedup_needed():
    pred = pm.predict("llama-3.1-8b", "h100-sxm", isl=512, osl=64, batch=1)
    speed = float(pred.per_user_tokens_per_s)
    claim = _claim(metric="per_user_tokens_per_s", claim_type="value", claimed=2 * speed, baseline=None,
                   operating_point={"batch": 1, "isl": 512, "osl": 64},
                   candidate={"pools": {"g": {"hardware": "h100-sxm"}}},
                   unknowns=[{"name": "speedup", "path": "candidate.speedup", "nominal": 1.0, "low": 0.5,
                              "high": 4.0}])
    r = check_claim(claim)
    assert r.candidate["value"] == pytest.approx(speed, rel=1e-6)  # deployment agrees with predict()
    assert r.ratio == pytest.approx(0.5, rel=1e-6)
    assert r.needed[0]["value_needed"] == pytest.approx(2.0, rel=1e-3)


def test_unreachable_operating_point_scores_zero():
    r = check_claim(_claim(operating_point={"per_user_tokens_per_s": 1e6, "isl": 512, "osl": 64,
                                            "max_batch": 4}), points=2)
    assert not r.candidate["reachable"] and r.candidate["value"] == 0.0
    assert "cannot reach" in r.verdict


def test_claim_validation():
    with pytest.raises(SpecError, match="typo"):
        load_claim(_claim(metrc="x"))
    with pytest.raises(SpecError, match="baseline"):
        load_claim(_claim(baseline=None))
    with pytest.raises(UnknownNameError, match="lpx"):
        load_claim("nvidia-lpx-35")


def test_claim_cli(capsys):
    import json

    from perfmodel.cli import main

    assert main(["claim", "--list", "--format", "json"]) == 0
    ids = [r["id"] for r in json.loads(capsys.readouterr().out)]
    assert "nvidia-lpx-35x-tokens-per-mw" in ids
    assert main(["claim", "nvidia-dgx-b200-dsr1-250-tps-per-user", "--points", "2"]) == 0
    out = capsys.readouterr().out
    assert "assumptions needed" in out and "mtp_acceptance" in out
