"""``perfmodel predict``: TTFT, TPOT, E2E and throughput of static batches on one replica."""

from __future__ import annotations

import argparse

from ..errors import ConfigError
from ..precision import label_fields
from .argtypes import POSITIVE, count_list, no_feasible_point, real, refuse_with_deployment, single_name
from .dtype_args import add_dtype_args
from .output import UNFIT_WHY, add_format_arg, blank_unfit, checkpoint_note, emit, format_table, print_notes

int_list = count_list()  # "1,8,64" -> [1, 8, 64]; whole numbers in [1, 2^31 - 1]


def add_model_hardware_args(p: argparse.ArgumentParser, hardware_required: bool = True) -> None:
    """Arguments shared by predict-like commands: model, hardware, layout and precision."""
    p.add_argument("--model", type=single_name("model"), required=False, help="model id, HF repo id or config.json path")
    p.add_argument("--hardware", type=single_name("hardware"), required=False, help="accelerator or system id, or spec YAML path")
    p.add_argument("--tp", type=POSITIVE, default=1, help="tensor parallelism (default 1)")
    p.add_argument("--pp", type=POSITIVE, default=1, help="pipeline stages (default 1)")
    p.add_argument("--ep", type=POSITIVE, default=1, help="expert parallelism (default 1)")
    p.add_argument("--dp-attention", type=POSITIVE, default=1, help="attention data parallelism (default 1)")
    add_dtype_args(p, activations=True)
    p.add_argument("--efficiency", default="calibrated",
                   help="'calibrated' (default), 'datasheet' (pure roofline) or a profile name")


def register(sub) -> None:
    p = sub.add_parser("predict", help="predict TTFT/TPOT/throughput for static batches",
                       description="Predict TTFT (no queueing), TPOT, E2E and throughput of a static batch.")
    add_model_hardware_args(p)
    p.add_argument("--deployment", help="deployment YAML (placement across pools)")
    p.add_argument("--isl", type=int_list, default=[1024], help="input tokens, e.g. 2048 or 512,2048")
    p.add_argument("--osl", type=int_list, default=[128], help="output tokens, e.g. 256")
    p.add_argument("--batch", type=int_list, default=[1], help="concurrent sequences, e.g. 1,8,64")
    p.add_argument("--engine", default=None,
                   help="serving engine: vllm, sglang, trtllm (fitted terms) or <name>-preset; default none: "
                        "the bare kernel model")
    add_spec_decode_arg(p)
    add_memory_fraction_args(p)
    add_prefix_hit_arg(p)
    p.add_argument("--devices", type=POSITIVE, default=None,
                   help="chips to use: pick the fastest layout (tp, pp, replicas) that fits and print it "
                        "(overrides --tp/--pp)")
    p.add_argument("--execution", choices=("auto", "dataflow", "gpu"), default="auto",
                   help="'auto' (default): the statically scheduled dataflow model for SRAM/dataflow "
                        "machines (groq-lpu, groq-lp30, cerebras-wse3, sambanova-sn40l), the GPU step "
                        "model otherwise")
    add_format_arg(p)
    p.set_defaults(func=run)


def add_prefix_hit_arg(p) -> None:
    """``--prefix-hit-rate``, one spelling for every serving command."""
    p.add_argument("--prefix-hit-rate", type=real(0, 1, hi_open=True), default=None, metavar="H",
                   help="share of each prompt found in the engine's prefix cache, 0 to < 1 (default 0): "
                        "attended, not computed")


def add_spec_decode_arg(p: argparse.ArgumentParser) -> None:
    """``--spec-decode``, one spelling for every serving command."""
    p.add_argument("--spec-decode", default=None, metavar="SPEC",
                   help="speculative decoding: mtp:k=3, eagle:k=4,accept=0.7, draft:MODEL,k=4,accept=0.7, "
                        "ngram:k=5 or off (default off; acceptance defaults are sourced, docs/speculative.md)")


