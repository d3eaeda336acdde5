"""``perfmodel sweep``: the analytic sweep over lists from the command line, in every format."""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pytest

from perfmodel.cli import main
from perfmodel.cli.output import MISSING
from perfmodel.planning.sweep import COLUMNS, sweep

#: The frame's columns with the formats named as every output names them (precision label -> three fields).
CLI_COLUMNS = [*COLUMNS[:COLUMNS.index("precision")], "weights", "activations", "kv_cache",
               *COLUMNS[COLUMNS.index("precision") + 1:]]

ARGS = ["sweep", "--model", "llama-3.1-8b", "--hardware", "h100-sxm,h200-sxm", "--tp", "1,3", "--weights",
        "bf16,fp8", "--batch", "1,16", "--isl", "1024,4096", "--osl", "128"]


def _run(capsys, argv, status=0) -> str:
    assert main(argv) == status
    return capsys.readouterr().out


def test_csv_is_the_api_frame(capsys):
    got = pd.read_csv(io.StringIO(_run(capsys, [*ARGS, "--format", "csv"])))
    want = sweep("llama-3.1-8b", ["h100-sxm", "h200-sxm"], tp=[1, 3], weights=["bf16", "fp8"], batch=[1, 16],
                 isl=[1024, 4096], osl=128)
    # the CLI names the formats as every output does: weights/activations/kv_cache for the frame's label
    formats = ["weights", "activations", "kv_cache"]
    assert list(got.columns) == CLI_COLUMNS
    assert len(got) == len(want) == 2 * 2 * 2 * 2 * 2
    assert [f"w:{w} a:{a} kv:{k}" for w, a, k in got[formats].itertuples(index=False)] == list(want["precision"])
    for col in ("ttft_s", "tpot_s", "output_tokens_per_s_per_device", "memory_used_bytes_per_device"):
        pd.testing.assert_series_equal(got[col], want[col].astype(float), check_names=False, rtol=1e-12)
    assert list(got["hardware"]) == list(want["hardware"].astype(str))


def test_table_marks_layouts_that_cannot_run_with_a_dash_and_the_reason(capsys):
    out = _run(capsys, ARGS)
    assert "nan" not in out.split()
    bad = [line for line in out.splitlines() if line.startswith("llama-3.1-8b") and "  3  " in line[:40]]
    assert bad and all(MISSING in line and "does not divide" in line for line in bad)
    assert f"{MISSING} in devices, ttft_ms, tpot_ms" in out and "cannot run" in out
    assert out.splitlines()[0].startswith("32 points (16 valid")


def test_out_writes_every_column_and_stdout_keeps_its_format(capsys, tmp_path):
    path = tmp_path / "sweep.csv"
    rows = list(csv.DictReader(io.StringIO(_run(capsys, [*ARGS, "--format", "csv", "--out", str(path)]))))
    written = pd.read_csv(path)
    assert list(written.columns) == CLI_COLUMNS and len(written) == len(rows) == 32


def test_sequences_split_over_dp_and_flag_what_does_not_divide(capsys):
    rows = list(csv.DictReader(io.StringIO(_run(capsys, [
        "sweep", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--replicas", "1,2", "--sequences", "3,8",
        "--format", "csv"]))))
    by = {(r["dp"], r["sequences"]): r for r in rows}
    assert "concurrency" not in rows[0]   # concurrency names closed-loop clients (estimate), not batch x dp
    assert float(by["2", "8.0"]["batch"]) == 4 and by["2", "8.0"]["valid"] == "True"
    assert by["2", "3.0"]["valid"] == "False" and "multiple of dp=2" in by["2", "3.0"]["reason"]


def test_the_old_concurrency_flag_is_sequences_with_a_note(capsys):
    base = ["sweep", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--replicas", "2", "--isl", "256",
            "--osl", "16", "--format", "csv"]
    new = _run(capsys, [*base, "--sequences", "4"])
    assert main([*base, "--concurrency", "4"]) == 0
    out = capsys.readouterr()
    assert out.out == new
    assert "perfmodel sweep: note: --concurrency is deprecated, use --sequences" in out.err
    assert "--concurrency" not in _help(capsys)


def _help(capsys) -> str:
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    return capsys.readouterr().out


def test_hardware_file_is_accepted(capsys, tmp_path):
    from perfmodel.hardware import load_hardware

    spec = load_hardware("h100-sxm").model_dump(mode="json")
    yaml_path = tmp_path / "my-gpu.yaml"
    yaml_path.write_text(json.dumps({"units": "si", **spec, "id": "my-gpu", "aliases": []}))  # JSON is YAML
    rows = list(csv.DictReader(io.StringIO(_run(capsys, [
        "sweep", "--model", "llama-3.1-8b", "--hardware", f"{yaml_path},h100-sxm", "--format", "csv"]))))
    assert [r["hardware"] for r in rows] == ["my-gpu", "h100-sxm"]
    assert rows[0]["ttft_s"] == rows[1]["ttft_s"]  # same figures, same answer


@pytest.mark.parametrize("extra", [["--tp", "0"], ["--batch", "1", "--sequences", "2"],
                                   ["--batch", "1", "--concurrency", "2"], ["--isl", "x"],
                                   ["--format", "xml"]])
def test_bad_flags_exit_2(capsys, extra):
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", *extra])
    assert exc.value.code == 2


def test_unknown_hardware_is_one_line_error(capsys):
    assert main(["sweep", "--model", "llama-3.1-8b", "--hardware", "h100-sxn"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfmodel sweep: error: ") and "h100-sxn" in err and len(err.splitlines()) == 1


def test_utilisation_power_basis_is_idle_plus_u_times_the_rest(capsys):
    rows = list(csv.DictReader(io.StringIO(_run(capsys, [
        "sweep", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--tp", "2", "--power-basis", "utilisation",
        "--idle", "150W", "--utilisation", "0.5", "--format", "csv"]))))
    # 2 devices x (150 W + 0.5 x (700 W TDP - 150 W)) = 850 W
    assert float(rows[0]["power_w"]) == pytest.approx(850.0)
    tps = float(rows[0]["output_tokens_per_s"])
    assert float(rows[0]["output_tokens_per_s_per_mw"]) == pytest.approx(tps / 850.0 * 1e6)
