"""Fit each dataflow architecture's one parameter (stream_efficiency) on its public 'fit' rows.

Prints the fitted value next to the shipped one (perfmodel/data/dataflow/<arch>.yaml); copy a new
value into the file by hand. A test checks the shipped values against this fit.

    python scripts/fit_dataflow.py
"""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    from perfmodel.dataflow import load_arch
    from perfmodel.dataflow.public import fit_stream_efficiency, public_speeds

    fitted = public_speeds().query("role == 'fit'")["hardware"].unique()
    for hw in sorted(fitted):
        shipped = load_arch(hw).stream_efficiency.value
        print(f"{hw}: fitted stream_efficiency {fit_stream_efficiency(hw):.4g} (shipped {shipped:.4g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
