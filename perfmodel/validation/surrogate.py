"""Tabulated step times for many measured rows at once: a fast stand-in for the step models.

:func:`perfmodel.serving.steady_state` solves the closed loop of each row by fixed-point iteration,
calling the step model a few hundred times. With ~170 distinct step models in the public set that is a
minute per pass — too slow to fit engine parameters or to cross-validate. :class:`RowTables` evaluates
every step model once, on small per-row grids, and then answers ``step_time`` for *all rows of a run in
one numpy pass*, so one ``steady_state`` call covers every row of an engine.

Per row r (fixed prompt I and output O, so a fixed mean decode context c̄ = I + O/2) the step time is
split exactly into

.. math:: T(n, \\bar c, p, q) = T(n, \\bar c, p, 0) + \\Delta_q(p, q), \\qquad
          \\Delta_q(p, q) = T(0, 0, p, q) - T(0, 0, p, 0)

because the cached prefix q of a prompt chunk only enters the chunk's own attention op (reading and
attending to q cached tokens, up-projecting them for MLA), not the decode ops or the GEMMs. The first
term is tabulated on a grid of decode batch n (0..max C) × chunk p (0..max(I, budget)) geometric in
:math:`\\log(1 + x)`; Δ_q on p × q (linear in q, where attention is linear). Lookups are bilinear.
The interpolation error is checked against the exact step models in the tests (< 1 % median on TPOT
and TTFT of the public rows).

The per-kernel fixed times of the step model (its ``kernel_overhead`` terms) are tabulated apart, so
that an engine can scale them (:meth:`RowTables.adjusted`): :math:`T = T_{work} + g\\,T_{kernels}`
with one factor g for decode-only steps (replayed as CUDA graphs by the engines) and another for steps
that carry prompt tokens (launched eagerly); a per-layer engine overhead adds :math:`L\\,t_{layer}` to every
step that does any work (L = the model's layers). Where the step model's GEMM format has a small-M
variant (:func:`perfmodel.core.efficiency.small_m_variant`), the difference
:math:`\\Delta_{s} = T_{variant} - T` is tabulated on the same grid and an engine mixes it in with a
weight s ∈ [0, 1]: :math:`T + s\\,\\Delta_s`.

Rows with speculative decoding carry the ratio :math:`r(n)` of the speculative to the plain device
decode time per generated token at c̄ (tabulated on the n grid); a step's decode work is then charged
per generated token as :class:`perfmodel.engine.EngineStep` does, :math:`T + (r - 1)\\,T_{dec}(n)`.

The contract is that of :func:`steady_state`: ``step_time`` receives arrays broadcastable to the rows
and a decode context equal to c̄ of the row wherever decodes are present; anything else is an error.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np

from ..engine.calibration import EngineCalibration
from ..engine.step import device_parts, engine_step_time
from ..errors import ConfigError

#: Grid points per axis of the (n, p) table and per q axis.
N_POINTS, P_POINTS, Q_POINTS = 28, 32, 5


def _geom_grid(x_max: float, k: int) -> np.ndarray:
    """k points from 0 to x_max equally spaced in log(1 + x)."""
    return np.expm1(np.linspace(0.0, np.log1p(x_max), k))


def _frac_index(x: np.ndarray, h: np.ndarray, k: int, log: bool) -> tuple[np.ndarray, np.ndarray]:
    """Lower grid index and weight of x on grids of step h (in log1p or linear units)."""
    u = np.maximum(x, 0.0)
    u = (np.log1p(u) if log else u) / h
    i = np.minimum(u.astype(np.intp), k - 2)
    return i, u - i


def _rows_view(x, rows: int) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a if a.shape == (rows,) else np.broadcast_to(a, (rows,))


class RowTables:
    """Per-row step-time tables of a set of measured rows, usable as one step model.

    Parameters
    ----------
    tables : dict
        Built by :func:`build_tables` (use that).
    kv_capacity_tokens : float or ndarray
        KV capacity reported to the caller, scalar or one per row (``inf`` when rows are pre-screened so that the
        KV cache never limits them, see :mod:`perfmodel.validation.predict`).
    terms : EngineCalibration, optional
        Engine step terms the looked-up times carry (None: the bare step model; see :meth:`adjusted`).
    """

    devices = 1
    kv_bytes_per_token = 1.0

    def __init__(self, tables: dict, kv_capacity_tokens: float = np.inf,
                 terms: EngineCalibration | None = None) -> None:
        self._t = dict(tables, row=np.arange(len(tables["cbar"])))
        self.kv_capacity_tokens = kv_capacity_tokens
        self.rows = len(tables["cbar"])
        self.engine_terms = terms
        self._extra = None
        self._np = tables["np"]
        self._spec = "spec" in tables and bool(np.any(tables["spec"] != 1.0))
        #: E per row, the tokens one decode step emits per sequence [token/step] (1 without speculation)
        self.tokens_per_step = np.asarray(tables.get("tps", np.ones(self.rows)), dtype=float)
        if terms is not None:
            # the one engine step equation (perfmodel.engine.step), applied to the tabulated parts;
            # the p = 0 column holds the decode-only steps
            decode_only = np.zeros(tables["np"].shape[-1], dtype=bool)
            decode_only[0] = True
            self._np = engine_step_time(tables["np"], tables["npo"], tables["nps"], decode_only,
                                        replace(terms, layer_overhead=0.0))
            if terms.layer_overhead:
                self._extra = terms.layer_overhead * tables["layers"]

    def subset(self, index: np.ndarray, kv_capacity_tokens: float = np.inf) -> RowTables:
        """Tables of the rows ``index`` (positions), with a given scalar KV capacity."""
        return RowTables(select(self._t, index), kv_capacity_tokens, self.engine_terms)

    def adjusted(self, terms: EngineCalibration) -> RowTables:
        """Copy carrying an engine's fitted step terms (:func:`perfmodel.engine.step.engine_step_time`:
        per-kernel fixed times scaled in decode-only and prompt-carrying steps, a share of the small-M
        variant's difference, a per-layer overhead in steps that do work)."""
        if not 0.0 <= terms.small_m_tactic <= 1.0:
            raise ConfigError(f"small_m_tactic: must be within [0, 1], got {terms.small_m_tactic}")
        return RowTables(select(self._t, slice(None)), self.kv_capacity_tokens, terms)

    def step_time(self, n_decode, mean_context, prefill_tokens, prefill_past=0.0) -> np.ndarray:
        """Interpolated device time of one step of each row [s] (see module docstring)."""
        t, r = self._t, self.rows
        n, c, p, q = (_rows_view(x, r) for x in (n_decode, mean_context, prefill_tokens, prefill_past))
        if np.any((n > 0) & (np.abs(c - t["cbar"]) > 1e-6 * t["cbar"] + 1e-9)):
            raise ConfigError("RowTables: decode context differs from the row's mean context I + O/2; "
                              "the tables only cover the closed-loop steady state of each row")
        rows = t["row"]
        i, wi = _frac_index(n, t["hn"], N_POINTS, True)
        j, wj = _frac_index(p, t["hp"], P_POINTS, True)
        v = self._np
        base = ((1 - wi) * ((1 - wj) * v[rows, i, j] + wj * v[rows, i, j + 1])
                + wi * ((1 - wj) * v[rows, i + 1, j] + wj * v[rows, i + 1, j + 1]))
        if self._extra is not None:
            base = base + np.where((n > 0) | (p > 0), self._extra, 0.0)
        if self._spec:   # decodes charged per generated token: T + (r(n) - 1) T_dec(n)
            decode = (1 - wi) * v[rows, i, 0] + wi * v[rows, i + 1, 0]
            if self._extra is not None:
                decode = decode + self._extra
            r_n = (1 - wi) * t["spec"][rows, i] + wi * t["spec"][rows, i + 1]
            base = base + np.where(n > 0, (r_n - 1.0) * decode, 0.0)
        if not q.any():
            return base
        k, wk = _frac_index(q, t["hq"], Q_POINTS, False)
        d = t["dq"]
        dq = ((1 - wj) * ((1 - wk) * d[rows, j, k] + wk * d[rows, j, k + 1])
              + wj * ((1 - wk) * d[rows, j + 1, k] + wk * d[rows, j + 1, k + 1]))
        return base + np.where(q > 0, dq, 0.0)


