"""Vendor-claim checks: what perfmodel predicts at a claim's operating point, and what it would take.

A claim is data (YAML in ``perfmodel/data/claims/``): a metric, a claimed ratio (candidate over
baseline) or value, the operating point (e.g. at least 400 output tokens/s per user, ISL/OSL), the
baseline and candidate as deployments (the :mod:`perfmodel.deployment` file format, plus an optional
``tokens_per_step_multiplier``), the source, what the source states and what had to be assumed, and the
**unknowns**: the figures the source does not give, each with a nominal value and a range (or a list of
values).

:func:`check_claim` then

1. evaluates each system at the operating point. With ``per_user_tokens_per_s`` = v, a system's value
   is the best metric over batch sizes whose per-user speed is at least v and which fit in memory
   (*iso-interactivity*); a system that cannot reach v scores 0. When neither system reaches v, the
   ratio is taken at the highest per-user speed both reach (the smaller of their batch-1 speeds) and
   the verdict says so, with the speed-up each would need. With ``batch`` fixed, the metric there;
2. forms the ratio R = candidate / baseline (ratio claims) or predicted / claimed (value claims);
3. for each continuous unknown, scans its range and solves R(x) = claimed with
   :func:`scipy.optimize.brentq` inside the first bracket that changes sign (the *assumption needed*);
   discrete unknowns are scanned and the values meeting the claim listed;
4. reports the sensitivity: R at each scanned value of each unknown, others at nominal.

Speculative decoding is a deployment field (``spec_decode: {method: mtp, k: 3}``, acceptance from
``perfmodel/data/speculative/`` unless ``accept`` is given): the step model verifies k + 1 tokens per
sequence and drafts k, so its gain shrinks with the batch. Unknowns may move it
(``candidate.spec_decode.accept``, ``...k``, ``...method`` with ``off``); an unknown whose ``path`` is a
list sets every path (the same speculation on both systems), and a ``nominal`` of null leaves the
claim's own value (e.g. the sourced acceptance) in place at nominal.

``tokens_per_step_multiplier`` (default 1), the older stand-in, multiplies a system's tokens per decode
step with no verification cost; the shipped claims use ``spec_decode`` instead. Its old name ``speedup``
(which in :func:`~perfmodel.deployment.scaling_curve` is an output, a TPOT ratio) is still read, with a
:class:`DeprecationWarning` (:mod:`perfmodel.planning.claim_keys`).

No value of a check is NaN or infinite: a ratio that cannot be formed (a system that cannot reach
the per-user floor at some value) is None with the reason beside it (``ratio_note``).
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from ..errors import ConfigError, SpecError, unknown_name
from ..hardware.registry import read_yaml
from ..spec_base import Strict as _Strict
from ..spec_base import format_validation_error
from ..units import to_si, units_required
from .claim_keys import MULTIPLIER_KEY, normalise, renamed_side

Metric = Literal["output_tokens_per_s_per_mw", "output_tokens_per_s_per_device", "per_user_tokens_per_s",
                 "output_tokens_per_s"]


class Unknown(_Strict):
    """A figure the claim's source does not state.

    ``path`` addresses the value to set: ``candidate.links.gpu-lpu.alpha``,
    ``baseline.precision.weights``, ``candidate.tokens_per_step_multiplier``, ``operating_point.isl``...
    ``nominal``, ``low`` and ``high`` are quantity strings of ``dimension`` (or numbers in SI units);
    ``values`` lists discrete alternatives instead of a range.
    """

    name: str
    path: str | list[str]
    nominal: Any
    low: Any = None
    high: Any = None
    values: list[Any] | None = None
    dimension: str = "dimensionless"
    log: bool = False
    note: str = ""

    @model_validator(mode="after")
    def _range(self) -> Unknown:
        if self.values is None and (self.low is None or self.high is None):
            raise ValueError(f"unknown {self.name!r}: give low and high, or values")
        return self

    @property
    def paths(self) -> list[str]:
        """Every path the unknown sets."""
        return [self.path] if isinstance(self.path, str) else list(self.path)

    def si(self, v: Any) -> Any:
        """A value as set in the deployment: SI float for quantities, as is for discrete labels and
        discrete numbers (a draft length stays an integer)."""
        if self.values is not None and self.dimension == "dimensionless" and not isinstance(v, bool) \
                and isinstance(v, (str, int)):
            return v
        return to_si(v, self.dimension, self.name)


class OperatingPoint(_Strict):
    """Where the claim is made: lengths and either a per-user speed floor or a fixed batch."""

    isl: int = Field(ge=1)
    osl: int = Field(ge=2)
    per_user_tokens_per_s: float | None = Field(default=None, gt=0)
    batch: int | None = Field(default=None, ge=1)
    max_batch: int = Field(default=8192, ge=1)

    @model_validator(mode="after")
    def _one(self) -> OperatingPoint:
        if (self.per_user_tokens_per_s is None) == (self.batch is None):
            raise ValueError("give exactly one of per_user_tokens_per_s (iso-interactivity) or batch")
        return self


class Claim(_Strict):
    """A vendor (or third-party) performance claim, as data (see the module docstring)."""

    schema_version: Literal[1] = 1
    kind: Literal["claim"] = "claim"
    id: str
    title: str
    claimed_by: str
    source: str
    source_rows: list[str] = Field(default_factory=list)
    quote: str = ""
    metric: Metric
    claim_type: Literal["ratio", "value"]
    claimed: float = Field(gt=0)
    model: str
    operating_point: OperatingPoint
    baseline: dict[str, Any] | None = None
    candidate: dict[str, Any]
    stated: list[str] = Field(default_factory=list)
    assumed: list[str] = Field(default_factory=list)
    unknowns: list[Unknown] = Field(default_factory=list)
    notes: str = ""

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        """Old side keys renamed (with a warning), each side's keys checked (:mod:`.claim_keys`)."""
        return normalise(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _baseline(self) -> Claim:
        if self.claim_type == "ratio" and self.baseline is None:
            raise ValueError("a ratio claim needs a baseline deployment")
        return self


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, str]:
    root = resources.files("perfmodel") / "data" / "claims"
    return {c.name.rsplit(".", 1)[0]: c.read_text(encoding="utf-8") for c in root.iterdir()
            if c.name.endswith((".yaml", ".yml"))} if root.is_dir() else {}


