"""Point labels that do not overlap: a greedy placement step for annotations.

Each label is an annotation offset (in points) from the point it names. After the figure's layout is
computed, the labels are placed one after another: a label keeps its requested offset if its box is
free, else it takes the first free position on rings of growing radius around its point (8 directions
per ring), and only if none is free the position overlapping least. A box is free when it overlaps no
label placed before it, no fixed text (roof names, the legend), no scatter marker, and stays inside
the axes. Labels are
kept out of the layout computation so that placing them does not move the axes they were placed on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.text import Annotation
from matplotlib.transforms import Bbox

#: Directions tried on each ring (unit vectors, up-right first).
_DIRECTIONS = [(np.cos(a), np.sin(a)) for a in np.deg2rad([45, 135, -45, -135, 0, 180, 90, -90])]


def _renderer(ax: Axes):
    fig = ax.figure
    fig.draw_without_rendering()  # runs the layout engine, so extents are final
    get = getattr(fig.canvas, "get_renderer", None)  # Agg-based canvases (inline, files)
    return get() if get is not None else fig._get_renderer()


def extents(artists: Iterable[Artist], renderer=None) -> list[Bbox]:
    """Window extents [px] of visible artists (texts, annotations, legends)."""
    artists = [a for a in artists if a is not None and a.get_visible()]
    if not artists:
        return []
    renderer = renderer or _renderer(artists[0].axes)
    return [a.get_window_extent(renderer) for a in artists]


def overlapping(artists: Sequence[Artist], renderer=None, pad: float = 0.0) -> list[tuple[int, int]]:
    """Index pairs of artists whose boxes (grown by ``pad`` px) overlap."""
    boxes = [b.padded(pad) for b in extents(artists, renderer)]
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if _area(boxes[i], boxes[j]) > 0]


def place_labels(ax: Axes, labels: Sequence[Annotation], fixed: Iterable[Artist] = (), *,
                 step: float = 7.0, rings: int = 6, pad: float = 1.5) -> None:
    """Move ``labels`` (annotations with offsets in points) so that their boxes do not overlap.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes the labels are on.
    labels : sequence of Annotation
        Labels to place, in order of priority (earlier ones keep their requested offset more often).
    fixed : iterable of Artist
        Texts and the legend that labels must avoid but that do not move (the axes' legend is
        always added).
    step : float
        Distance between rings of candidate positions [pt].
    rings : int
        Rings tried around each point.
    pad : float
        Gap kept between boxes [px].
    """
    labels = [lb for lb in labels if lb.get_visible()]
    if not labels:
        return
    for lb in labels:
        lb.set_in_layout(False)
    renderer = _renderer(ax)
    frame = ax.get_window_extent(renderer)
    taken = [b.padded(pad) for b in extents([*fixed, ax.get_legend()], renderer)] + _markers(ax)
    for lb in labels:
        x0, y0 = lb.xyann
        candidates = [(x0, y0)] + [(x0 + r * step * dx, y0 + r * step * dy)
                                   for r in range(1, rings + 1) for dx, dy in _DIRECTIONS]
        best, best_cost = (x0, y0), np.inf
        for cand in candidates:
            lb.xyann = cand
            box = lb.get_window_extent(renderer)
            cost = sum(_area(box, t) for t in taken) + _outside(box, frame)
            if cost < best_cost:
                best, best_cost = cand, cost
            if cost == 0:
                break
        lb.xyann = best
        taken.append(lb.get_window_extent(renderer).padded(pad))


def _markers(ax: Axes) -> list[Bbox]:
    """Boxes [px] of the scatter markers on ``ax`` (labels should not hide the points they name)."""
    boxes = []
    px_per_pt = ax.figure.dpi / 72.0
    for coll in ax.collections:
        sizes = coll.get_sizes()
        offsets = np.asarray(coll.get_offsets(), dtype=float)
        if not len(sizes) or offsets.ndim != 2 or not len(offsets):
            continue
        half = 0.5 * np.sqrt(float(np.max(sizes))) * px_per_pt  # s is the marker area [pt²]
        for x, y in coll.get_offset_transform().transform(offsets):
            if np.isfinite(x) and np.isfinite(y):
                boxes.append(Bbox.from_extents(x - half, y - half, x + half, y + half))
    return boxes


def _area(a: Bbox, b: Bbox) -> float:
    """Overlap area of two boxes [px²] (0 when disjoint)."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


def _outside(box: Bbox, frame: Bbox) -> float:
    """Area of ``box`` outside ``frame`` [px²]."""
    return box.width * box.height - _area(box, frame)
