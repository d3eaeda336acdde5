"""`perfmodel demo`: the article's scenario runs, prints its table and writes its files."""

from __future__ import annotations

import pytest

from perfmodel.cli import main


def test_demo_prints_table_and_writes_plots(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    for label in ("HGX H100", "GB200 NVL72 slice", "GPU/LPU split", "assumptions"):
        assert label in out
    files = {p.name: p.stat().st_size for p in (tmp_path / "out").iterdir()}
    assert "comparison.csv" in files
    pngs = [n for n in files if n.endswith(".png")]
    assert len(pngs) >= 3 and all(files[n] > 5000 for n in pngs)


def test_demo_table_names_each_rate_as_the_csv_does_without_exponents(tmp_path, capsys):
    """The table's rates carry the CSV's names (the decode-only per-device rate is not called
    output_tokens_per_s_per_device, which is the static batch's output rate per device), numbers are printed
    to 4 significant figures in fixed notation (10580, not 1.058e+04), times in ms (the CSV has seconds)."""
    import pandas as pd

    assert main(["demo", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("deployment "))
    cols = lines[head].split()
    assert cols[1:] == ["batch", "ttft_ms", "tpot_ms", "per_user_tokens_per_s", "decode_tokens_per_s",
                        "decode_tokens_per_s_per_device", "decode_tokens_per_s_per_gpu", "fits", "decode_bound"]
    rows = lines[head + 2:head + 18]  # 4 deployments x 4 batches, then the units and rates lines
    assert lines[head + 18] == "times in ms (JSON/CSV/DataFrame: SI seconds)"
    assert lines[head + 19].startswith("rates: per_user_tokens_per_s = 1/TPOT")
    assert not any("e+" in r or "e-" in r or "nan" in r for r in rows)
    csv = pd.read_csv(tmp_path / "comparison.csv")
    for row, (_, ref) in zip(rows, csv.iterrows(), strict=True):
        cells = row.split()[-len(cols) + 1:]
        values = dict(zip(cols[1:], cells, strict=True))
        assert int(values["batch"]) == ref["batch"]
        assert float(values["decode_tokens_per_s_per_device"]) == pytest.approx(
            ref["decode_tokens_per_s"] / ref["devices"], rel=5e-4)
        assert float(values["decode_tokens_per_s_per_gpu"]) == pytest.approx(
            ref["decode_tokens_per_s"] / ref["gpus"], rel=5e-4)
        assert float(values["ttft_ms"]) == pytest.approx(ref["ttft_s"] * 1e3, rel=5e-4)
