"""Closed-loop serving estimates with the validated engine calibration, for deployments not measured.

``perfmodel validate`` publishes how far this pipeline is from measurements (``docs/validation.md``);
:func:`estimate_serving` runs the *same* pipeline — row mapping and format defaults, step models,
steady state (aggregated or P/D-disaggregated), fitted engine parameters — on a deployment and a list
of client concurrencies, so a capacity estimate carries the published error instead of the optimism
of uncalibrated engine presets (whose TTFT is ≈ 75 % low on the public rows: no request overhead, no
synchronised arrivals).

Concurrency is the number of closed-loop clients of one replica (aggregated) or of the whole system
(disaggregated: the clients spread over the decode replicas). Per-replica throughput follows from the
closed loop: :math:`X = C / (\\mathrm{TTFT} + (O - 1)\\,\\mathrm{TPOT})` requests per second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.efficiency import profile_for
from ..engine.calibration import ENGINE_OF_BACKEND, load_profile
from ..errors import ConfigError, unknown_name
from ..hardware import list_hardware
from .models import UnsupportedModel, resolve_model
from .rows import QUANT_MODE_OF_PRECISION, SYSTEMS, hardware_id
from .run import serving_problem


def _model_spec(model: str):
    try:
        return resolve_model(model)
    except UnsupportedModel as exc:
        raise ConfigError(f"model: {exc}") from None


@dataclass(frozen=True)
class PrefillPool:
    """Prefill pool of a P/D-disaggregated deployment (the decode pool is the main layout).

    Attributes
    ----------
    tp, attention_dp, ep : int
        Layout of one prefill replica.
    workers : int
        Prefill replicas.
    decode_workers : int
        Decode replicas.
    """

    tp: int = 1
    attention_dp: int = 1
    ep: int = 1
    workers: int = 1
    decode_workers: int = 1


def _moe_tp(tp: int, attention_dp: int, ep: int) -> int:
    """Expert tensor parallelism filling the MoE group: tp × attention_dp / ep (1 if ep does not divide)."""
    group = tp * attention_dp
    return group // ep if ep and group % ep == 0 else 1


def _rows(model, system, backend, concurrency, isl, osl, tp, pp, attention_dp, ep, precision,
          prefill: PrefillPool | None) -> pd.DataFrame:
    """Rows in the ``serving_measured.csv`` schema, measurements left empty."""
    mode = QUANT_MODE_OF_PRECISION.get(precision.lower(), "")
    out = []
    for c in concurrency:
        row = {"id": f"estimate_c{c:g}", "backend": backend, "model_path": model, "system": system,
               "precision": precision, "isl": isl, "osl": osl, "gemm_quant_mode": mode, "moe_quant_mode": mode,
               "tp_size": tp, "pp_size": pp, "attention_dp_size": attention_dp, "moe_ep_size": ep,
               "moe_tp_size": _moe_tp(tp, attention_dp, ep), "silicon_ttft_ms": np.nan, "silicon_tpot_ms": np.nan}
        if prefill is None:
            row.update(mode="agg", batch_size=c / attention_dp)
        else:
            row.update(mode="disagg", batch_size=np.nan,
                       decode_batch_size=c / (prefill.decode_workers * attention_dp),
                       decode_num_workers=prefill.decode_workers, decode_tp_size=tp, decode_pp_size=pp,
                       decode_attention_dp_size=attention_dp, decode_moe_ep_size=ep,
                       decode_moe_tp_size=_moe_tp(tp, attention_dp, ep),
                       prefill_num_workers=prefill.workers, prefill_tp_size=prefill.tp, prefill_pp_size=1,
                       prefill_attention_dp_size=prefill.attention_dp, prefill_moe_ep_size=prefill.ep,
                       prefill_moe_tp_size=_moe_tp(prefill.tp, prefill.attention_dp, prefill.ep))
        out.append(row)
    return pd.DataFrame(out)


def estimate_serving(model: str, hardware: str, backend: str, concurrency, isl: int, osl: int, *,
                     tp: int = 1, pp: int = 1, attention_dp: int = 1, ep: int = 1, precision: str = "",
                     prefill: PrefillPool | None = None, engines="calibrated",
                     efficiency="calibrated") -> pd.DataFrame:
    """Mean TTFT, TPOT and throughput of a deployment under closed-loop load (see module docstring).

    Parameters
    ----------
    model : str
        Model id, Hugging Face repo id or config.json path.
    hardware : str
        Accelerator id (``h100-sxm``, ``b200``...) or a ``system`` name of the measured data.
    backend : {"vllm", "sglang", "trtllm"}
        Serving engine (its fitted parameters are used).
    concurrency : iterable of float
        Closed-loop clients per replica (aggregated) or in total (disaggregated).
    isl, osl : int
        Prompt and output tokens per request.
    tp, pp, attention_dp, ep : int
        Layout of one replica (the decode replica when ``prefill`` is given); it spans
        tp × attention_dp × pp GPUs (TensorRT-LLM's "TP 8 with attention DP" is tp=1,
        attention_dp=8, ep=8 here).
    precision : str
        Weight format: ``fp8``, ``nvfp4``, ``int4_wo``, ``bf16`` or '' (the checkpoint's own); the
        activation and KV-cache formats follow the validation's defaults (``perfmodel.validation.rows``).
    prefill : PrefillPool, optional
        Makes the deployment P/D-disaggregated.
    engines : str | mapping
        Engine calibration profile (``calibrated``, ``preset`` or a YAML path).
    efficiency : str
        Per-op efficiency profile.

    Returns
    -------
    pandas.DataFrame
        One row per concurrency: ``ttft_s``, ``tpot_s``, ``e2e_s``, ``requests_per_s`` and
        ``output_tokens_per_s`` (per replica, or whole system when disaggregated),
        ``output_tokens_per_s_per_gpu``, ``n_decode`` (mean decoding sequences per (decode) replica),
        ``limited_by`` (what caps the decode batch: ``clients``, ``max_num_seqs``, ``kv_cache``,
        ``prefill_budget`` or ``prefill_pool``; anything but ``clients`` means the extra clients
        queue, in the TTFT), plus the formats and the profiles used.

    Raises
    ------
    ConfigError
        Unknown backend, bad lengths or concurrency, or a deployment the pipeline cannot predict
        (the reason is the mapping's).
    """
    if backend not in ENGINE_OF_BACKEND:
        raise ConfigError(f"backend: expected one of {sorted(ENGINE_OF_BACKEND)}, got {backend!r}")
    if hardware_id(hardware) is None:
        raise unknown_name("hardware", hardware, sorted({*SYSTEMS, *(h.id for h in list_hardware("accelerator"))}))
    spec = _model_spec(model)
    for name, v, low in (("isl", isl, 1), ("osl", osl, 2)):
        if not (isinstance(v, (int, np.integer)) and v >= low):
            raise ConfigError(f"{name}: expected an integer >= {low}, got {v!r}")
    if spec.max_position_embeddings and isl + osl > spec.max_position_embeddings:
        raise ConfigError(f"isl + osl = {isl + osl} exceeds {spec.id}'s context of "
                          f"{spec.max_position_embeddings} tokens")
    pools = [("", ep)] if prefill is None else [("", ep), ("prefill.", prefill.ep)]
    for prefix, e in pools:
        if e != 1 and spec.moe is None:
            raise ConfigError(f"{prefix}ep: {spec.id} is dense (no experts); expert parallelism needs ep=1, got {e}")
    clients_per_rank = attention_dp * (1 if prefill is None else prefill.decode_workers)
    if prefill is not None:
        for name, v in (("prefill.workers", prefill.workers), ("prefill.decode_workers", prefill.decode_workers)):
            if not (isinstance(v, (int, np.integer)) and v >= 1):
                raise ConfigError(f"{name}: expected an integer >= 1, got {v!r}")
    conc = np.atleast_1d(np.asarray(concurrency, dtype=float))
    if conc.size == 0 or not np.all(conc >= clients_per_rank):
        raise ConfigError(f"concurrency: expected values >= {clients_per_rank} (one client per attention-DP rank"
                          f"{' of every decode replica' if prefill is not None else ''}), got {conc.tolist()}")
    rows = _rows(model, hardware, backend, conc, isl, osl, tp, pp, attention_dp, ep, precision, prefill)
    problem, skipped = serving_problem(rows, efficiency, measured=False)
    if len(problem.rows) < len(rows):
        raise ConfigError(f"cannot estimate this deployment: {skipped['reason'].iloc[0]}")
    cals = load_profile(engines) if isinstance(engines, str) else dict(engines)
    pred = problem.predictions(cals).sort_values("row")
    ttft, tpot = pred["predicted_ttft_s"].to_numpy(), pred["predicted_tpot_s"].to_numpy()
    e2e = ttft + (osl - 1) * tpot
    rps = conc / e2e
    first = pred.iloc[0]
    gpus = int(first["tp"] * first["pp"] * first["dp"])
    if prefill is not None:
        gpus = gpus * prefill.decode_workers + prefill.workers * prefill.tp * prefill.attention_dp
    hw = hardware_id(hardware) or hardware
    return pd.DataFrame({
        "concurrency": conc, "ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e, "requests_per_s": rps,
        "output_tokens_per_s": rps * osl, "output_tokens_per_s_per_gpu": rps * osl / gpus, "gpus": gpus,
        "n_decode": pred["predicted_n_decode"].to_numpy(), "limited_by": pred["limited_by"].to_numpy(),
        "weights": first["weights"], "kv_cache": first["kv_cache"], "mode": first["mode"],
        "efficiency_profile": profile_for(hw, efficiency).name,
        "engine_calibration": engines if isinstance(engines, str) else "custom",
    })
