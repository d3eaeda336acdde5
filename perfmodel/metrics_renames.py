"""Names renamed in this release and the old attribute names result objects still answer.

:data:`RENAMED` lists every renamed output name, flag or column with where it appears (docs/cli.md's table is
generated from it); :data:`DEPRECATED_ATTRIBUTES` and :data:`DEPRECATED_FIELDS` the old Python attribute names
that still work, with a :class:`DeprecationWarning`. Re-exported by :mod:`perfmodel.metrics_vocabulary`.
"""

from __future__ import annotations

import warnings

#: Names replaced in this release: (old, new, where). JSON/CSV keys and DataFrame columns simply changed;
#: the old Python attribute names in :data:`DEPRECATED_ATTRIBUTES` still work, with a DeprecationWarning.
RENAMED: tuple[tuple[str, str, str], ...] = (
    ("per_device_tokens_per_s", "output_tokens_per_s_per_device",
     "predict, sweep, Prediction, DeploymentPrediction, claims"),
    ("per_device_tokens_per_s", "decode_tokens_per_s_per_device", "scaling_curve (it was decode only)"),
    ("output_tokens_per_s_per_gpu", "output_tokens_per_s_per_device", "estimate"),
    ("gpus", "devices", "estimate"),
    ("ttft_s, tpot_s, e2e_s", "ttft_mean_s, tpot_mean_s, e2e_mean_s", "estimate (they are means)"),
    ("n_decode", "decode_batch_mean", "estimate"),
    ("ttft_s, tpot_s, e2e_s, n_decode", "ttft_mean_s, tpot_mean_s, e2e_mean_s, decode_batch_mean",
     "SteadyState attributes (pm.steady_state, steady_state_disagg)"),
    ("throughput_rps", "requests_per_s", "simulate, max-load, steady_state, SimulationResult.summary"),
    ("throughput_output_tokens_per_s", "output_tokens_per_s", "simulate, max-load, steady_state"),
    ("throughput_input_tokens_per_s", "input_tokens_per_s", "simulate"),
    ("goodput_rps", "goodput_requests_per_s", "simulate, max-load, plan"),
    ("user_tokens_per_s_mean", "per_user_mean_tokens_per_s", "simulate"),
    ("inverse_mean_tpot_tokens_per_s", "per_user_at_mean_tpot_tokens_per_s", "simulate"),
    ("user_words_per_s_mean", "per_user_mean_words_per_s", "simulate"),
    ("max_arrival_rate", "max_arrival_requests_per_s", "max-load"),
    ("offered_rps", "offered_requests_per_s", "plan"),
    ("per_replica_max_rps", "max_requests_per_s_per_replica", "plan"),
    ("per_replica_steady_state_rps", "steady_state_requests_per_s_per_replica", "plan"),
    ("rate_rps", "rate_requests_per_s", "plan inputs"),
    ("request_rate_rps", "rate_requests_per_s",
     "measurement tables' open-loop column (validate --data, map_rows, validate --out, the importers' "
     "results); a table with the old column is still read, with a DeprecationWarning (a note on stderr from "
     "perfmodel validate)"),
    ("concurrency", "sequences", "sweep JSON/CSV/--out and pm.sweep frames (dp x batch of static batches, not "
     "closed-loop clients); the flag is --sequences and the keyword sequences=: --concurrency (a note on "
     "stderr) and concurrency= (a DeprecationWarning) are still read"),
    ("simulated_rate_rps, simulated_throughput_rps",
     "simulated_rate_requests_per_s, simulated_requests_per_s",
     "validate (open-loop rows)"),
    ("tokens_per_s_per_mw", "output_tokens_per_s_per_mw", "sweep, plan, predict --deployment, claims"),
    ("precision", "weights, activations, kv_cache",
     "predict (also --deployment and dataflow) records; perfmodel sweep JSON/CSV/--out"),
    ("precision, prefill_precision, decode_precision", "weights, prefill_weights, decode_weights",
     "plan rows"),
    ("kv_dtype", "kv_cache", "models show (the format kv_bytes_per_token is given at)"),
    ("fraction, weights, activations, runtime, kv_pool, kv_bytes_per_token, block_size, kv_tokens, ranks",
     "memory_fraction, weights_bytes_per_device, activations_bytes_per_device, runtime_bytes_per_device, "
     "kv_pool_bytes_per_device, kv_bytes_per_token_per_device, kv_block_size, kv_cache_tokens, dp_attention",
     "simulate's kv_memory record, JSON and CSV (EngineMemory.as_dict; the attributes keep their names)"),
    ("ttft_s, tpot_s, e2e_s", "request_ttft_s, request_tpot_s, request_e2e_s",
     "SimulationResult attributes and to_dataframe() columns (each request's own value under load)"),
    ("predicted_n_decode", "predicted_decode_batch_mean", "validate --out, ServingProblem.predictions()"),
    ("predicted_ttft_s, predicted_tpot_s, measured_ttft_s, measured_tpot_s",
     "predicted_ttft_mean_s, predicted_tpot_mean_s, measured_ttft_mean_s, measured_tpot_mean_s",
     "validate --out, ValidationRun.predictions/open_loop, ServingProblem.predictions(), map_rows, "
     "cross_validate (they are means over requests); plan_regret's add_rates/choose/score_groups and "
     "the scripts reading an older CSV still accept the old names, with a DeprecationWarning"),
    ("measured_tps_gpu, predicted_tps_gpu",
     "measured_output_tokens_per_s_per_gpu, predicted_output_tokens_per_s_per_gpu", "plan_regret.add_rates"),
    ("best_tps_gpu, pick_predicted_tps_gpu, pick_tps_gpu",
     "best_output_tokens_per_s_per_gpu, pick_predicted_output_tokens_per_s_per_gpu, "
     "pick_output_tokens_per_s_per_gpu",
     "plan_regret.Choice (the old attributes still answer, with a DeprecationWarning) and score_groups columns"),
    ("speedup", "tokens_per_step_multiplier",
     "claim files (a baseline/candidate key, an unknown's path) and claim output; the old key is still read, "
     "with a DeprecationWarning (speedup now only names scaling_curve's TPOT ratio)"),
    ("predicted_ttft_ci_pct, predicted_tpot_ci_pct", "predicted_ttft_mean_ci_pct, predicted_tpot_mean_ci_pct",
     "validate --out (open-loop rows)"),
    ("ci_ttft_pct, ci_tpot_pct", "ttft_mean_ci_pct, tpot_mean_ci_pct",
     "OpenLoopPrediction (validation.predict_openloop.simulate_row; the old attributes still answer, with a "
     "DeprecationWarning)"),
    ("formats", "weights, activations, kv_cache",
     "simulate, max-load JSON and CSV: the label (\"w:fp8 a:fp8 kv:fp8\") became three keys "
     "(prefill_weights... and decode_weights... when the P/D pools differ)"),
    ("weights_bytes_per_chip, kv_bytes_per_chip, spill_bytes_per_chip, draft_bytes_per_chip, "
     "sram_used_bytes_per_chip, hbm_used_bytes_per_chip, ddr_used_bytes_per_chip",
     "the same with _per_device", "predict on a dataflow machine, predict_dataflow"),
)

