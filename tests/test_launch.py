"""Launch configurations from a plan: hand-checked cases, and every generated argument list and file
parsed against each engine's recorded argument schema (perfmodel/data/engines/args/)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import replace

import pytest
import yaml

from perfmodel.errors import ConfigError, UnknownNameError
from perfmodel.planning.engine_args import ENGINES, build_parser, check_args, check_keys, load_arg_schema
from perfmodel.planning.launch import LaunchSpec, PoolLayout, launch_config, parse_layout_label
from perfmodel.planning.plan import PlanResult

DEPLOY = "deployments/llama-3.1-70b-h200-disaggregated.yaml"


def _argv(cfg, role="aggregated"):
    (cmd,) = [c for c in cfg.commands if c["role"] == role]
    return cmd["argv"]


def _parse(engine, argv, n_command):
    """Parse with the parser built from the recorded names only (the command words stripped)."""
    return build_parser(load_arg_schema(engine)).parse_args(argv[n_command:])


@pytest.fixture(scope="module")
def llama70_fp8_tp4():
    return LaunchSpec.from_plan_row({"tp": 4, "pp": 1, "ep": 1, "precision": "fp8", "replicas": 3,
                                     "spec_decode": "off"}, {"model": "llama-3.1-70b", "engine": "vllm (fitted)"})


@pytest.fixture(scope="module")
def dsv3_pd():
    """DeepSeek-V3, FP8 weights and KV, MTP k=2; prefill 2 workers of DP-attention 8 / EP 8, decode 1 of 16."""
    row = {"precision": "fp8", "kv_cache": "fp8", "spec_decode": "mtp:k=2", "prefill_tp_size": 1,
           "prefill_attention_dp_size": 8, "prefill_moe_ep_size": 8, "prefill_num_workers": 2,
           "decode_tp": 1, "decode_dp_attention": 16, "decode_ep": 16, "decode_workers": 1}
    return LaunchSpec.from_plan_row(row, {"model": "deepseek-v3", "engine": "sglang"})


# --- hand-checked cases ----------------------------------------------------------------------------------

def test_vllm_llama70b_fp8_tp4_by_hand(llama70_fp8_tp4):
    cfg = launch_config(llama70_fp8_tp4, "vllm")
    # vLLM profile (perfmodel/data/engines/vllm.yaml): max_num_seqs 1024, max_num_batched_tokens 8192; the row
    # names no KV format, so it follows the fp8 weights (perfmodel.formats)
    assert shlex.join(_argv(cfg)) == ("vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 4 "
                                      "--quantization fp8 --kv-cache-dtype fp8 --max-num-seqs 1024 "
                                      "--max-num-batched-tokens 8192")
    ns = _parse("vllm", _argv(cfg), 2)
    assert (ns.model, ns.tensor_parallel_size, ns.quantization) == ("meta-llama/Llama-3.1-70B", 4, "fp8")
    assert cfg.commands[0]["replicas"] == 3 and cfg.commands[0]["devices"] == 4
    assert any("3 replicas" in n for n in cfg.notes)


def test_sglang_and_trtllm_llama70b_by_hand(llama70_fp8_tp4):
    ns = _parse("sglang", _argv(launch_config(llama70_fp8_tp4, "sglang")), 3)
    assert (ns.model_path, ns.tensor_parallel_size, ns.quantization, ns.max_running_requests, ns.chunked_prefill_size) == \
        ("meta-llama/Llama-3.1-70B", 4, "fp8", 1024, 8192)
    cfg = launch_config(llama70_fp8_tp4, "trtllm")
    ns = _parse("trtllm", _argv(cfg), 1)
    assert (ns.tensor_parallel_size, ns.max_batch_size, ns.extra_llm_api_options) == (4, 1024, "extra-llm-api-config.yml")
    opts = yaml.safe_load(cfg.files["extra-llm-api-config.yml"])
    assert opts["tensor_parallel_size"] == 4 and opts["enable_attention_dp"] is False
    assert "moe_expert_parallel_size" not in opts  # dense model
    # TensorRT-LLM reads FP8 from a quantized checkpoint: said in a note, not as a flag
    assert any("checkpoint already quantized to fp8" in n for n in cfg.notes)


def test_dsv3_pd_dp_attention_by_hand(dsv3_pd):
    assert [(p.role, p.tp, p.dp_attention, p.ep, p.replicas, p.devices) for p in dsv3_pd.pools] == \
        [("prefill", 1, 8, 8, 2, 8), ("decode", 1, 16, 16, 1, 16)]
    sg = launch_config(dsv3_pd, "sglang")
    ns = _parse("sglang", _argv(sg, "decode"), 3)
    assert (ns.tensor_parallel_size, ns.data_parallel_size, ns.enable_dp_attention, ns.expert_parallel_size) == \
        (16, 16, True, 16)
    assert (ns.kv_cache_dtype, ns.disaggregation_mode, ns.speculative_algorithm) == ("fp8_e4m3", "decode", "NEXTN")
    assert (ns.speculative_num_steps, ns.speculative_num_draft_tokens) == (2, 3)
    v = _parse("vllm", _argv(launch_config(dsv3_pd, "vllm"), "prefill"), 2)
    assert (v.tensor_parallel_size, v.data_parallel_size, v.enable_expert_parallel) == (1, 8, True)
    assert v.speculative_config == {"method": "mtp", "num_speculative_tokens": 2}
    assert v.kv_transfer_config["kv_role"] == "kv_both"
    t = launch_config(dsv3_pd, "trtllm")
    pre = yaml.safe_load(t.files["extra-llm-api-config-prefill.yml"])
    dec = yaml.safe_load(t.files["extra-llm-api-config-decode.yml"])
    assert (pre["tensor_parallel_size"], pre["moe_expert_parallel_size"], pre["enable_attention_dp"]) == (8, 8, True)
    assert pre["disable_overlap_scheduler"] is True and "disable_overlap_scheduler" not in dec
    assert dec["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 2}
    assert dec["kv_cache_config"] == {"dtype": "fp8"} and dec["cache_transceiver_config"] == {"backend": "DEFAULT"}
    assert any("decode replicas span 16 devices" in n and "--nnodes" in n for n in sg.notes)
    # the scheduler limits are the simulated profile's (sglang: 1024 sequences, 8192-token chunks)
    assert dec["max_batch_size"] == 1024 and dec["max_num_tokens"] == 8192


def test_dynamo_graph_by_hand(dsv3_pd):
    cfg = launch_config(dsv3_pd, "dynamo")  # workers run the plan's engine: sglang
    g = yaml.safe_load(cfg.files["dynamo-graph.yaml"])
    assert (g["apiVersion"], g["kind"]) == ("nvidia.com/v1alpha1", "DynamoGraphDeployment")
    s = g["spec"]["services"]
    assert s["Frontend"]["componentType"] == "frontend"
    assert [(n, s[n]["subComponentType"], s[n]["replicas"], s[n]["resources"]["limits"]["gpu"]) for n in
            ("prefill", "decode")] == [("prefill", "prefill", 2, "8"), ("decode", "decode", 1, "16")]
    main = s["prefill"]["extraPodSpec"]["mainContainer"]
    assert main["command"] == ["python3", "-m", "dynamo.sglang"]
    assert main["image"] == "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1"
    check_args("sglang", main["args"])
    trt = launch_config(dsv3_pd, "dynamo", backend="trtllm")
    assert set(trt.files) == {"dynamo-graph.yaml", "prefill.yaml", "decode.yaml"}
    assert yaml.safe_load(trt.files["decode.yaml"])["tensor_parallel_size"] == 16
    vl = yaml.safe_load(launch_config(dsv3_pd, "dynamo", backend="vllm").files["dynamo-graph.yaml"])
    assert vl["spec"]["services"]["VllmDecodeWorker"]["extraPodSpec"]["mainContainer"]["args"][-1] == \
        "--is-decode-worker"


def test_from_deployment_by_hand():
    spec = LaunchSpec.from_deployment(DEPLOY, engine="vllm")
    # prefill pool: 8 H200, TP4 -> 2 replicas; decode pool: 8 H200, TP8 -> 1 replica; FP8 weights and KV
    assert [(p.role, p.tp, p.replicas) for p in spec.pools] == [("prefill", 4, 2), ("decode", 8, 1)]
    ns = _parse("vllm", _argv(launch_config(spec, "vllm"), "prefill"), 2)
    assert (ns.tensor_parallel_size, ns.quantization, ns.kv_cache_dtype) == (4, "fp8", "fp8")
    agg = LaunchSpec.from_deployment("deployments/llama-3.1-70b-8xh100-aggregated.yaml")
    assert [(p.role, p.tp, p.replicas) for p in agg.pools] == [("aggregated", 8, 1)] and agg.weights == "bf16"


def test_pd_row_with_layout_labels():
    """A P/D plan row that states the prefill layout as a label and the decode layout in the plain fields."""
    row = {"mode": "disaggregated", "tp": 1, "pp": 1, "ep": 8, "dp_attention": 8, "prefill_layout": "tp4-ep4",
           "decode_layout": "tp1-adp8-ep8", "precision": "fp8", "prefill_workers": 3, "decode_workers": 2,
           "devices_per_replica": 8, "prefill_devices_per_worker": 4, "replicas": 5, "spec_decode": "off"}
    spec = LaunchSpec.from_plan_row(row, {"model": "deepseek-v3", "engine": "vllm"})
    assert [(p.role, p.tp, p.dp_attention, p.ep, p.replicas) for p in spec.pools] == \
        [("prefill", 4, 1, 4, 3), ("decode", 1, 8, 8, 2)]
    del row["decode_layout"]  # the decode pool falls back to the plain fields
    assert LaunchSpec.from_plan_row(row, {"model": "deepseek-v3"}).pools[1] == spec.pools[1]
    assert parse_layout_label("tp2-pp2") == {"tp": 2, "pp": 2}
    with pytest.raises(ConfigError, match="cannot read 'tensor4'"):
        parse_layout_label("tensor4")
    with pytest.raises(ConfigError, match="devices_per_replica = 4, but the decode layout .* is 8 devices"):
        LaunchSpec.from_plan_row({**row, "devices_per_replica": 4}, {"model": "deepseek-v3"})


def test_eagle_placeholder_is_named_in_a_note():
    spec = LaunchSpec.from_plan_row({"tp": 1, "precision": "bf16", "spec_decode": "eagle:k=3"},
                                    {"model": "llama-3.1-8b"})
    cfg = launch_config(spec, "sglang")
    ns = _parse("sglang", _argv(cfg), 3)
    assert ns.speculative_draft_model_path == "<EAGLE-3 draft head for meta-llama/Llama-3.1-8B>"
    assert any(ns.speculative_draft_model_path in n and "EAGLE-3 head" in n for n in cfg.notes)


# --- every generated configuration passes its engine's recorded schema -----------------------------------

SPECS = [
    ("llama-3.1-70b", {"tp": 8, "precision": "bf16", "replicas": 1}),
    ("llama-3.1-8b", {"tp": 1, "pp": 2, "precision": "nvfp4", "spec_decode": "eagle:k=3"}),
    ("llama-3.1-70b", {"tp": 2, "precision": "fp8", "spec_decode": "draft:llama-3.2-1b,k=4,accept=0.7"}),
    ("qwen3-30b-a3b", {"tp": 4, "ep": 4, "precision": "fp8", "spec_decode": "ngram:k=3,accept=0.3"}),
    ("deepseek-v3", {"precision": "fp8", "mode": "disagg", "prefill_tp": 8, "decode_tp": 1,
                     "decode_dp_attention": 8, "decode_ep": 8}),
]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("model, row", SPECS)
def test_generated_configs_parse_with_recorded_names(engine, model, row):
    spec = LaunchSpec.from_plan_row(row, {"model": model, "engine": "vllm"})
    if engine == "trtllm" and any(p.tp > 1 and p.dp_attention > 1 for p in spec.pools):
        pytest.skip("not expressible in TensorRT-LLM (tested below)")
    cfg = launch_config(spec, engine)
    skip = len(load_arg_schema(engine).command)
    for c in cfg.commands:
        check_args(engine, c["argv"][skip:])
    for name, text in cfg.files.items():
        check_keys(yaml.safe_load(text), load_arg_schema("trtllm").keys("yaml_keys"), name)
    if spec.spec_decode is not None and engine == "vllm":
        sc = _parse("vllm", cfg.commands[0]["argv"], 2).speculative_config
        assert sc["num_speculative_tokens"] == spec.spec_decode.k
        if spec.spec_decode.method == "draft":
            assert sc == {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B", "num_speculative_tokens": 4}


def test_schema_checks_reject_what_the_engine_would():
    with pytest.raises(ConfigError, match="unrecognized arguments: --tensor-parallel-sise"):
        check_args("vllm", ["m", "--tensor-parallel-sise", "4"])
    with pytest.raises(ConfigError, match="invalid choice: 'fp9'"):
        check_args("vllm", ["m", "--kv-cache-dtype", "fp9"])
    with pytest.raises(ConfigError, match="invalid int value"):
        check_args("vllm", ["m", "--max-num-seqs", "many"])
    with pytest.raises(ConfigError, match="unrecognized arguments: --tensor-par"):  # no abbreviations
        check_args("vllm", ["m", "--tensor-par", "4"])
    # the recorded SGLang revision takes fp8_e4m3 / fp8_e5m2, not a bare fp8
    with pytest.raises(ConfigError, match="invalid choice: 'fp8'"):
        check_args("sglang", ["--model-path", "m", "--kv-cache-dtype", "fp8"])
    with pytest.raises(UnknownNameError, match="num_speculative_token"):
        check_args("vllm", ["m", "--speculative-config", '{"num_speculative_token": 2}'])
    with pytest.raises(ConfigError, match="kv_role: 'kv_sender' is not one of"):
        check_args("vllm", ["m", "--kv-transfer-config", '{"kv_role": "kv_sender"}'])
    keys = load_arg_schema("trtllm").keys("yaml_keys")
    with pytest.raises(UnknownNameError, match="did you mean 'enable_attention_dp'"):
        check_keys({"enable_attention_db": True}, keys, "trtllm yaml")
    with pytest.raises(ConfigError, match=r"kv_cache_config.tokens_per_block: expected int, got '32'"):
        check_keys({"kv_cache_config": {"tokens_per_block": "32"}}, keys, "trtllm yaml")
    with pytest.raises(ConfigError, match="decoding_type: 'Medusa2' is not one of"):
        check_keys({"speculative_config": {"decoding_type": "Medusa2"}}, keys, "trtllm yaml")


def test_inexpressible_layouts_and_names_are_errors(dsv3_pd, llama70_fp8_tp4):
    with pytest.raises(UnknownNameError, match="did you mean 'vllm'"):
        launch_config(llama70_fp8_tp4, "vlm")
    with pytest.raises(ConfigError, match="aggregated"):
        launch_config(llama70_fp8_tp4, "dynamo")
    mixed = replace(dsv3_pd, pools=(PoolLayout("decode", tp=2, dp_attention=4, ep=8),
                                    PoolLayout("prefill", tp=8)))
    with pytest.raises(ConfigError, match="enable_attention_dp runs attention with TP 1"):
        launch_config(mixed, "trtllm")
    with pytest.raises(ConfigError, match="kv_cache 'nvfp4' has no recorded trtllm setting"):
        launch_config(replace(llama70_fp8_tp4, kv_cache="nvfp4"), "trtllm")
    with pytest.raises(ConfigError, match="options .*backend.* apply to engine 'dynamo' only"):
        launch_config(llama70_fp8_tp4, "vllm", backend="trtllm")


# --- provenance of the recorded schemas -----------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_schemas_name_version_and_sources(engine):
    """Every part names where it was read: a release on PyPI (with the wheel's sha256 in the version) or
    a GitHub file at a commit; TensorRT-LLM's llm_args.py revision is the one the index did not name."""
    s = load_arg_schema(engine)
    assert s.version and s.measured_versions and s.version_note
    for part, src in s.sources.items():
        pypi = re.match(r"https://pypi\.org/project/[\w-]+/[\w.]+/ wheel: \S+\.py", src)
        github = re.match(r"https://github\.com/[\w.-]+/[\w.-]+/blob/[0-9a-f]{40}/\S+", src)
        assert pypi or github or (engine, part) == ("trtllm", "llm_api_options"), (engine, part, src)
        if pypi:
            assert re.search(r"sha256 [0-9a-f]{64}", s.version)


def test_flags_named_in_notes_exist():
    from perfmodel.planning.launch_engines import MULTINODE

    for engine in ("vllm", "sglang"):
        names = {n for f, a in load_arg_schema(engine).args.items() for n in (f, *a.get("aliases", []))}
        assert set(MULTINODE[engine].split(", ")) <= names


def test_recorded_facts_match_their_sources():
    """Spot checks of values as they stand in the source files named in each schema."""
    v, g, t, d = (load_arg_schema(e) for e in ENGINES)
    assert v.args["--tensor-parallel-size"]["aliases"] == ["-tp"]  # arg_utils.py: "--tensor-parallel-size", "-tp"
    assert v.keys("json_keys", "kv_transfer_config")["kv_role"]["choices"] == ["kv_producer", "kv_consumer", "kv_both"]
    assert g.args["--expert-parallel-size"]["aliases"] == ["--ep-size", "--ep"]  # server_args.py 0.5.9
    assert g.args["--disaggregation-mode"]["choices"] == ["null", "prefill", "decode"]
    assert g.args["--kv-cache-dtype"]["choices"] == ["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"]
    assert v.args["--kv-cache-dtype"]["choices"] == ["auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2",
                                                     "fp8_inc", "fp8_ds_mla"]  # vllm/config/cache.py CacheDType
    assert "choices" not in v.args["--quantization"]  # QuantizationMethods | str: vLLM sets no choices
    assert d.data["worker_args"]["trtllm"]["--disaggregation-mode"]["choices"] == \
        ["prefill_and_decode", "prefill", "decode", "encode"]  # dynamo 0.8.1 DisaggregationMode
    assert t.args["--moe_expert_parallel_size"]["aliases"] == ["--ep_size"]  # serve.py click option
    assert t.args["--extra_llm_api_options"]["aliases"] == ["--config"]
    assert t.keys("yaml_keys")["cache_transceiver_config"]["keys"]["backend"]["choices"] == \
        ["DEFAULT", "UCX", "NIXL", "MPI"]  # llm_args.py CacheTransceiverConfig.backend Literal
    assert d.data["graph_keys"]["apiVersion"]["choices"] == ["nvidia.com/v1alpha1"]


# --- wiring: PlanResult.launch and plan --launch ----------------------------------------------------------

def test_plan_result_launch_uses_the_ranked_row():
    rows = [{"deployment": "a", "tp": 2, "precision": "bf16", "replicas": 1, "spec_decode": "off"},
            {"deployment": "b", "tp": 8, "precision": "fp8", "replicas": 1, "spec_decode": "off"}]
    r = PlanResult(rows, [], {"model": "llama-3.1-70b", "engine": "trtllm (fitted terms: ...)"})
    ns = _parse("vllm", _argv(r.launch("vllm", rank=2)), 2)
    assert (ns.tensor_parallel_size, ns.quantization, ns.max_num_seqs) == (8, "fp8", 2048)  # trtllm profile
    assert _parse("vllm", _argv(r.launch("vllm")), 2).tensor_parallel_size == 2
    with pytest.raises(ConfigError, match="rank 3 is not in 1..2"):
        r.launch("vllm", rank=3)


def test_plan_cli_launch(capsys):
    from perfmodel.cli import main

    base = ["plan", "--model", "llama-3.1-8b", "--rate", "2", "--isl", "512", "--osl", "64", "--slo-ttft", "2s",
            "--slo-tpot", "50ms", "--hardware", "h100-sxm", "--tp", "1", "--requests", "100"]
    assert main([*base, "--launch", "sglan"]) == 2
    assert "did you mean 'sglang'" in capsys.readouterr().err
    assert main([*base, "--launch", "vllm", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    argv = out["launch"]["commands"][0]["argv"]
    assert argv[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B"]
    assert _parse("vllm", argv, 2).tensor_parallel_size == out["ranked"][0]["tp"] == 1
    assert out["launch"]["schema"]["sources"]["args"].startswith("https://pypi.org/project/vllm/0.18.0/")
    # an aggregated plan has no Dynamo P/D graph: the plan is still printed, the reason follows, exit 2
    assert main([*base, "--launch", "dynamo"]) == 2
    text = capsys.readouterr().out
    assert "1x h100-sxm tp1 bf16 x1" in text and "no dynamo launch configuration" in text and "aggregated" in text


# --- the recorder that wrote the args sections from the release wheels -----------------------------------

def _recorder():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "record_engine_args.py"
    spec = importlib.util.spec_from_file_location("record_engine_args", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_recorder_derives_types_as_vllm_does(tmp_path):
    """A synthetic wheel in vLLM's layout: flags from add_argument, types from EngineArgs annotations."""
    import zipfile

    arg_utils = '''
from typing import Any, Literal
Kind = Literal["a", "b"]
@dataclass
class EngineArgs:
    kind: Kind = "a"
    either: Kind | str = "a"
    flag_on: bool = False
    sizes: list[int] | None = None
    extra: dict[str, Any] | None = None
    cc: CompilationConfig = None
    n: int | None = None
def add_cli_args(parser):
    g = parser.add_argument_group()
    g.add_argument("--kind", **kw["kind"])
    g.add_argument("--either", "-e", **kw["either"])
    g.add_argument("--flag-on", **kw["flag_on"])
    g.add_argument("--sizes", **kw["sizes"])
    g.add_argument("--extra", **kw["extra"])
    g.add_argument("--cc", "-O", **kw["cc"])
    g.add_argument("--n", **kw["n"])
    g.add_argument("--rank", type=int, help="explicit")
    g.add_argument("--quiet", action="store_true")
    g.add_argument("--old", action=DeprecatedAction)
'''
    wheel = tmp_path / "vllm-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("vllm/engine/arg_utils.py", arg_utils)
        z.writestr("vllm/config/cache.py", "Other = Literal['x']\n")
    got = _recorder().record("vllm", str(wheel))
    assert got == {"--kind": {"type": "str", "choices": ["a", "b"]},
                   "--either": {"type": "str", "aliases": ["-e"]},  # a Literal or any str: no choices
                   "--flag-on": {"type": "bool"}, "--sizes": {"type": "int", "nargs": "+"},
                   "--extra": {"type": "json"}, "--cc": {"type": "json", "aliases": ["-O"]},
                   "--n": {"type": "int"}, "--rank": {"type": "int"}, "--quiet": {"type": "flag"}}