def build_tables(step_model, isl: np.ndarray, osl: np.ndarray, n_max: np.ndarray, p_max: np.ndarray,
                 layers: float = 0.0, small_m_model=None, spec=None) -> dict[str, np.ndarray]:
    """Tabulate one step model for rows of prompt ``isl``, output ``osl`` (1-D arrays).

    Parameters
    ----------
    step_model : StepModelLike
        The exact model of these rows.
    isl, osl : ndarray
        Prompt / output tokens per row.
    n_max : ndarray
        Largest decode batch per row (its concurrency).
    p_max : ndarray
        Largest prompt chunk and cached prefix per row [tokens] (max of the prompt and the budget).
    layers : float
        Transformer layers a token traverses (for a per-layer engine overhead, see
        :meth:`RowTables.adjusted`).
    small_m_model : StepModelLike, optional
        The small-M variant of ``step_model`` (see module docstring); None = no variant.
    spec : SpecDecode, optional
        Speculative decoding of these rows (None: none).

    Returns
    -------
    dict
        Arrays keyed ``cbar, hn, hp, hq, np, npo, nps, dq, layers, spec, tps`` with the row as leading axis
        (``npo``: the per-kernel fixed part of ``np``; ``nps``: variant minus ``np``, zeros without one;
        ``spec``: the ratio r(n) of :meth:`perfmodel.engine.EngineStep.step_time` on the n grid, ones
        without speculation; ``tps``: the expected tokens E of a speculative step, ones without).
    """
    isl, osl = np.asarray(isl, float), np.asarray(osl, float)
    cbar = isl + np.maximum(osl, 2.0) / 2.0
    n_max = np.maximum(np.asarray(n_max, float), 2.0)
    p_max = np.maximum(np.asarray(p_max, float), 2.0)
    ng = np.stack([_geom_grid(x, N_POINTS) for x in n_max])          # (R, Kn)
    pg = np.stack([_geom_grid(x, P_POINTS) for x in p_max])          # (R, Kp)
    qg = p_max[:, None] * np.linspace(0.0, 1.0, Q_POINTS)[None, :]  # (R, Kq)
    n3, p3 = np.broadcast_arrays(ng[:, :, None], pg[:, None, :])
    c3 = np.broadcast_to(cbar[:, None, None], n3.shape)
    zero = np.zeros(n3.shape)
    table, kernels = device_parts(step_model, n3, c3, p3, zero)
    variant = np.zeros_like(table) if small_m_model is None else device_parts(small_m_model, n3, c3, p3, zero)[0] - table
    p2, q2 = np.broadcast_arrays(pg[:, :, None], qg[:, None, :])
    z2 = np.zeros(p2.shape)
    with_q, _ = device_parts(step_model, z2, z2, p2, q2)
    dq = with_q - with_q[:, :, :1]
    ratio = np.ones(ng.shape)
    if spec is not None:
        from ..engine.speculative import speculative_step
        from ..engine.speculative_draft import draft_step_model

        draft = draft_step_model(step_model, spec) if spec.method != "ngram" else None
        n1, c1 = np.broadcast_arrays(np.maximum(ng, 1.0), cbar[:, None])
        z1 = np.zeros(n1.shape)
        ratio = speculative_step(step_model, spec, n1, c1, draft).tpot / step_model.step_time(n1, c1, z1, z1)
    return {"cbar": cbar, "spec": ratio, "hn": np.log1p(n_max) / (N_POINTS - 1), "hp": np.log1p(p_max) / (P_POINTS - 1),
            "hq": p_max / (Q_POINTS - 1), "np": table, "npo": kernels, "nps": variant, "dq": dq,
            "layers": np.full(len(isl), float(layers)),
            "tps": np.full(len(isl), 1.0 if spec is None else float(spec.expected_tokens))}


def concat_tables(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Stack the tables of several groups of rows (same keys) along the row axis."""
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k != "row"}


def select(tables: dict[str, np.ndarray], index) -> dict[str, np.ndarray]:
    """Tables of the rows ``index`` (positions or boolean mask)."""
    return {k: v[index] for k, v in tables.items() if k != "row"}


class RowBatch:
    """Mixin of dataclasses holding a batch of rows: ``positions`` (row numbers in the problem),
    :class:`RowTables` and per-row arrays, all aligned."""

    positions: np.ndarray

    def subset(self, keep: np.ndarray, new_position: np.ndarray):
        """The rows whose ``keep`` flag (indexed by position) is set, renumbered by ``new_position``;
        None when no row is kept."""
        mask = keep[self.positions]
        if not mask.any():
            return None
        values = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "positions":
                values[f.name] = new_position[v[mask]]
            elif isinstance(v, RowTables):
                cap = v.kv_capacity_tokens
                values[f.name] = v.subset(mask, cap[mask] if np.ndim(cap) else cap)
            else:
                values[f.name] = v[mask]
        return type(self)(**values)
