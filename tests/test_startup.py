"""Start-up: ``import perfmodel`` and ``perfmodel --help`` import no heavy dependency, while every public
name still resolves (lazy exports, :mod:`perfmodel._lazy`). Times are measured by
``benchmarks/bench_startup.py``, not asserted here."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("scipy", "matplotlib", "pandas", "numpy", "pydantic", "pint")
#: Packages whose public names are lazy.
LAZY_PACKAGES = ("perfmodel", "perfmodel.calibration", "perfmodel.dataflow", "perfmodel.deployment", "perfmodel.hardware",
                 "perfmodel.modelspec", "perfmodel.planning", "perfmodel.plots", "perfmodel.serving",
                 "perfmodel.validation")


def _heavy_modules_after(code: str) -> list[str]:
    """Top-level heavy packages in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = code + f"\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_import_perfmodel_imports_no_heavy_dependency():
    assert _heavy_modules_after("import perfmodel") == []


def test_cli_help_parser_imports_no_heavy_dependency():
    assert _heavy_modules_after("from perfmodel.cli import build_parser\nbuild_parser().format_help()") == []


def test_public_name_imports_what_it_needs():
    """The probe can see heavy imports: using ``predict`` does bring numpy in."""
    assert "numpy" in _heavy_modules_after("from perfmodel import predict")


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_resolves_to_the_object_not_a_module(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        assert not isinstance(value, types.ModuleType), f"{package}.{name} is a module"
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_all_lists_exactly_the_lazy_imports(package):
    """``__all__`` and the ``if TYPE_CHECKING:`` imports (the lazy table) name the same things."""
    path = Path(importlib.import_module(package).__file__)
    tree = ast.parse(path.read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    imported = {a.asname or a.name for stmt in block.body for a in stmt.names}
    assert imported == set(importlib.import_module(package).__all__)


def test_submodule_named_like_a_function_does_not_shadow_it():
    """``perfmodel/planning/sweep.py`` defines ``sweep``: importing the submodule first must not bind the
    module under the function's name (the eager case in perfmodel._lazy)."""
    code = ("import perfmodel.planning.sweep, perfmodel.planning.plan, perfmodel.serving.steady_state\n"
            "import perfmodel.planning as pl, perfmodel.serving as sv\n"
            "from perfmodel import sweep\n"
            "print(type(pl.sweep).__name__, type(pl.plan).__name__, type(sv.steady_state).__name__,"
            " type(sweep).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["function"] * 4


def test_submodules_are_reachable_as_attributes_and_unknown_names_fail():
    import perfmodel as pm

    assert pm.plots.__name__ == "perfmodel.plots"
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        pm.no_such_thing  # noqa: B018


def test_version_flag_prints_the_package_version():
    import perfmodel as pm
    tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11+")

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    out = subprocess.run([sys.executable, "-m", "perfmodel", "--version"], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == f"perfmodel {version}" == f"perfmodel {pm.__version__}"


@pytest.mark.slow
def test_startup_benchmark_runs():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_startup.py"), "--repeat", "1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "import perfmodel: -X importtime total" in out.stdout and "perfmodel --help" in out.stdout
