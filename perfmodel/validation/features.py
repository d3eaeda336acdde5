"""Serving features a measured row may record: speculative decoding and prefix caching.

Optional columns of the ``serving_measured.csv`` schema (absent or empty: off):

``spec_decode``
    The command-line spelling (``mtp:k=3``, ``eagle:k=4,accept=0.7``,
    :func:`perfmodel.engine.speculative.parse_spec_decode`) or ``off`` / ``none`` / ``n`` / ``no`` /
    ``0`` / ``false``. A bare ``y`` / ``yes`` / ``on`` says speculation ran without saying which: the
    row cannot be predicted and is skipped with that reason.
``prefix_hit_rate``
    Share of each prompt found in the engine's prefix cache, 0 to < 1 (passed to the steady state).
``prefix_caching``
    ``on`` / ``off`` (or yes/no, true/false, 1/0): whether the engine's prefix cache was enabled.
    On without ``prefix_hit_rate`` is predicted with a hit rate of 0 (a benchmark of distinct
    prompts finds nothing in the cache) and still grouped under ``on``.

:func:`row_features` reads them; ``validate`` passes them to the prediction and reports the error by
``spec_decode`` (the method, or ``off``) and ``prefix_caching`` (``on`` / ``off``).
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import PerfmodelError

#: Optional feature columns (read when present).
FEATURE_COLUMNS = ("spec_decode", "prefix_hit_rate", "prefix_caching")
_OFF = {"", "off", "none", "n", "no", "0", "false", "nan"}
_ON = {"y", "yes", "on", "1", "true"}


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def row_features(row: dict) -> dict[str, Any]:
    """``spec_decode`` (the method or ``off``: the group reported), ``spec_decode_label`` (the
    configuration with its per-position rates and their source), ``spec_decode_text`` (the cell as
    written, parsed again for the prediction), ``prefix_hit_rate`` and
    ``prefix_caching`` (``on`` / ``off``) of one row.

    Raises
    ------
    ValueError
        A value that cannot be read; the message names the column, the value and what is allowed.
    """
    from ..engine.speculative import parse_spec_decode

    text = _cell(row.get("spec_decode"))
    if text.lower() in _ON:
        raise ValueError(f"spec_decode={text!r} says speculation ran but not which method and k; write it as "
                         f"e.g. mtp:k=3 or eagle:k=4,accept=0.7")
    try:
        spec = None if text.lower() in _OFF else parse_spec_decode(text)
    except PerfmodelError as exc:
        raise ValueError(f"spec_decode={text!r}: {exc}") from None
    raw = _cell(row.get("prefix_hit_rate"))
    try:
        hit = float(raw) if raw else 0.0
    except ValueError:
        hit = math.nan
    if not (0.0 <= hit < 1.0):
        raise ValueError(f"prefix_hit_rate={raw!r} is not a number in [0, 1)")
    flag = _cell(row.get("prefix_caching")).lower()
    if flag not in _OFF | _ON:
        raise ValueError(f"prefix_caching={row.get('prefix_caching')!r} is not on/off (yes/no, true/false, 1/0)")
    return {"spec_decode": "off" if spec is None else spec.method,
            "spec_decode_label": "off" if spec is None else f"{spec.label()} ({spec.acceptance_source})",
            "spec_decode_text": "off" if spec is None else text,
            "prefix_hit_rate": hit, "prefix_caching": "on" if hit > 0 or flag in _ON else "off"}
