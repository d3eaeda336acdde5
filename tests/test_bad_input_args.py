"""Bad flags and bad API arguments: each is refused with the field and the value named (a catalogue).

CLI cases run ``perfmodel.cli.main`` in process: a bad flag ends with exit status 2 (argparse usage
errors raise ``SystemExit(2)``; checks after parsing return 2), a run where nothing asked for is
feasible with status 1; never a traceback, never a silent answer. API cases check the error type and
that the message names the field and the value. Every case must answer within 2 s.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import perfmodel as pm
from perfmodel import checks
from perfmodel.cli import main
from perfmodel.core.roofline import crossover_tokens, message_time
from perfmodel.core.step import StepModel
from perfmodel.deployment.lpu_memory import min_devices_for_weights
from perfmodel.errors import ConfigError, PerfmodelError, SpecError, UnitError, UnknownNameError
from perfmodel.serving import Workload, load_engine, load_workload, max_load, simulate, steady_state
from perfmodel.units import to_si

NAN, INF = float("nan"), float("inf")
DEPLOYMENT = "deployments/llama-3.1-70b-8xh100-aggregated.yaml"


def _run(argv: list[str], capsys) -> tuple[int, str]:
    """Exit status and stderr+stdout of ``perfmodel ARGV`` run in process."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses a flag while parsing
        code = exc.code
    out = capsys.readouterr()
    return code, out.err + out.out


# ---------------------------------------------------------------------------------------- CLI

P = ["predict", "--model", "llama-3.1-8b", "--hardware", "h100-sxm"]
S = ["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--isl", "100", "--osl", "10",
     "--concurrency", "2", "--requests", "5"]
S_OPEN = [a for a in S if a not in ("--concurrency", "2")]
M = ["max-load", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--isl", "100", "--osl", "10",
     "--slo-ttft", "2s", "--requests", "20"]
E = ["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "vllm", "--concurrency", "4",
     "--isl", "100", "--osl", "10"]
PL = ["plan", "--model", "llama-3.1-8b", "--rate", "1", "--isl", "100", "--osl", "10", "--slo-ttft", "2s",
      "--hardware", "h100-sxm", "--tp", "1", "--requests", "20"]
V = ["validate", "--data", "tests/data/serving_tiny.csv"]


def _with(base: list[str], flag: str, value: str | None = None) -> list[str]:
    """``base`` with ``flag`` set to ``value`` (replacing an earlier value of that flag)."""
    argv = list(base)
    if flag in argv:
        i = argv.index(flag)
        del argv[i:i + 2]
    return argv + ([flag] if value is None else [flag, value])


