"""Pool layouts of disaggregated measured rows that do not record them, from the runs' launch configs.

700 ``disagg`` rows of ``serving_measured.csv`` (SemiAnalysis InferenceX runs exported in
``2026-03-25.csv`` / ``2026-04-06.csv``) keep only the GPUs per worker of each pool (as ``*_tp_size``),
the prefill pool's expert-parallel degree (written into both pools) and the total concurrency: no worker
counts, attention-DP flags or batch sizes. ``perfmodel/data/validation/disagg_workers.csv`` lists, per
row id, the layout InferenceX launched that run with (its ``nvidia-master.yaml`` entry at the commit in
force when the row was measured; rule and provenance in ``scripts/disagg_workers_table.py`` and the data
README), or why none can be assigned (``status`` ``ambiguous`` / ``recipe-only`` / ``no-config``).

:func:`fill_layout` applies it to one row: only rows whose worker counts are empty are touched, and only
when the table's layout has the GPUs per worker and prefill EP degree the row records; the row's pool
columns are then replaced by the complete layout (the recorded ones encode the same GPUs lossily, e.g.
a DEP8 decode pool as ``tp_size`` 8, ``moe_tp_size`` 2, ``moe_ep_size`` 4). A row without a
``spec_decode`` cell also gets the config's speculative decoding where it is known (MTP with the draft
length its TensorRT-LLM recipe names, or off).
"""

from __future__ import annotations

import csv
from functools import lru_cache
from importlib import resources

from .cells import blank
from .cells import number as _float

#: Schema columns the table supplies for each pool.
POOL_FIELDS = ("num_workers", "batch_size", "tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
FILLED = tuple(f"{pool}_{f}" for pool in ("prefill", "decode") for f in POOL_FIELDS)

#: Skip reason of a disagg row without worker counts and without a recovered layout.
NOT_RECORDED = "disagg: pool worker counts not recorded (prefill/decode_num_workers empty)"


@lru_cache(maxsize=1)
def layout_table() -> dict[str, dict[str, str]]:
    """Rows of the shipped ``disagg_workers.csv`` by measured row id."""
    path = resources.files("perfmodel") / "data" / "validation" / "disagg_workers.csv"
    with path.open(newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


def _gpus_per_worker(row: dict, pool: str) -> float:
    """tp × attention DP of a pool (an empty attention-DP cell means 1)."""
    dp = _float(row.get(f"{pool}_attention_dp_size"))
    return _float(row.get(f"{pool}_tp_size")) * (dp if dp >= 1 else 1.0)


def fill_layout(row: dict, table: dict[str, dict[str, str]] | None = None) -> tuple[dict, str | None]:
    """A disagg row with its pool layout filled from the table, and why not when it cannot be.

    Parameters
    ----------
    row : dict
        One row in the ``serving_measured.csv`` schema.
    table : dict, optional
        Layouts by row id (default: :func:`layout_table`).

    Returns
    -------
    row : dict
        ``row`` itself when it records its worker counts, is not ``disagg`` or is not in the table;
        else a copy with the ``prefill_*``/``decode_*`` columns of :data:`FILLED` from the table and,
        when the row has none, its ``spec_decode`` (``mtp:k=K`` or ``off`` where the launch config says
        so; left empty, i.e. off, where its entries disagree or name no K).
    reason : str or None
        None when the row can be mapped as returned; else the skip reason: :data:`NOT_RECORDED`
        followed by why the run's launch config does not give the layout.
    """
    if str(row.get("mode", "")).strip() != "disagg" or (
            _float(row.get("prefill_num_workers")) >= 1 and _float(row.get("decode_num_workers")) >= 1):
        return row, None
    entry = (layout_table() if table is None else table).get(str(row.get("id", "")).strip())
    if entry is None:
        return row, f"{NOT_RECORDED}; no launch config known for this run"
    if entry["status"] != "filled":
        return row, f"{NOT_RECORDED}; InferenceX launch config {entry['status']}: {entry['reason']}"
    recorded = (_gpus_per_worker(row, "prefill"), _float(row.get("prefill_moe_ep_size")), _gpus_per_worker(row, "decode"))
    source = (_gpus_per_worker(entry, "prefill"), _float(entry["prefill_moe_ep_size"]), _gpus_per_worker(entry, "decode"))
    if recorded != source:
        return row, (f"{NOT_RECORDED}; disagg_workers.csv layout (prefill {source[0]:g} GPUs/worker, ep "
                     f"{source[1]:g}; decode {source[2]:g} GPUs/worker) contradicts the recorded one "
                     f"({recorded[0]:g}, {recorded[1]:g}, {recorded[2]:g})")
    out = {**row, **{k: entry[k] for k in FILLED}}
    if entry.get("spec_decode") and blank(row.get("spec_decode")):
        out["spec_decode"] = entry["spec_decode"]
    return out, None
