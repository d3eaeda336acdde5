r"""The glossary of output names: every number a command or result object emits, its unit and definition.

One name means one quantity everywhere (JSON/CSV keys, DataFrame columns, result attributes). Names
carry their unit as a suffix (``_s`` seconds, ``_bytes``, ``_w`` watts, ``_per_s`` a rate per second);
names without a suffix are counts or fractions. The rate names follow one pattern,
``<what>_per_s[_per_<normaliser>]``:

- ``per_user_tokens_per_s`` — the speed one request sees, :math:`1/\mathrm{TPOT}`;
- ``output_tokens_per_s`` — output tokens delivered by all devices of the deployment (prefill time
  included); ``decode_tokens_per_s`` — decode only, :math:`\mathrm{batch}/\mathrm{TPOT}` summed over
  replicas;
- ``..._per_device`` — that divided by every chip of the deployment, ``..._per_gpu`` by its GPUs
  only (a mixed GPU/LPU pool), ``..._per_replica`` by its replicas, ``..._per_mw`` by its power in MW;
- ``_mean_s`` / ``_p50_s`` ... — a mean or a percentile over requests; a bare ``ttft_s`` is one static
  batch's value on an idle replica (no distribution).

:data:`GLOSSARY` is the data; :func:`lookup` finds a name; :func:`markdown_table` renders the table in
``docs/cli.md``; :data:`RENAMED` lists names replaced in this release (old → new).
"""

from __future__ import annotations

from dataclasses import dataclass

from .metrics_echoes import ECHOES, echo_unit, echoes_md
from .metrics_renames import (  # noqa: F401 (re-exported: the names' one home was this module)
    DEPRECATED_ATTRIBUTES,
    DEPRECATED_FIELDS,
    RENAMED,
    deprecated_attribute,
    deprecated_property,
)

#: Unit → the suffix a name with that unit ends with ("" for counts and fractions).
UNIT_SUFFIX = {"s": "_s", "s/token": "_s_per_token", "bytes": "_bytes", "bytes/token": "_bytes_per_token",
               "bytes/s": "_bytes_per_s", "FLOP/s": "_flops_per_s", "W": "_w", "requests/s": "_per_s",
               "tokens/s": "_per_s",
               "words/s": "_per_s", "tokens/s/MW": "_per_s_per_mw", "USD/h": "_per_hour", "USD/Mtokens": "",
               "tokens/USD": "_per_usd", "%": "_pct", "% error": "_pct_error", "1": ""}

#: Normalisers after a unit suffix: ``output_tokens_per_s_per_device`` is tokens/s, divided by devices.
NORMALISERS = ("_per_device", "_per_gpu", "_per_replica", "_per_sequence")

#: The statistics over requests and their name suffixes.
STATISTICS = {"mean": "mean over requests", "p50": "50th percentile over requests",
              "p90": "90th percentile over requests", "p95": "95th percentile over requests",
              "p99": "99th percentile over requests"}


@dataclass(frozen=True)
class Metric:
    """One output name.

    Attributes
    ----------
    name : str
        The key / column / attribute name.
    unit : str
        Its SI unit (a key of :data:`UNIT_SUFFIX`).
    definition : str
        What it is, with the equation.
    emitted_by : tuple of str
        Commands (``predict``...) and Python objects (``Prediction``...) that emit it.
    """

    name: str
    unit: str
    definition: str
    emitted_by: tuple[str, ...]


PREDICT = ("predict", "sweep", "Prediction", "DeploymentPrediction", "pm.sweep")
KV_MEMORY = "simulate (kv_memory)"
HW_LIST = "hardware list"
MODELS = ("models list", "models show")
SERVED = ("simulate", "max-load", "plan", "SimulationResult.summary")
DATAFLOW = "predict --execution dataflow"


def _m(name: str, unit: str, definition: str, *emitted_by: str) -> Metric:
    return Metric(name, unit, definition, tuple(emitted_by))


def _statistics(quantity: str, what: str, stats: tuple[str, ...], *emitted_by: str) -> list[Metric]:
    return [_m(f"{quantity}_{q}_s", "s", f"{what}: {STATISTICS[q]} that completed in the counted window",
               *emitted_by) for q in stats]


_ALL = tuple(STATISTICS)
_PCT = ("p50", "p90", "p95", "p99")

