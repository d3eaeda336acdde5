"""Every file kind answers every file problem with one clear error naming the file (API and CLI).

Kinds: hardware / link / system YAML, deployment, workload, engine profile, engine calibration profile,
claim YAML, config.json, benchmark result JSON, measurement CSV and trace CSV. Problems: a missing file,
a directory, a path through a regular file, a symlink loop, a binary file, a non-UTF-8 file, an empty
file, malformed syntax, a duplicated key; plus unitless quantities and table problems (no rows, a
missing column, text in a numeric column). Each case checks the error type (exit code 2 from the CLI),
that the message names the file and the problem, that no traceback is printed, and that it answers in
well under 2 s.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfmodel.cli import main
from perfmodel.deployment import load_deployment
from perfmodel.engine.calibration import load_profile
from perfmodel.errors import PerfmodelError, SpecError
from perfmodel.fileio import read_csv, read_json, read_yaml
from perfmodel.hardware import load_hardware
from perfmodel.modelspec import load_model
from perfmodel.planning.claims import load_claim
from perfmodel.serving import load_engine, load_workload
from perfmodel.serving.workload import read_trace
from perfmodel.validation.importers import read_result
from perfmodel.validation.run import validate_file

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "perfmodel"
SRC = "https://example.org/datasheet"

ACCELERATOR = f"""schema_version: 1
kind: accelerator
id: my-gpu
name: My GPU
memory:
  hbm: {{capacity: {{value: 80 GB, source: "{SRC}"}}, bandwidth: {{value: 3.35 TB/s, source: "{SRC}"}}}}
compute:
  bf16: {{value: 989 TFLOP/s, basis: dense, source: "{SRC}"}}
