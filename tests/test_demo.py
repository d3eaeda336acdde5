"""`perfmodel demo`: the article's scenario runs, prints its table and writes its files."""

from __future__ import annotations

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