def list_claims() -> list[str]:
    """Ids of the shipped claims."""
    return sorted(_shipped())


def load_claim(source: str | Path | dict | Claim) -> Claim:
    """A claim by shipped id, YAML path, mapping or instance (validated, unknown keys rejected)."""
    from pydantic import ValidationError

    if isinstance(source, Claim):
        return source
    if isinstance(source, dict):
        data, origin = source, "claim"
    elif str(source) in _shipped():
        data, origin = read_yaml(f"data/claims/{source}.yaml", _shipped()[str(source)]), f"claims/{source}"
    elif str(source).endswith((".yaml", ".yml")):
        data, origin = read_yaml(source), str(source)
        if isinstance(data, dict):  # file paths in it are relative to the claim file, as in a deployment file
            data = _rebase(data, Path(source).parent)
    else:
        raise unknown_name("claim", str(source), list_claims())
    if not isinstance(data, dict):
        got = "an empty file" if data is None else type(data).__name__
        raise SpecError(f"{origin}: expected a mapping of claim fields, got {got}")
    try:
        data = normalise(data)
    except ValueError as exc:
        raise SpecError(f"{origin}: {exc}") from None
    try:
        if origin == "claim":
            return Claim.model_validate(data)
        with units_required():  # a file writes quantities with their units
            return Claim.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{origin}: {format_validation_error(exc, Claim)}") from None


