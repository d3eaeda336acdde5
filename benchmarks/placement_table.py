"""Side-by-side placements of a trillion-parameter MoE and a dense 70B model, with link sensitivity.

Run: ``python benchmarks/placement_table.py``. Prints (asserts nothing):

1. for Kimi-K2 (1.03 T parameters, MoE) and Llama-3.1-70B (dense): aggregated GPUs, prefill/decode
   disaggregation and the GPU/LPU attention–FFN split, at per-user speeds of about 50, 200 and
   400 tok/s (the largest batch that still reaches the target; "unreachable" if batch 1 does not);
2. the split's sensitivity to the GPU↔LPU link α and bandwidth, which are not published for LPX.

Every assumption is printed with the tables; docs/placement.md holds a copy of the output.
"""

from __future__ import annotations

import numpy as np

from perfmodel.deployment import pd_balance, predict_deployment

ISL, OSL = 2048, 256
TARGETS = (50.0, 200.0, 400.0)
BATCHES = np.unique(np.round(np.geomspace(1, 65536, 1200)))  # ~1 % steps
PRECISION = {"weights": "fp8", "kv_cache": "fp8"}
RUBIN_PEAKS = {"fp8": "25 PFLOP/s", "bf16": "12.5 PFLOP/s"}
LINK = {"bandwidth": "200 GB/s", "alpha": "5 us"}
PREFILL_BATCH = 8  # prompts per prefill step (16k tokens) when sizing a P/D prefill pool

ASSUMPTIONS = [
    f"Workload: ISL {ISL}, OSL {OSL} tokens; weights fp8, KV cache fp8, bf16 activations on links "
    "(LP30 has no NVFP4, so fp8 everywhere).",
    "Efficiency 'datasheet' everywhere: pure roofline at datasheet peaks, no kernel or framework "
    "overheads. Absolute speeds are upper bounds; the comparison is between placements.",
    "Rubin publishes only NVFP4 (50 PF, dense/sparse basis unstated): fp8 25 PF and bf16 12.5 PF are "
    "ASSUMED (Blackwell's 4:2:1 ratio). Rubin HBM 288 GB at 22 TB/s (announced).",
    "LP30 (announced): 0.5 GB SRAM at 150 TB/s and 1.2 PF fp8 per chip (rack 315 PF / 256, basis "
    "unstated); per-chip figures drive its op times; 10 % of SRAM reserved.",
    "GPU<->LPU link ASSUMED: 200 GB/s per direction per GPU (ConnectX-9: 28.8 TB/s per rack / 72, "
    "halved), alpha 5 us per message; activations spread over min(N_gpu, N_lpu) ports.",
    "Collectives inside the LPU pool ASSUMED to cost 3 us + volume/B each (collective_alpha: a "
    "statically scheduled exchange of ~3 C2C hops at the assumed 1 us); rings over thousands of "
    "chips are not modelled.",
    "P/D: both pools on Rubin in one NVL72 (NVLink 6, 1.8 TB/s per direction, alpha 2 us assumed), "
    "KV sent after the prefill; the prefill pool is sized to balance the decode pool "
    f"(pd_balance, {PREFILL_BATCH} prompts per prefill step), so 'devices' is fractional.",
    "TTFT: one request's prompt on an idle prefill replica (+ its KV transfer for P/D); no queueing.",
    "tok/s per device: output tokens/s over every device (an LP30 counts as much as a Rubin); "
    "tok/s per GPU: over the GPUs only; "
    "prefill co-located with decode is paid in the static-batch cycle (batch prompts, then OSL-1 "
    "steps). Power per device is unknown for Rubin and LP30, so tokens/s per MW is not reported.",
    "Batch: the largest batch (1..65536, ~1 % steps) whose per-user speed 1/TPOT still reaches the "
    "target and whose memory fits; micro-batches = 1 (no ping-pong overlap) unless stated.",
    "comm % TPOT: exchange between pools plus collectives inside pools on the critical path.",
]


def rubin(count: int, **layout) -> dict:
    return {"hardware": "rubin", "count": count, "assumed_compute": RUBIN_PEAKS, "efficiency": "datasheet",
            **layout}


def lpu(count: int) -> dict:
    return {"hardware": "groq-lp30", "count": count, "collective_alpha": "3 us", "efficiency": "datasheet"}


def configs(model: str) -> dict[str, dict]:
    moe = model == "kimi-k2"
    gpu_layout = {"tp": 8, "ep": 8} if moe else {"tp": 8}
    lpus = 2304 if moe else 128  # smallest LPX multiple holding the FFN weights at 10 % reserve
    attn = 72 if moe else 8
    base = {"model": model, "precision": PRECISION, "efficiency": "datasheet"}
    out = {
        "aggregated GPU": {**base, "pools": {"gpu": rubin(8, **gpu_layout)}},
        "P/D GPU": {**base, "pools": {"pre": rubin(8, **gpu_layout), "dec": rubin(8, **gpu_layout)},
                    "placement": {"prefill": "pre", "decode": "dec"}, "links": {"pre-dec": "nvlink6"}},
        "GPU/LPU split": {**base, "pools": {"gpu": rubin(attn, tp=8), "lpu": lpu(lpus)},
                          "placement": {"prefill": "gpu", "decode_attention": "gpu", "decode_ffn": "lpu"},
                          "links": {"gpu-lpu": LINK}},
    }
    out["GPU/LPU split, 2 micro-b."] = {**out["GPU/LPU split"], "options": {"micro_batches": 2}}
    if moe:
        out["aggregated GB200 (ref.)"] = {**base, "pools": {"gpu": {"hardware": "gb200", "count": 8, **gpu_layout,
                                                                    "efficiency": "datasheet"}}}
    return out


