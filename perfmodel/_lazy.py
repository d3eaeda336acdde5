"""Lazy public names for packages (PEP 562), so that ``import perfmodel`` costs no numpy, pydantic,
pint, pandas, scipy or matplotlib until a name that needs them is used.

A package lists its public names once, as ordinary imports inside ``if TYPE_CHECKING:`` (so that type
checkers, editors and the API docs see them), and ends with::

    __getattr__, __dir__ = lazy_exports(__name__, __file__)

:func:`lazy_exports` reads those import statements from the package's source and returns the two
module-level hooks: the first access to a name imports its submodule and binds the name on the package
(later accesses are plain attribute look-ups); ``dir()`` lists the lazy names too.

A public name spelled like a submodule of the same package (``perfmodel.planning.sweep`` is both the
function and the module ``sweep.py``) is imported at once: otherwise importing the submodule from
anywhere would bind the module object under the function's name.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
from collections.abc import Callable


def _type_checking_imports(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Public name -> (relative module, attribute) for every ``from .x import a as b`` under
    ``if TYPE_CHECKING:`` at the top level of ``tree``."""
    exports: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.ImportFrom) or stmt.level == 0:
                raise ImportError(f"lazy exports: only relative 'from .x import y' statements are allowed "
                                  f"under TYPE_CHECKING (line {stmt.lineno})")
            module = "." * stmt.level + (stmt.module or "")
            for alias in stmt.names:
                exports[alias.asname or alias.name] = (module, alias.name)
    return exports


def lazy_exports(package: str, init_file: str) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` for a package whose public names are imported on use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    init_file : str
        The package's ``__file__`` (its ``__init__.py``), whose ``if TYPE_CHECKING:`` block lists the
        public names as relative imports.

    Returns
    -------
    (__getattr__, __dir__)
        ``__getattr__(name)`` imports the name's submodule, binds the name on the package and returns
        it; a name that is not exported but is a submodule of the package is imported as that submodule;
        anything else raises :class:`AttributeError`. ``__dir__()`` lists bound and lazy names.
    """
    with open(init_file, encoding="utf-8") as fh:
        exports = _type_checking_imports(ast.parse(fh.read(), init_file))
    namespace = vars(sys.modules[package])
    folder = os.path.dirname(init_file)

    def is_submodule(name: str) -> bool:
        return os.path.isfile(os.path.join(folder, name + ".py")) or os.path.isfile(
            os.path.join(folder, name, "__init__.py"))

    def __getattr__(name: str) -> object:
        if name in exports:
            module, attribute = exports[name]
            value = getattr(importlib.import_module(module, package), attribute)
        elif not name.startswith("_") and is_submodule(name):
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    for name in exports:
        if is_submodule(name):
            __getattr__(name)
    return __getattr__, __dir__
