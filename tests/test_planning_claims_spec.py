"""Vendor claims with speculative decoding: finite values, None plus a reason, the sourced recipes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.planning import check_claim, list_claims, load_claim
from perfmodel.planning.claims import OperatingPoint, evaluate_system


def _non_finite(x, path="$"):
    if isinstance(x, (float, np.floating)) and not math.isfinite(float(x)):
        yield path
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from _non_finite(v, f"{path}.{k}")
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            yield from _non_finite(v, f"{path}[{i}]")


@pytest.mark.parametrize("cid", list_claims())
def test_no_nan_or_inf_anywhere_in_claim_output(cid):
    r = check_claim(cid, points=3)
    assert list(_non_finite(r.as_dict())) == []
    for row in r.sensitivity.to_dict(orient="records") + (r.interactivity.to_dict(orient="records")
                                                          if r.interactivity is not None else []):
        assert (row["ratio"] is None) == bool(row["ratio_note"]) or "highest speed both reach" in row["ratio_note"]


def test_lpx_nominal_speculation_reaches_400_and_states_acceptance():
    r = check_claim("nvidia-lpx-35x-tokens-per-mw", points=3)
    assert r.ratio is not None and 0 < r.ratio < 35
    for side in (r.baseline, r.candidate):
        assert side["reachable"] and side["per_user_tokens_per_s"] >= 400
        assert side["spec_decode"].startswith("eagle:k=3") and "redhat-maverick-eagle3" in side["spec_decode"]
    sens = r.sensitivity
    off = sens[(sens.unknown == "baseline_spec") & (sens.value == "off")].iloc[0]
    assert off["ratio"] is None and "unreachable for the baseline" in off["ratio_note"]
    # spec off on both: neither reaches 400 tok/s per user, the note says where the ratio was taken
    both_off = sens[(sens.unknown == "spec_method") & (sens.value == "off")].iloc[0]
    assert both_off["ratio"] is not None and "highest speed both reach" in both_off["ratio_note"]


def test_candidate_value_never_falls_with_acceptance():
    c = load_claim("nvidia-lpx-35x-tokens-per-mw")
    op = OperatingPoint(**{**c.operating_point.model_dump(), "isl": 1024, "osl": 128})
    values = []
    for a in (0.0, 0.4, 0.8, 1.0):
        cand = {**c.candidate, "spec_decode": {"method": "eagle", "k": 3, "accept": a}}
        values.append(evaluate_system(cand, c.model, c.metric, op)["max_per_user_tokens_per_s"])
    assert all(b >= a for a, b in zip(values, values[1:], strict=False))


def test_dgx_b200_acceptance_needed_gives_250_when_predicted_directly():
    r = check_claim("nvidia-dgx-b200-dsr1-250-tps-per-user", points=5)
    c = r.claim
    assert c.candidate["spec_decode"] == {"method": "mtp", "k": 3} and c.candidate["draft_weights"] == "bf16"
    need = next(n for n in r.needed if n["unknown"] == "mtp_acceptance")["value_needed"]
    assert 0 < need < 1
    dep = {**c.candidate, "model": c.model, "spec_decode": {"method": "mtp", "k": 3, "accept": need}}
    dep.pop("name")
    p = pm.predict_deployment(dep, isl=1024, osl=2048, batch=1)
    assert float(p.per_user_tokens_per_s) == pytest.approx(250.0, rel=2e-3)
    # MTP off: the plain step, as predict gives it
    off = r.sensitivity[(r.sensitivity.unknown == "mtp") & (r.sensitivity.value == "off")].iloc[0]["ratio"]
    plain = pm.predict("deepseek-r1", "b200", tp=8, ep=8, weights="nvfp4", kv_cache="fp8", isl=1024, osl=2048)
    assert off == pytest.approx(float(plain.per_user_tokens_per_s) / 250.0, rel=1e-9)


def test_list_path_sets_both_systems_and_null_nominal_keeps_the_claim():
    c = load_claim("nvidia-gb200-vs-h200-15x-per-gpu").model_dump(mode="json")
    r = check_claim(c, points=2)
    sens = r.sensitivity
    both = sens[(sens.unknown == "both_mtp") & (sens.value == "off")].iloc[0]["ratio"]
    assert both == pytest.approx(r.ratio)   # 'off' on both = the nominal claim
    one = sens[(sens.unknown == "baseline_mtp") & (sens.value == "mtp:k=1")].iloc[0]["ratio"]
    two = sens[(sens.unknown == "both_mtp") & (sens.value == "mtp:k=1")].iloc[0]["ratio"]
    assert one != pytest.approx(two)        # the list path moved the candidate too


@pytest.mark.parametrize("cid", list_claims())
def test_every_value_needed_reproduces_the_claim(cid):
    from perfmodel.planning.claims import _Evaluator

    r = check_claim(cid, points=3)
    ev = _Evaluator(r.claim)
    goal = r.claim.claimed if r.claim.claim_type == "ratio" else 1.0
    for n in r.needed:
        if n["value_needed"] is not None:
            assert ev.ratio({n["unknown"]: n["value_needed"]})[0] == pytest.approx(goal, rel=0.01), n["unknown"]
        elif "jumps across" in n["finding"]:
            assert "value_needed" in n and n["value_needed"] is None
