"""Experiment: per-op GEMM error of the monotone wave form, with today's fitted terms and refitted.

:func:`perfmodel.core.costs.wave_monotone_eta` makes GEMM time never fall as M grows (the raw wave
term does, at every tile-row boundary). The shipped ``gemm.<format>`` terms were fitted with the raw
form, so this script measures, per system, the held-out GEMM error (median / p90 of |error| %, bias %)
of the monotone form (1) with the shipped terms and (2) after refitting each format's terms from the
shipped values (the fit of :mod:`perfmodel.calibration.fit_ops`, on fewer rows and evaluations for
speed). About 15 s per system on two cores. Result of 2026-12-01 (defaults), raw form as shipped in
docs/calibration.md for comparison:

=========  ================  =======================  ==========================
system     raw, shipped      monotone, shipped terms  monotone, refitted terms
=========  ================  =======================  ==========================
h100_sxm   6.2 / 21.4        6.21 / 21.07             6.24 / 21.34
h200_sxm   6.9 / 22.5        6.94 / 22.26             6.98 / 22.32
b200_sxm   6.1 / 19.3        6.48 / 21.49             6.22 / 18.54
gb200      6.2 / 18.9        6.58 / 20.74             6.22 / 18.35
=========  ================  =======================  ==========================

So the monotone form needs the refit (Blackwell fp4 has wave = 1 at its bound), after which the GEMM
error is unchanged. The shipped profiles are not rewritten here: that is a full ``fit_ops`` run.

Usage::

    python scripts/gemm_monotone_refit_experiment.py [--systems gb200,b200_sxm] [--max-rows 1500]
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default="h100_sxm,h200_sxm,b200_sxm,gb200")
    ap.add_argument("--data", type=Path, default=None, help="folder of the per-op tables (default: shared)")
    ap.add_argument("--max-rows", type=int, default=1500, help="training rows per format")
    ap.add_argument("--max-nfev", type=int, default=60, help="least-squares evaluations per format")
    args = ap.parse_args(argv)

    from perfmodel.calibration import fit_ops
    from perfmodel.calibration import ops_data as od
    from perfmodel.calibration.op_validation import PREDICTORS, error_stats
    from perfmodel.core.efficiency import load_profile

    table = od.read_table("gemm", args.data)
    for system in args.systems.split(","):
        gemm = table[table["system"] == system]
        dev = od.device(od.SYSTEM_TO_ACCELERATOR[system])
        eff = shipped = load_profile(od.SYSTEM_TO_ACCELERATOR[system])

        def held_out(e, gemm=gemm, dev=dev):
            pred, why = PREDICTORS["gemm"](gemm, e, dev)
            ok = (why == "") & (gemm["split"] == "test").to_numpy()
            return error_stats(pred[ok], gemm["latency_s"].to_numpy()[ok])

        for dtype in sorted(gemm["dtype"].unique()):
            fmt = od.DTYPE_TO_FORMAT[dtype]
            rows = fit_ops._fit_rows(gemm[gemm["dtype"] == dtype], None, args.max_rows)
            now = eff.op(f"gemm.{fmt}")
            specs = [(f"op_params/gemm.{fmt}/{k}", lo, hi, now.get(k, x0)) for k, lo, hi, x0 in fit_ops.GEMM_EXT
                     if not (fmt == "bf16" and k == "quant_bytes")]
            eff = fit_ops.fit(eff, dev, [("gemm", rows)], specs, max_nfev=args.max_nfev)
        print(f"{system}: monotone, shipped terms {held_out(shipped)}; refitted {held_out(eff)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