_ENTRIES: list[Metric] = [
    # ---- inputs echoed with the results (named as the flags)
    _m("batch", "1", "concurrent sequences of the static batch (per replica)", *PREDICT),
    _m("isl", "1", "input (prompt) tokens per request", *PREDICT),
    _m("osl", "1", "output tokens per request", *PREDICT),
    _m("sequences", "1", "concurrent sequences over all replicas: dp x batch (one static batch per replica; "
       "named so because they are not closed-loop clients)", "sweep", "pm.sweep"),
    _m("concurrency", "1", "closed-loop clients (each sends its next request when the last one ends)",
       "estimate"),
    _m("rate", "requests/s", "offered open-loop arrival rate (Poisson), named as the --rate flag",
       "estimate"),
    _m("rate_requests_per_s", "requests/s", "offered arrival rate over all replicas. plan: the target the plan "
       "is sized for; a measurement table's open-loop rows (validate --out, map_rows): the measured run's mean "
       "arrival rate", "plan", "validate --out"),
    _m("isl_mean", "1", "mean input tokens per request of the workload", "plan"),
    _m("osl_mean", "1", "mean output tokens per request of the workload", "plan"),
    _m("max_replicas", "1", "most replicas a plan may use", "plan"),
    _m("requests_per_search_point", "1", "requests simulated per candidate", "plan"),
    _m("utilisation", "1", "busy fraction the plan's power is computed at (between idle and TDP)", "plan"),
    _m("devices", "1", "every chip of the deployment (all pools, all replicas)",
       *PREDICT, "estimate", "plan"),
    _m("devices_per_replica", "1", "chips of one replica", "plan"),
    _m("gpus", "1", "GPUs of the deployment (its LPUs and other chips not counted)", "demo"),
    _m("replicas", "1", "replicas behind the router", "simulate", "max-load", "plan"),
    _m("tp", "1", "tensor parallelism", "sweep", "plan"),
    _m("pp", "1", "pipeline stages", "sweep", "plan"),
    _m("ep", "1", "expert parallelism", "sweep", "plan"),
    _m("dp", "1", "data-parallel replicas of the layout", "sweep"),
    _m("dp_attention", "1", "attention data parallelism (kv_memory: ranks, each with its own KV pool)", "sweep",
       "plan", KV_MEMORY),
    _m("micro_batches", "1", "pipeline micro-batches of a split deployment", "predict --deployment"),
    _m("max_num_seqs", "1", "the engine's limit on sequences in a step (a plan dimension, the engine "
       "profile's field name)", "plan"),
    _m("max_num_batched_tokens", "1", "the engine's token budget per step (a plan dimension)", "plan"),
    _m("seed", "1", "random seed of the simulation", "simulate", "max-load"),
    _m("target", "1", "SLO target: share of requests that must meet every limit", "max-load"),
    # ---- one static batch on an idle replica (predict, sweep, deployment)
    _m("ttft_s", "s", "time to first token of one static batch on an idle replica: prefill of the batch, "
       "no queueing, no network", *PREDICT),
    _m("tpot_s", "s", "time per output token after the first: the mid-output decode step of the batch",
       *PREDICT),
    _m("e2e_s", "s", "end-to-end time of the batch: e2e_s = ttft_s + (osl - 1) tpot_s", *PREDICT),
    _m("prefill_s", "s", "prefill alone (a deployment's TTFT without the KV transfer)",
       "predict --deployment"),
    _m("kv_transfer_s", "s", "exposed KV-cache transfer from prefill to decode pool (P/D)",
       "predict --deployment"),
    _m("comm_s_per_token", "s/token", "exchange between pools on the decode critical path per output token "
       "(TPOT minus TPOT with a free link)", "predict --deployment", "scaling_curve"),
    _m("collective_s_per_token", "s/token",
       "collectives inside pools on the decode critical path per output token",
       "predict --deployment"),
    _m("sync_s", "s", "per-step synchronisation of a dataflow (SRAM) deployment",
       DATAFLOW),
    _m("hand_off_s", "s", "per-step activation hand-off between chips of a dataflow deployment",
       DATAFLOW),
    _m("stream_s", "s", "dataflow TPOT term: streaming the weights from their tier", DATAFLOW),
    _m("compute_s", "s", "dataflow TPOT term: arithmetic", DATAFLOW),
    _m("ops_s", "s", "dataflow TPOT term: every op of the layers crossed (the roofline of each op, summed)",
       DATAFLOW),
    _m("head_s", "s", "dataflow TPOT term: embedding and LM head", DATAFLOW),
    _m("verify_s", "s", "speculative decoding on a dataflow machine: the verification pass per step",
       DATAFLOW + " --spec-decode"),
    _m("draft_s", "s", "speculative decoding on a dataflow machine: the draft passes per step",
       DATAFLOW + " --spec-decode"),
    _m("expected_tokens", "1", "tokens accepted per verification step (speculative decoding)",
       DATAFLOW + " --spec-decode"),
    _m("micro_batch", "1", "sequences per pipeline micro-batch: ceil(batch / depth)", DATAFLOW),
    _m("stream_efficiency", "1", "fitted share of the tier's bandwidth a weight stream reaches",
       DATAFLOW),
    _m("per_user_tokens_per_s", "tokens/s", "speed one request sees while decoding: 1 / tpot_s", *PREDICT),
    _m("output_tokens_per_s", "tokens/s", "output tokens per second of the whole deployment. predict/sweep: "
       "one static batch, replicas x batch x osl / e2e_s (prefill included); simulate/estimate/plan/"
       "max-load: steady state, completed output tokens / time = requests_per_s x osl", *PREDICT,
       "estimate", *SERVED),
    _m("input_tokens_per_s", "tokens/s", "prompt tokens per second of the whole deployment "
       "(sweep: replicas x batch x isl / e2e_s; simulate: completed prompt tokens / time)", "sweep",
       "simulate"),
    _m("total_tokens_per_s", "tokens/s", "input + output tokens per second of the static batch: "
       "output_tokens_per_s x (isl + osl) / osl", "predict", "Prediction", "DeploymentPrediction"),
    _m("decode_tokens_per_s", "tokens/s", "decode only (no prefill): replicas x batch / tpot_s",
       "predict", "Prediction", "DeploymentPrediction", "demo", "scaling_curve"),
    _m("output_tokens_per_s_per_device", "tokens/s", "output_tokens_per_s / devices (every chip, GPUs "
       "and LPUs alike)", *PREDICT, "estimate", "demo"),
    _m("decode_tokens_per_s_per_device", "tokens/s", "decode_tokens_per_s / devices",
       "demo", "scaling_curve"),
    _m("decode_tokens_per_s_per_gpu", "tokens/s", "decode_tokens_per_s / the deployment's GPUs only "
       "(its LPUs not counted): per GPU of a mixed GPU/LPU pool", "demo"),
    _m("output_tokens_per_s_per_mw", "tokens/s/MW", "output_tokens_per_s / (power_w / 1e6)",
       "sweep", "plan", "predict --deployment", "claim"),
    _m("power_w", "W", "power of all devices of the deployment (TDP basis unless the spec says otherwise); "
       "hardware list: of one device", "sweep", "plan", "predict --deployment", HW_LIST),
    _m("weights_bytes_per_device", "bytes", "weight bytes held by one device", *PREDICT),
    _m("kv_bytes_per_device", "bytes", "KV-cache bytes of the batch held by one device", *PREDICT),
    _m("memory_used_bytes_per_device", "bytes", "weights + KV cache + activations + reserve on one device",
       *PREDICT),
    _m("spill_bytes_per_device", "bytes", "weight bytes spilled to the next memory tier on one device",
       DATAFLOW),
    _m("draft_bytes_per_device", "bytes", "draft model weights + KV on one device", DATAFLOW),
    *(_m(f"{tier}_used_bytes_per_device", "bytes", f"bytes used in the {tier.upper()} tier of one device",
         DATAFLOW) for tier in ("sram", "hbm", "ddr")),
    _m("engine_kv_cache_tokens", "1", "KV tokens of the replica's pool as the serving engine sizes it",
       "predict --engine"),
    _m("memory_capacity_bytes", "bytes", "memory of one device", "Prediction", "predict --deployment", HW_LIST),
    _m("max_batch_at_context", "1", "largest batch whose KV cache fits at isl + osl tokens", *PREDICT),
    _m("speedup", "1", "tpot_s at the fewest devices / tpot_s here", "scaling_curve"),
    _m("tokens_per_step_multiplier", "1", "a claim side's input echoed with its result: factor on the tokens "
       "each sequence gets per decode step at no extra step time (per-user speed and metric multiplied by it; "
       "default 1)", "claim"),
    _m("ideal_speedup", "1", "devices here / the fewest devices", "scaling_curve"),
    _m("scaling_efficiency", "1", "speedup / ideal_speedup", "scaling_curve"),
    _m("comm_share", "1", "comm_s_per_token / tpot_s", "scaling_curve"),
    _m("busy_fraction", "1", "share of the static batch's e2e_s during which a pool runs ops",
       "predict --deployment"),
    _m("prefix_hit_rate", "1", "share of prompt tokens found in the prefix cache (token-weighted)",
       "predict --deployment", "simulate"),
    _m("usd_per_hour", "USD/h", "price of the deployment in US dollars per hour",
       "sweep"),
    _m("cost_per_hour", "USD/h", "price of the plan's deployment in US dollars per hour (table)", "plan"),
    _m("usd_per_m_input", "USD/Mtokens", "US dollars per million input tokens", "sweep"),
    _m("usd_per_m_output", "USD/Mtokens", "US dollars per million output tokens", "sweep"),
    _m("usd_per_m_output_all_in", "USD/Mtokens",
       "US dollars per million output tokens, input cost folded in", "sweep"),
    _m("output_tokens_per_usd", "tokens/USD", "output tokens per US dollar", "sweep"),
    # ---- under load: closed-loop means (estimate) and simulated distributions
    _m("requests_per_s", "requests/s", "completed requests per second of the deployment (steady state or "
       "simulated: completed / time)", "estimate", *SERVED),
    _m("goodput_requests_per_s", "requests/s", "completed requests meeting every SLO limit per second",
       *SERVED),
    _m("simulated_rate_requests_per_s", "requests/s", "arrivals per second the simulation of an open-loop "
       "measured run sent (all replicas)", "validate"),
    _m("simulated_requests_per_s", "requests/s", "completed requests per second in that simulation",
       "validate"),
    _m("offered_requests_per_s", "requests/s", "arrival rate offered to the deployment", "plan"),
    _m("max_requests_per_s_per_replica", "requests/s",
       "highest arrival rate one replica serves within the SLO",
       "plan"),
    _m("steady_state_requests_per_s_per_replica", "requests/s",
       "one replica's closed-form steady-state throughput at its KV/max_num_seqs limit", "plan"),
    _m("max_arrival_requests_per_s", "requests/s",
       "highest arrival rate meeting the SLO target (--search rate)",
       "max-load"),
    _m("max_concurrency", "1", "highest client count meeting the SLO target (--search concurrency)",
       "max-load"),
    _m("load", "1", "the curve's load: requests/s (--search rate) or clients (--search concurrency)",
       "max-load"),
    _m("attainment_at_max", "1", "SLO attainment at the answer", "max-load"),
    _m("simulations", "1", "simulations the search ran", "max-load"),
    _m("per_user_mean_tokens_per_s", "tokens/s", "mean over requests of 1 / tpot (each request's own TPOT)",
       "simulate"),
    _m("per_user_at_mean_tpot_tokens_per_s", "tokens/s", "1 / tpot_mean_s (the inverse of the mean, <= the "
       "mean of the inverses)", "simulate"),
    _m("per_user_mean_words_per_s", "words/s", "per_user_mean_tokens_per_s / tokens_per_word", "simulate"),
    _m("ttft_mean_s", "s", "time to first token under load: mean over requests (estimate: steady state; "
       "simulate/plan: completed requests in the counted window)", "estimate", "SteadyState", *SERVED),
    _m("tpot_mean_s", "s", "time per output token under load: mean over requests", "estimate", "SteadyState",
       *SERVED),
    _m("e2e_mean_s", "s", "end-to-end time under load: mean over requests (estimate: ttft_mean_s + "
       "(osl - 1) tpot_mean_s)", "estimate", "SteadyState", *SERVED),
    *_statistics("ttft", "time to first token, queueing included", _PCT, *SERVED),
    *_statistics("tpot", "time per output token after the first", _PCT, *SERVED),
    *_statistics("e2e", "end-to-end time from arrival to last token", _PCT, *SERVED),
    *_statistics("queue", "time waiting before the first schedule", _ALL, "simulate"),
    *_statistics("ttfat", "time to first answer token (after reasoning tokens)", _ALL, "simulate"),
    *_statistics("task_time", "time to the task's words", _ALL, "simulate"),
    *_statistics("itl", "inter-token latency, token-weighted", _PCT, "simulate"),
    _m("request_ttft_s", "s", "one simulated request's time to first token, queueing included: first token "
       "- arrival (an array, one value per request; ttft_mean_s, ttft_p95_s... are over it)", "SimulationResult"),
    _m("request_tpot_s", "s", "one simulated request's time per output token after the first: (last token - "
       "first token) / (output tokens - 1)", "SimulationResult"),
    _m("request_e2e_s", "s", "one simulated request's end-to-end time: last token - arrival (completed "
       "requests)", "SimulationResult"),
    _m("ttft_at_target_percentile_s", "s", "TTFT percentile at the SLO target (e.g. p90 for target 0.9)",
       "simulate"),
    _m("tpot_at_target_percentile_s", "s", "TPOT percentile at the SLO target", "simulate"),
    _m("e2e_at_target_percentile_s", "s", "E2E percentile at the SLO target", "simulate"),
    _m("ttfat_at_target_percentile_s", "s", "TTFAT percentile at the SLO target (a workload with a ttfat limit)",
       "simulate"),
    _m("duration_s", "s", "counted window of simulated time", "simulate"),
    _m("simulation_wall_s", "s", "wall-clock time the simulation took", "simulate"),
    _m("ramp_up_s", "s", "closed loop: client k of C sent its first request at k·ramp_up_s/C (--ramp-up auto: "
       "one mean request duration at that load, from the steady state; 0: all at once)", "simulate", "max-load",
       "SimulationResult.meta"),
    _m("arrived", "1", "requests that arrived in the counted window", "simulate", "max-load"),
    _m("completed", "1", "requests completed", "simulate", "max-load"),
    _m("cancelled", "1", "requests cancelled by the timeout", "simulate", "max-load"),
    _m("rejected", "1", "requests refused by a full queue", "simulate", "max-load"),
    _m("in_flight", "1", "requests unfinished at the horizon", "simulate", "max-load"),
    _m("preemptions", "1", "preemptions (KV cache full)", "simulate"),
    _m("prefix_cached_tokens", "1", "prompt tokens found in the prefix cache", "simulate"),
    _m("task_words", "1", "words of the task (workload)", "simulate"),
    _m("slo_attainment", "1", "share of decided requests meeting every SLO limit", *SERVED),
    _m("slo_attainment_ttft", "1", "share meeting the TTFT limit", "simulate"),
    _m("slo_attainment_tpot", "1", "share meeting the TPOT limit", "simulate"),
    _m("slo_attainment_e2e", "1", "share meeting the E2E limit", "simulate"),
    _m("slo_attainment_ttfat", "1", "share meeting the TTFAT (time to first answer token) limit", "simulate"),
    _m("slo_undecided", "1", "requests still running whose SLO outcome is not known", "simulate"),
    _m("decode_batch_mean", "1", "mean sequences in a decode step (steady state)", "estimate", "SteadyState"),
    _m("kv_cache_tokens", "1", "KV tokens of a replica's pool as the engine sizes it", "estimate", KV_MEMORY),
    _m("rank", "1", "position in the plan's ranking (1 = cheapest)", "plan"),
    _m("min_devices", "1", "a candidate pruned by the frontier: the fewest devices it would need for the load "
       "(more than the best plan found)", "plan"),
    # ---- how the engine splits one device's memory (perfmodel.engine.kv_memory)
    _m("device_bytes", "bytes", "memory of one device as the engine sees it (the driver's total)", KV_MEMORY),
    _m("memory_fraction", "1", "the engine's memory share: vLLM gpu_memory_utilization, SGLang "
       "mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction", KV_MEMORY),
    _m("activations_bytes_per_device", "bytes", "activation workspace of the engine's profiling step (vLLM: "
       "with the sampler's logits) on one device", KV_MEMORY),
    _m("runtime_bytes_per_device", "bytes", "runtime buffers (CUDA graphs, communication) on one device", KV_MEMORY),
    _m("kv_pool_bytes_per_device", "bytes", "KV-cache pool of one device: what the engine's rule leaves", KV_MEMORY),
    _m("kv_bytes_per_token_per_device", "bytes/token", "KV-cache bytes one token takes on one device",
       KV_MEMORY),
    _m("kv_block_size", "1", "tokens per KV-cache block (the engine profile's field)", KV_MEMORY),
    # ---- validation: per-row predictions and measurements (validate --out, ValidationRun frames); means
    # over a run's requests, hence _mean_s (a bare ttft_s is one static batch on an idle replica)
    _m("measured_ttft_mean_s", "s", "measured time to first token of a run: mean over its requests, as the "
       "measurement file gives it (closed-loop steady state or open-loop arrivals)", "validate --out",
       "ValidationRun"),
    _m("measured_tpot_mean_s", "s", "measured time per output token of a run: mean over its requests",
       "validate --out", "ValidationRun"),
    _m("predicted_ttft_mean_s", "s", "predicted mean time to first token of the same run: the closed-loop "
       "steady state's ttft_mean_s at the run's clients, or an open-loop run's mean over simulated requests",
       "validate --out", "ValidationRun"),
    _m("predicted_tpot_mean_s", "s", "predicted mean time per output token of the same run (as "
       "predicted_ttft_mean_s)", "validate --out", "ValidationRun"),
    _m("predicted_decode_batch_mean", "1", "the steady state's decode_batch_mean for a closed-loop run",
       "validate --out", "ValidationRun"),
    _m("predicted_ttft_mean_ci_pct", "%", "open loop: half-width of the 95 % confidence interval of "
       "predicted_ttft_mean_s over the simulation's replications, in percent of it", "validate --out",
       "ValidationRun"),
    _m("predicted_tpot_mean_ci_pct", "%", "open loop: the same for predicted_tpot_mean_s", "validate --out",
       "ValidationRun"),
    _m("ttft_mean_ci_pct", "%", "half-width of the 95 % confidence interval of ttft_mean_s over an open-loop "
       "row's seeded simulations, in percent of it", "OpenLoopPrediction"),
    _m("tpot_mean_ci_pct", "%", "the same for tpot_mean_s", "OpenLoopPrediction"),
    _m("replications", "1", "open loop: seeded simulations averaged for a run", "validate --out",
       "ValidationRun"),
    _m("simulated_requests", "1", "open loop: requests per simulation of a run", "validate --out",
       "ValidationRun"),
    _m("simulated_peak_in_flight", "1", "open loop: most requests sent and not finished at once in the "
       "simulations", "validate --out", "ValidationRun"),
    _m("tpot_pct_error", "% error", "a row's 100 (predicted_tpot_mean_s - measured_tpot_mean_s) / "
       "measured_tpot_mean_s", "validate --out", "ValidationRun"),
    _m("ttft_pct_error", "% error", "a row's 100 (predicted_ttft_mean_s - measured_ttft_mean_s) / "
       "measured_ttft_mean_s", "validate --out", "ValidationRun"),
    # ---- plan vs measured (perfmodel.validation.plan_regret): closed-loop throughput per GPU of a row,
    # C O / ((TTFT + (O - 1) TPOT) G) with the row's mean TTFT and TPOT
    _m("measured_output_tokens_per_s_per_gpu", "tokens/s", "a measured run's closed-loop output tokens/s per "
       "GPU: clients x osl / ((measured_ttft_mean_s + (osl - 1) measured_tpot_mean_s) x gpus)",
       "plan_regret.add_rates"),
    _m("predicted_output_tokens_per_s_per_gpu", "tokens/s", "the same from predicted_ttft_mean_s and "
       "predicted_tpot_mean_s", "plan_regret.add_rates"),
    _m("best_output_tokens_per_s_per_gpu", "tokens/s", "the largest measured_output_tokens_per_s_per_gpu of a "
       "group's runs at the per-user speed floor", "plan_regret.Choice", "plan_regret.score_groups"),
    _m("pick_predicted_output_tokens_per_s_per_gpu", "tokens/s", "predicted_output_tokens_per_s_per_gpu of "
       "the row the predictions rank first at the floor", "plan_regret.Choice", "plan_regret.score_groups"),
    _m("pick_output_tokens_per_s_per_gpu", "tokens/s", "the best measured_output_tokens_per_s_per_gpu of the "
       "picked configuration at the floor (0: none of its runs keeps the floor)", "plan_regret.Choice",
       "plan_regret.score_groups"),
    # ---- validation: errors of the predictions against measurements
    _m("rows", "1", "rows of the measurement file", "validate"),
    _m("predicted", "1", "rows predicted", "validate"),
    _m("skipped", "1", "rows not predicted (by reason in skipped_reasons)", "validate"),
    _m("anomalous", "1", "rows flagged anomalous (reported apart unless --include-anomalous)", "validate"),
    _m("scored", "1", "rows counted in the error figures", "validate"),
    _m("n", "1", "rows behind one error figure", "validate"),
    _m("median_abs_pct_error", "% error", "median over rows of |predicted - measured| / measured, in percent",
       "validate"),
    _m("p90_abs_pct_error", "% error", "90th percentile over rows of |predicted - measured| / measured, in "
       "percent", "validate"),
    _m("bias_pct", "%", "median over rows of (predicted - measured) / measured, in percent (> 0: over-predicts)",
       "validate"),
    # ---- vendor claims (the claim's own metric values: perfmodel.metrics_echoes)
    _m("max_per_user_tokens_per_s", "tokens/s", "highest per-user speed a claim's system reaches (batch 1)",
       "claim"),
    _m("per_user_floor_tokens_per_s", "tokens/s", "per-user speed a point must reach to count (the claim's "
       "ratio against that floor)", "claim"),
    _m("predicted_ratio", "1", "candidate's metric / baseline's at the claim's operating point", "claim"),
    _m("ratio", "1", "candidate's metric / baseline's (sensitivity: with the unknown at its value; against "
       "a per-user floor)", "claim"),
    _m("baseline_batch", "1", "the baseline's batch at the per-user floor", "claim"),
    _m("candidate_batch", "1", "the candidate's batch at the per-user floor", "claim"),
    # ---- hardware and models (catalogue listings; the spec's own fields: perfmodel.metrics_echoes)
    _m("memory_bandwidth_bytes_per_s", "bytes/s", "bandwidth of the device's main memory tier", HW_LIST),
    *(_m(f"{f}_flops_per_s", "FLOP/s", f"dense {f} peak of one device", HW_LIST) for f in ("bf16", "fp8", "fp4")),
    _m("bandwidth_bytes_per_s", "bytes/s", "a link's bandwidth per direction", HW_LIST),
    _m("alpha_s", "s", "a link's per-message latency (alpha of alpha + S/B)", HW_LIST),
    _m("params_total", "1", "parameters of the model (every expert)", *MODELS),
    _m("params_active", "1", "parameters used per token (the routed experts' share of a MoE)", *MODELS),
    _m("kv_bytes_per_token", "bytes/token", "KV-cache bytes of one token, all layers, whole model, in the "
       "format the kv_cache key names", *MODELS),
    _m("state_bytes_per_sequence", "bytes", "recurrent state of one sequence (linear-attention / SSM layers)",
       *MODELS),
]