def add_memory_fraction_args(p) -> None:
    """``--gpu-memory-utilization`` (vLLM), ``--mem-fraction-static`` (SGLang) and
    ``--free-gpu-memory-fraction`` (TensorRT-LLM): the memory fraction the engine sizes its KV pool with,
    under the engine's own name (:mod:`perfmodel.engine.kv_memory`)."""
    fraction = real(0.0, 1.0, lo_open=True)

    def static(text: str):
        return "auto" if text.strip().lower() == "auto" else fraction(text)

    static.__name__ = "number or auto"
    p.add_argument("--gpu-memory-utilization", type=fraction, default=None, metavar="U",
                   help="vLLM: share of total device memory for weights, activations and KV cache (default 0.9)")
    p.add_argument("--mem-fraction-static", type=static, default=None, metavar="F",
                   help="SGLang: share of total device memory for weights and KV cache (default auto: "
                        "SGLang's rule by memory size and parallelism)")
    p.add_argument("--free-gpu-memory-fraction", type=fraction, default=None, metavar="PHI",
                   help="TensorRT-LLM: share of the memory free after weights and activations for the KV "
                        "cache (default 0.9)")


def serving_engine(args, default: str | None = "vllm", **overrides):
    """The :class:`perfmodel.engine.Engine` of ``--engine`` / ``--spec-decode`` (None without either),
    with the memory fraction of :func:`add_memory_fraction_args` when one is given."""
    from ..engine.profile import MEMORY_FIELDS

    for field in MEMORY_FIELDS:
        if getattr(args, field, None) is not None:
            overrides[field] = getattr(args, field)
    name = args.engine or default
    if name is None:
        if overrides:
            raise ConfigError(f"--{next(iter(overrides)).replace('_', '-')} needs a serving engine: add --engine "
                              "vllm|sglang|trtllm")
        if args.spec_decode not in (None, "off"):
            raise ConfigError("--spec-decode needs a serving engine: add --engine vllm|sglang|trtllm")
        return None
    from ..engine.engine import Engine

    return Engine.load(name, spec_decode=args.spec_decode, **overrides)


def _grid(args):
    import numpy as np

    b, i, o = np.meshgrid(args.batch, args.isl, args.osl, indexing="ij")
    return b.ravel(), i.ravel(), o.ravel()


#: predict's flags that a deployment file's prediction does not take (dest -> parser default)
_IGNORED_WITH_DEPLOYMENT = {"engine": None, "spec_decode": None, "prefix_hit_rate": None, "devices": None,
                            "execution": "auto", "efficiency": "calibrated", "gpu_memory_utilization": None,
                            "mem_fraction_static": None, "free_gpu_memory_fraction": None}


def run(args) -> int:
    batch, isl, osl = _grid(args)
    if args.deployment:
        refuse_with_deployment(args, _IGNORED_WITH_DEPLOYMENT,
                               ": set spec_decode / prefix_hit_rate in the file, or run `perfmodel simulate "
                               "--deployment FILE --engine ...` for a served deployment")
        from ..deployment import predict_deployment

        records = predict_deployment(args.deployment, isl=isl, osl=osl, batch=batch).records()
    else:
        if not args.model or not args.hardware:
            raise ConfigError("--model and --hardware are required (or --deployment FILE)")
        from ..dataflow import is_dataflow

        dataflow = args.execution == "dataflow" or (args.execution == "auto" and is_dataflow(args.hardware))
        if args.devices is not None:
            _pick_layout(args, "dataflow" if dataflow else "gpu")
        if dataflow:
            if args.engine:
                raise ConfigError(f"--engine: serving engines are fitted on GPUs; {args.hardware} runs the "
                                  f"dataflow model (add --execution gpu to combine them)")
            return _run_dataflow(args, batch, isl, osl)
        from ..core.predict import predict

        pred = predict(args.model, args.hardware, tp=args.tp, pp=args.pp, ep=args.ep,
                       dp_attention=args.dp_attention, isl=isl, osl=osl, batch=batch,
                       weights=args.weights, activations=args.activations, kv_cache=args.kv_cache,
                       efficiency=args.efficiency, engine=serving_engine(args, default=None),
                       prefix_hit_rate=args.prefix_hit_rate or 0.0)
        records = pred.records()
        print_notes(checkpoint_note(args.model, args.weights))
    unfit = [r for r in records if r.get("fits") is False]

    def table() -> None:
        metrics = ["ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "per_user_tokens_per_s",
                   "output_tokens_per_s_per_device"]
        rows = blank_unfit(records, metrics)
        cols = ["batch", "isl", "osl", *metrics, "fits", "prefill_bound", "decode_bound"]
        if unfit:  # say why on the row itself
            rows = [{**r, "why_not": r.get("fit_reason") if r.get("fits") is False else ""} for r in rows]
            cols.append("why_not")
        first = rows[0]
        print(f"{first['model']} on {first['devices']}x {first['hardware']} ({first['parallel']}, "
              f"{_formats(first)}, efficiency: {first['efficiency']}); TTFT excludes queueing")
        if first.get("engine") and not str(first["engine"]).startswith("none"):
            print(f"engine: {first['engine']}")
        if first.get("spec_decode") not in (None, "off") and "speculative" not in str(first.get("engine")):
            print(f"speculative decoding: {first['spec_decode']}")
        if first.get("prefix_hit_rate"):
            print(f"prefix cache hit rate: {first['prefix_hit_rate']:g} of each prompt")
        print(format_table(rows, cols, why=dict.fromkeys(metrics, UNFIT_WHY)))

    emit(args.format, table=table, rows=records)
    return no_feasible_point("predict", unfit, len(records))