BIG = "99999999999999999999999"
CLI_CASES: list[tuple[str, list[str], int, tuple[str, ...]]] = [
    # predict: integers, lists, layouts, contexts, systems, names, contradictions, feasibility
    *[(f"predict-batch-{v}", _with(P, "--batch", v), 2, ("--batch", v)) for v in
      (BIG, "0", "1.5", "x", "1,,0", "1,x", "8,0,64", "nan", "inf", str(2**31), "True")],
    ("predict-batch-negative", _with(P, "--batch=-1"), 2, ("--batch", "-1")),
    *[(f"predict-{f}-{v}", _with(P, f"{f}={v}"), 2, (f, v)) for f in ("--isl", "--osl") for v in ("0", "-5", BIG, "2.5")],
    *[(f"predict-{f}-{v}", _with(P, f"{f}={v}"), 2, (f, v)) for f in ("--tp", "--pp", "--ep", "--dp-attention")
      for v in ("0", "-2", "x", BIG)],
    ("predict-tp-3", _with(P, "--tp", "3"), 2, ("tp=3", "allowed tp")),
    ("predict-pp-too-many", _with(P, "--pp", "64"), 2, ("pp=64", "32 layers")),
    ("predict-ep-dense", _with(P, "--ep", "2"), 2, ("ep=2", "dense")),
    ("predict-context", _with(P, "--isl", "10000000"), 2, ("isl + osl", "10000000", "131072")),
    ("predict-context-osl", _with(P, "--osl", "200000"), 2, ("isl + osl", "200000", "131072")),
    ("predict-system-tp16", _with(_with(P, "--hardware", "hgx-h100"), "--tp", "16"), 2,
     ("hgx-h100", "8 x h100-sxm", "16 devices")),
    ("predict-system-tp8-pp2", _with(_with(_with(P, "--hardware", "hgx-h100"), "--tp", "8"), "--pp", "2"), 2,
     ("hgx-h100", "16 devices", "pp=2")),
    ("predict-weights", _with(P, "--weights", "fp5"), 2, ("fp5",)),
    ("predict-kv-cache", _with(P, "--kv-cache", "int3"), 2, ("int3",)),
    ("predict-model", _with(P, "--model", "llama-9-9b"), 2, ("llama-9-9b",)),
    ("predict-hardware", _with(P, "--hardware", "h100-sxn"), 2, ("h100-sxn", "h100-sxm")),
    ("predict-efficiency", _with(P, "--efficiency", "bogus"), 2, ("bogus",)),
    ("predict-no-hardware", ["predict", "--model", "llama-3.1-8b"], 2, ("--hardware",)),
    ("predict-deployment-and-model", ["predict", "--deployment", DEPLOYMENT, "--model", "llama-3.1-8b"], 2,
     ("--deployment", "--model llama-3.1-8b")),
    ("predict-deployment-and-tp", ["predict", "--deployment", DEPLOYMENT, "--tp", "4"], 2, ("--deployment", "--tp 4")),
    ("predict-deployment-and-hardware", ["predict", "--deployment", DEPLOYMENT, "--hardware", "b200"], 2,
     ("--hardware b200",)),
    ("predict-deployment-and-weights", ["predict", "--deployment", DEPLOYMENT, "--weights", "fp8"], 2,
     ("--weights fp8",)),
    # a deployment's prediction takes no serving flags: refused, not silently ignored
    ("predict-deployment-and-spec-decode", ["predict", "--deployment", DEPLOYMENT, "--spec-decode", "off"], 2,
     ("--spec-decode off", "would be ignored", "in the file")),
    ("predict-deployment-and-engine", ["predict", "--deployment", DEPLOYMENT, "--engine", "vllm"], 2,
     ("--engine vllm", "perfmodel simulate")),
    ("predict-deployment-and-prefix-hit", ["predict", "--deployment", DEPLOYMENT, "--prefix-hit-rate", "0.5"], 2,
     ("--prefix-hit-rate 0.5",)),
    ("predict-weights-do-not-fit", ["predict", "--model", "llama-3.1-405b", "--hardware", "a100-sxm"], 1,
     ("no operating point", "weights alone exceed")),
    # simulate and max-load
    *[(f"simulate-replicas-{v}", _with(S, "--replicas", v), 2, ("--replicas", v)) for v in ("0", "two", "1.7", "-1")],
    *[(f"simulate-warmup-{v}", _with(S, "--warmup", v), 2, ("--warmup", v)) for v in ("1.0", "1", "-0.1", "nan")],
    *[(f"simulate-seed-{v}", _with(S, "--seed", v), 2, ("--seed", v)) for v in ("-1", "x", "1.5", BIG)],
    *[(f"simulate-requests-{v}", _with(S, "--requests", v), 2, ("--requests", v)) for v in ("0", "many", "nan")],
    *[(f"simulate-arrival-rate-{v}", _with(S_OPEN, "--arrival-rate", v), 2, ("--arrival-rate", v))
      for v in ("0", "-1", "nan", "inf", "fast")],
    *[(f"simulate-concurrency-{v}", _with(S, "--concurrency", v), 2, ("--concurrency", v)) for v in ("0", "-3", "2.5")],
    *[(f"simulate-burstiness-{v}", _with(S, "--burstiness", v), 2, ("--burstiness", v)) for v in ("0", "-1")],
    *[(f"simulate-slo-target-{v}", _with(S, "--slo-target", v), 2, ("--slo-target", v)) for v in ("0", "1.5")],
    *[(f"simulate-{f}-{v}", _with(S, f, v), 2, (f.lstrip("-").replace("-", "_").removeprefix("slo_"), v))
      for f, v in (("--slo-ttft", "2 parsecs"), ("--timeout", "soon"), ("--think-time", "5 GB"))],
    ("simulate-slo-tpot-negative", _with(S, "--slo-tpot=-5ms"), 2, ("tpot", "-5ms")),
    ("simulate-horizon-negative", _with(S, "--horizon=-1s"), 2, ("horizon", "-1s")),
    ("simulate-isl-beyond-context", _with(S, "--isl", "200000"), 2, ("200000", "131072")),
    ("simulate-router", _with(S, "--router", "fastest"), 2, ("--router", "fastest")),
    ("simulate-engine", _with(S, "--engine", "vlm"), 2, ("vlm", "vllm")),
    ("simulate-engine-set-syntax", _with(S, "--engine-set", "max_num_seqs"), 2, ("--engine-set", "max_num_seqs")),
    ("simulate-engine-set-negative", _with(S, "--engine-set", "max_num_seqs=-1"), 2, ("max_num_seqs", "-1")),
    ("simulate-engine-set-unknown", _with(S, "--engine-set", "max_seqs=4"), 2, ("max_seqs",)),
    ("simulate-think-time-open-loop", [*S_OPEN, "--arrival-rate", "1", "--think-time", "1s"], 2, ("--think-time",)),
    ("simulate-no-lengths", ["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--concurrency", "2"],
     2, ("--isl", "--osl")),
    ("simulate-deployment-and-model", ["simulate", "--deployment", DEPLOYMENT, "--model", "llama-3.1-8b", "--isl",
                                       "100", "--osl", "10", "--concurrency", "2"], 2, ("--model llama-3.1-8b",)),
    ("simulate-all-cancelled", _with(_with(S, "--timeout", "1us"), "--requests", "5"), 2,
     ("no request completed", "5 cancelled")),
    ("simulate-system-too-small", _with(_with(S, "--hardware", "hgx-h100"), "--tp", "16"), 2, ("16 devices",)),
    *[(f"max-load-{f}-{v}", _with(M, f, v), 2, (f, v)) for f, v in (
        ("--max-simulations", "0"), ("--max-simulations", "-4"), ("--rel-tol", "-1"), ("--rel-tol", "0"),
        ("--rel-tol", "1.5"), ("--rel-tol", "nan"), ("--target", "0"), ("--target", "2"), ("--target", "x"))],
    # estimate
    *[(f"estimate-{f}-{v}", _with(E, f, v), 2, (f, v)) for f, v in (
        ("--pp", "0"), ("--tp", "0"), ("--ep", "-1"), ("--dp-attention", "0"), ("--isl", "0"), ("--osl", "0"),
        ("--concurrency", "0"), ("--concurrency", "1,x"), ("--concurrency", "4,-4"), ("--prefill-workers", "0"),
        ("--decode-workers", "0"), ("--prefill-tp", "0"), ("--isl", BIG))],
    *[(f"estimate-rate-{v}", [*[a for a in E if a not in ("--concurrency", "4")], "--rate", v], 2, ("--rate", v))
      for v in ("0", "inf", "nan", "1,x", "2,-1", "fast")],
    ("estimate-engine", _with(E, "--engine", "tgi"), 2, ("engine", "tgi", "vllm")),
    ("estimate-pool-flags-alone", _with(E, "--decode-workers", "2"), 2, ("--decode-workers",)),
    ("estimate-weights", _with(E, "--weights", "fp5"), 2, ("weights", "fp5")),
    ("estimate-precision", _with(E, "--precision", "fp5"), 2, ("weights", "fp5")),
    ("estimate-engines-profile", _with(E, "--engines", "nope"), 2, ("nope",)),
    # plan and claim
    *[(f"plan-{f}-{v}", _with(PL, f, v), 2, (f, v)) for f, v in (
        ("--utilisation", "1.5"), ("--utilisation", "0"), ("--utilisation", "-0.5"), ("--rate", "0"),
        ("--rate", "-1"), ("--rate", "nan"), ("--target", "1.5"), ("--target", "0"), ("--isl", "0"),
        ("--requests", "0"), ("--max-replicas", "0"), ("--seed", "-1"), ("--tp", "1,x"), ("--tp", "0"))],
    ("plan-context", _with(PL, "--isl", "10000000"), 2, ("10000009", "131072")),
    ("plan-nothing-feasible", _with(_with(PL, "--model", "llama-3.1-405b"), "--hardware", "a100-sxm"), 1,
     ("no operating point", "811.7 GB")),
    ("max-load-context", _with(M, "--isl", "10000000"), 2, ("10000009", "131072")),
    ("estimate-context", _with(E, "--isl", "10000000"), 2, ("10000010", "131072")),
    ("plan-objective", _with(PL, "--objective", "speed"), 2, ("--objective", "speed")),
    ("plan-no-slo", [a for a in PL if a not in ("--slo-ttft", "2s")], 2, ("--slo-ttft",)),
    ("plan-hardware", _with(PL, "--hardware", "h100-sxn"), 2, ("h100-sxn",)),
    ("plan-price", _with(PL, "--price", "h100-sxm=cheap"), 2, ("cheap",)),
    ("claim-points", ["claim", "nvidia-gb200-vs-h200-15x-per-gpu", "--points", "1"], 2, ("--points", "1")),
    ("claim-unknown", ["claim", "nvidia-says-so"], 2, ("nvidia-says-so",)),
    # validate, models, hardware, demo
    *[(f"validate-{f}-{v}", _with(V, f, v), 2, (f, v)) for f, v in (
        ("--tp", "0"), ("--pp", "x"), ("--replicas", "0"), ("--concurrency", "-1"))],
    ("validate-engines-profile", _with(V, "--engines", "nope"), 2, ("nope",)),
    ("validate-efficiency", _with(V, "--efficiency", "nope"), 2, ("nope",)),
    ("validate-backend", _with(V, "--backend", "tgi"), 2, ("--backend", "tgi")),
    ("models-show-unknown", ["models", "show", "gpt-9"], 2, ("gpt-9",)),
    ("hardware-show-unknown", ["hardware", "show", "h100-sxn"], 2, ("h100-sxn", "h100-sxm")),
    ("hardware-list-kind", ["hardware", "list", "--kind", "gpu"], 2, ("--kind", "gpu")),
    ("unknown-command", ["predikt"], 2, ("predikt",)),
]