def pool_counts(pred) -> tuple[int, int]:
    """(GPUs, LPUs) of a deployment."""
    lpus = sum(p.devices for p in pred.pools.values() if "lp30" in p.hardware)
    return sum(p.devices for p in pred.pools.values()) - lpus, lpus


def pick(pred, target: float) -> int | None:
    ok = np.flatnonzero((pred.per_user_tokens_per_s >= target) & pred.fits)
    return int(ok[-1]) if ok.size else None


def table_rows(model: str) -> tuple[list[list[str]], dict]:
    """Table rows, and (config, target) -> (output tok/s, GPUs, LPUs) for the power break-even."""
    rows, rates = [], {}
    for name, dep in configs(model).items():
        pred = predict_deployment(dep, ISL, OSL, BATCHES)
        ttft1 = float(np.ravel(predict_deployment(dep, ISL, OSL, 1).ttft_s)[0])
        for target in TARGETS:
            k = pick(pred, target)
            if k is None:
                best = float(np.max(pred.per_user_tokens_per_s))
                rows.append([name, f"{target:.0f}", "unreachable", f"max {best:.0f}", "", "", "", "", "", ""])
                continue
            b, tpot = int(pred.batch[k]), float(pred.tpot_s[k])
            comm = (float(pred.comm_s_per_token[k]) + float(pred.collective_s_per_token[k])) / tpot
            gpus, lpus = pool_counts(pred)
            if pred.mode == "disaggregated":
                bal = pd_balance(dep, ISL, OSL, b, prefill_batch=PREFILL_BATCH)
                n_dec = pred.pools["dec"].devices
                n_pre = float(bal.prefill_to_decode_devices) * n_dec
                out = b * OSL / ((OSL - 1) * tpot)
                gpus, devs = n_dec + n_pre, f"{n_dec} + {n_pre:.2f} GPU"
            else:
                out = float(pred.output_tokens_per_s[k])
                devs = f"{gpus} GPU" + (f" + {lpus} LPU" if lpus else "")
            rates[(name, target)] = (out, gpus, lpus)
            rows.append([name, f"{target:.0f}", str(b), f"{1 / tpot:.0f}", f"{ttft1 * 1e3:.1f}",
                         f"{tpot * 1e3:.2f}", f"{out / (gpus + lpus):.1f}", f"{out / gpus:.0f}", devs,
                         f"{comm:.0%}"])
    return rows, rates


def break_even(rates: dict) -> list[str]:
    """LP30 power, as a fraction of one Rubin's, below which the split beats aggregated GPUs per MW.

    Equal tokens per joule when N_g + N_l x = out_split N_agg / out_agg, x = P_lpu / P_gpu.
    """
    lines = []
    for split in ("GPU/LPU split", "GPU/LPU split, 2 micro-b."):
        for target in TARGETS:
            if (split, target) not in rates or ("aggregated GPU", target) not in rates:
                continue
            out_s, n_g, n_l = rates[(split, target)]
            out_a, n_a, _ = rates[("aggregated GPU", target)]
            x = (out_s * n_a / out_a - n_g) / n_l
            verdict = (f"if one LP30 draws < {x:.1%} of one Rubin's power" if x > 0
                       else "never (it needs more GPUs than aggregated for the same tokens)")
            lines.append(f"- {split} at {target:.0f} tok/s/user beats aggregated GPUs per MW {verdict}")
    return lines


def sensitivity(model: str) -> list[list[str]]:
    dep = configs(model)["GPU/LPU split"]
    rows = []
    for alpha in (1, 5, 10, 25):
        for bw in (100, 200, 800):
            d = {**dep, "links": {"gpu-lpu": {"bandwidth": f"{bw} GB/s", "alpha": f"{alpha} us"}}}
            pred = predict_deployment(d, ISL, OSL, BATCHES)
            k = pick(pred, 400.0)
            at400 = ("unreachable" if k is None else
                     f"{int(pred.batch[k])} / {float(pred.output_tokens_per_s_per_device[k]):.1f} / "
                     f"{float(pred.comm_s_per_token[k] / pred.tpot_s[k]):.0%}")
            rows.append([f"{alpha}", f"{bw}", f"{float(pred.tpot_s[0]) * 1e3:.3f}",
                         f"{1 / float(pred.tpot_s[0]):.0f}", f"{float(pred.comm_s_per_token[0]) * 1e3:.3f}", at400])
    return rows


def fmt(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "-" * len(line)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def main() -> None:
    print("Assumptions")
    for a in ASSUMPTIONS:
        print(f"- {a}")
    head = ["config", "target tok/s/user", "batch", "tok/s/user", "TTFT ms", "TPOT ms", "tok/s/device",
            "tok/s/GPU", "devices", "comm % TPOT"]
    for model in ("kimi-k2", "llama-3.1-70b"):
        print(f"\n{model}: placements at ~50 / 200 / 400 tok/s per user (ISL {ISL}, OSL {OSL})")
        rows, rates = table_rows(model)
        print(fmt(head, rows))
        print("Power break-even (no power figure is published for Rubin or LP30):")
        print("\n".join(break_even(rates)))
    shead = ["alpha us", "GB/s", "TPOT b=1 ms", "tok/s/user b=1", "exchange b=1 ms",
             "at 400 tok/s/user: batch / tok/s/device / exchange % TPOT"]
    for model in ("kimi-k2", "llama-3.1-70b"):
        print(f"\n{model}: GPU/LPU split, sensitivity to the GPU<->LPU link (alpha per message, bandwidth per "
              f"direction per GPU)")
        print(fmt(shead, sensitivity(model)))


if __name__ == "__main__":
    main()
