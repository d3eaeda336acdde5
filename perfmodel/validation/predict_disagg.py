"""Predicted mean TTFT and TPOT of measured prefill/decode-disaggregated rows.

A disaggregated row runs C = ``concurrency`` × D clients (``concurrency`` is per decode replica, see
:mod:`perfmodel.validation.rows`) over P prefill and D decode replicas (``p_workers``, ``d_workers``) of
their own layouts; :func:`perfmodel.serving.steady_state_disagg` gives the closed loop's means. Step
times come from one tabulated step model per pool (:mod:`perfmodel.validation.surrogate`), adjusted by
the same engine parameters as aggregated rows (:mod:`perfmodel.engine.calibration`): decode-only steps
in the decode pool, prompt steps in the prefill pool.

Speculative decoding (a ``spec_decode_text`` other than ``off``) changes the decode pool only, by the
rule of the aggregated rows and of :class:`perfmodel.engine.EngineStep`: its tables carry the ratio
r(n) of the speculative to the plain decode time per generated token (k + 1 tokens verified per
sequence and step, E accepted on average from the shipped acceptance model,
:mod:`perfmodel.engine.speculative`), and its KV pool is the engine's less the draft's weights and
KV cache (:func:`spec_kv_tokens`). The prefill pool is unchanged: the aggregated path charges the draft
nothing in prompt steps either.

KV transfer: :func:`perfmodel.deployment.disagg.request_kv_transfer_time`, the one KV-transfer time
(one request's cache leaves the tp × pp devices of the prefill rank in parallel, over the scale-up link
within one scale-up domain, else the scale-out NIC, plus that link's α).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..deployment.disagg import request_kv_transfer_time
from ..engine.engine import Engine
from ..engine.kv_memory import engine_kv_tokens, engine_memory, pool_tokens_with_draft
from ..engine.speculative import parse_spec_decode
from ..engine.speculative_draft import draft_step_model, kv_capacity_with_draft
from ..errors import PerfmodelError
from ..serving import steady_state_disagg
from .stepmodels import DISAGG_COLUMNS, StepModelCache, config_groups, pool_keys
from .surrogate import RowBatch, RowTables, build_tables, concat_tables

#: Skip reason of configurations whose weights leave no memory for the KV cache.
NO_KV_REASON = "weights do not fit in device memory (no room for KV cache)"


def spec_kv_tokens(sm, eng, spec) -> float:
    """KV tokens of the engine's pool of step model ``sm`` once the draft's weights and KV cache are in
    it (as :meth:`perfmodel.engine.engine.Engine.step` sizes it), for speculative decoding ``spec``."""
    draft = draft_step_model(sm, spec) if spec.method != "ngram" else None
    mem = engine_memory(sm, eng, draft is not None)
    if mem is None:
        return float(kv_capacity_with_draft(sm, spec, draft))
    return float(pool_tokens_with_draft(mem, spec, draft, sm.parallel.dp_attention))


@dataclass
class DisaggBatch(RowBatch):
    """Disaggregated rows of one configuration: positions, both pools' tables and the loop's inputs."""

    positions: np.ndarray
    prefill: RowTables
    decode: RowTables
    clients: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    prefill_replicas: np.ndarray
    decode_replicas: np.ndarray
    kv_transfer_s: np.ndarray
    prefill_schedulers: np.ndarray
    decode_schedulers: np.ndarray

    def solve(self, engine: Engine, iterations: int):
        """Steady state of the rows under one engine (its fitted terms applied to the tables)."""
        prefill, decode = self.prefill.adjusted(engine.terms), self.decode.adjusted(engine.terms)
        return steady_state_disagg(prefill, decode, self.clients, self.isl, self.osl,
                                   prefill_replicas=self.prefill_replicas, decode_replicas=self.decode_replicas,
                                   prefill_engine=engine, kv_transfer_s=self.kv_transfer_s,
                                   iterations=iterations, prefill_schedulers=self.prefill_schedulers,
                                   decode_schedulers=self.decode_schedulers)


def tabulate_disagg(rows: pd.DataFrame, cache: StepModelCache, engines: dict
                    ) -> tuple[dict[str, tuple[np.ndarray, dict]], list[dict]]:
    """Step-model tables of disaggregated rows, merged per backend (one steady-state call each).

    Returns
    -------
    parts : dict
        backend -> (row index, inputs), ``inputs`` holding the :class:`DisaggBatch` fields except
        ``positions``; the tables carry each row's own KV capacity.
    skipped : list of dict
        ``row``, ``id``, ``reason`` of rows whose pools cannot be built.
    """
    groups: dict[str, list] = {}
    skipped = []
    if "spec_decode_text" not in rows:
        rows = rows.assign(spec_decode_text="off")
    for key, group in config_groups(rows, (*DISAGG_COLUMNS, "spec_decode_text", "backend")):
        first = group.iloc[0]
        spec = parse_spec_decode(key[-2]) if key[-2] != "off" else None
        decode_key, prefill_key = pool_keys(first)
        p_workers, d_workers, backend = float(first["p_workers"]), float(first["d_workers"]), key[-1]
        isl = group["isl"].to_numpy(float)
        try:
            dsm, psm = cache.get(decode_key), cache.get(prefill_key)
            # each pool's room as its engine sizes it (as for aggregated rows, not the step model's reserve)
            d_tokens = engine_kv_tokens(dsm, engines[backend]) if spec is None else \
                spec_kv_tokens(dsm, engines[backend], spec)
            reason = None if min(d_tokens, engine_kv_tokens(psm, engines[backend])) > 0 else NO_KV_REASON
            if reason is None:
                tkv = request_kv_transfer_time(psm, int(p_workers) * psm.devices + int(d_workers) * dsm.devices, isl)
        except PerfmodelError as exc:
            reason = f"step model error: {exc}"
        if reason is not None:
            skipped += [{"row": r, "id": i, "reason": reason} for r, i in zip(group["row"], group["id"], strict=True)]
            continue
        osl, conc = group["osl"].to_numpy(float), group["concurrency"].to_numpy(float)
        ones = np.ones_like(isl)
        groups.setdefault(backend, []).append({
            "index": group.index.to_numpy(),
            "prefill": build_tables(psm, isl, osl, 2 * ones,
                                    np.maximum(isl, engines[backend].max_num_batched_tokens * float(first["p_dp"])),
                                    layers=psm.model.num_layers, small_m_model=cache.small_m_variant(prefill_key)),
            "decode": build_tables(dsm, isl, osl, conc, 2 * ones, layers=dsm.model.num_layers,
                                   small_m_model=cache.small_m_variant(decode_key), spec=spec),
            "prefill_capacity": engine_kv_tokens(psm, engines[backend]) * ones,
            "decode_capacity": d_tokens * ones,
            "clients": conc * d_workers, "isl": isl, "osl": osl, "prefill_replicas": p_workers * ones,
            "decode_replicas": d_workers * ones, "kv_transfer_s": tkv,
            "prefill_schedulers": float(first["p_dp"]) * ones, "decode_schedulers": float(first["dp"]) * ones})
    parts = {}
    for backend, items in groups.items():
        def cat(name, items=items):
            return np.concatenate([g[name] for g in items])
        inputs = {k: cat(k) for k in ("clients", "isl", "osl", "prefill_replicas", "decode_replicas",
                                      "kv_transfer_s", "prefill_schedulers", "decode_schedulers")}
        inputs["prefill"] = RowTables(concat_tables([g["prefill"] for g in items]), cat("prefill_capacity"))
        inputs["decode"] = RowTables(concat_tables([g["decode"] for g in items]), cat("decode_capacity"))
        parts[backend] = (cat("index"), inputs)
    return parts, skipped