#: Inputs echoed under their flag's name, exempt from the suffix rule (``rate`` is ``--rate``, requests/s).
FLAG_NAMED = frozenset({"rate"})

#: Nested configuration echoes, not results: the engine profile, the workload and SLO, plan's search space,
#: prices and candidate counts, named as their formats name them; their numbers and units are listed in
#: :data:`perfmodel.metrics_echoes.ECHOES` (the hardware and model specs of ``hardware show`` / ``models
#: show`` too, at the top level of those documents).
CONFIG_ECHOES = tuple(e.prefix for e in ECHOES if e.prefix)

#: Containers whose items are records of the glossary's names.
CONTAINERS = ("points.", "curve.", "ranked.", "pruned.", "rejected.", "inputs.", "kv_memory.", "open_loop.",
              "operating_point.", "baseline.", "candidate.", "interactivity.", "sensitivity.")

#: Containers keyed by data (a group's value, a metric, a reason) whose leaves are glossary names: validate's
#: ``by.<group>.<value>.[tpot|ttft.]<statistic>`` and ``tpot.<statistic>``; ``skipped_reasons.<reason>`` and
#: ``skipped_reasons_detail.<reason>`` count skipped rows.
KEYED = {"by.": None, "tpot.": None, "ttft.": None, "skipped_reasons.": "skipped",
         "skipped_reasons_detail.": "skipped"}