@pytest.mark.parametrize("argv, code, needles", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_bad_flag(capsys, argv, code, needles):
    start = time.perf_counter()
    got, text = _run(argv, capsys)
    assert time.perf_counter() - start < 2.0
    assert got == code, text
    assert "Traceback" not in text and "internal error" not in text
    last = text.strip().splitlines()[-1] if code == 2 else text
    for needle in needles:
        assert needle in last, text


def test_cli_files_under_a_file(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    for argv in (["demo", "--out", str(blocker / "out")],
                 [*V, "--out", str(blocker / "p.csv")]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and err.count("\n") == 1 and str(blocker) in err, err


def test_cli_catalogue_is_large_and_distinct():
    names = [c[0] for c in CLI_CASES]
    assert len(names) == len(set(names)) and len(names) >= 150
    assert len({tuple(c[1]) for c in CLI_CASES}) == len(CLI_CASES)


# ---------------------------------------------------------------------------------------- API

H100_8B = ("llama-3.1-8b", "h100-sxm")
CLOSED = Workload.fixed(100, 10, concurrency=2)


def _predict(**kw: Any) -> Any:
    return pm.predict(*H100_8B, **kw)


def _simulate(**kw: Any) -> Any:
    return simulate(StepModel(*H100_8B), kw.pop("workload", CLOSED), **{"requests": 5, **kw})


def _steady(**kw: Any) -> Any:
    return steady_state(StepModel(*H100_8B), **{"concurrency": 4, "isl": 100, "osl": 10, **kw})


API_CASES: list[tuple[str, Any, type[Exception], tuple[str, ...]]] = [
    *[(f"predict-{k}-{v!r}", lambda k=k, v=v: _predict(**{k: v}), ConfigError, (k, repr(v) if isinstance(v, str) else ""))
      for k in ("batch", "isl", "osl") for v in
      (True, 2**63, "eight", [[1, 2], [3]], 0, -3, 1.5, NAN, INF, [], [1, 0], np.array([2, -1]), None, 10**30)],
    *[(f"predict-{k}-{v!r}", lambda k=k, v=v: _predict(**{k: v}), ConfigError, (k,)) for k, v in (
        ("expert_imbalance", NAN), ("expert_imbalance", 0.5), ("expert_imbalance", INF), ("expert_imbalance", "2"),
        ("reserve", 1.0), ("reserve", -0.1), ("reserve", NAN), ("kv_host_fraction", 1.5),
        ("kv_host_fraction", NAN), ("kv_host_overlap", -1), ("moe_tp", 3), ("moe_tp", -1), ("moe_tp", "2"),
        ("tp", 0), ("tp", True), ("tp", 1.7), ("tp", "2"), ("tp", 3), ("pp", 0), ("pp", 1000), ("ep", 2),
        ("dp_attention", 0))],
    ("predict-context", lambda: _predict(isl=10**7), ConfigError, ("isl + osl", "10000000", "131072")),
    ("predict-shapes", lambda: _predict(batch=[1, 2], isl=[1, 2, 3]), ConfigError, ("batch, isl, osl", "(2,)", "(3,)")),
    ("deployment-shapes", lambda: pm.predict_deployment(DEPLOYMENT, batch=[1, 2], isl=[1, 2, 3]), ConfigError,
     ("batch, isl, osl", "(2,)", "(3,)")),
    ("deployment-context", lambda: pm.predict_deployment(DEPLOYMENT, isl=10**7), ConfigError, ("10000000", "131072")),
    ("deployment-batch-bool", lambda: pm.predict_deployment(DEPLOYMENT, batch=True), ConfigError, ("batch", "True")),
    ("predict-system-tp16", lambda: pm.predict("llama-3.1-8b", "hgx-h100", tp=16), ConfigError, ("hgx-h100", "16")),
    ("predict-system-tp8-pp2", lambda: pm.predict("llama-3.1-8b", "hgx-h100", tp=8, pp=2), ConfigError, ("pp=2",)),
    ("predict-weights", lambda: _predict(weights="fp5"), UnknownNameError, ("fp5",)),
    ("predict-model", lambda: pm.predict("llama-9", "h100-sxm"), UnknownNameError, ("llama-9",)),
    ("predict-hardware", lambda: pm.predict("llama-3.1-8b", "h100-sxn"), UnknownNameError, ("h100-sxn", "h100-sxm")),
    *[(f"simulate-{k}-{v!r}", lambda k=k, v=v: _simulate(**{k: v}), ConfigError, (k, repr(v) if isinstance(v, str) else ""))
      for k, v in (("replicas", "two"), ("replicas", 1.7), ("replicas", 0), ("replicas", True), ("replicas", -1),
                   ("seed", -1), ("seed", 1.5), ("seed", "s"), ("requests", 0), ("requests", NAN),
                   ("requests", "many"), ("router", "fastest"))],
    *[(f"max-load-{k}-{v!r}", lambda k=k, v=v: max_load(StepModel(*H100_8B), Workload.fixed(100, 10, rate=1.0),
                                                        slo={"ttft": "2 s"}, requests=20, **{k: v}),
       ConfigError, (k, repr(v) if isinstance(v, str) else "")) for k, v in (
        ("rel_tol", -1), ("rel_tol", 0), ("rel_tol", NAN), ("max_simulations", 0), ("max_simulations", 2.5),
        ("target", 1.5), ("target", 0), ("start", -3), ("mode", "speed"))],
    *[(f"plan-{k}-{v!r}", lambda k=k, v=v: pm.plan("llama-3.1-8b", Workload.fixed(100, 10, rate=1.0), {"ttft": 2.0},
                                                   hardware=["h100-sxm"], **{"requests": 20, k: v}),
       ConfigError, (k, repr(v) if isinstance(v, str) else "")) for k, v in (
        ("utilisation", 1.5), ("utilisation", NAN), ("requests", 0), ("max_replicas", 0), ("extra_replicas", -1),
        ("seed", -1), ("tp", [0]), ("tp", ["2"]), ("target", 2.0), ("objective", "speed"))],
    ("simulate-horizon", lambda: _simulate(horizon="-1 s"), UnitError, ("horizon", "-1 s")),
    ("simulate-horizon-unit", lambda: _simulate(horizon="2 GB"), UnitError, ("horizon", "2 GB")),
    ("simulate-context", lambda: _simulate(workload=Workload.fixed(200_000, 10, concurrency=2)), ConfigError,
     ("200009", "131072")),
    *[(f"steady-{k}-{v!r}", lambda k=k, v=v: _steady(**{k: v}), ConfigError, (k,)) for k, v in (
        ("concurrency", [0]), ("concurrency", -1), ("concurrency", NAN), ("concurrency", "x"), ("isl", -1),
        ("isl", 0), ("osl", NAN), ("osl", [[1], [2, 3]]), ("think_time", -1), ("think_time", INF))],
    *[(f"summary-warmup-{v!r}", lambda v=v: _simulate().summary(warmup=v), ConfigError, ("warmup", repr(v)))
      for v in (1.0, -0.5, NAN, "half")],
    ("roofline-negative-flops", lambda: pm.roofline_time(-1.0, 1.0, 1e15, 1e12), ConfigError, ("flops", "-1.0")),
    ("roofline-zero-bandwidth", lambda: pm.roofline_time(1.0, 1.0, 1e15, 0.0), ConfigError, ("bandwidth", "0.0")),
    ("roofline-nan-peak", lambda: pm.roofline_time(1.0, 1.0, NAN, 1e12), ConfigError, ("peak_flops", "nan")),
    ("scaling-devices-text", lambda: pm.scaling_curve(*H100_8B, devices=["x"]), ConfigError, ("devices", "'x'")),
    ("scaling-devices-float", lambda: pm.scaling_curve(*H100_8B, devices=[1, 2.5]), ConfigError, ("devices", "2.5")),
    ("message-time-size", lambda: message_time(-1e6, 1e9, 1e-6), ConfigError, ("size", "-1000000")),
    ("message-time-bandwidth", lambda: message_time(1e6, 0.0, 1e-6), ConfigError, ("bandwidth", "0.0")),
    ("message-time-alpha", lambda: message_time(1e6, 1e9, -1e-6), ConfigError, ("alpha", "-1e-06")),
    ("message-time-nan", lambda: message_time(NAN, 1e9, 0.0), ConfigError, ("size", "nan")),
    *[(f"crossover-{k}", lambda k=k: crossover_tokens(**{"ttft_a": 0.2, "tpot_a": 0.04, "ttft_b": 0.5,
                                                         "tpot_b": 0.03, k: NAN}), ConfigError, (k, "nan"))
      for k in ("ttft_a", "tpot_a", "ttft_b", "tpot_b")],
    ("crossover-negative", lambda: crossover_tokens(-1.0, 0.04, 0.5, 0.03), ConfigError, ("ttft_a", "-1.0")),
    ("to-si-dimension", lambda: to_si("2 s", "duration"), UnknownNameError, ("dimension", "duration", "time")),
    ("estimate-seed-negative", lambda: pm.estimate("llama-3.1-8b", "h100-sxm", isl=512, osl=64, concurrency=4,
                                                   seed=-1), ConfigError, ("seed", "-1")),
    ("steady-state-osl-1", lambda: pm.steady_state(pm.StepModel("llama-3.1-8b", "h100-sxm"), [4], isl=512,
                                                   osl=1), ConfigError, ("osl", "1")),
    ("to-si-unparseable", lambda: to_si("2 parsecs", "time", "slo.ttft"), UnitError, ("slo.ttft", "2 parsecs")),
    ("to-si-bool", lambda: to_si(True, "time", "timeout"), UnitError, ("timeout", "True")),
    ("to-si-negative", lambda: to_si("-1 s", "time", "timeout"), UnitError, ("timeout", "-1 s")),
    ("to-si-infinite", lambda: to_si("inf s", "time", "timeout"), UnitError, ("timeout", "inf s")),
    ("to-si-wrong-dimension", lambda: to_si("5 GB", "time", "timeout"), UnitError, ("timeout", "5 GB", "time")),
    ("to-si-list", lambda: to_si([1], "time", "timeout"), UnitError, ("timeout", "[1]")),
    ("to-si-empty", lambda: to_si("  ", "time", "timeout"), UnitError, ("timeout", "empty")),
    ("to-si-unitless-string", lambda: to_si("80", "bytes", "capacity"), UnitError, ("capacity", "'80'", "no unit")),
    ("lpu-part", lambda: min_devices_for_weights("llama-3.1-8b", "groq-lp30", "fp8", part="bogus"),
     UnknownNameError, ("part", "bogus", "ffn")),
    ("lpu-reserve", lambda: min_devices_for_weights("llama-3.1-8b", "groq-lp30", "fp8", reserve=1.0),
     ConfigError, ("reserve", "1.0")),
    ("lpu-level", lambda: min_devices_for_weights("llama-3.1-8b", "groq-lp30", "fp8", level="hbm9"),
     UnknownNameError, ("hbm9",)),
    *[(f"workload-{name}", lambda spec=spec: load_workload(spec),
       SpecError, needles) for name, spec, needles in (
        ("lognormal-min-gt-max", {"arrival": {"rate": 1}, "isl": {"dist": "lognormal", "mean": 100, "sigma": 0.5,
                                                                   "min": 500, "max": 10}, "osl": 10},
         ("isl", "max (10) must be >= min (500)")),
        ("uniform-low-gt-high", {"arrival": {"rate": 1}, "isl": {"dist": "uniform", "low": 50, "high": 5}, "osl": 10},
         ("isl", "high (5) must be >= low (50)")),
        ("negative-length", {"arrival": {"rate": 1}, "isl": -5, "osl": 10}, ("isl", "-5")),
        ("rate-zero", {"arrival": {"rate": 0}, "isl": 5, "osl": 10}, ("rate",)),
        ("rate-text", {"arrival": {"rate": "fast"}, "isl": 5, "osl": 10}, ("rate", "fast")),
        ("unknown-process", {"arrival": {"process": "burst"}, "isl": 5, "osl": 10}, ("process", "burst")),
        ("typo", {"arrival": {"rate": 1}, "isl": 5, "osl": 10, "slo": {"tftt": "2 s"}}, ("tftt", "ttft")),
        ("empirical-weights", {"arrival": {"rate": 1}, "osl": 10,
                               "isl": {"dist": "empirical", "values": [1, 2], "weights": [1]}}, ("isl", "weights")),
    )],
    ("engine-unknown", lambda: load_engine("vlm"), UnknownNameError, ("vlm", "vllm")),
    ("engine-override", lambda: load_engine("vllm", max_num_seqs=-1), SpecError, ("max_num_seqs", "-1")),
    ("engine-override-type", lambda: load_engine("vllm", max_num_seqs="many"), SpecError, ("max_num_seqs", "many")),
    *[(f"checks-count-{v!r}", lambda v=v: checks.count(v, "replicas"), ConfigError, ("replicas",))
      for v in (True, False, None, "1", 1.5, NAN, INF, 0, -1, 2**40, np.float64(2.5), [1])],
    *[(f"checks-real-{v!r}", lambda v=v: checks.real(v, "share", 0, 1), ConfigError, ("share",))
      for v in (True, None, "0.5", NAN, INF, -0.1, 1.1)],
]


@pytest.mark.parametrize("call, error, needles", [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES])
def test_api_bad_argument(call, error, needles):
    start = time.perf_counter()
    with pytest.raises(error) as info:
        call()
    assert time.perf_counter() - start < 2.0
    assert isinstance(info.value, PerfmodelError)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_api_catalogue_is_large_and_distinct():
    names = [c[0] for c in API_CASES]
    assert len(names) == len(set(names)) and len(names) >= 100


def test_summary_of_a_run_without_slo_has_no_nan():
    s = _simulate(requests=20).summary()
    assert s["completed"] == 20 and s["slo_attainment"] is None and s["goodput_requests_per_s"] is None
    assert not [k for k, v in s.items() if isinstance(v, float) and math.isnan(v)]
    assert "slo_attainment" not in repr(_simulate())  # not shown as 'nan' either


def test_checks_accept_what_they_should():
    assert checks.count(np.int64(8), "batch") == 8 and checks.count(8.0, "batch") == 8
    assert checks.counts([1, 8, 64], "batch").tolist() == [1.0, 8.0, 64.0]
    assert checks.real(0.5, "share", 0, 1) == 0.5 and checks.real(INF, "x", allow_inf=True) == INF
    assert math.isinf(checks.reals([1.0, INF], "bandwidth", 0, allow_inf=True)[1])
    assert checks.choice("ffn", "part", ["ffn", "all"]) == "ffn"


# ---------------------------------------------------------------------------------------- fuzzing

_ANY = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                 st.text(max_size=8), st.lists(st.integers(-5, 5), max_size=3))


@settings(max_examples=200, deadline=None)
@given(_ANY)
def test_fuzz_count_accepts_only_counts(value):
    try:
        got = checks.count(value, "batch")
    except ConfigError as exc:
        assert str(exc).startswith("batch: must be a whole number in [1, 2147483647], got ")
    else:
        assert isinstance(got, int) and 1 <= got <= checks.MAX_COUNT and got == value


@pytest.mark.parametrize("flag", ["--batch", "--tp", "--isl"])
def test_double_dash_value_is_refused(capsys, flag):
    """argparse drops a value of '--' (``--tp=--``) and would store an empty list: refused, flag named."""
    code, out = _run([*P, f"{flag}=--"], capsys)
    assert code == 2 and f"argument {flag}: expected a value, got '--'" in out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="0123456789-.,eEnaifx ", min_size=1, max_size=12))
