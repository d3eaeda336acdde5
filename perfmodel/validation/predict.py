"""Predicted mean TTFT and TPOT of measured serving rows (closed loop, continuous batching).

For an aggregated row, each replica runs ``concurrency`` clients in a closed loop with fixed prompt and
output lengths; :func:`perfmodel.serving.steady_state` gives the mean TTFT (queueing and prefill
included) and TPOT (prefill interference included) under the row's engine profile
(:mod:`perfmodel.engine.calibration`). Step times come from one :class:`~perfmodel.core.step.StepModel` per distinct
configuration, tabulated per row (:mod:`perfmodel.validation.surrogate`) so that one ``steady_state``
call covers every row of an engine — which is what makes fitting and cross-validation affordable.

Disaggregated rows (both pools' worker counts recorded) go through
:func:`perfmodel.serving.steady_state_disagg` (:mod:`perfmodel.validation.predict_disagg`), one call
per configuration. Aggregated rows with speculative decoding are tabulated too, with the ratio of the
speculative to the plain decode time per generated token on the decode-batch grid
(:func:`~perfmodel.validation.surrogate.build_tables`, the rule of :class:`perfmodel.engine.EngineStep`)
and the engine's KV pool less the draft's share (disaggregated ones the same way in their decode pool,
:mod:`perfmodel.validation.predict_disagg`); aggregated rows with a prefix-cache hit rate are
predicted on their step model directly (:mod:`perfmodel.validation.predict_direct`); disaggregated
ones with a prefix-cache hit rate are skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..engine.calibration import EngineCalibration, presets
from ..engine.engine import Engine
from ..engine.kv_memory import engine_kv_tokens
from ..engine.speculative import parse_spec_decode
from ..errors import PerfmodelError
from ..progress import Bar
from ..serving import EngineProfile, steady_state
from .predict_direct import DirectBatch, direct_batches
from .predict_disagg import NO_KV_REASON, DisaggBatch, spec_kv_tokens, tabulate_disagg
from .stepmodels import CONFIG_COLUMNS, StepModelCache, config_groups
from .surrogate import RowBatch, RowTables, build_tables, concat_tables

#: Fixed-point iterations passed to ``steady_state``: 20 reproduce its default (60) to < 1e-6 relative
#: on the public rows (checked in the tests) at a third of the cost.
STEADY_STATE_ITERATIONS = 20
#: Bisection steps of the P/D closed form (2^-40 of the decode-batch range).
DISAGG_ITERATIONS = 40


def _kv_can_bind(rows: pd.DataFrame, capacity: float, eng: EngineProfile) -> np.ndarray:
    """Rows whose KV capacity could cap the decode batch below their concurrency."""
    isl, osl = rows["isl"].to_numpy(float), np.maximum(rows["osl"].to_numpy(float), 2.0)
    # one whole block more than the steady state counts per sequence: rows near the cap keep it
    per_seq = (isl + osl if eng.kv_admission == "reserve_full" else isl + osl / 2.0) + eng.kv_block_size
    return rows["concurrency"].to_numpy(float) > capacity * eng.kv_capacity_fraction / per_seq


def _prefix_hit(rows: pd.DataFrame) -> pd.Series:
    """Rows with a prefix-cache hit rate: predicted on their step model (no tables)."""
    if "prefix_hit_rate" not in rows:
        return pd.Series(False, index=rows.index)
    return rows["prefix_hit_rate"] > 0


def engines_under(calibrations: Mapping[str, EngineCalibration] | None) -> dict[str, Engine]:
    """Backend -> :class:`~perfmodel.engine.Engine` carrying ``calibrations`` (the uncalibrated presets
    for backends it leaves out): the engines every validation path predicts with."""
    calibrations = {**presets(), **dict(calibrations or {})}
    return {b: Engine(c.engine(), c, True, "terms under evaluation") for b, c in calibrations.items()}


@dataclass
class _Batch(RowBatch):
    """Rows sharing one ``steady_state`` call: positions, inputs and their step-time tables."""

    positions: np.ndarray
    tables: RowTables
    concurrency: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    schedulers: np.ndarray
    budget: np.ndarray


def token_budget(rows: pd.DataFrame, eng: EngineProfile) -> np.ndarray:
    """Per-rank token budget of each row [tokens]: its launch's own (``max_num_batched_tokens``, from the
    CSV or a :mod:`~perfmodel.validation.source_rules` rule) where known, else the engine profile's."""
    own = (rows["max_num_batched_tokens"].to_numpy(float) if "max_num_batched_tokens" in rows
           else np.full(len(rows), np.nan))
    return np.where(np.isfinite(own), own, float(eng.max_num_batched_tokens))