#: Every output name, by name.
GLOSSARY: dict[str, Metric] = {m.name: m for m in _ENTRIES}

def unit_suffix(unit: str) -> str:
    """The suffix a name with ``unit`` ends with (``""`` for counts and fractions)."""
    return UNIT_SUFFIX[unit]


def name_suffix(name: str) -> str:
    """The unit suffix ``name`` ends with, after a normaliser (:data:`NORMALISERS`); ``""`` if none."""
    for n in NORMALISERS:
        if name.endswith(n):
            name = name[: -len(n)]
            break
    suffixes = sorted({s for s in UNIT_SUFFIX.values() if s}, key=len, reverse=True)
    return next((s for s in suffixes if name.endswith(s)), "")


def key_name(path: str) -> str | None:
    """The glossary name of a flattened output key, or None for a configuration echo (:data:`CONFIG_ECHOES`).

    ``points.ttft_mean_s`` (estimate, several simulate loads), ``curve.*`` (max-load), ``ranked.*`` and
    ``inputs.*``, ``pruned.*``, ``rejected.*`` (plan), ``baseline.*``... (claim), ``kv_memory.*`` (simulate), ``open_loop.*`` (validate) are records of glossary names
    (nested ones too); ``pools.<pool>.<field>`` is ``field``; in a container keyed by data (:data:`KEYED`,
    validate's groups) the leaf is the name.
    """
    if path.startswith(CONFIG_ECHOES):
        return None
    path = _strip_container(path)
    if path.startswith(CONFIG_ECHOES):
        return None
    for prefix, name in KEYED.items():
        if path.startswith(prefix):
            return name or path.rsplit(".", 1)[-1]
    if path.startswith("pools.") and path.count(".") == 2:
        path = path.rsplit(".", 1)[1]
    return path