def _rebase(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """The claim's ``model`` and its sides' ``model`` / ``pools.*.hardware`` file paths, relative to ``base``."""
    from ..deployment.load import rebase_paths

    out = rebase_paths(data, base)
    for side in ("baseline", "candidate"):
        if isinstance(out.get(side), dict):
            out[side] = rebase_paths(out[side], base)
    return out


# ------------------------------------------------------------------------------------ evaluation


def _set(tree: dict[str, Any], path: list[str], value: Any) -> None:
    node = tree
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value


def _batches(op: OperatingPoint) -> np.ndarray:
    if op.batch is not None:
        return np.array([float(op.batch)])
    return np.unique(np.r_[np.arange(1, 17), np.geomspace(16, op.max_batch, 112).round()])


def system_curve(system: dict[str, Any], model: str, metric: str, op: OperatingPoint) -> dict[str, Any]:
    """One vectorised :func:`~perfmodel.deployment.predict_deployment` call over the batch grid.

    Returns the batch sizes, per-user speeds and metric values (times ``tokens_per_step_multiplier``),
    the fit flags and the deployment's devices, power and assumptions.
    """
    from ..deployment import predict_deployment

    system = renamed_side(system, "system_curve")
    dep = {k: v for k, v in system.items() if k != MULTIPLIER_KEY}
    dep.setdefault("model", model)
    s = float(system.get(MULTIPLIER_KEY, 1.0))
    b = _batches(op)
    p = predict_deployment(dep, isl=op.isl, osl=op.osl, batch=b)
    return {"batch": b, "user": np.broadcast_to(np.asarray(p.per_user_tokens_per_s, float) * s, b.shape),
            "value": np.broadcast_to(np.asarray(getattr(p, metric), float) * s, b.shape),
            "fits": np.broadcast_to(np.asarray(p.fits, bool), b.shape), "devices": p.devices,
            "power_w": p.config.get("power_w"), MULTIPLIER_KEY: s, "assumptions": list(p.assumptions),
            "spec_decode": p.config.get("spec_decode", "off")}


def best_at(curve: dict[str, Any], floor: float) -> dict[str, Any]:
    """Best metric over the curve's points that fit and give each user at least ``floor`` tok/s.

    ``value`` is 0 when no point qualifies (the operating point is out of reach).
    """
    user, value = curve["user"], curve["value"]
    ok = curve["fits"] & (user >= floor) & np.isfinite(value)
    out = {"reachable": bool(ok.any()), "max_per_user_tokens_per_s": float(user[0]),
           "devices": curve["devices"], "power_w": curve["power_w"],
           MULTIPLIER_KEY: curve[MULTIPLIER_KEY],
           "spec_decode": curve.get("spec_decode", "off"),
           "assumptions": curve["assumptions"], "value": 0.0, "batch": None, "per_user_tokens_per_s": None}
    if ok.any():
        k = int(np.flatnonzero(ok)[np.argmax(value[ok])])
        out.update(value=float(value[k]), batch=int(curve["batch"][k]), per_user_tokens_per_s=float(user[k]))
    return out


def evaluate_system(system: dict[str, Any], model: str, metric: str, op: OperatingPoint) -> dict[str, Any]:
    """Best ``metric`` of one deployment at the operating point (module docstring, step 1).

    Returns
    -------
    dict
        ``value`` (0 if the point is out of reach), ``batch``, ``per_user_tokens_per_s``, ``power_w``,
        ``devices``, ``reachable``, ``max_per_user_tokens_per_s`` (batch 1) and the deployment's
        ``assumptions``.
    """
    return best_at(system_curve(system, model, metric, op), op.per_user_tokens_per_s or 0.0)


@dataclass
class ClaimCheck:
    """Result of :func:`check_claim` (all values SI; ratios dimensionless)."""

    claim: Claim
    baseline: dict[str, Any] | None
    candidate: dict[str, Any]
    ratio: float | None
    needed: list[dict[str, Any]]
    sensitivity: pd.DataFrame = field(repr=False)
    verdict: str = ""
    interactivity: pd.DataFrame | None = field(default=None, repr=False)
    ratio_note: str = ""

    def as_dict(self) -> dict[str, Any]:
        c = self.claim
        return {"id": c.id, "title": c.title, "source": c.source, "metric": c.metric,
                "claim_type": c.claim_type, "claimed": c.claimed, "predicted_ratio": self.ratio,
                "ratio_note": self.ratio_note,
                "operating_point": c.operating_point.model_dump(exclude_none=True),
                "baseline": self.baseline, "candidate": self.candidate, "stated": c.stated,
                "assumed": c.assumed, "assumptions_needed": self.needed,
                "sensitivity": self.sensitivity.to_dict(orient="records"), "verdict": self.verdict,
                "interactivity": None if self.interactivity is None
                else self.interactivity.to_dict(orient="records")}


class _Evaluator:
    """Evaluates a claim with some unknowns overridden; caches systems by their full description."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self.cache: dict[str, dict[str, Any]] = {}

    def systems(self, overrides: dict[str, Any]) -> tuple[dict | None, dict, OperatingPoint]:
        c = self.claim
        tree = {"baseline": copy.deepcopy(c.baseline), "candidate": copy.deepcopy(c.candidate),
                "operating_point": c.operating_point.model_dump()}
        for u in c.unknowns:
            value = overrides.get(u.name, u.nominal)
            if value is None:  # nominal null: the claim's own value stays
                continue
            for path in u.paths:
                _set(tree, path.split("."), u.si(value))
        return tree["baseline"], tree["candidate"], OperatingPoint(**tree["operating_point"])

    def curve(self, sysmap: dict, op: OperatingPoint) -> dict[str, Any]:
        key = json.dumps([sysmap, op.model_dump(exclude={"per_user_tokens_per_s"})], sort_keys=True,
                         default=str)
        if key not in self.cache:
            self.cache[key] = system_curve(sysmap, self.claim.model, self.claim.metric, op)
        return self.cache[key]

    def system(self, sysmap: dict, op: OperatingPoint) -> dict[str, Any]:
        return best_at(self.curve(sysmap, op), op.per_user_tokens_per_s or 0.0)

    def interactivity(self, floors: list[float]) -> pd.DataFrame:
        """Ratio at several per-user speed floors (nominal unknowns): where the claim could hold."""
        base_map, cand_map, op = self.systems({})
        rows = []
        for v in floors:
            cand = best_at(self.curve(cand_map, op), v)
            base = best_at(self.curve(base_map, op), v) if base_map is not None else None
            bv = base["value"] if base else self.claim.claimed
            r = cand["value"] / bv if bv > 0 else (np.inf if cand["value"] > 0 else np.nan)
            rows.append({"per_user_floor_tokens_per_s": v, "candidate": cand["value"],
                         "candidate_batch": cand["batch"], "baseline": base["value"] if base else None,
                         "baseline_batch": base["batch"] if base else None, **_public_ratio(r, base, cand, v)})
        return _frame(rows)

    def ratio(self, overrides: dict[str, Any]) -> tuple[float, dict | None, dict]:
        base_map, cand_map, op = self.systems(overrides)
        cand = self.system(cand_map, op)
        if self.claim.claim_type == "value":
            return cand["value"] / self.claim.claimed, None, cand
        base = self.system(base_map, op)  # type: ignore[arg-type]
        r = cand["value"] / base["value"] if base["value"] > 0 else (np.inf if cand["value"] > 0 else np.nan)
        if not base["reachable"] and not cand["reachable"]:
            r, base, cand = self._reachable_floor(base_map, cand_map, op, base, cand)
        return float(r), base, cand

    def _reachable_floor(self, base_map: dict, cand_map: dict, op: OperatingPoint, base: dict,
                         cand: dict) -> tuple[float, dict, dict]:
        """Neither system reaches the claim's per-user floor: the ratio at the highest floor both reach.

        That floor is the smaller of the two best per-user speeds (batch 1); each side's result keeps
        ``value`` 0 at the claim's floor and gains ``at_reachable_floor`` (floor, value, batch).
        """
        floor = min(base["max_per_user_tokens_per_s"], cand["max_per_user_tokens_per_s"])
        b2, c2 = best_at(self.curve(base_map, op), floor), best_at(self.curve(cand_map, op), floor)
        r = c2["value"] / b2["value"] if b2["value"] > 0 else np.nan
        extra = {"per_user_floor_tokens_per_s": floor}
        base = {**base, "at_reachable_floor": {**extra, "value": b2["value"], "batch": b2["batch"]}}
        cand = {**cand, "at_reachable_floor": {**extra, "value": c2["value"], "batch": c2["batch"]}}
        return float(r), base, cand


def _scan(u: Unknown, points: int) -> list[Any]:
    if u.values is not None:
        return list(u.values)
    lo, hi = u.si(u.low), u.si(u.high)
    grid = np.geomspace(lo, hi, points) if u.log else np.linspace(lo, hi, points)
    return [float(x) for x in grid]


#: A root of R(x) = claimed is accepted when R there is within this relative distance of the claim;
#: otherwise the sign change was a jump (a system starting or stopping to reach the per-user floor).
SOLVE_RTOL = 0.01


def _solve(ev: _Evaluator, u: Unknown, xs: list[Any], rs: list[float], goal: float) -> dict[str, Any]:
    unit = {"time": "s", "power": "W", "bandwidth": "B/s", "flops": "FLOP/s", "bytes": "B"}.get(u.dimension, "")
    finite = [r for r in rs if np.isfinite(r)]
    span = [min(finite), max(finite)] if finite else [None, None]
    spans = f"{span[0]:.3g}-{span[1]:.3g}" if finite else "not formed at any scanned value"
    out = {"unknown": u.name, "path": u.path, "nominal": u.nominal, "unit": unit, "note": u.note,
           "ratio_range": span, "value_needed": None}
    if u.values is not None:
        meets = [x for x, r in zip(xs, rs, strict=True) if r >= goal]
        unbounded = [x for x, r in zip(xs, rs, strict=True) if r == np.inf]
        out["values_meeting_claim"] = meets
        out["finding"] = (f"claim met with {u.name} in {meets}" if meets
                          else f"no listed value of {u.name} reaches the claim (ratio {spans})")
        if unbounded:
            out["finding"] += (f"; with {u.name} in {unbounded} only the baseline cannot reach the per-user floor, "
                               f"so the ratio has no upper bound")
        return out
    from scipy.optimize import brentq  # imported on use: keeps the import of perfmodel.planning light

    def g(r: float) -> float:  # an unreachable baseline gives inf: clip so that brentq can bracket it
        return float(min(r, 1e12) - goal)

    gs = [g(r) for r in rs]
    jump = None
    for k in range(len(xs) - 1):
        if np.isfinite(gs[k]) and np.isfinite(gs[k + 1]) and gs[k] * gs[k + 1] <= 0:
            x = xs[k] if gs[k] == 0 else brentq(lambda v: g(ev.ratio({u.name: v})[0]), xs[k], xs[k + 1],
                                                xtol=1e-12, rtol=1e-4, maxiter=60)
            if abs(ev.ratio({u.name: x})[0] / goal - 1.0) > SOLVE_RTOL:
                jump = jump if jump is not None else float(x)   # a step across the claim, not a root
                continue
            out["value_needed"] = float(x)
            out["finding"] = f"{u.name} = {x:.4g}{unit and ' ' + unit} gives the claimed ratio (others nominal)"
            return out
    out["finding"] = f"{u.name} alone cannot reach the claim within [{u.low}, {u.high}]: ratio spans {spans}"
    if jump is not None:
        out["finding"] += (f"; it jumps across the claimed value at {u.name} = {jump:.4g}{unit and ' ' + unit}, where a system "
                           f"starts or stops reaching the per-user floor")
    return out


def check_claim(claim: str | Path | dict | Claim, points: int = 9) -> ClaimCheck:
    """Check a claim against perfmodel (steps 1–4 of the module docstring).

    Parameters
    ----------
    claim : str | Path | dict | Claim
        Shipped claim id (:func:`list_claims`), YAML path, mapping or instance.
    points : int
        Scan points per continuous unknown (sensitivity and brackets for brentq).

    Notes
    -----
    For iso-interactivity claims the result also holds ``interactivity``: the ratio at per-user speed
    floors from v/16 to 2v with the nominal unknowns, to show where (if anywhere) the claim could hold.

    Returns
    -------
    ClaimCheck
        ``ratio`` at the nominal assumptions, both systems' operating details, ``needed`` (one entry
        per unknown: the value giving the claimed ratio, or why none does) and ``sensitivity``
        (unknown, value, ratio).
    """
    c = load_claim(claim)
    if points < 2:
        raise ConfigError(f"points: need at least 2, got {points}")
    ev = _Evaluator(c)
    ratio, base, cand = ev.ratio({})
    goal = c.claimed if c.claim_type == "ratio" else 1.0
    rows, needed = [], []
    floor = c.operating_point.per_user_tokens_per_s or 0.0
    for u in c.unknowns:
        xs = _scan(u, points)
        results = [ev.ratio({u.name: x}) for x in xs]
        rs = [r for r, _, _ in results]
        rows += [{"unknown": u.name, "value": x, **_public_ratio(r, b, s, floor)}
                 for x, (r, b, s) in zip(xs, results, strict=True)]
        needed.append(_solve(ev, u, xs, rs, goal))
    curve = None
    if c.operating_point.per_user_tokens_per_s is not None:
        v = c.operating_point.per_user_tokens_per_s
        curve = ev.interactivity(sorted({*(float(x) for x in np.geomspace(v / 16, v * 2, 9).round()), v}))
    public = _public_ratio(ratio, base, cand, floor)
    return ClaimCheck(c, base, cand, public["ratio"], needed, _frame(rows), _verdict(c, ratio, base, cand), curve,
                      public["ratio_note"])


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows as a frame that keeps None (a missing value) as None, not NaN."""
    return pd.DataFrame(rows, dtype=object) if rows else pd.DataFrame(rows)


