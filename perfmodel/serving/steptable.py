"""Step times for the simulator: the step model tabulated once, then looked up in the event loop.

A :class:`StepTimer` wraps a step model and an engine profile and answers two questions fast:

- :meth:`StepTimer.decode_times`: the times of K consecutive decode-only steps of n sequences whose
  mean context grows by one token per step (one vectorised lookup for a whole run of steps);
- :meth:`StepTimer.step`: the time of one step with decodes and prefill chunks.

Both include the engine's host overheads: ``t = t_device + t_step + t_seq · (sequences in step)``.

In ``table`` mode the step model is evaluated once on grids (all integer batch sizes × a context grid
for decode steps; a geometric 4-D grid over batch, context, chunk and cached prefix for mixed steps) and
interpolated linearly; ``exact`` mode calls the step model every time (slow with a detailed model, used
to check the tables). Tables are built lazily and reused: share one timer between simulations
(:func:`perfmodel.serving.max_load` does).

Several prompt chunks in one step are passed to the step model as one chunk of their total size P
with an *attention-equivalent* cached prefix q_eq chosen so that the number of (query, key) attention
pairs is preserved: :math:`P (q_{eq} + P/2) = \\sum_j p_j (q_j + p_j/2)`. When q_eq < 0 (several fresh
prompts), the time is extrapolated linearly in q from q = 0 and q = P, which is exact when attention
cost is linear in the pairs (compute-bound prefill).
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from ..engine.profile import EngineProfile
from ..errors import ConfigError
from .protocol import StepModelLike

_ROW_BLOCK = 64


def _bad_time(t: float, n, c, p, q) -> ConfigError:
    return ConfigError(f"step model: step_time(n_decode={n}, mean_context={c:.6g}, prefill_tokens={p}, "
                       f"prefill_past={q:.6g}) plus engine overheads is {t!r} s; step times must be "
                       f"finite and > 0")


def _geom(lo: float, hi: float, ratio: float, head: tuple[float, ...] = ()) -> list[float]:
    pts = list(head)
    x = lo
    while x < hi:
        pts.append(float(round(x)))
        x *= ratio
    pts.append(float(hi))
    return sorted(set(pts))


class StepTimer:
    """Fast step-time lookups for one (step model, engine) pair.

    Parameters
    ----------
    step_model : StepModelLike
        Per-replica cost model.
    engine : EngineProfile
        Supplies the overheads and the limits that size the tables.
    max_context : int
        Largest KV context a sequence can reach [tokens] (prompt + output).
    mode : {"table", "exact"}
        Tabulate and interpolate, or call the step model every time.
    max_prefill : int | None
        Largest prefill size of one step [tokens]; default: the engine's token budget.
    """

    def __init__(self, step_model: StepModelLike, engine: EngineProfile, max_context: int,
                 mode: str = "table", max_prefill: int | None = None) -> None:
        if mode not in ("table", "exact"):
            raise ValueError(f"mode: expected 'table' or 'exact', got {mode!r}")
        self.model = step_model
        self.engine = engine
        self.mode = mode
        self.t_step = float(engine.step_overhead)
        self.t_seq = float(engine.seq_overhead)
        self.max_context = max(int(max_context), 16)
        self.max_prefill = max(int(max_prefill or engine.max_num_batched_tokens), 1)
        self.n_max = int(engine.max_num_seqs)
        self.cgrid = np.asarray(_geom(16.0, self.max_context * 1.05 + 16, 1.25, (0.0, 1.0, 4.0)))
        self._cgrid_list = self.cgrid.tolist()
        self._rows: dict[int, list[float]] = {}
        self._mixed: list[float] | None = None
        self.table_points = 0
        self.calls = 0

    # -- raw model ----------------------------------------------------------------------------
    def device(self, n, c, p, q) -> np.ndarray:
        """Device time of the step model [s] (no overheads), broadcasting, counted in ``calls``."""
        self.calls += 1
        # full-shape arguments: a model may accumulate into the shape of its first partial result
        n, c, p, q = (np.array(x, dtype=float) for x in np.broadcast_arrays(n, c, p, q))
        return np.asarray(self.model.step_time(n, c, p, q), dtype=float)

    # -- decode-only steps -------------------------------------------------------------------
    def _row(self, n: int) -> list[float]:
        row = self._rows.get(n)
        if row is None:
            lo = (n // _ROW_BLOCK) * _ROW_BLOCK
            ns = np.arange(max(lo, 1), lo + _ROW_BLOCK, dtype=float)
            t = self.device(ns[:, None], self.cgrid[None, :], 0.0, 0.0)
            self.table_points += t.size
            for i, k in enumerate(ns):
                self._rows[int(k)] = t[i].tolist()
            row = self._rows[n]
        return row

    def decode_segment(self, n: int, c0: float) -> tuple[float, float, int]:
        """A run of decode-only steps of ``n`` sequences starting at mean context ``c0``.

        Step k of the run (k = 0, 1, ...) has mean context ``c0 + k`` and takes
        ``alpha + beta·k`` seconds (engine overheads included) for k < ``k_max``.

        Returns
        -------
        alpha : float
            Time of the first step [s].
        beta : float
            Increase of the step time per step [s] (the context grows one token per step).
        k_max : int
            Steps for which the linear form holds: to the end of the table cell in ``table`` mode
            (exact there, the table being linear in context inside a cell); 64 steps in ``exact``
            mode (a secant of the step model).
        """
        over = self.t_step + self.t_seq * n
        if self.mode == "exact":
            t = self.device(n, np.array([c0, c0 + 64.0]), 0.0, 0.0)
            if not t[0] + over > 0.0:
                raise _bad_time(float(t[0]) + over, n, c0, 0, 0)
            return float(t[0]) + over, float(t[1] - t[0]) / 64.0, 64
        grid = self._cgrid_list
        j = bisect_right(grid, c0) - 1
        last = len(grid) - 2
        if j > last:
            j = last
        elif j < 0:
            j = 0
        row = self._row(n)
        lo, hi = grid[j], grid[j + 1]
        beta = (row[j + 1] - row[j]) / (hi - lo)
        alpha = row[j] + beta * (c0 - lo) + over
        k_max = int(hi - c0) + 1 if c0 < hi else 1 << 20
        if c0 >= hi:
            beta = 0.0
        if not alpha > 0.0:
            raise _bad_time(alpha, n, c0, 0, 0)
        return alpha, beta, max(k_max, 1)

    def decode_times(self, n: int, c0: float, k: int) -> np.ndarray:
        """Times of ``k`` consecutive decode-only steps of ``n`` sequences [s] (overheads included).

        Step i (0-based) has mean context ``c0 + i`` tokens.
        """
        ctx = c0 + np.arange(k, dtype=float)
        if self.mode == "exact":
            t = self.device(n, ctx, 0.0, 0.0)
        else:
            t = np.interp(ctx, self.cgrid, np.asarray(self._row(n)))
        return t + (self.t_step + self.t_seq * n)

    # -- mixed steps ---------------------------------------------------------------------------
    def _build_mixed(self) -> list[float]:
        self.ngrid = _geom(4.0, max(self.n_max, 4), 1.5, (0.0, 1.0, 2.0, 3.0))
        self.pgrid = _geom(16.0, max(self.max_prefill, 16), 1.4, (1.0, 4.0))
        self.qgrid = _geom(128.0, max(self.max_context, 128), 1.6, (0.0,))
        self.cgrid_m = _geom(16.0, self.max_context * 1.05 + 16, 1.6, (0.0, 1.0, 4.0))
        n, c, p, q = np.meshgrid(self.ngrid, self.cgrid_m, self.pgrid, self.qgrid, indexing="ij")
        t = self.device(n, c, p, q)
        self.table_points += t.size
        _, d1, d2, d3 = t.shape
        self._strides = (d1 * d2 * d3, d2 * d3, d3)
        return t.ravel().tolist()

    def _lookup(self, n: float, c: float, p: float, q: float) -> float:
        """Quadrilinear interpolation in the mixed-step table (unrolled for speed)."""
        tab = self._mixed
        if tab is None:
            tab = self._mixed = self._build_mixed()
        idx = []
        for grid, x in ((self.ngrid, n), (self.cgrid_m, c), (self.pgrid, p), (self.qgrid, q)):
            i = bisect_right(grid, x) - 1
            if i < 0:
                idx += (0, 0.0)
            elif i >= len(grid) - 1:
                idx += (len(grid) - 2, 1.0)
            else:
                lo = grid[i]
                idx += (i, (x - lo) / (grid[i + 1] - lo))
        i, wi, j, wj, k, wk, m, wm = idx
        s1, s2, s3 = self._strides
        b = i * s1 + j * s2 + k * s3 + m
        out = []
        for base in (b, b + s3, b + s2, b + s2 + s3, b + s1, b + s1 + s3, b + s1 + s2, b + s1 + s2 + s3):
            lo = tab[base]
            out.append(lo + wm * (tab[base + 1] - lo))
        v00 = out[0] + wk * (out[1] - out[0])
        v01 = out[2] + wk * (out[3] - out[2])
        v10 = out[4] + wk * (out[5] - out[4])
        v11 = out[6] + wk * (out[7] - out[6])
        v0 = v00 + wj * (v01 - v00)
        v1 = v10 + wj * (v11 - v10)
        return v0 + wi * (v1 - v0)

    def _device_mixed(self, n: int, c: float, p: float, q: float) -> float:
        if self.mode == "exact":
            return float(self.device(n, c, p, q))
        return self._lookup(float(n), c, p, q)

    def step(self, n_decode: int, mean_context: float, prefill_tokens: int, prefill_past: float,
             n_seqs: int) -> float:
        """Time of one step [s]: ``n_decode`` decodes plus ``prefill_tokens`` prompt tokens.

        Parameters
        ----------
        n_decode : int
            Decoding sequences in the step.
        mean_context : float
            Their mean KV context [tokens].
        prefill_tokens : int
            Prompt tokens computed in the step (all chunks) [tokens].
        prefill_past : float
            Attention-equivalent cached prefix q_eq of the chunks [tokens]; may be negative.
        n_seqs : int
            Sequences in the step (for the per-sequence overhead).
        """
        over = self.t_step + self.t_seq * n_seqs
        if prefill_tokens <= 0:
            if self.mode == "exact":
                return float(self.device(n_decode, mean_context, 0.0, 0.0)) + over
            alpha, _, _ = self.decode_segment(n_decode, mean_context)
            return alpha + self.t_seq * (n_seqs - n_decode)
        c = mean_context if n_decode > 0 else 0.0
        p = float(prefill_tokens)
        if prefill_past >= 0:
            t = self._device_mixed(n_decode, c, p, prefill_past) + over
        else:
            t0 = self._device_mixed(n_decode, c, p, 0.0)
            t1 = self._device_mixed(n_decode, c, p, p)
            t = max(t0 + prefill_past * (t1 - t0) / p, 0.0) + over
        if not t > 0.0:
            raise _bad_time(t, n_decode, mean_context, prefill_tokens, prefill_past)
        return t
