"""Llama-3.1-70B BF16 on 8×H100 (TP8, ISL 2048 / OSL 256): perfmodel next to peer tools' predictions.

Peer figures (TTFT ms / TPOT ms at batch 1, 8, 32, 128) are the ones quoted in the project's "Core
model" issue for llm-analysis, GenZ and NVIDIA AIConfigurator (the latter backed by its measured kernel
database). Run: ``python benchmarks/peer_table.py``.
"""

from __future__ import annotations

import perfmodel as pm

BATCHES = (1, 8, 32, 128)
PEERS = {
    "llm-analysis": ((52.5, 5.68), (415, 6.08), (1659, 7.45), (6635, 12.96)),
    "GenZ": ((61.5, 7.85), (471, 8.10), (1873, 8.98), (7482, 12.49)),
    "AIConfigurator": ((93.7, 9.98), (625, 10.35), (2429, 13.26), (9743, 20.45)),
}


def ours() -> dict:
    """perfmodel's predictions at BATCHES, datasheet and calibrated efficiencies."""
    return {name: pm.predict("llama-3.1-70b", "h100-sxm", tp=8, isl=2048, osl=256, batch=list(BATCHES),
                             efficiency=eff)
            for name, eff in (("perfmodel datasheet", "datasheet"), ("perfmodel calibrated", "calibrated"))}


def aic_ratios(cal) -> list[tuple[float, float]]:
    """(TTFT, TPOT) of the calibrated prediction over AIConfigurator's, per batch of BATCHES."""
    aic = PEERS["AIConfigurator"]
    return [(cal.ttft_s[k] * 1e3 / aic[k][0], cal.tpot_s[k] * 1e3 / aic[k][1]) for k in range(len(BATCHES))]


def main() -> None:
    ours_ = ours()
    print("TTFT [ms] / TPOT [ms]; perfmodel's TTFT is an idle replica's prefill (no queueing)")
    print(f"{'tool':22s}" + "".join(f"{'batch ' + str(b):>18s}" for b in BATCHES))
    for name, p in ours_.items():
        cells = [f"{p.ttft_s[k] * 1e3:.1f} / {p.tpot_s[k] * 1e3:.2f}" for k in range(len(BATCHES))]
        print(f"{name:22s}" + "".join(f"{c:>18s}" for c in cells))
    for name, rows in PEERS.items():
        print(f"{name:22s}" + "".join(f"{f'{t} / {d}':>18s}" for t, d in rows))
    ratios = aic_ratios(ours_["perfmodel calibrated"])
    print("calibrated / AIConfigurator: " + ", ".join(f"{a:.2f} / {b:.2f}" for a, b in ratios))


if __name__ == "__main__":
    main()