"""
LINK = f"""schema_version: 1
kind: link
id: my-link
name: My link
bandwidth: {{value: 450 GB/s, basis: per-direction, source: "{SRC}"}}
alpha: {{value: 2 us, source: "{SRC}"}}
alpha_basis: measured
"""
SYSTEM = f"""schema_version: 1
kind: system
id: my-box
name: My box
accelerator: h100-sxm
count: 8
scale_up: nvlink4
host_memory: {{value: 2 TB, source: "{SRC}"}}
"""
SERVING_HEADER = "model_path,system,backend,mode,isl,osl,batch_size,tp_size,silicon_ttft_ms,silicon_tpot_ms"
SERVING_ROW = "meta-llama/Llama-3.1-8B-Instruct,h100_sxm,vllm,agg,1024,128,8,1,50.0,10.0"
RESULT_JSON = '{"date": "x", "completed": 10, "mean_ttft_ms": 50.0, "mean_tpot_ms": 10.0}'


def _text(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def _trace_workload(tmp: Path, trace: str) -> Path:
    """A workload replaying ``trace`` (a CSV file name next to it)."""
    w = tmp / "trace-workload.yaml"
    w.write_text("schema_version: 1\nkind: workload\nname: t\narrival: {process: trace, trace: "
                 f"{trace}}}\nisl: 100\nosl: 10\n", encoding="utf-8")
    return w


class Kind(NamedTuple):
    """A file kind: a valid file, its suffix, the API loader and the CLI command reading it."""

    name: str
    suffix: str
    valid: Callable[[], str]
    load: Callable[[Path], object]
    cli: Callable[[Path], list[str]]
    syntax: str  # what a malformed file of this kind is called in the message


def _folder(path: Path) -> Path:
    """The nearest existing folder above ``path`` (where the workload naming it is written)."""
    folder = path.parent
    while not folder.is_dir():
        folder = folder.parent
    return folder


def _trace_load(path: Path) -> object:
    return read_trace(load_workload(_trace_workload(_folder(path), str(path))))


def _trace_cli(path: Path) -> list[str]:
    return ["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--requests", "5",
            "--workload", str(_trace_workload(_folder(path), str(path)))]


SIM = ["simulate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--requests", "5"]
KINDS = [
    Kind("hardware", ".yaml", lambda: ACCELERATOR, load_hardware, lambda p: ["hardware", "show", str(p)], "YAML"),
    Kind("link", ".yaml", lambda: LINK, load_hardware, lambda p: ["hardware", "show", str(p)], "YAML"),
    Kind("system", ".yaml", lambda: SYSTEM, load_hardware,
         lambda p: ["predict", "--model", "llama-3.1-8b", "--hardware", str(p)], "YAML"),
    Kind("deployment", ".yaml", lambda: _text("deployments/llama-3.1-70b-8xh100-aggregated.yaml"),
         load_deployment, lambda p: ["predict", "--deployment", str(p)], "YAML"),
    Kind("workload", ".yaml", lambda: _text("workloads/chat.yaml"), load_workload,
         lambda p: [*SIM, "--workload", str(p)], "YAML"),
    Kind("engine", ".yaml", lambda: _text("perfmodel/data/engines/vllm.yaml"), load_engine,
         lambda p: [*SIM, "--isl", "100", "--osl", "10", "--concurrency", "2", "--engine", str(p)], "YAML"),
    Kind("engine-calibration", ".yaml", lambda: _text("perfmodel/data/engines_fit/calibrated.yaml"),
         lambda p: load_profile(str(p)),
         lambda p: ["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--engine", "vllm",
                    "--concurrency", "4", "--isl", "100", "--osl", "10", "--engines", str(p)], "YAML"),
    Kind("claim", ".yaml", lambda: _text("perfmodel/data/claims/nvidia-gb200-vs-h200-15x-per-gpu.yaml"),
         load_claim, lambda p: ["claim", str(p)], "YAML"),
    Kind("config.json", ".json", lambda: _text("perfmodel/data/models/llama-3.1-8b.json"), load_model,
         lambda p: ["models", "show", str(p)], "JSON"),
    Kind("result-json", ".json", lambda: RESULT_JSON, read_result,
         lambda p: ["validate", "--data", str(p), "--system", "h100_sxm", "--backend", "vllm"], "JSON"),
    Kind("measurement-csv", ".csv", lambda: f"{SERVING_HEADER}\n{SERVING_ROW}\n", validate_file,
         lambda p: ["validate", "--data", str(p)], "CSV"),
    Kind("trace-csv", ".csv", lambda: "arrival_s,isl,osl\n0,100,10\n1,100,10\n", _trace_load, _trace_cli, "CSV"),
]


def _missing(p: Path) -> Path:
    return p


def _directory(p: Path) -> Path:
    p.mkdir()
    return p


def _through_file(p: Path) -> Path:
    p.write_text("x", encoding="utf-8")
    return p / f"inner{p.suffix}"


def _loop(p: Path) -> Path:
    os.symlink(p.name, p)
    return p


def _writer(data: bytes) -> Callable[[Path], Path]:
    def write(p: Path) -> Path:
        p.write_bytes(data)
        return p
    return write


MALFORMED = {"YAML": b"kind: [1, 2\nid: x\n", "JSON": b'{"a": 1,,}', "CSV": b'a,b\n"1,2\n3,4,5,6\n'}

PROBLEMS: dict[str, tuple[Callable[[Path], Path] | None, tuple[str, ...]]] = {
    "missing": (_missing, ("file not found",)),
    "directory": (_directory, ("is a directory",)),
    "through-a-file": (_through_file, ("not a directory",)),
    "symlink-loop": (_loop, ("symlink loop",)),
    "binary": (_writer(b"\x00\x01\x02\x03 binary \x00\xff" * 50), ("binary",)),
    "not-utf8": (_writer("capacity: 80 Go, fabriqu\u00e9 \u00e0 Gen\u00e8ve\n".encode("latin-1")), ("UTF-8",)),
    "empty": (_writer(b""), ("empty",)),
}
SYNTAX_NEEDLE = {"YAML": "malformed YAML", "JSON": "not valid JSON", "CSV": "not a readable"}
# what the message names instead of the file itself, where the loader looks elsewhere
EXPECT = {("config.json", "directory"): ("config.json", "file not found")}


def _cases():
    for kind in KINDS:
        for problem, (make, needles) in PROBLEMS.items():
            yield pytest.param(kind, make, EXPECT.get((kind.name, problem), needles), id=f"{kind.name}-{problem}")
        yield pytest.param(kind, _writer(MALFORMED[kind.syntax]), (SYNTAX_NEEDLE[kind.syntax],),
                           id=f"{kind.name}-malformed")


def _duplicate_cases():
    for kind in KINDS:
        if kind.syntax == "YAML":
            yield pytest.param(kind, id=kind.name)


CASES = list(_cases())


def _make(tmp_path: Path, kind: Kind, make: Callable[[Path], Path]) -> Path:
    return make(tmp_path / f"input{kind.suffix}")


def _check_message(message: str, path: Path, needles: tuple[str, ...]) -> None:
    assert str(path.parent) in message or path.name in message, message
    for needle in needles:
        assert needle in message, message


@pytest.mark.parametrize("kind, make, needles", CASES)
def test_api_file_problem(tmp_path, kind, make, needles):
    path = _make(tmp_path, kind, make)
    start = time.perf_counter()
    with pytest.raises(PerfmodelError) as info:
        kind.load(path)
    assert time.perf_counter() - start < 2.0
    _check_message(str(info.value), path, needles)


@pytest.mark.parametrize("kind, make, needles", CASES)
def test_cli_file_problem(tmp_path, capsys, kind, make, needles):
    path = _make(tmp_path, kind, make)
    start = time.perf_counter()
    code = main(kind.cli(path))
    assert time.perf_counter() - start < 2.0
    out = capsys.readouterr()
    assert code == 2, out
    assert "Traceback" not in out.err + out.out
    assert out.err.count("\n") == 1 and out.err.startswith("perfmodel ")
    _check_message(out.err, path, needles)


@pytest.mark.parametrize("kind", list(_duplicate_cases()))
def test_duplicate_yaml_key_is_an_error(tmp_path, kind):
    valid = kind.valid()
    first = next(line for line in valid.splitlines() if line and not line.startswith(("#", " ")))
    path = tmp_path / f"dup{kind.suffix}"
    path.write_text(valid + first + "\n", encoding="utf-8")
    ok = tmp_path / f"ok{kind.suffix}"
    ok.write_text(valid, encoding="utf-8")
    kind.load(ok)  # the valid file loads; the same with one key repeated does not
    with pytest.raises(SpecError) as info:
        kind.load(path)
    key = first.split(":")[0]
    _check_message(str(info.value), path, (f"duplicate key {key!r}", "line"))


@pytest.mark.parametrize("kind", [k for k in KINDS if k.syntax == "JSON"], ids=lambda k: k.name)
def test_duplicate_json_key_is_an_error(tmp_path, kind):
    path = tmp_path / "dup.json"
    path.write_text('{"a": 1, "a": 2}', encoding="utf-8")
    with pytest.raises(SpecError, match=r"duplicate key 'a'") as info:
        kind.load(path)
    _check_message(str(info.value), path, ())


@pytest.mark.parametrize("value, needle", [
    ("1e400", "'hidden_size' must be an integer, got inf"),
    ("1" + "0" * 400, "'hidden_size' must be at most 2147483647, got 1000"),
    ("1e30", "'hidden_size' must be at most 2147483647"),
    ("-5", "'hidden_size' must be positive, got -5"),
    ('"big"', "'hidden_size' must be an integer, got 'big'"),
])
def test_config_json_numbers_out_of_range(tmp_path, value, needle):
    path = tmp_path / "config.json"
    cfg = _text("perfmodel/data/models/llama-3.1-8b.json").replace('"hidden_size": 4096', f'"hidden_size": {value}')
    path.write_text(cfg, encoding="utf-8")
    with pytest.raises(SpecError, match=re.escape(needle)) as info:
        load_model(path)
    assert str(path) in str(info.value)


def test_strict_json_refuses_non_finite_numbers():
    for text in ('{"a": NaN}', '{"a": Infinity}', '{"a": 1e400}'):
        with pytest.raises(SpecError, match="r.json: "):
            read_json("r.json", text, finite=True)
    assert read_json("c.json", '{"a": Infinity}') == {"a": float("inf")}  # HF configs use it


# --------------------------------------------------------------------------- unitless quantities

UNITLESS = [
    ("hardware", ACCELERATOR, "value: 80 GB", "value: 80", "memory.hbm.capacity", "80", "'80 GB'"),
    ("hardware", ACCELERATOR, "value: 3.35 TB/s", "value: 3.35e12", "memory.hbm.bandwidth", "3.35e", "'3.35e+12 B/s'"),
    ("hardware", ACCELERATOR, "value: 989 TFLOP/s", "value: 989", "compute.bf16", "989", "TFLOP/s"),
    ("link", LINK, "value: 450 GB/s", "value: 450", "bandwidth", "450", "'450 TB/s'"),
    ("link", LINK, "value: 2 us", "value: 2", "alpha", "2", "'2 ms'"),
    ("system", SYSTEM, "value: 2 TB", "value: 2", "host_memory", "2", "GB"),
    ("workload", _text("workloads/agentic.yaml"), "think_time: 2 s", "think_time: 2", "think_time", "2", "ms"),
    ("workload", _text("workloads/agentic.yaml"), "timeout: 30 s", "timeout: 30", "timeout", "30", "ms"),
    ("workload", _text("workloads/agentic.yaml"), "ttft: 3 s", "ttft: 3", "ttft", "3", "ms"),
    ("workload", _text("workloads/chat.yaml"), "rate: 4 /s", "rate: 4", "arrival.rate", "4", "'4 /s'"),
    ("engine", _text("perfmodel/data/engines/vllm.yaml"), "step_overhead: 1 ms", "step_overhead: 0.001",
     "step_overhead", "0.001", "ms"),
    ("engine", _text("perfmodel/data/engines/vllm.yaml"), "seq_overhead: 10 us", "seq_overhead: 10",
     "seq_overhead", "10", "ms"),
    ("deployment", _text("deployments/llama-3.1-70b-h200-disaggregated.yaml"), "prefill-decode: ib-ndr",
     "prefill-decode: {link: ib-ndr, bandwidth: 50}", "bandwidth", "50", "TB/s"),
    ("deployment", _text("deployments/llama-3.1-70b-h200-disaggregated.yaml"), "prefill-decode: ib-ndr",
     "prefill-decode: {link: ib-ndr, alpha: 5}", "alpha", "5", "ms"),
]


@pytest.mark.parametrize("kind_name, base, good, bad, field, value, hint", UNITLESS,
                         ids=[f"{c[0]}-{c[4]}" for c in UNITLESS])
def test_unitless_quantity_in_a_file_is_an_error(tmp_path, kind_name, base, good, bad, field, value, hint):
    kind = next(k for k in KINDS if k.name == kind_name)
    assert good in base
    path = tmp_path / f"f{kind.suffix}"
    path.write_text(base.replace(good, bad, 1), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        kind.load(path)
    msg = str(info.value)
    _check_message(msg, path, (field, value, "has no unit", hint))


def test_units_stay_optional_in_python():
    from perfmodel.units import to_si, units_required

    assert to_si(80e9, "bytes") == 80e9
    with units_required():
        assert to_si(0, "time") == 0.0  # zero needs no unit
        assert to_si(3, "dimensionless") == 3.0
        with pytest.raises(SpecError, match="capacity: '80' has no unit"):
            to_si("80", "bytes", "capacity")
        with pytest.raises(SpecError, match="capacity: 80 has no unit"):
            to_si(80, "bytes", "capacity")
    with pytest.raises(SpecError, match="capacity: '80' has no unit"):
        to_si("80", "bytes", "capacity")  # a string is always read as written


# --------------------------------------------------------------------------- tables

TABLES = [
    ("measurement-csv", f"{SERVING_HEADER}\n", ("header but no rows",)),
    ("measurement-csv", f"{SERVING_HEADER.replace(',silicon_tpot_ms', '')}\n{SERVING_ROW.rsplit(',', 1)[0]}\n",
     ("misses column(s) 'silicon_tpot_ms'",)),
    ("measurement-csv", f"{SERVING_HEADER}\n{SERVING_ROW.replace(',1024,', ',lots,')}\n",
     ("column 'isl', row 1: 'lots' is not a number",)),
    ("measurement-csv", f"{SERVING_HEADER}\n{SERVING_ROW}\n{SERVING_ROW.replace(',50.0,', ',fast,')}\n",
     ("column 'silicon_ttft_ms', row 2: 'fast' is not a number",)),
    ("measurement-csv", "a,b\n1,2\n", ("unrecognised measurement table", "misses column(s)")),
    ("trace-csv", "arrival_s,isl\n", ("header but no rows",)),
    ("trace-csv", "time,isl\n0,10\n", ("missing column 'arrival_s'",)),
    ("trace-csv", "arrival_s,isl\n0,10\nsoon,10\n", ("column 'arrival_s', row 2: 'soon' is not a number",)),
    ("trace-csv", "arrival_s,isl\n0,ten\n", ("column 'isl', row 1: 'ten' is not a number",)),
    ("trace-csv", "arrival_s,osl\n0,-5\n", ("column 'osl' must be finite and >= 0",)),
    ("trace-csv", "arrival_s\n0\n\n", ()),  # valid: one row (blank lines skipped)
]


@pytest.mark.parametrize("kind_name, text, needles", TABLES, ids=[f"{t[0]}-{i}" for i, t in enumerate(TABLES)])
def test_table_problems(tmp_path, capsys, kind_name, text, needles):
    kind = next(k for k in KINDS if k.name == kind_name)
    path = tmp_path / f"t{kind.suffix}"
    path.write_text(text, encoding="utf-8")
    if not needles:
        kind.load(path)
        return
    with pytest.raises(PerfmodelError) as info:
        kind.load(path)
    _check_message(str(info.value), path, needles)
    assert main(kind.cli(path)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and needles[0] in err


@pytest.mark.parametrize("typos, needles, longest", [
    (200_000, ("too large",), 300),  # 2.6 MB: refused before parsing
    (5_000, ("unknown key 'typo_0'", "and 4990 more problem(s)"), 3000),  # 10 problems named
])
def test_many_unknown_keys_answer_fast_and_short(tmp_path, typos, needles, longest):
    path = tmp_path / "typos.yaml"
    path.write_text(ACCELERATOR + "".join(f"typo_{i}: 1\n" for i in range(typos)), encoding="utf-8")
    start = time.perf_counter()
    with pytest.raises(SpecError) as info:
        load_hardware(path)
    assert time.perf_counter() - start < 2.0
    assert len(str(info.value)) < longest
    _check_message(str(info.value), path, needles)


def test_yaml_merge_keys_may_override():
    data = read_yaml("merge.yaml", "base: &b {a: 1, b: 2}\nchild:\n  <<: *b\n  a: 3\n")
    assert data["child"] == {"a": 3, "b": 2}


def test_nested_duplicate_key_names_the_line():
    with pytest.raises(SpecError, match=r"line 3.*duplicate key 'a' \(first at line 2\)"):
        read_yaml("nested.yaml", "top:\n  a: 1\n  a: 2\n")


# --------------------------------------------------------------------------- fuzzing


_FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FUZZ
@given(st.binary(max_size=400))
def test_fuzz_yaml_loader_bytes(tmp_path, data):
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(data)
    try:
        load_hardware(path)
    except PerfmodelError as exc:
        assert str(path) in str(exc)


@_FUZZ
@given(st.text(alphabet=st.sampled_from(list("kind:acelrto -{}[],\n'\"&*!|>#%@`0123456789.GTB/s")), max_size=200))
def test_fuzz_yaml_loader_text(tmp_path, text):
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    for load in (load_hardware, load_workload, load_engine, load_claim, load_deployment):
        try:
            load(path)
        except PerfmodelError as exc:
            assert str(path) in str(exc)


@_FUZZ
@given(st.lists(st.lists(st.sampled_from(["0", "1.5", "-2", "x", "", "nan", "1e400", '"a,b"', "arrival_s"]),
                         min_size=1, max_size=4), max_size=6))
def test_fuzz_trace_csv(tmp_path, rows):
    path = tmp_path / "fuzz.csv"
    path.write_text("\n".join(",".join(r) for r in rows), encoding="utf-8")
    try:
        out = _trace_load(path)
    except PerfmodelError as exc:
        assert "fuzz.csv" in str(exc) or "arrival.trace" in str(exc)
    else:
        assert len(out["arrival_s"]) >= 1 and all(v >= 0 for v in out["arrival_s"])


@_FUZZ
@given(st.binary(max_size=300))
def test_fuzz_json_and_csv_readers(tmp_path, data):
    path = tmp_path / "fuzz.dat"
    path.write_bytes(data)
    for read in (read_json, read_csv):
        try:
            read(path)
        except SpecError as exc:
            assert str(path) in str(exc)


def test_units_si_declares_bare_numbers_as_si(tmp_path):
    path = tmp_path / "si.yaml"
    path.write_text(ACCELERATOR.replace("value: 80 GB", "value: 8.0e+10") + "units: si\n", encoding="utf-8")
    assert load_hardware(path).memory["hbm"].capacity.value == 80e9
    path.write_text(ACCELERATOR + "units: metric\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"units: expected 'si'.*got 'metric'"):
        load_hardware(path)
