"""SRAM chips inside deployments and claims: their own execution profile, never a borrowed GPU one."""

from __future__ import annotations

import math

import perfmodel as pm
from perfmodel.planning.claims import check_claim, load_claim


def test_sram_chips_get_their_execution_profile():
    for acc in ("groq-lpu", "groq-lp30", "cerebras-wse3", "sambanova-sn40l"):
        eff = pm.profile_for(acc)
        assert eff.name.startswith("dataflow:") and not eff.fallback
        assert eff.kernel_overhead == 0 and eff.step_overhead == 0 and eff.collective_alpha == 0
    assert pm.profile_for("h100-sxm").name == "h100-sxm"  # GPUs unchanged


def test_lpx_claim_is_finite_and_says_why():
    claim = load_claim("nvidia-lpx-35x-tokens-per-mw")
    dep = {**claim.candidate, "model": claim.model}
    p = pm.predict_deployment(dep, isl=1024, osl=128, batch=1)
    assert "dataflow:groq-lp30" in p.config["efficiency"]
    # without speculative decoding neither system reaches 400 tok/s per user
    plain = claim.model_dump(mode="json")
    for side in ("baseline", "candidate"):
        plain[side]["spec_decode"] = "off"
    plain["unknowns"] = [u for u in plain["unknowns"] if "spec" not in u["name"]]
    r = check_claim(plain, points=2)
    assert math.isfinite(r.ratio) and r.ratio > 0
    assert "unreachable for both systems" in r.verdict and "speculative decoding" in r.verdict
    floor = r.candidate["at_reachable_floor"]["per_user_floor_tokens_per_s"]
    assert floor == min(r.baseline["max_per_user_tokens_per_s"], r.candidate["max_per_user_tokens_per_s"])
    assert r.candidate["value"] == 0.0  # nothing reaches the claimed 400 tok/s per user
    # with the claim's nominal EAGLE k = 3 on both sides, both reach it and the ratio is formed there
    r = check_claim(claim, points=2)
    assert r.candidate["reachable"] and r.baseline["reachable"] and r.ratio_note == ""
    assert math.isfinite(r.ratio) and r.ratio > 0
    assert r.candidate["per_user_tokens_per_s"] >= 400 and r.baseline["per_user_tokens_per_s"] >= 400
