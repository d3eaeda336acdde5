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
            {"name": "multiplier", "path": "candidate.tokens_per_step_multiplier", "nominal": 1.0,
             "values": [1.0, 2.0]},
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
    spd = next(n for n in r.needed if n["unknown"] == "multiplier")
    assert spd["values_meeting_claim"] == [2.0]  # 2 x 2 = 4 exactly
    assert r.interactivity is not None and (r.interactivity.ratio.dropna() >= 2.0 - 1e-9).all()


def test_value_claim_by_hand_multiplier_needed():
    pred = pm.predict("llama-3.1-8b", "h100-sxm", isl=512, osl=64, batch=1)
    speed = float(pred.per_user_tokens_per_s)
    claim = _claim(metric="per_user_tokens_per_s", claim_type="value", claimed=2 * speed, baseline=None,
                   operating_point={"batch": 1, "isl": 512, "osl": 64},
                   candidate={"pools": {"g": {"hardware": "h100-sxm"}}},
                   unknowns=[{"name": "multiplier", "path": "candidate.tokens_per_step_multiplier",
                              "nominal": 1.0, "low": 0.5, "high": 4.0}])
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


def test_old_speedup_key_warns_and_maps_to_the_multiplier():
    """The claim-side key ``speedup`` (and an unknown's path ending in it) is read as
    ``tokens_per_step_multiplier`` with a DeprecationWarning naming the new key: the same check, number for
    number. A candidate at 2 tokens per step doubles the per-user speed and the metric of the same batch."""
    new = _claim(candidate={"pools": {"g": {"hardware": "h100-sxm", "power_per_device": "500 W"}},
                            "tokens_per_step_multiplier": 2.0})
    old = {**new, "candidate": {**{k: v for k, v in new["candidate"].items() if k != "tokens_per_step_multiplier"},
                                "speedup": 2.0},
           "unknowns": [{**u, "path": u["path"].replace("tokens_per_step_multiplier", "speedup")}
                        for u in new["unknowns"]]}
    new["unknowns"][1]["nominal"] = old["unknowns"][1]["nominal"] = 2.0   # the unknown sets the key too
    with pytest.warns(DeprecationWarning, match="'speedup' is deprecated, use 'tokens_per_step_multiplier'") as rec:
        got = check_claim(old, points=3)
    assert len(rec) == 2 and all(w.filename == __file__ for w in rec)   # the side's key and the unknown's path
    want = check_claim(new, points=3)
    assert got.ratio == want.ratio == pytest.approx(4.0)           # 1000 W / 500 W x 2
    assert got.candidate == want.candidate and got.candidate["tokens_per_step_multiplier"] == 2.0
    assert "speedup" not in got.candidate and got.needed == want.needed
    base = check_claim(_claim(), points=3)
    assert got.candidate["batch"] == base.candidate["batch"]
    assert got.candidate["value"] == pytest.approx(2 * base.candidate["value"], rel=1e-12)


def test_claim_side_keys_are_checked_with_suggestions():
    with pytest.raises(SpecError, match="unknown key 'tokens_per_step_multiplie'.*did you mean "
                                        "'tokens_per_step_multiplier'"):
        load_claim(_claim(candidate={"pools": DEP["pools"], "tokens_per_step_multiplie": 2.0}))
    with pytest.raises(SpecError, match="unknown key 'pool'.*did you mean 'pools'"):
        load_claim(_claim(baseline={"pool": DEP["pools"]}))
    with pytest.raises(SpecError, match="give 'tokens_per_step_multiplier' only"):
        load_claim(_claim(candidate={**DEP, "speedup": 2.0, "tokens_per_step_multiplier": 2.0}))


def test_claim_cli_notes_an_old_key_on_stderr(tmp_path, capsys):
    import json

    import yaml

    from perfmodel.cli import main

    data = {**_claim(candidate={"pools": {"g": {"hardware": "h100-sxm", "power_per_device": "500 W"}},
                                "speedup": 2.0}), "unknowns": []}
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["claim", str(path), "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "note: candidate: the claim key 'speedup' is deprecated, use 'tokens_per_step_multiplier'" in out.err
    assert json.loads(out.out)["candidate"]["tokens_per_step_multiplier"] == 2.0
