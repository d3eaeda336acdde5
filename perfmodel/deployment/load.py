"""Reading deployment files and mappings into a validated :class:`~.schema.Deployment`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import SpecError
from ..hardware.registry import read_yaml
from ..spec_base import format_validation_error
from ..units import units_required
from .schema import Deployment


def rebase_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Make relative hardware / model file paths (``model``, ``pools.*.hardware``) relative to ``base``, the
    folder of the file that names them (a deployment file, or a claim file's baseline and candidate)."""

    def rebase(value: Any) -> Any:
        if isinstance(value, str) and value.endswith((".yaml", ".yml", ".json")) and not Path(value).is_absolute():
            return str(base / value)
        return value

    out = dict(data)
    if "model" in out:
        out["model"] = rebase(out["model"])
    if isinstance(out.get("pools"), dict):
        out["pools"] = {k: ({**v, "hardware": rebase(v.get("hardware"))} if isinstance(v, dict) else v)
                        for k, v in out["pools"].items()}
    return out


def load_deployment(source: str | Path | dict[str, Any] | Deployment, check: bool = True) -> Deployment:
    """Load and validate a deployment.

    Parameters
    ----------
    source : str | Path | dict | Deployment
        Path to a YAML file, a mapping with the same content, or a deployment (returned as is).
    check : bool
        Also resolve the model, the hardware and every pool's layouts, so that a deployment that
        cannot be predicted fails here, naming the field (default True).

    Returns
    -------
    Deployment

    Raises
    ------
    SpecError
        Malformed file, unknown or mistyped keys (the closest allowed key is suggested), bad
        quantities, placement naming unknown pools (the closest is suggested), missing links.
    UnknownNameError, ConfigError
        With ``check``: unknown model or hardware, layouts that do not fit the model.
    """
    if isinstance(source, Deployment):
        dep = source
    else:
        origin = "<deployment>"
        if isinstance(source, dict):
            data = source
        else:
            origin = str(source)
            data = read_yaml(source)
            if isinstance(data, dict):
                data = rebase_paths(data, Path(source).parent)
        if not isinstance(data, dict):
            got = "an empty file" if data is None else type(data).__name__
            raise SpecError(f"{origin}: expected a mapping with model, pools and placement, got {got}")
        try:
            if origin == "<deployment>":
                dep = Deployment.model_validate(data)
            else:
                with units_required():  # a file writes quantities with their units
                    dep = Deployment.model_validate(data)
        except ValidationError as exc:
            raise SpecError(f"{origin}: " + format_validation_error(exc, Deployment)) from None
    if check:
        from .placement import DeploymentPlan

        DeploymentPlan(dep)
    return dep
