"""One name per quantity: every number the commands emit is in the glossary with its unit suffix.

Runs predict (kernel model and a GPU/LPU deployment), estimate (closed and open loop), simulate,
max-load, sweep, plan, claim, validate, hardware list/show and models list/show on small cases with
``--format json`` and ``--format csv`` and checks each numeric key, nested ones included, against
:data:`perfmodel.metrics_vocabulary.GLOSSARY` or, for an input echoed under its format's own names (the
engine profile, the workload, a hardware spec...), against the fields and units listed in
:data:`perfmodel.metrics_echoes.ECHOES`; then checks that the same name computed by two commands for
the same point is the same number.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json

import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.cli import main
from perfmodel.demo import run_demo
from perfmodel.engine.profile import EngineProfile
from perfmodel.metrics_echoes import ECHOES, echo_unit
from perfmodel.metrics_vocabulary import (
    CONFIG_ECHOES,
    FLAG_NAMED,
    GLOSSARY,
    RENAMED,
    UNIT_SUFFIX,
    key_name,
    lookup,
    name_suffix,
    unit_of,
)
from perfmodel.validation.metrics import RENAMED_COLUMNS

M = ["--model", "llama-3.1-8b", "--hardware", "h100-sxm"]
L = ["--isl", "512", "--osl", "64"]
COMMANDS = {
    "predict": ["predict", *M, *L, "--batch", "1,8"],
    "predict-deployment": ["predict", "--deployment", "deployments/kimi-k2-vera-rubin-lpx-split.yaml", *L,
                           "--batch", "1,8"],
    "predict-engine": ["predict", *M, *L, "--batch", "1,8", "--engine", "vllm", "--spec-decode",
                       "eagle:k=4,accept=0.7"],
    "predict-dataflow": ["predict", "--model", "llama-3.1-8b", "--hardware", "cerebras-wse3", *L,
                         "--batch", "1,8",
                         "--spec-decode", "draft:llama-3.2-1b,k=4,accept=0.8"],
    "estimate": ["estimate", *M, *L, "--engine", "vllm", "--concurrency", "1,8"],
    "estimate-rate": ["estimate", *M, *L, "--engine", "vllm", "--rate", "2"],
    "simulate": ["simulate", *M, *L, "--rate", "2", "--requests", "60", "--slo-tpot", "50ms", "--quiet"],
    "simulate-closed": ["simulate", *M, *L, "--concurrency", "4,8", "--requests", "40", "--quiet"],
    "simulate-reasoning": ["simulate", *M, "--workload", "workloads/reasoning.yaml", "--requests", "30", "--quiet"],
    "max-load": ["max-load", *M, *L, "--requests", "100", "--slo-ttft", "1s", "--max-simulations", "3",
                 "--quiet"],
    "sweep": ["sweep", *M, *L, "--batch", "1,8", "--quiet"],
    "plan": ["plan", *M, "--tp", "1", *L, "--rate", "1", "--slo-tpot", "50ms", "--requests", "60", "--price",
             "h100-sxm=2.5/h", "--quiet"],
    "plan-disaggregated": ["plan", *M, "--tp", "1", *L, "--rate", "1", "--slo-tpot", "50ms", "--requests", "40",
                           "--disaggregated", "--quiet"],
    "claim": ["claim", "nvidia-gb200-vs-h200-15x-per-gpu", "--points", "2"],
    "validate": ["validate", "--data", "tests/data/serving_tiny.csv", "--quiet"],
    "validate-open": ["validate", "--data", "tests/data/vllm_open_tiny.json", "--hardware", "h100-sxm", "--engine",
                      "vllm", "--tp", "1", "--quiet"],
    "hardware-list": ["hardware", "list"],
    "hardware-show": ["hardware", "show", "h100-sxm"],
    "hardware-show-link": ["hardware", "show", "tpu-ici-v7"],
    "hardware-show-system": ["hardware", "show", "vera-rubin-nvl72"],
    "models-list": ["models", "list"],
    "models-show": ["models", "show", "deepseek-v3"],
}


def _command(name: str) -> str:
    """The command a case runs (``simulate``, ``hardware show``), as :data:`ECHOES` names it."""
    argv = COMMANDS[name]
    return " ".join(argv[:2]) if argv[0] in ("hardware", "models") else argv[0]


def _run(argv: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0, argv
    return buf.getvalue()


def _flatten(x, prefix=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(x, list):
        for v in x:
            yield from _flatten(v, prefix)
    else:
        yield prefix, x


def _number(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return True
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


@pytest.fixture(scope="module")
def emitted() -> dict[str, set[str]]:
    """Numeric keys per command and format (JSON nested keys and CSV headers, both ``parent.child``)."""
    out: dict[str, set[str]] = {}
    for name, argv in COMMANDS.items():
        doc = json.loads(_run([*argv, "--format", "json"]))
        out[f"{name} json"] = {k for k, v in _flatten(doc) if _number(v)}
        rows = list(csv.DictReader(io.StringIO(_run([*argv, "--format", "csv"]))))
        assert rows, name
        if rows[0].keys() >= {"figure", "value", "unit"}:   # hardware show: one row per spec figure
            assert all(r["unit"] for r in rows), name
            out[f"{name} csv"] = {f"{r['figure']}.value" for r in rows if _number(r["value"])}
            continue
        out[f"{name} csv"] = {k for k in rows[0]
                              if any(r[k] not in ("", None) and _number(r[k]) for r in rows)}
    return out


def test_every_glossary_name_carries_its_unit_suffix():
    for m in GLOSSARY.values():
        if m.name in FLAG_NAMED:
            continue
        want = UNIT_SUFFIX[m.unit]
        assert name_suffix(m.name) == want, f"{m.name} [{m.unit}] should end with {want or 'no unit suffix'}"
        assert m.definition and m.emitted_by, m.name


def test_every_emitted_number_is_in_the_glossary_with_the_same_unit(emitted):
    bases = {}
    for n in GLOSSARY:
        bases.setdefault(n[: len(n) - len(name_suffix(n))], []).append(n)
    problems = []
    for where, keys in emitted.items():
        command = _command(where.rsplit(" ", 1)[0])
        for key in sorted(keys):
            if unit_of(key, command) is not None:
                continue
            name = key_name(key) or key
            same = bases.get(name[: len(name) - len(name_suffix(name))])
            problems.append(f"{where}: {key}" + (f" (glossary has {same}: another unit)" if same else ""))
    assert not problems, ("numbers emitted under names neither in the glossary nor in an echoed input's "
                          "listed fields:\n" + "\n".join(problems))


def test_nested_echoes_are_walked(emitted):
    """The echoes are checked field by field (none is skipped as a whole): each prefix is emitted by the
    cases, and keys under it that are not listed fail."""
    seen = {p for keys in emitted.values() for k in keys for p in CONFIG_ECHOES if k.startswith(p)}
    assert seen >= {"engine.", "workload.", "slo.", "inputs.slo.", "inputs.search_space.", "counts.",
                    "inputs.prices_usd_per_device_hour."}
    assert echo_unit("engine.terms.request_overhead", "simulate") == "s"
    assert echo_unit("workload.arrival.rate", "simulate") == "requests/s"
    assert echo_unit("engine.request_overhead", "simulate") is None        # a term, not a profile field
    assert echo_unit("memory.hbm.bandwidth.value", "hardware show") == "bytes/s"
    assert echo_unit("memory.hbm.bandwidth.value", "simulate") is None
    assert {k for k in emitted["simulate json"] if k.startswith("kv_memory.")} >= {
        "kv_memory.kv_pool_bytes_per_device", "kv_memory.kv_cache_tokens", "kv_memory.device_bytes"}


def _numeric_fields(schema: dict, defs: dict, prefix: str = "") -> set[str]:
    """Dotted paths of the number fields of a pydantic JSON schema (through $ref, anyOf, oneOf, items)."""
    out: set[str] = set()

    def walk(path: str, v: dict) -> None:
        if "$ref" in v:
            out.update(_numeric_fields(defs[v["$ref"].split("/")[-1]], defs, path + "."))
        for alt in v.get("anyOf", []) + v.get("oneOf", []):
            walk(path, alt)
        if "items" in v:
            walk(path, v["items"])
        if v.get("type") in ("number", "integer"):
            out.add(path)

    for k, v in schema.get("properties", {}).items():
        walk(prefix + k, v)
    return out


@pytest.mark.parametrize("cls, prefix, command", [(pm.Workload, "workload.", "simulate"),
                                                  (EngineProfile, "engine.", "simulate")])
def test_echo_lists_cover_every_number_of_the_format(cls, prefix, command):
    """Every number field of the workload and engine-profile formats has its unit listed, so an echo of a
    field no test case happens to set is covered too."""
    schema = cls.model_json_schema()
    missing = sorted(f for f in _numeric_fields(schema, schema.get("$defs", {}))
                     if echo_unit(prefix + f, command) is None)
    assert not missing
    assert all(u for e in ECHOES for u in e.fields.values())


def test_old_names_are_not_emitted(emitted):
    old = {name for names, _, _ in RENAMED for name in names.split(", ")} - set(GLOSSARY)
    seen = {(where, k) for where, keys in emitted.items() for k in keys if key_name(k) in old}
    assert not seen
    # estimate's times are means: named so, not as predict's single static batch
    for where in ("estimate json", "estimate csv", "estimate-rate json", "estimate-rate csv"):
        assert not {key_name(k) for k in emitted[where]} & {"ttft_s", "tpot_s", "e2e_s"}, where


def test_same_name_same_number_predict_and_sweep():
    """sweep evaluates the same static batch as predict: every shared rate and time is the same number."""
    p = pm.predict("llama-3.1-8b", "h100-sxm", isl=512, osl=64, batch=[1, 8]).to_dataframe()
    s = pm.sweep("llama-3.1-8b", "h100-sxm", isl=512, osl=64, batch=[1, 8])
    shared = [c for c in p.columns if c in s.columns and c in GLOSSARY and GLOSSARY[c].unit != "1"]
    assert {"ttft_s", "tpot_s", "output_tokens_per_s", "output_tokens_per_s_per_device",
            "per_user_tokens_per_s"} <= set(shared)
    for c in shared:
        assert s[c].tolist() == pytest.approx(p[c].tolist(), rel=1e-12), c


def test_same_name_same_formula_predict_and_estimate_at_one_client():
    """One client in a closed loop is a static batch of one: predict(engine=) and estimate agree (2 %).

    predict: output_tokens_per_s = osl / e2e_s, per_user_tokens_per_s = 1 / tpot_s; estimate:
    output_tokens_per_s = requests_per_s x osl with requests_per_s = 1 / e2e_mean_s; both
    output_tokens_per_s_per_device = output_tokens_per_s / devices.
    """
    p = pm.predict("llama-3.1-8b", "h100-sxm", isl=1024, osl=256, batch=1, engine="vllm")
    e = pm.estimate("llama-3.1-8b", "h100-sxm", engine="vllm", isl=1024, osl=256, concurrency=[1]).iloc[0]
    assert e["output_tokens_per_s"] == pytest.approx(float(p.output_tokens_per_s), rel=0.02)
    assert e["output_tokens_per_s_per_device"] == pytest.approx(float(p.output_tokens_per_s_per_device),
                                                                 rel=0.02)
    assert 1.0 / e["tpot_mean_s"] == pytest.approx(float(p.per_user_tokens_per_s), rel=0.02)
    assert e["requests_per_s"] * e["e2e_mean_s"] == pytest.approx(1.0, rel=1e-9)   # one client, one request


def test_simulate_rates_share_one_window(emitted):
    """simulate: output_tokens_per_s = requests_per_s x osl for fixed lengths (one counted window)."""
    s = json.loads(_run([*COMMANDS["simulate"], "--format", "json"]))
    assert s["output_tokens_per_s"] == pytest.approx(s["requests_per_s"] * 64, rel=1e-12)
    assert s["input_tokens_per_s"] == pytest.approx(s["requests_per_s"] * 512, rel=1e-12)
    assert s["per_user_at_mean_tpot_tokens_per_s"] == pytest.approx(1.0 / s["tpot_mean_s"], rel=1e-12)
    assert s["per_user_mean_tokens_per_s"] >= s["per_user_at_mean_tpot_tokens_per_s"] * (1 - 1e-12)  # Jensen


def test_deprecated_attribute_still_answers_with_a_warning():
    p = pm.predict("llama-3.1-8b", "h100-sxm", isl=512, osl=64, batch=8)
    with pytest.warns(DeprecationWarning, match="Prediction.per_device_tokens_per_s is deprecated"):
        old = p.per_device_tokens_per_s
    assert float(old) == float(p.output_tokens_per_s_per_device)
    ss = pm.steady_state(pm.StepModel("llama-3.1-8b", "h100-sxm"), [1, 8], 512, 64)
    with pytest.warns(DeprecationWarning, match="SteadyState.throughput_rps is deprecated"):
        assert ss.throughput_rps.tolist() == ss.requests_per_s.tolist()


def test_python_frames_use_the_glossary_names():
    """DataFrames of the Python API: every numeric column is a glossary name (per-pool ``<pool>.<field>``)."""
    step = pm.StepModel("llama-3.1-8b", "h100-sxm")
    frames = {
        "predict": pm.predict("llama-3.1-8b", "h100-sxm", isl=512, osl=64, batch=[1, 8]).to_dataframe(),
        "predict_deployment": pm.predict_deployment("deployments/kimi-k2-vera-rubin-lpx-split.yaml", isl=512,
                                                    osl=64, batch=[1, 8]).to_dataframe(),
        "sweep": pm.sweep("llama-3.1-8b", "h100-sxm", isl=512, osl=64, batch=[1, 8]),
        "estimate": pm.estimate("llama-3.1-8b", "h100-sxm", engine="vllm", isl=512, osl=64,
                                concurrency=[1, 8]),
        "demo": run_demo(),
        "scaling_curve": pm.scaling_curve("llama-3.1-8b", "h100-sxm", devices=[1, 2]),
        "steady_state": pd.DataFrame(pm.steady_state(step, [1, 8], 512, 64).as_dict()),
    }
    for where, df in frames.items():
        numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and df[c].dtype != bool]
        assert [c for c in numeric if lookup(c.rsplit(".", 1)[-1]) is None] == [], where
    assert set(pm.steady_state(step, [8], 512, 64).as_dict()) <= set(GLOSSARY) | {"limited_by"}


def test_validate_out_result_columns_are_glossary_means(tmp_path):
    """``validate --out`` (closed and open loop): every predicted, measured, simulated and error column is a
    glossary name, the times are named as means (the runs' TTFT/TPOT are means over requests, not one
    static batch), and none of the old names is written."""
    out = {}
    for name in ("validate", "validate-open"):
        path = tmp_path / f"{name}.csv"
        _run([*COMMANDS[name], "--out", str(path), "--format", "json"])
        out[name] = pd.read_csv(path)
    result = {c for df in out.values() for c in df.columns
              if c.startswith(("predicted_", "measured_", "simulated_")) or c.endswith(("_pct", "_pct_error"))}
    assert result >= {"predicted_ttft_mean_s", "predicted_tpot_mean_s", "measured_ttft_mean_s",
                      "measured_tpot_mean_s", "predicted_decode_batch_mean", "predicted_ttft_mean_ci_pct",
                      "tpot_pct_error", "simulated_requests_per_s"}
    assert sorted(result - set(GLOSSARY)) == []
    times = {c for c in result if GLOSSARY[c].unit == "s"}
    assert len(times) == 4 and all(c.endswith("_mean_s") and "mean" in GLOSSARY[c].definition for c in times)
    assert not {c for df in out.values() for c in df.columns} & set(RENAMED_COLUMNS)
    renamed = {n for names, _, _ in RENAMED for n in names.split(", ")}
    assert set(RENAMED_COLUMNS) <= renamed                 # listed in docs/cli.md's table of renames


def test_old_validation_columns_are_read_with_a_warning():
    """A prediction table written before the rename (old column names) still scores, with a
    DeprecationWarning naming the new names, and gives the same numbers as under the new names."""
    from perfmodel.validation.plan_regret import add_rates

    new = pd.DataFrame({"config": ["a", "b"], "clients": [4.0, 8.0], "gpus": [1.0, 2.0], "osl": [101.0, 101.0],
                        "measured_ttft_mean_s": [0.5, 1.0], "measured_tpot_mean_s": [0.01, 0.02],
                        "predicted_ttft_mean_s": [0.4, 0.9], "predicted_tpot_mean_s": [0.012, 0.018]})
    old = new.rename(columns=lambda c: c.replace("_mean_s", "_s"))
    with pytest.warns(DeprecationWarning, match="renamed to .*'predicted_ttft_mean_s'") as rec:
        got = add_rates(old)
    assert [w.filename for w in rec] == [__file__]                     # one warning, at the caller's line
    want = add_rates(new)
    # x = C O / ((TTFT + (O - 1) TPOT) G): row a measured 4 * 101 / ((0.5 + 100 * 0.01) * 1) = 269.33 tok/s/GPU
    assert want["measured_output_tokens_per_s_per_gpu"].iloc[0] == pytest.approx(4 * 101 / 1.5)
    pd.testing.assert_frame_equal(got, want)


def test_speedup_has_one_meaning():
    """``speedup`` is scaling_curve's output ratio only; the claim input it also named is
    ``tokens_per_step_multiplier`` (glossary and the claim's output)."""
    assert GLOSSARY["speedup"].emitted_by == ("scaling_curve",)
    assert "claim" not in GLOSSARY["speedup"].definition
    assert GLOSSARY["tokens_per_step_multiplier"].emitted_by == ("claim",)
    claim = json.loads(_run([*COMMANDS["claim"], "--format", "json"]))
    keys = {key_name(k) for k, _ in _flatten(claim)}
    assert "tokens_per_step_multiplier" in keys and "speedup" not in keys
    curve = pm.scaling_curve("llama-3.1-8b", "h100-sxm", devices=[1, 2])
    assert curve["speedup"].tolist() == pytest.approx((curve["tpot_s"].iloc[0] / curve["tpot_s"]).tolist())