def _public_ratio(r: float, base: dict | None, cand: dict, floor: float) -> dict[str, Any]:
    """``{"ratio": r, "ratio_note": ""}``, or None and the reason where r is not a finite number."""
    if np.isfinite(r):
        low = cand.get("at_reachable_floor")
        return {"ratio": float(r), "ratio_note": "" if low is None else
                f"unreachable for both at {floor:g} tok/s per user: ratio taken at the highest speed both reach, "
                f"{low['per_user_floor_tokens_per_s']:.4g} tok/s per user"}
    best = f"best {cand['max_per_user_tokens_per_s']:.4g}"
    if base is None:
        why = f"the claimed value is not positive ({best} tok/s per user)"
    elif cand["value"] > 0:
        why = (f"unreachable for the baseline: best is {base['max_per_user_tokens_per_s']:.4g} tok/s per user "
               f"(floor {floor:g}); the candidate reaches it, so the ratio has no upper bound")
    else:
        why = (f"unreachable for both at {floor:g} tok/s per user: best is {base['max_per_user_tokens_per_s']:.4g} "
               f"(baseline) and {cand['max_per_user_tokens_per_s']:.4g} (candidate)")
    return {"ratio": None, "ratio_note": why}


def _verdict(c: Claim, ratio: float, base: dict | None, cand: dict) -> str:
    op = c.operating_point
    where = (f"at >= {op.per_user_tokens_per_s:g} tok/s per user" if op.per_user_tokens_per_s
             else f"at batch {op.batch}") + f", ISL {op.isl} / OSL {op.osl}"
    if c.claim_type == "value":
        return (f"perfmodel predicts {cand['value']:.4g} {c.metric} {where}: {ratio:.3g}x the claimed "
                f"{c.claimed:g} at the nominal assumptions")
    parts = [f"perfmodel predicts a ratio of {ratio:.3g} (claimed {c.claimed:g}) {where}" if np.isfinite(ratio)
             else f"perfmodel cannot form the ratio {where} (claimed {c.claimed:g})"]
    for name, s in (("baseline", base), ("candidate", cand)):
        if s is not None and not s["reachable"]:
            spec = s.get("spec_decode") or "off"
            more = "than its speculative decoding gives" if spec != "off" else "e.g. from speculative decoding"
            parts.append(f"the {name} cannot reach the operating point (unreachable: best is "
                         f"{s['max_per_user_tokens_per_s']:.4g} tok/s per user, at batch 1, speculative decoding "
                         f"{spec.split(' (')[0]}; it would need "
                         f"{op.per_user_tokens_per_s / s['max_per_user_tokens_per_s']:.3g}x more tokens per "
                         f"step, {more})")
    if base is not None and "at_reachable_floor" in cand:
        floor = cand["at_reachable_floor"]["per_user_floor_tokens_per_s"]
        parts[0] = (f"the claimed operating point is unreachable for both systems {where}: perfmodel's "
                    f"ratio {ratio:.3g} (claimed {c.claimed:g}) is taken at the highest per-user speed both "
                    f"reach, {floor:.4g} tok/s")
    return "; ".join(parts)
