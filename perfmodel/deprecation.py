"""Deprecated argument names: the marker default of an old name and the rule that reads it.

Kept apart from :mod:`perfmodel.formats` (which re-exports both) so that low-level modules such as
:mod:`perfmodel.modelspec.derived` can use them without importing the format rules, which look up
checkpoint formats through the model loaders.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

from .errors import ConfigError


class _Deprecated:
    """Default of a deprecated argument's old name in a signature (means "not passed")."""

    def __repr__(self) -> str:
        return "<deprecated>"


#: Default of every deprecated old argument name (``precision=``, ``precisions=``).
DEPRECATED = _Deprecated()


def renamed(new: str, new_value: Any, old: str, old_value: Any, where: str, unset: Any = DEPRECATED) -> Any:
    """The value of a renamed argument; the old spelling works and warns (:class:`DeprecationWarning`).

    Parameters
    ----------
    new, old : str
        Argument names (``"weights"``, ``"precision"``).
    new_value, old_value : Any
        What the caller passed under each (``unset`` when not passed).
    where : str
        The function's name, for the messages.
    unset : Any
        The value meaning "not passed" (default :data:`DEPRECATED`).

    Raises
    ------
    ConfigError
        Both spellings given.
    """
    if old_value is unset:
        return new_value
    if new_value is not None and new_value is not unset:
        raise ConfigError(f"{where}: give {new}= only ({old}= is its deprecated old name), not both")
    warnings.warn(f"{where}: {old}= is deprecated, use {new}=", DeprecationWarning, stacklevel=3)
    return old_value


_PACKAGE = str(Path(__file__).resolve().parent)


def stacklevel_outside() -> int:
    """The ``stacklevel`` of :func:`warnings.warn` that names the first caller outside perfmodel (the
    user's line), however deep inside the package the call to the function asking is."""
    frame, level = sys._getframe(1), 1
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def renamed_columns(table, renames: dict[str, str], where: str, meaning: str):
    """``table`` (a DataFrame) with the old column names of ``renames`` (old -> new) replaced by the new ones.

    A :class:`DeprecationWarning` names them (at the first caller outside perfmodel); ``table`` itself is
    returned when it has none. Where both names are columns, the new one is kept and the old one dropped.

    Parameters
    ----------
    table : pandas.DataFrame
        The table read.
    renames : dict
        Old column name -> new column name.
    where : str
        What read the table, for the message.
    meaning : str
        What the renamed columns hold, for the message (``"means over requests"``).
    """
    old = [c for c in table.columns if c in renames]
    if not old:
        return table
    warnings.warn(f"{where}: column(s) {old} renamed to {[renames[c] for c in old]} ({meaning}); the old names "
                  "are read for one release", DeprecationWarning, stacklevel=stacklevel_outside())
    twins = [c for c in old if renames[c] in table.columns]
    return table.drop(columns=twins).rename(columns=renames)