def test_fuzz_predict_batch_flag(capsys, text):
    code, out = _run([*P, f"--batch={text}"], capsys)
    assert code in (0, 1, 2) and "Traceback" not in out and "internal error" not in out  # 1: does not fit
    if code == 2:
        assert "--batch" in out.strip().splitlines()[-1]


def _typed_flags() -> list[tuple[str, str]]:
    """(sub-command, --flag) for every flag of every command that converts its value."""
    from perfmodel.cli import build_parser

    out = []

    def walk(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*prefix, name])
            elif action.option_strings and action.type is not None:
                out.append((" ".join(prefix), action.option_strings[-1]))
    walk(build_parser(), [])
    return out


TYPED_FLAGS = _typed_flags()


def test_every_command_checks_its_numeric_flags():
    assert len(TYPED_FLAGS) >= 60
    commands = {c for c, _ in TYPED_FLAGS}
    assert {"predict", "simulate", "max-load", "estimate", "plan", "validate"} <= commands


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(TYPED_FLAGS), st.text(alphabet="0123456789-+.,eEnaifxNI _/smkGB", max_size=14))
def test_fuzz_every_typed_flag_parses_or_names_itself(capsys, command_flag, text):
    """Parsing only: a value either converts or argparse names the flag; never a traceback."""
    from perfmodel.cli import build_parser

    command, flag = command_flag
    try:
        build_parser().parse_args([*command.split(), f"{flag}={text}"])
    except SystemExit as exc:
        err = capsys.readouterr().err
        assert exc.code == 2 and "Traceback" not in err, err
        assert flag in err.strip().splitlines()[-1] or "required" in err, err
