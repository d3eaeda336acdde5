"""One strict pydantic base (issue #16): every declarative spec class derives from
:class:`perfmodel.spec_base.Strict` (unknown keys are errors, instances are frozen)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from perfmodel.spec_base import Strict

SRC = Path(__file__).resolve().parents[1] / "perfmodel"
SPEC_MODULES = ["perfmodel.hardware.schema", "perfmodel.engine.profile", "perfmodel.serving.workload",
                "perfmodel.deployment.schema", "perfmodel.planning.claims", "perfmodel.dataflow.arch"]


def test_only_the_base_subclasses_basemodel():
    direct = []
    for path in sorted(SRC.rglob("*.py")):
        if "hardware_specs" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b).endswith("BaseModel") for b in node.bases):
                direct.append(f"{path.relative_to(SRC.parent)}:{node.name}")
    assert direct == ["perfmodel/spec_base.py:Strict"]


@pytest.mark.parametrize("module", SPEC_MODULES)
def test_spec_classes_are_strict(module):
    classes = [c for _, c in inspect.getmembers(importlib.import_module(module), inspect.isclass)
               if issubclass(c, BaseModel) and c.__module__ == module]
    assert classes, module
    for cls in classes:
        assert issubclass(cls, Strict), cls
        assert cls.model_config["extra"] == "forbid" and cls.model_config["frozen"], cls


def test_hardware_figures_are_frozen_and_closed():
    from perfmodel.hardware.schema import Figure

    fig = Figure(value=1.0, source="https://example.org")
    with pytest.raises(ValidationError):
        fig.value = 2.0
    with pytest.raises(ValidationError, match="extra"):
        Figure(value=1.0, typo=3)
