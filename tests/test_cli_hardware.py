"""``perfmodel hardware list`` and ``perfmodel hardware show``, called through ``perfmodel.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from perfmodel.cli import main
from perfmodel.hardware import list_hardware, load_hardware


def run_json(capsys, *argv: str):
    assert main(list(argv) + ["--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_list_json_has_every_spec(capsys):
    rows = run_json(capsys, "hardware", "list")
    assert [r["id"] for r in rows] == [s.id for s in list_hardware()]
    for row in rows:
        assert {"id", "kind", "name"} <= set(row)


def test_list_json_accelerator_figures_are_si(capsys):
    rows = {r["id"]: r for r in run_json(capsys, "hardware", "list", "--kind", "accelerator")}
    assert {r["kind"] for r in rows.values()} == {"accelerator"}
    h100 = rows["h100-sxm"]
    assert h100["status"] == "shipping"
    assert h100["memory"] == "hbm"
    assert h100["memory_bandwidth_bytes_per_s"] == pytest.approx(3.35e12)
    assert h100["memory_capacity_bytes"] == pytest.approx(80e9)
    assert h100["bf16_flops_per_s"] == pytest.approx(9.89e14)
    assert h100["fp4_flops_per_s"] is None  # Hopper has no FP4: absent, not derived
    assert rows["groq-lp30"]["memory"] == "sram"
    assert rows["groq-lp30"]["power_w"] is None  # LP30 TDP was not published
    assert rows["rubin"]["status"] == "preliminary"


def test_list_json_links_and_systems(capsys):
    links = {r["id"]: r for r in run_json(capsys, "hardware", "list", "--kind", "link")}
    assert links["nvlink4"]["bandwidth_bytes_per_s"] == pytest.approx(4.5e11)
    assert links["nvlink4"]["alpha_basis"] in ("measured", "assumed")
    systems = {r["id"]: r for r in run_json(capsys, "hardware", "list", "--kind", "system")}
    assert systems["groq-lpx"]["count"] == 256
    assert systems["gb200-nvl72"]["accelerator"] == "gb200"


def test_list_table(capsys):
    assert main(["hardware", "list"]) == 0
    out = capsys.readouterr().out
    for text in ("accelerators:", "links:", "systems:", "h100-sxm", "3.35 TB/s", "989 TFLOP/s", "450 GB/s",
                 "192 GiB"):
        assert text in out


def test_list_table_one_kind(capsys):
    assert main(["hardware", "list", "--kind", "link"]) == 0
    out = capsys.readouterr().out
    assert "links:" in out and "accelerators:" not in out and "nvlink5" in out


def test_show_json_is_si_with_sources(capsys):
    spec = run_json(capsys, "hardware", "show", "h100-sxm")
    assert spec["id"] == "h100-sxm" and spec["kind"] == "accelerator"
    assert spec["memory"]["hbm"]["bandwidth"]["value"] == pytest.approx(3.35e12)
    assert spec["compute"]["bf16"]["value"] == pytest.approx(9.89e14)
    assert spec["compute"]["bf16"]["source"].startswith("https://")
    assert "dense" in spec["compute"]["bf16"]["basis"]
    assert spec["scale_up"]["link"] == "nvlink4"


def test_show_alias_is_case_insensitive(capsys):
    assert run_json(capsys, "hardware", "show", "H100")["id"] == "h100-sxm"


def test_show_json_round_trips_as_a_user_file(capsys, tmp_path: Path):
    dumped = run_json(capsys, "hardware", "show", "gb300-nvl72")
    path = tmp_path / "copy.yaml"
    path.write_text(yaml.safe_dump(dumped), encoding="utf-8")
    assert load_hardware(path) == load_hardware("gb300-nvl72")


def test_show_user_yaml_path(capsys, tmp_path: Path):
    path = tmp_path / "my-lpu.yaml"
    path.write_text(
        "kind: accelerator\nid: my-lpu\nname: My LPU\n"
        "memory:\n  sram:\n    capacity: {value: 0.5 GB, source: 'https://example.org/a'}\n"
        "    bandwidth: {value: 150 TB/s, source: 'https://example.org/a'}\n"
        "compute:\n  fp8: {value: 1.2 PFLOPS, basis: [dense], source: 'https://example.org/b'}\n",
        encoding="utf-8",
    )
    spec = run_json(capsys, "hardware", "show", str(path))
    assert spec["id"] == "my-lpu"
    assert spec["memory"]["sram"]["capacity"]["value"] == pytest.approx(5e8)
    assert spec["compute"]["fp8"]["value"] == pytest.approx(1.2e15)
    assert main(["hardware", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "memory.sram.bandwidth" in out and "150 TB/s" in out and "https://example.org/b" in out


def test_show_table_lists_figures_sources_and_notes(capsys):
    assert main(["hardware", "show", "h100-sxm"]) == 0
    out = capsys.readouterr().out
    for text in ("memory.hbm.bandwidth", "3.35 TB/s", "compute.bf16", "989 TFLOP/s", "dense, derived",
                 "hpctech", "nvlink4: 450 GB/s per direction", "note on compute.bf16"):
        assert text in out


def test_show_link_and_system_tables(capsys):
    assert main(["hardware", "show", "nvlink4"]) == 0
    assert "alpha_basis" in capsys.readouterr().out
    assert main(["hardware", "show", "groq-lpx"]) == 0
    assert "256 x groq-lp30" in capsys.readouterr().out


def test_show_unknown_id_exits_2_with_suggestion(capsys):
    assert main(["hardware", "show", "h100-sxn"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "unknown hardware 'h100-sxn'" in captured.err
    assert "did you mean 'h100-sxm'" in captured.err


def test_show_bad_user_file_exits_2(capsys, tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("kind: link\nid: x\nname: x\nbandwidth: 4.8 TB\nalpha: 1 us\nalpha_basis: assumed\n",
                    encoding="utf-8")
    assert main(["hardware", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bandwidth" in err and "bytes/time" in err


def test_bad_kind_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["hardware", "list", "--kind", "gpu"])
    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_bare_hardware_prints_help(capsys):
    assert main(["hardware"]) == 1
    assert "list" in capsys.readouterr().out