@dataclass
class ServingProblem:
    """Aggregated measured rows, tabulated once, evaluated for any engine parameters.

    Build with :meth:`build`; :meth:`evaluate` returns predicted TTFT and TPOT for every row in
    ``rows`` (aligned), in seconds. ``skipped`` lists rows that could not be set up, with reasons.
    """

    rows: pd.DataFrame
    skipped: pd.DataFrame
    batches: dict[str, list[_Batch]] = field(default_factory=dict)
    efficiency: object = "calibrated"
    disagg: dict[str, list[DisaggBatch]] = field(default_factory=dict)
    direct: dict[str, list[DirectBatch]] = field(default_factory=dict)

    @classmethod
    def build(cls, deployments: pd.DataFrame, efficiency="calibrated", cache: StepModelCache | None = None,
              progress: bool | None = False) -> ServingProblem:
        """Tabulate the step models of all predictable aggregated rows.

        Parameters
        ----------
        deployments : pandas.DataFrame
            Output of :func:`perfmodel.validation.rows.map_rows`.
        efficiency : str | Efficiency
            Per-op efficiency profile of the step models.
        cache : StepModelCache, optional
            Step models to reuse.
        progress : bool | None
            A bar of the aggregated rows tabulated (:mod:`perfmodel.progress`).
        """
        engines = {b: c.engine() for b, c in presets().items()}
        cache = cache or StepModelCache(efficiency)
        skipped = []
        mode = deployments["mode"] if "mode" in deployments else pd.Series("agg", index=deployments.index)
        unknown = ~deployments["backend"].isin(list(engines))
        for _, r in deployments[unknown].iterrows():
            skipped.append({"row": r["row"], "id": r["id"], "reason": f"unknown backend: {r['backend']}"})
        hit = _prefix_hit(deployments)
        for _, r in deployments[hit & (mode == "disagg") & ~unknown].iterrows():
            skipped.append({"row": r["row"], "id": r["id"], "reason": "feature: prefix caching on a "
                            "disaggregated row is not modelled in validation yet"})
        direct, direct_skipped = direct_batches(deployments[hit & (mode == "agg") & ~unknown], cache)
        skipped += direct_skipped
        agg = deployments[(mode == "agg") & ~unknown & ~hit]
        if "spec_decode_text" not in agg:
            agg = agg.assign(spec_decode_text="off")
        disagg_parts, disagg_skipped = tabulate_disagg(deployments[(mode == "disagg") & ~unknown & ~hit],
                                                       cache, engines)
        skipped += disagg_skipped
        parts: dict[str, list] = {}
        keep = []
        with Bar(len(agg), "validate", progress, unit="row") as bar:
            for key, rows in config_groups(agg, (*CONFIG_COLUMNS, "spec_decode_text", "backend")):
                cls._tabulate(key, rows, cache, engines, skipped, parts, keep)
                bar.update(len(rows))
        keep += [index for index, _ in disagg_parts.values()]
        keep += [d["index"] for d in direct]
        kept = deployments.loc[np.concatenate(keep)] if keep else agg.iloc[:0]
        problem = cls(kept.copy(), pd.DataFrame(skipped, columns=["row", "id", "reason"]),
                      efficiency=efficiency)
        position = pd.Series(np.arange(len(kept)), index=kept.index)
        for backend, groups in parts.items():
            problem.batches[backend] = problem._batches(groups, position)
        for backend, (index, inputs) in disagg_parts.items():
            problem.disagg[backend] = [DisaggBatch(position.loc[index].to_numpy(), **inputs)]
        for d in direct:
            problem.direct.setdefault(d.pop("backend"), []).append(
                DirectBatch(position.loc[d.pop("index")].to_numpy(), **d))
        return problem

    @staticmethod
    def _tabulate(key: tuple, rows: pd.DataFrame, cache: StepModelCache, engines: dict, skipped: list,
                  parts: dict, keep: list) -> None:
        """Tabulate one configuration's rows (appends to ``parts`` and ``keep``, or to ``skipped``).

        ``key`` is the configuration, the speculation (``spec_decode_text``) and the backend."""
        eng, config = engines[key[-1]], key[:-2]
        spec = parse_spec_decode(key[-2]) if key[-2] != "off" else None
        try:
            sm = cache.get(config)
            # the engine's own pool decides (its memory fraction of what the weights leave), not the step
            # model's generic reserve: measured runs the reserve would leave no room for did run
            capacity = engine_kv_tokens(sm, eng) if spec is None else spec_kv_tokens(sm, eng, spec)
        except PerfmodelError as exc:
            capacity, sm = 0.0, None
            reason = f"step model error: {exc}"
        else:
            reason = NO_KV_REASON
        if sm is None or capacity <= 0:
            skipped.extend({"row": r, "id": i, "reason": reason} for r, i in zip(rows["row"], rows["id"],
                                                                                 strict=True))
            return
        isl, osl = rows["isl"].to_numpy(float), rows["osl"].to_numpy(float)
        budget = token_budget(rows, eng)
        p_max = np.maximum(isl, budget * rows["dp"].to_numpy(float))
        tab = build_tables(sm, isl, osl, rows["concurrency"].to_numpy(float), p_max,
                           layers=sm.model.num_layers, small_m_model=cache.small_m_variant(config), spec=spec)
        bind = _kv_can_bind(rows, capacity, eng)
        parts.setdefault(key[-1], []).append((rows.index.to_numpy(), tab, bind, capacity, budget))
        keep.append(rows.index.to_numpy())

    def _batches(self, groups: list, position: pd.Series) -> list[_Batch]:
        free_idx, free_tabs, free_budget, out = [], [], [], []
        for index, tab, bind, capacity, budget in groups:
            if np.any(~bind):
                free_idx.append(index[~bind])
                free_tabs.append({k: v[~bind] for k, v in tab.items()})
                free_budget.append(budget[~bind])
            if np.any(bind):
                out.append(self._batch(index[bind], {k: v[bind] for k, v in tab.items()}, capacity,
                                       position, budget[bind]))
        if free_idx:
            out.append(self._batch(np.concatenate(free_idx), concat_tables(free_tabs), np.inf, position,
                                   np.concatenate(free_budget)))
        return out

    def _batch(self, index: np.ndarray, tab: dict, capacity: float, position: pd.Series,
               budget: np.ndarray) -> _Batch:
        rows = self.rows.loc[index]
        return _Batch(position.loc[index].to_numpy(), RowTables(tab, capacity),
                      rows["concurrency"].to_numpy(float), rows["isl"].to_numpy(float),
                      rows["osl"].to_numpy(float), rows["dp"].to_numpy(float), budget)

    def subset(self, keep) -> ServingProblem:
        """The problem restricted to the rows where ``keep`` (aligned with :attr:`rows`) is true."""
        keep = np.asarray(keep, dtype=bool)
        new_position = np.cumsum(keep) - 1
        out = ServingProblem(self.rows[keep].copy(), self.skipped, efficiency=self.efficiency)
        for source, target in ((self.batches, out.batches), (self.disagg, out.disagg), (self.direct, out.direct)):
            for backend, batches in source.items():
                kept = [b2 for b in batches if (b2 := b.subset(keep, new_position)) is not None]
                if kept:
                    target[backend] = kept
        return out

    def evaluate(self, calibrations: Mapping[str, EngineCalibration] | None = None,
                 backends=None) -> tuple[np.ndarray, np.ndarray]:
        """Predicted (TTFT, TPOT) [s] of every row of :attr:`rows`, in order.

        Parameters
        ----------
        calibrations : mapping, optional
            Engine-level parameters per backend (default: the uncalibrated presets); the request
            overhead enters the closed loop as think time and is added to the TTFT, as is the
            synchronised-wave wait (:mod:`perfmodel.serving.waves`) weighted by ``sync_fraction``;
            ``first_token_steps`` mean decode steps (TPOT) are added to the TTFT.
        backends : iterable of str, optional
            Evaluate only these backends (other rows are NaN).
        """
        ttft = np.full(len(self.rows), np.nan)
        tpot = np.full(len(self.rows), np.nan)
        for positions, res in self._solve(calibrations, backends):
            ttft[positions] = res.ttft_mean_s
            tpot[positions] = res.tpot_mean_s
        return ttft, tpot

    def _solve(self, calibrations, backends=None):
        """Yield (positions, SteadyState) per batch: the steady state users run, under each backend's
        engine (its scheduler profile with the given terms; the terms enter the tabulated steps
        through :meth:`RowTables.adjusted` and the TTFT through the engine's request terms)."""
        engines = engines_under(calibrations)
        for backend, batches in self.disagg.items():
            if backends is None or backend in backends:
                for b in batches:
                    yield b.positions, b.solve(engines[backend], DISAGG_ITERATIONS)
        for backend, direct in self.direct.items():
            if backends is None or backend in backends:
                for d in direct:
                    yield d.positions, d.solve(engines[backend], STEADY_STATE_ITERATIONS)
        for backend, batches in self.batches.items():
            if backends is not None and backend not in backends:
                continue
            engine = engines[backend]
            default = float(engine.profile.max_num_batched_tokens)
            for b in batches:
                # the profile's scalar budget where no row has its own (same numbers, less array work)
                budget = None if np.all(b.budget == default) else b.budget
                res = steady_state(b.tables.adjusted(engine.terms), b.concurrency, b.isl, b.osl, engine=engine,
                                   iterations=STEADY_STATE_ITERATIONS, schedulers=b.schedulers,
                                   max_num_batched_tokens=budget)
                yield b.positions, res

    def predictions(self, calibrations: Mapping[str, EngineCalibration] | None = None) -> pd.DataFrame:
        """:attr:`rows` with ``predicted_ttft_mean_s``, ``predicted_tpot_mean_s`` (the steady state's means over
        requests), ``predicted_decode_batch_mean`` (mean decoding sequences per (decode) replica) and
        ``limited_by`` (what caps the decode batch: ``clients``, ``max_num_seqs``, ``kv_cache``,
        ``prefill_budget`` or ``prefill_pool``)."""
        out = self.rows.copy()
        cols = {name: np.full(len(out), np.nan)
                for name in ("predicted_ttft_mean_s", "predicted_tpot_mean_s", "predicted_decode_batch_mean")}
        cols["limited_by"] = np.full(len(out), "", dtype=object)
        for positions, res in self._solve(calibrations):
            cols["predicted_ttft_mean_s"][positions] = res.ttft_mean_s
            cols["predicted_tpot_mean_s"][positions] = res.tpot_mean_s
            cols["predicted_decode_batch_mean"][positions] = res.decode_batch_mean
            cols["limited_by"][positions] = res.limited_by
        return out.assign(**cols)