#: Old attribute names still answered by result objects for one release.
DEPRECATED_ATTRIBUTES = {"per_device_tokens_per_s": "output_tokens_per_s_per_device",
                         "tokens_per_s_per_mw": "output_tokens_per_s_per_mw",
                         "throughput_rps": "requests_per_s",
                         "throughput_output_tokens_per_s": "output_tokens_per_s"}


#: Old attribute names answered by one class only: its fields renamed where the old name means another
#: quantity in the glossary (a bare ``ttft_s`` is one static batch on an idle replica, not a mean).
DEPRECATED_FIELDS = {"SteadyState": {"ttft_s": "ttft_mean_s", "tpot_s": "tpot_mean_s", "e2e_s": "e2e_mean_s",
                                     "n_decode": "decode_batch_mean"},
                     "SimulationResult": {"ttft_s": "request_ttft_s", "tpot_s": "request_tpot_s",
                                          "e2e_s": "request_e2e_s"},
                     "OpenLoopPrediction": {"ci_ttft_pct": "ttft_mean_ci_pct", "ci_tpot_pct": "tpot_mean_ci_pct"},
                     "Choice": {"best_tps_gpu": "best_output_tokens_per_s_per_gpu",
                                "pick_predicted_tps_gpu": "pick_predicted_output_tokens_per_s_per_gpu",
                                "pick_tps_gpu": "pick_output_tokens_per_s_per_gpu"}}


def deprecated_attribute(owner: str, old: str) -> str:
    """The new name of a deprecated attribute ``old`` of ``owner``, after a DeprecationWarning.

    ``owner``'s own renames (:data:`DEPRECATED_FIELDS`) come first, then :data:`DEPRECATED_ATTRIBUTES`.
    """
    new = DEPRECATED_FIELDS.get(owner, {}).get(old) or DEPRECATED_ATTRIBUTES[old]
    warnings.warn(f"{owner}.{old} is deprecated, use {owner}.{new}", DeprecationWarning, stacklevel=3)
    return new


def deprecated_property(owner: str, old: str) -> property:
    """A read-only property ``old`` of class ``owner`` that warns (DeprecationWarning) and returns the
    attribute under its new name (:func:`deprecated_attribute`)."""
    new = DEPRECATED_FIELDS.get(owner, {}).get(old) or DEPRECATED_ATTRIBUTES[old]

    def get(self):
        return getattr(self, deprecated_attribute(owner, old))

    get.__doc__ = f"Deprecated name of :attr:`{new}` (warns; removed in the next release)."
    return property(get)
