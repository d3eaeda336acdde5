"""The keys a claim's baseline and candidate take beside the deployment's own, and their old names.

A claim side is a deployment mapping (:class:`perfmodel.deployment.schema.Deployment`) plus
:data:`MULTIPLIER_KEY`: a factor on the tokens each sequence gets per decode step, at no extra step time
(the per-user speed and the metric are multiplied by it; default 1). It was called ``speedup``, which in
:func:`perfmodel.deployment.scaling_curve` is an output, the TPOT ratio between device counts; the old
key (and an unknown's path ending in it) is read for one release with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..deprecation import stacklevel_outside
from ..errors import closest

#: The claim-only key of a side: multiplier of a system's tokens per decode step (no verification cost).
MULTIPLIER_KEY = "tokens_per_step_multiplier"

#: Old claim-side keys -> their new names.
RENAMED_KEYS = {"speedup": MULTIPLIER_KEY}

SIDES = ("baseline", "candidate")


def _renamed(old: str, where: str) -> str:
    new = RENAMED_KEYS[old]
    warnings.warn(f"{where}: the claim key {old!r} is deprecated, use {new!r} (a multiplier of the tokens per "
                  "decode step; 'speedup' names scaling_curve's TPOT ratio)", DeprecationWarning,
                  stacklevel=stacklevel_outside())
    return new


def renamed_side(side: dict[str, Any], where: str) -> dict[str, Any]:
    """``side`` with its old keys (:data:`RENAMED_KEYS`) under their new names, after a warning.

    Raises
    ------
    ValueError
        Both the old and the new name given.
    """
    out = dict(side)
    for old in [k for k in side if k in RENAMED_KEYS]:
        new = RENAMED_KEYS[old]
        if new in side:
            raise ValueError(f"{where}: give {new!r} only ({old!r} is its deprecated old name), not both")
        out[_renamed(old, where)] = out.pop(old)
    return out


def renamed_path(path: str, where: str) -> str:
    """An unknown's ``path`` with an old claim-side key (``candidate.speedup``) renamed, after a warning."""
    parts = path.split(".")
    if len(parts) == 2 and parts[0] in SIDES and parts[1] in RENAMED_KEYS:
        return f"{parts[0]}.{_renamed(parts[1], where)}"
    return path


def check_side_keys(side: dict[str, Any], where: str) -> None:
    """Refuse a top-level key of ``side`` that is neither a deployment field nor :data:`MULTIPLIER_KEY`.

    Raises
    ------
    ValueError
        Naming the key, the closest allowed ones and all of them.
    """
    from ..deployment.schema import Deployment

    allowed = [f.alias or name for name, f in Deployment.model_fields.items()] + [MULTIPLIER_KEY]
    for key in side:
        if key not in allowed:
            near = closest(str(key), allowed, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise ValueError(f"{where}: unknown key {key!r} (typo?); {hint}allowed keys: {', '.join(allowed)}")


def normalise(data: dict[str, Any]) -> dict[str, Any]:
    """A claim mapping with old keys renamed (warning once each) and each side's keys checked."""
    out = dict(data)
    for side in SIDES:
        if isinstance(out.get(side), dict):
            out[side] = renamed_side(out[side], side)
            check_side_keys(out[side], side)
    if isinstance(out.get("unknowns"), list):
        out["unknowns"] = [_unknown_paths(u) for u in out["unknowns"]]
    return out


def _unknown_paths(u: Any) -> Any:
    if not isinstance(u, dict) or "path" not in u:
        return u
    where = f"unknown {u.get('name', '?')!r}"
    p = u["path"]
    return {**u, "path": renamed_path(p, where) if isinstance(p, str)
            else [renamed_path(x, where) if isinstance(x, str) else x for x in p]}
