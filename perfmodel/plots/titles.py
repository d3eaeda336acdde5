"""Figure titles that say what is drawn, read from the data itself.

A figure of perfmodel results is only comparable with another when its title says the model, the
hardware (or deployment) and its layout, the weight and KV-cache formats, the input and output lengths
and the serving engine. :func:`describe` reads these from what a plotting function was given — a
result frame's config columns (``model``, ``hardware``, ``deployment``, ``parallel``, ``precision``,
``isl``, ``osl``, ``engine``), a :class:`~perfmodel.core.predict.Prediction`'s ``config``, a
:class:`~perfmodel.core.step.StepModel`, or a load search's ``config`` — so the caller never types it.
A field with one value is stated; a field that varies is listed (up to three values) or counted, and
fields shown by the legend can be left out.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..core.step import StepModel

#: Fields a description is made of, in the order they are written.
FIELDS = ("model", "deployment", "hardware", "parallel", "precision", "isl", "osl", "engine")
#: Widest subtitle line [characters] before it wraps at a separator.
WIDTH = 95
_SEP = " · "
#: ``gid`` of the description text under an axes title.
SUBTITLE_GID = "perfmodel-subtitle"


def config_values(data: Any) -> dict[str, list[Any]]:
    """Distinct values of each description field found in ``data``, in order of appearance.

    Parameters
    ----------
    data : DataFrame | Prediction | DeploymentPrediction | StepModel | load search | mapping | None
        What a figure draws. Frames are read by column; results by their ``config`` (and ``isl`` /
        ``osl`` arrays); a StepModel by its model, device, layout and formats; a mapping as field ->
        value(s).

    Returns
    -------
    dict[str, list]
        Only the fields present; values as found (precision as ``"w:fp8 a:fp8 kv:fp8"``).
    """
    if data is None:
        return {}
    if isinstance(data, pd.DataFrame):
        return {f: _unique(data[f]) for f in FIELDS if f in data.columns}
    if isinstance(data, StepModel):
        return {"model": [data.model.id], "hardware": [data.hardware.id], "parallel": [data.parallel.label()],
                "precision": [data.precision.label()]}
    if hasattr(data, "config") and isinstance(data.config, Mapping):  # predictions, load searches
        out = {f: _unique(np.ravel(data.config[f])) for f in FIELDS if data.config.get(f) is not None}
        for f in ("isl", "osl"):
            value = getattr(data, f, None) if f not in out else None
            if value is not None:
                out[f] = _unique(np.ravel(value))
        return out
    if isinstance(data, Mapping):
        return {f: _unique(np.ravel(data[f])) for f in FIELDS if data.get(f) is not None}
    return {}


def describe(data: Any, *, omit: Iterable[str] = (), by: str | None = None, extra: Iterable[str] = ()) -> str:
    """One-line description of what ``data`` holds (wrapped at :data:`WIDTH` characters).

    Parameters
    ----------
    data : see :func:`config_values`
    omit : iterable of str
        Fields not to state.
    by : str, optional
        Column naming the legend's series (a frame's): it is not stated, nor are ``hardware`` and
        ``parallel`` when they vary but are constant within each series (a series is named after its
        devices: the legend tells them apart). Formats and lengths are always stated.
    extra : iterable of str
        Further items appended as they are (e.g. ``"decode, batch 16 @ 2048 tok"``).

    Returns
    -------
    str
        E.g. ``"llama-3.1-70b · h200-sxm tp8 · weights fp8, KV cache fp8 · ISL 2048 / OSL 256 tok ·
        engine vllm"``; empty when nothing is known.

    Examples
    --------
    >>> describe({"model": "llama-3.1-8b", "hardware": "h100-sxm", "isl": 1024, "osl": 128})
    'llama-3.1-8b · h100-sxm · ISL 1024 / OSL 128 tok'
    """
    vals = config_values(data)
    if by is not None and isinstance(data, pd.DataFrame) and by in data.columns:
        groups = data.groupby(by, sort=False)
        omit = [*omit, by, *(f for f in ("hardware", "parallel") if len(vals.get(f, ())) > 1
                             and (groups[f].nunique(dropna=True) <= 1).all())]
    for f in omit:
        vals.pop(f, None)
    items = [_listed(vals["model"], "models")] if "model" in vals else []
    if "deployment" in vals:
        items.append(_listed(vals["deployment"], "deployments"))
    if "hardware" in vals:
        layout = vals.get("parallel", [])
        hw = _listed(vals["hardware"], "hardware")
        items.append(f"{hw} {layout[0]}" if len(layout) == 1 and len(vals["hardware"]) == 1
                     else hw if not layout else f"{hw}, layouts {_listed(layout, 'layouts')}")
    elif "parallel" in vals:
        items.append(_listed(vals["parallel"], "layouts"))
    if "precision" in vals:
        items.append(_precision(vals["precision"]))
    if "isl" in vals or "osl" in vals:
        items.append(" / ".join(f"{name} {_span(vals[f])}" for f, name in (("isl", "ISL"), ("osl", "OSL"))
                                if f in vals) + " tok")
    if "engine" in vals:
        items.append(_engine(vals["engine"]))
    items += [str(e) for e in extra if e]
    return wrap(_SEP.join(i for i in items if i))


def wrap(text: str, width: int = WIDTH) -> str:
    """Break ``text`` into lines of at most ``width`` characters, at `` · `` separators where possible."""
    lines: list[str] = []
    for part in text.split(_SEP):
        if lines and len(lines[-1]) + len(_SEP) + len(part) <= width:
            lines[-1] += _SEP + part
        else:
            lines.extend(textwrap.wrap(part, width) or [""])
    return "\n".join(lines)


def set_title(ax: Axes, headline: str, about: str) -> None:
    """Title of one axes: the headline (bold) and under it, in smaller plain text, the description.

    The description is an annotation between the title and the axes (``gid`` :data:`SUBTITLE_GID`);
    calling again replaces it.
    """
    for old in [t for t in ax.texts if t.get_gid() == SUBTITLE_GID]:
        old.remove()
    if not about:
        ax.set_title(headline)
        return
    size = 8.0
    fig = ax.figure
    width_pt = ax.get_position().width * fig.get_figwidth() * 72.0
    chars = max(40, int(width_pt / (0.55 * size)))  # DejaVu Sans averages ~0.55 em per character
    about = "\n".join(wrap(line, chars) for line in about.split("\n"))
    ax.annotate(about, (0.5, 1.0), xycoords="axes fraction", xytext=(0, 5), textcoords="offset points",
                ha="center", va="bottom", fontsize=size, color="#333333", gid=SUBTITLE_GID,
                annotation_clip=False)
    ax.set_title(headline, pad=5 + 1.25 * size * (about.count("\n") + 1) + 3)


def title_parts(ax: Axes) -> tuple[str, str]:
    """The headline and the description (empty if none) of an axes titled by :func:`set_title`."""
    sub = [t.get_text() for t in ax.texts if t.get_gid() == SUBTITLE_GID]
    return ax.get_title(), sub[0] if sub else ""


def set_figure_title(fig: Figure, about: str, owned: bool, first: Axes) -> None:
    """Description of a multi-panel figure: its suptitle when the function made the figure, else a
    subtitle of the first panel (the caller's figure may hold other panels)."""
    if not about:
        return
    if owned:
        fig.suptitle(about, fontsize=9.0, fontweight="normal")
    else:
        set_title(first, first.get_title(), about)


def _unique(values: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            continue
        v = v.item() if isinstance(v, np.generic) else v
        if v not in out:
            out.append(v)
    return out


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def _listed(values: list[Any], noun: str, most: int = 3) -> str:
    if len(values) <= most:
        return ", ".join(_fmt(v) for v in values)
    return f"{len(values)} {noun}"


def _span(values: list[Any]) -> str:
    if len(values) == 1:
        return _fmt(values[0])
    try:
        return f"{_fmt(min(values))}–{_fmt(max(values))}"
    except TypeError:
        return _listed(values, "values")


def _precision(labels: list[Any]) -> str:
    """``["w:fp8 a:fp8 kv:fp8"]`` -> ``"weights fp8, KV cache fp8"`` (several values listed per part)."""
    parts: dict[str, list[str]] = {"w": [], "kv": []}
    for label in labels:
        fields = dict(item.split(":", 1) for item in str(label).split() if ":" in item)
        if not fields:  # a plain format name ("fp8")
            fields = {"w": str(label)}
        for key in parts:
            if key in fields and fields[key] not in parts[key]:
                parts[key].append(fields[key])
    out = []
    if parts["w"]:
        out.append(f"weights {'/'.join(parts['w'])}")
    if parts["kv"]:
        out.append(f"KV cache {'/'.join(parts['kv'])}")
    return ", ".join(out)


def _engine(labels: list[Any]) -> str:
    """Engine labels (``"vllm (fitted terms: ...)"``) by name; ``none`` reads as bare kernels."""
    names = []
    for label in labels:
        name = str(label).split(" (", 1)[0].strip()
        if name not in names:
            names.append(name)
    if names == ["none"]:
        return "no serving engine (bare kernel model)"
    return f"engine {_listed(names, 'engines')}"