def _formats(rec) -> str:
    """The formats as the results name them: ``weights fp8, activations fp8, kv_cache fp8``."""
    return ", ".join(f"{k} {rec[k]}" for k in ("weights", "activations", "kv_cache"))


def _pick_layout(args, execution: str) -> None:
    """Set args.tp / args.pp (and args.replicas) to the fastest layout of ``--devices`` that fits."""
    from ..dataflow import best_layout

    best = best_layout(args.model, args.hardware, args.devices, isl=int(args.isl[0]), osl=int(args.osl[0]),
                       batch=int(args.batch[0]), weights=args.weights, activations=args.activations,
                       kv_cache=args.kv_cache, execution=execution, efficiency=args.efficiency)
    args.tp, args.pp, args.replicas = int(best["tp"]), int(best["pp"]), int(best["replicas"])
    if args.format == "table":
        print(f"layout for {args.devices} x {args.hardware}: tp{args.tp} x pp{args.pp} x {args.replicas} "
              f"replica(s), the fastest per user that fits at batch {args.batch[0]}, ISL {args.isl[0]}, "
              f"OSL {args.osl[0]} ({best['per_user_tokens_per_s']:.4g} tok/s per user)")


def _run_dataflow(args, batch, isl, osl) -> int:
    """``predict`` on a statically scheduled machine (perfmodel.dataflow)."""
    from ..dataflow import predict_dataflow

    reps = getattr(args, "replicas", 1)
    pred = predict_dataflow(args.model, args.hardware, tp=args.tp, pp=args.pp, isl=isl, osl=osl, batch=batch,
                            weights=args.weights, activations=args.activations, kv_cache=args.kv_cache,
                            replicas=reps, spec_decode=args.spec_decode)
    df = pred.to_dataframe()
    df["model"] = args.model
    records = df.to_dict(orient="records")
    for r in records:
        r.update({k: pred.config[k] for k in ("stream_efficiency", "fitted_on", "execution", "basis")})
        r.update(label_fields(r.pop("precision")))
    cfg = pred.config

    def table() -> None:
        print(f"{args.model} on {cfg['devices']}x {cfg['hardware']} (tp{args.tp} x pp{args.pp} x {reps} "
              f"replica(s), {_formats(label_fields(cfg['precision']))}, dataflow model: {cfg['execution']} execution, no kernel-launch "
              f"terms; stream_efficiency {cfg['stream_efficiency']:.4g} fitted on {cfg['fitted_on']}); "
              f"TTFT excludes queueing")
        if cfg["spec_decode"]:
            print(f"speculative decoding: {cfg['spec_decode']} (a what-if: the acceptance is not predicted)")
        tiers = [c for c in df.columns if c.endswith("_used_bytes_per_device")]
        metrics = ["ttft_s", "tpot_s", "per_user_tokens_per_s", "output_tokens_per_s", "sync_s", "hand_off_s"]
        cols = ["batch", "isl", "osl", *metrics, "fits", *tiers]
        print(format_table(blank_unfit(records, metrics), cols, why=dict.fromkeys(metrics, UNFIT_WHY)))

    emit(args.format, table=table, rows=records)
    bad = [r["fit_reason"] for r in records if not r["fits"]]
    if bad:
        print_notes(f"does not fit: {bad[0]}")
    return no_feasible_point("predict", [r for r in records if not r["fits"]], len(records))