def _strip_container(path: str) -> str:
    """``path`` without its leading containers (:data:`CONTAINERS`): ``points.kv_memory.kv_cache_tokens`` is
    ``kv_cache_tokens``."""
    while (c := next((c for c in CONTAINERS if path.startswith(c)), None)) is not None:
        path = path[len(c):]
    return path


def unit_of(key: str, command: str) -> str | None:
    """The unit of the flattened output ``key`` of ``command`` (``"simulate"``, ``"hardware show"``): its
    glossary entry's, or the listed unit of an echoed input field (:mod:`perfmodel.metrics_echoes`), in a
    container or not; None if neither knows it."""
    metric = lookup(key)
    if metric is not None:
        return metric.unit
    return next((u for k in (key, _strip_container(key)) if (u := echo_unit(k, command)) is not None), None)


def lookup(name: str) -> Metric | None:
    """The glossary entry of an output key (flattened as :func:`key_name` reads it), or None."""
    key = key_name(name)
    return None if key is None else GLOSSARY.get(key)


def markdown_table() -> str:
    """The glossary as a Markdown table (name, unit, definition, emitted by), for docs/cli.md."""
    rows = ["| name | unit | definition | emitted by |", "|---|---|---|---|"]
    for m in sorted(GLOSSARY.values(), key=lambda m: m.name):
        rows.append(f"| `{m.name}` | {m.unit} | {m.definition} | {', '.join(dict.fromkeys(m.emitted_by))} |")
    return "\n".join(rows)


