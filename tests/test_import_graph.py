"""The package's import graph has no cycles, and the package never guards imports of its own modules.

The graph is built from the sources with :mod:`ast` (nothing is imported): one node per module of
``perfmodel/`` (a package is its ``__init__``), one edge per ``import`` / ``from ... import`` of
another of its modules. An edge to ``pkg.sub`` does not add one to ``pkg`` (the implicit import of the
parent package is left out: every package imports its own submodules lazily, see perfmodel._lazy).
Imports under ``if TYPE_CHECKING:`` never run and are left out; imports inside functions run on first
use and are left out of the module-level graph (issue #16), but kept in the second test, which checks
that none of them is there to hide a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "perfmodel"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package)."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[1:2] == ["hardware_specs"]:  # data folder (a symlink in worktrees), no code
            continue
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(body: list[ast.stmt], functions: bool):
    """Import statements that run when the module (or, with ``functions``, any of its code) runs."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if functions:
                yield from _imports(node.body, functions)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _imports(node.body, functions)
            yield from _imports(node.orelse, functions)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _imports(block, functions)
        elif isinstance(node, (ast.ClassDef, ast.With, ast.AsyncWith, ast.For, ast.While)):
            yield from _imports(node.body, functions)


def _targets(node: ast.Import | ast.ImportFrom, module: str, package: bool, known) -> set[str]:
    """Modules of the package that one import statement imports."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    if node.level:
        base = module.split(".") if package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source not in known:
        return set()
    subs = {f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in known}
    if node.module is None and len(subs) == len(node.names):  # from . import a, b: submodules only
        return subs
    return subs | {source}


def import_graph(functions: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (see the module docstring)."""
    known = _modules()
    graph = {}
    for name, (path, package) in known.items():
        deps: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")).body, functions):
            deps |= _targets(node, name, package, known)
        graph[name] = deps - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_cycle_finder_by_hand():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}}
    assert sorted(cycles(g)) == [["a", "b", "c"], ["e", "e2"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_graph_sees_relative_and_absolute_imports():
    """The parser finds edges that are there (else an empty graph would pass)."""
    g = import_graph()
    assert {"perfmodel.core.step_costs", "perfmodel.modelspec"} <= g["perfmodel.core.step"]
    assert {"perfmodel.core.ops", "perfmodel.core.work"} <= g["perfmodel.core.step_costs"]
    assert "perfmodel.core.predict" not in g["perfmodel"]  # under TYPE_CHECKING (lazy export)
    assert "perfmodel.dataflow.arch" not in g["perfmodel.core.efficiency"]  # inside a function
    assert "perfmodel.dataflow.arch" in import_graph(functions=True)["perfmodel.core.efficiency"]
    assert sum(map(len, g.values())) > 300


@pytest.mark.parametrize("functions", [False, True], ids=["module-level", "with-function-level"])
def test_no_import_cycles(functions):
    """No cycle among module-level imports; and none that a function-level import is hiding (those
    are for lazy loading only)."""
    assert cycles(import_graph(functions)) == []


def test_no_self_guarding_imports():
    """No ``try: from . import x / except ImportError``: the package's own modules are always there."""
    known = _modules()
    guarded = []
    for name, (path, package) in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Try):
                continue
            names = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
            if not names & {"ImportError", "ModuleNotFoundError", "(ImportError, ModuleNotFoundError)"}:
                continue
            for stmt in _imports(node.body, functions=True):
                if _targets(stmt, name, package, known):
                    guarded.append(f"{path.relative_to(SRC.parent)}:{stmt.lineno}")
    assert guarded == []
