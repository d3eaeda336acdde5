"""Progress bars for long runs: one small wrapper over ``tqdm.auto``, on stderr.

Used by the serving simulator (share of the run done), :func:`perfmodel.serving.max_load` (simulations
of the bisection), :func:`perfmodel.planning.plan` (candidates), :func:`perfmodel.planning.sweep`
(step-model groups) and :func:`perfmodel.validation.validate_file` (rows).

``progress`` means the same everywhere:

- ``False`` (the default of every API function, so scripts and logs stay clean): no bar, and tqdm is
  not even imported;
- ``True``: always a bar; ``tqdm.auto`` draws a widget in a notebook with ``ipywidgets`` installed and
  a text bar otherwise (terminals, and notebooks without widgets);
- ``None``: a bar only when stderr is a terminal (what the command line does unless ``--quiet``).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

#: Seconds before a bar appears (shorter runs print nothing).
DELAY_S = 0.5


def wanted(progress: bool | None) -> bool:
    """Whether a bar is drawn for ``progress`` (``None``: only when stderr is a terminal)."""
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty and isatty())
    return bool(progress)


def _tqdm() -> Any:
    with warnings.catch_warnings():
        # tqdm.auto warns once in a notebook without ipywidgets, then draws a text bar: that is fine
        warnings.simplefilter("ignore")
        from tqdm.auto import tqdm
    return tqdm


class Bar:
    """A progress bar over ``total`` steps, or nothing when ``progress`` does not want one.

    Parameters
    ----------
    total : float
        Steps to the end (an upper bound is fine: :meth:`close` marks the bar done).
    desc : str
        Label in front of the bar.
    progress : bool or None
        See the module docstring.
    unit : str
        Name of one step (``"row"``, ``"simulation"``...).
    """

    def __init__(self, total: float, desc: str, progress: bool | None = False, unit: str = "it") -> None:
        self._bar = None
        if wanted(progress):
            self._bar = _tqdm()(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                                delay=DELAY_S, dynamic_ncols=True)

    @property
    def shown(self) -> bool:
        """True when a bar is drawn."""
        return self._bar is not None

    def update(self, n: float = 1) -> None:
        """Advance by ``n`` steps."""
        if self._bar is not None:
            self._bar.update(n)

    def to(self, done: float) -> None:
        """Move to ``done`` steps from the start (never backwards)."""
        if self._bar is not None and done > self._bar.n:
            self._bar.update(done - self._bar.n)

    def note(self, text: str) -> None:
        """Show ``text`` after the bar (e.g. the load being simulated)."""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        """Draw the final count, then remove the bar."""
        if self._bar is not None:
            self._bar.refresh()
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