def glossary_md() -> str:
    """The ``docs/cli.md`` section: naming rules, the glossary table and this release's renames."""
    return "\n".join([
        "## Vocabulary: output names\n",
        "Every number in a JSON/CSV output, DataFrame column or result attribute has one name for one "
        "quantity (`perfmodel/metrics_vocabulary.py`; `tests/test_metrics_vocabulary.py` runs each command "
        "with `--format json` and `--format csv` and fails on a number whose name is not here). The unit "
        "is the suffix (`_s`, `_bytes`, `_w`, `_per_s`); a statistic over requests comes before it "
        "(`ttft_mean_s`, `ttft_p95_s`); a bare `ttft_s` is one static batch on an idle replica; validate's "
        "errors are in percent (`bias_pct`, `median_abs_pct_error`). Rates "
        "are `<what>_per_s[_per_<normaliser>]`: `per_user_tokens_per_s` = 1/TPOT; `output_tokens_per_s` = "
        "all devices of the deployment, prefill included; `decode_tokens_per_s` = decode only "
        "(batch/TPOT); `_per_device` = divided by every chip, `_per_gpu` = by the GPUs of a mixed "
        "GPU/LPU deployment, `_per_replica`, `_per_mw`, `_per_sequence`. Nested records of results "
        "(`points`, `curve`, `ranked`, `pools.<pool>`, simulate's `kv_memory`, validate's `by.<group>.<value>` and "
        "`open_loop`; validate's CSV: one row per arrival, group, value and metric) use the same names. Inputs echoed beside the results keep their format's names (the engine "
        "profile's `step_overhead` is in seconds, the workload's `arrival.rate` in requests/s, a hardware "
        "spec's `memory.hbm.bandwidth.value` in B/s): the table after the glossary lists every such number "
        "with its unit (`perfmodel/metrics_echoes.py`; the test fails on a number in neither). Tables (`--format table`, the results' text form) print the same names with "
        "times in ms, sizes in GiB and powers of 1 kW or more in kW, the suffix changed to match (`ttft_ms`, "
        "`weights_gib_per_device`, `power_kw`) and a footnote saying so (`perfmodel/tables.py`).\n",
        markdown_table() + "\n",
        "Inputs echoed under their format's names (fields below the prefix; `*` is a name the data chooses):\n",
        echoes_md() + "\n",
        "Renamed in this release (JSON/CSV keys and DataFrame columns changed; `Prediction."
        "per_device_tokens_per_s`, `DeploymentPrediction.per_device_tokens_per_s`/`tokens_per_s_per_mw`, "
        "`SteadyState.ttft_s`/`tpot_s`/`e2e_s`/`n_decode`/`throughput_rps`/"
        "`throughput_output_tokens_per_s` and `SimulationResult.ttft_s`/`tpot_s`/`e2e_s` still answer, "
        "with a `DeprecationWarning`, for one release; so do "
        "`pm.sweep(concurrency=)` (`perfmodel sweep --concurrency` with a note on stderr), a claim file's "
        "`speedup` key, a measurement table's `request_rate_rps` column and, in `plan_regret.add_rates`/`choose`/`score_groups` and the scripts "
        "reading a saved prediction table, the old `predicted_*_s`/`measured_*_s` columns):\n",
        renames_table() + "\n",
    ])


def renames_table() -> str:
    """:data:`RENAMED` as a Markdown table (old → new)."""
    return "\n".join(["| old name | new name | where |", "|---|---|---|",
                      *(f"| `{old}` | `{new}` | {where} |" for old, new, where in RENAMED)])
