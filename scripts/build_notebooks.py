#!/usr/bin/env python3
"""Build the teaching notebooks in ``notebooks/`` from the cell sources in this file.

The ``.ipynb`` files are generated: edit the cells here, then run

    python scripts/build_notebooks.py            # write notebooks/*.ipynb (no outputs)
    python scripts/build_notebooks.py --check    # exit 1 if a notebook differs from this source
    python scripts/build_notebooks.py --list     # names of the notebooks

Cells are plain strings, ``md(...)`` for markdown and ``code(...)`` for code. The notebooks are
written without outputs, with deterministic cell ids and sorted keys, so a change to a cell is a
small, readable diff in both this file and the notebook. ``tests/test_notebooks.py`` executes every
notebook from a clean kernel (working directory ``notebooks/``) and checks that the committed files
match this source.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "notebooks"

Cell = tuple[str, str]


def md(text: str) -> Cell:
    """A markdown cell (indentation common to all lines is removed)."""
    return ("markdown", textwrap.dedent(text).strip("\n"))


def code(*parts: str) -> Cell:
    """A code cell from one or more parts, each dedented on its own and joined by blank lines."""
    return ("code", "\n\n".join(textwrap.dedent(part).strip("\n") for part in parts))


#: Finds the repository root from the working directory (notebooks/ or the root itself).
FIND_ROOT = '''
def find_root() -> Path:
    """The perfmodel repository root: this folder or one above it (notebooks/ runs from notebooks/)."""
    for folder in (Path.cwd(), *Path.cwd().parents):
        if (folder / "deployments").is_dir() and (folder / "pyproject.toml").is_file():
            return folder
    raise FileNotFoundError("run this notebook from the perfmodel repository (its root or notebooks/)")


ROOT = find_root()
'''

PANDAS_OPTIONS = '''
pd.set_option("display.width", 170)
pd.set_option("display.max_columns", 40)
pd.set_option("display.precision", 4)
'''


# =============================================================================================
# 01 quickstart
# =============================================================================================

NB01 = [
    md("""
    # 01 · Quickstart: one model on one machine

    This notebook predicts how **Llama-3.1-70B** runs on an **8-GPU H100 node**, then looks inside
    the prediction: where the time goes (breakdown, roofline) and where the memory goes (memory
    budget). Everything here is analytic — one `predict` call over several batch sizes takes
    milliseconds — so it is the place to start before simulating load (notebook 04) or planning
    capacity (notebook 05).

    What `predict` assumes: a **static batch** of `batch` requests that start together, each with
    `isl` prompt tokens and `osl` output tokens, on an otherwise idle replica. Its TTFT is therefore
    the latency floor of the hardware and software, with no queueing and no network in it.
    """),
    code("""
    %matplotlib inline

    import numpy as np
    import pandas as pd

    import perfmodel as pm
    """, PANDAS_OPTIONS, """
    print("perfmodel", pm.__version__)
    """),
    md("""
    ## 1. One call, four operating points

    `pm.predict(model, hardware, ...)` takes a model id (or a Hugging Face repo id, or a path to a
    `config.json`), a hardware id, the parallel layout and the number formats of weights, activations
    and KV cache. `isl`, `osl` and `batch` accept lists or arrays and broadcast together, so one call
    evaluates a whole grid. In a notebook the result displays as a table.
    """),
    code("""
    p = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, isl=2048, osl=256, batch=[1, 8, 32, 128],
                   weights="fp8", kv_cache="fp8")
    p
    """),
    md("""
    The configuration travels with the result. `efficiency` names the profile the op times came from:
    with the default `efficiency="calibrated"` it is the hardware's profile fitted to measured kernels
    (`perfmodel/data/calibration/`), while `efficiency="datasheet"` gives the pure roofline at the
    published peaks. `efficiency_fallback` is true when the hardware has no profile of its own and
    borrows its family's; `basis` says which of the two the numbers are.
    """),
    code("""
    c = p.config
    print(f"{c['model']} on {p.devices}x {c['hardware']} ({c['parallel']}, {c['precision']})")
    print(f"efficiency profile: {c['efficiency']}; borrowed from the family: {c['efficiency_fallback']}; "
          f"basis: {c['basis']}")
    """),
    md("""
    ## 2. The table in readable units

    `to_dataframe()` returns SI units (seconds, bytes, tokens per second), named by suffix
    (`_s`, `_bytes`, `_per_s`). For reading we convert to milliseconds and gigabytes.
    """),
    code("""
    df = p.to_dataframe()
    view = pd.DataFrame({
        "batch": df["batch"].astype(int),
        "TTFT [ms]": df["ttft_s"] * 1e3,
        "TPOT [ms]": df["tpot_s"] * 1e3,
        "E2E [s]": df["e2e_s"],
        "per user [tok/s]": df["per_user_tokens_per_s"],
        "system output [tok/s]": df["output_tokens_per_s"],
        "per GPU [tok/s]": df["per_device_tokens_per_s"],
        "memory per GPU [GB]": df["memory_used_bytes_per_device"] / 1e9,
        "fits": df["fits"],
        "prefill bound": df["prefill_bound"],
        "decode bound": df["decode_bound"],
    })
    view.round(2)
    """),
    md("""
    Reading the table:

    * **Per-user speed** is 1/TPOT: how fast one answer streams. It falls as the batch grows,
      because each decode step has more work.
    * **System output tokens/s** counts every user's tokens, prefill time included. It rises with
      the batch: the weights are read once per step whatever the batch, so a bigger batch shares
      that cost.
    * **TTFT** grows with the batch because the whole batch's prompts share one prefill step.
    * **E2E = TTFT + (OSL − 1) · TPOT**, by definition. The cell below checks that identity and the
      trade-off in this table.
    """),
    code("""
    assert np.allclose(df["e2e_s"], df["ttft_s"] + (df["osl"] - 1) * df["tpot_s"])
    assert (np.diff(df["per_user_tokens_per_s"]) < 0).all()   # each user slower...
    assert (np.diff(df["output_tokens_per_s"]) > 0).all()     # ...the system faster
    first, last = df.iloc[0], df.iloc[-1]
    print(f"batch {first.batch:.0f} -> {last.batch:.0f}: system output x{last.output_tokens_per_s / first.output_tokens_per_s:.1f} "
          f"({first.output_tokens_per_s:,.0f} -> {last.output_tokens_per_s:,.0f} tok/s), per-user speed "
          f"x{last.per_user_tokens_per_s / first.per_user_tokens_per_s:.2f} "
          f"({first.per_user_tokens_per_s:.0f} -> {last.per_user_tokens_per_s:.0f} tok/s)")
    """),
    md("""
    ## 3. Where the time goes

    `breakdown()` splits one prefill step and one decode step (at the middle of the output) into op
    classes. Each row has a compute part (FLOPs / achievable FLOP/s), a memory part (bytes / achievable
    bandwidth) and a fixed overhead (kernel launches); an op costs the larger of compute and memory
    plus its overhead. `comm:` rows are the tensor-parallel all-reduces between the 8 GPUs. For a
    vectorised prediction the breakdown shows the first operating point, so we predict batch 32 alone.
    """),
    code("""
    p32 = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, isl=2048, osl=256, batch=32,
                     weights="fp8", kv_cache="fp8")
    bd = p32.breakdown()
    bd_ms = bd.set_index(["phase", "op_class"])[["compute_s", "memory_s", "overhead_s", "time_s"]] * 1e3
    bd_ms.columns = ["compute [ms]", "memory [ms]", "overhead [ms]", "op time [ms]"]
    bd_ms.round(3)
    """),
    code("""
    for phase in ("prefill", "decode"):
        print(f"{phase}: rows add up to {bd.loc[bd.phase == phase, 'time_s'].sum() * 1e3:.2f} ms per step")
    print(f"TTFT {float(p32.ttft_s) * 1e3:.1f} ms (one prefill step of 32 prompts), "
          f"TPOT {float(p32.tpot_s) * 1e3:.2f} ms (decode steps averaged over the growing context)")
    """),
    code("""
    from perfmodel.plots import latency_breakdown

    latency_breakdown(p32);
    """),
    md("""
    ## 4. The roofline: what bounds each op

    To first order an op takes `T ≈ max(F / P, D / B)`: F operations at P FLOP/s, or D bytes at B
    bytes/s, whichever is longer. The ratio F/D, the **arithmetic intensity** in FLOP per byte, says
    which one wins: below the device's ridge point P/B an op is bandwidth-bound, above it
    compute-bound. `phase_ops` lists the ops of one layer (and the LM head) with their intensity and
    predicted time; `roofline_chart` places them under the device's roofs.

    Decode at batch 8 multiplies 8 token vectors by each weight matrix: 2 FLOP per weight per token,
    8 tokens, 1 byte per fp8 weight — about 16 FLOP per byte, far left of the ridge. Prefill of a
    2,048-token prompt multiplies 2,048 vectors by the same weights: far right.
    """),
    code("""
    from perfmodel.plots import phase_ops, roofline_chart

    sm = pm.StepModel("llama-3.1-70b", "h100-sxm", tp=8, weights="fp8", kv_cache="fp8")
    gpu = sm.hardware
    ridge = gpu.peak_flops("fp8") / gpu.memory_bandwidth
    print(f"H100 fp8 ridge point: {ridge:.0f} FLOP/B = {gpu.peak_flops('fp8') / 1e12:.0f} TFLOP/s "
          f"/ {gpu.memory_bandwidth / 1e12:.2f} TB/s")

    ops = pd.concat([phase_ops(sm, "decode", batch=8, context=2048),
                     phase_ops(sm, "prefill", batch=1, context=2048)], ignore_index=True)
    pd.DataFrame({
        "phase": ops["phase"], "op": ops["name"],
        "intensity [FLOP/B]": ops["intensity"],
        "time [us]": ops["time_s"] * 1e6,
        "attained [TFLOP/s]": ops["attained_flops"] / 1e12,
        "side of the ridge": np.where(ops["intensity"] < ridge, "bandwidth", "compute"),
    }).round(2)
    """),
    code("""
    roofline_chart(sm, ops);
    """),
    md("""
    ## 5. Memory: does it fit, and how many requests?

    Weights are only the first line of the memory budget. Every active sequence holds a **KV cache**
    that grows with its context, and the engine needs workspace for activations. `memory_table` and
    `memory_budget` give the per-GPU budget of several layouts at a given batch and context; the last
    column is the largest number of sequences of that length that fit.

    The TP2 bf16 row is the lesson: 70.6 GB of weights per GPU do fit under the 72 GB usable (80 GB
    less a 10 % reserve), yet there is no room left for 32 requests' KV cache. *Weights fitting does
    not mean the system can serve.*
    """),
    code("""
    from perfmodel.plots import memory_budget, memory_table

    layouts = {
        "H100 TP8, fp8": sm,
        "H100 TP4, fp8": pm.StepModel("llama-3.1-70b", "h100-sxm", tp=4, weights="fp8", kv_cache="fp8"),
        "H100 TP4, bf16": pm.StepModel("llama-3.1-70b", "h100-sxm", tp=4),
        "H100 TP2, bf16": pm.StepModel("llama-3.1-70b", "h100-sxm", tp=2),
    }
    context = 2048 + 256
    mt = memory_table(layouts, batch=32, context=context)
    gb = mt[["weights_bytes", "kv_cache_bytes", "workspace_bytes", "used_bytes", "usable_bytes"]] / 1e9
    gb.columns = ["weights [GB]", "KV cache [GB]", "workspace [GB]", "used [GB]", "usable [GB]"]
    gb.assign(fits=mt["fits"], **{f"max sequences at {context} tokens": mt["max_sequences"]}).round(1)
    """),
    code("""
    assert not mt.loc["H100 TP2, bf16", "fits"] and mt.loc["H100 TP2, bf16", "weights_bytes"] < mt.loc["H100 TP2, bf16", "usable_bytes"]
    memory_budget(layouts, batch=32, context=context);
    """),
    md("""
    ## 6. The specs behind the numbers

    Hardware and models are data. Every hardware figure carries its source and basis (datasheet,
    derived, announced, assumed); models are read from their Hugging Face `config.json`.
    """),
    code("""
    from perfmodel.modelspec import kv_bytes_per_token, params_total, weight_bytes

    hbm = gpu.memory["hbm"]
    print(f"{gpu.name}: {hbm.capacity.value / 1e9:.0f} GB HBM at {hbm.bandwidth.value / 1e12:.2f} TB/s, "
          f"{gpu.peak_flops('bf16') / 1e12:.0f} TFLOP/s bf16 and {gpu.peak_flops('fp8') / 1e12:.0f} TFLOP/s fp8 "
          f"(dense), TDP {gpu.tdp:.0f} W")
    print(f"  HBM bandwidth source: {hbm.bandwidth.source}")

    spec = pm.load_model("llama-3.1-70b")
    print(f"{spec.id}: {params_total(spec) / 1e9:.2f} B parameters, {weight_bytes(spec, 'fp8') / 1e9:.1f} GB "
          f"of weights in fp8, KV cache {kv_bytes_per_token(spec, 'fp8') / 1e3:.0f} kB per token in fp8")
    """),
    md("""
    ## 7. The same from the command line

    Every call above has a command-line equivalent (`--format json` for scripts):

    ```bash
    perfmodel predict --model llama-3.1-70b --hardware h100-sxm --tp 8 --isl 2048 --osl 256 \\
                      --batch 1,8,32,128 --weights fp8 --kv-cache fp8
    perfmodel predict --model llama-3.1-70b --hardware h100-sxm --tp 8 --isl 2048 --osl 256 \\
                      --batch 32 --weights fp8 --kv-cache fp8 --efficiency datasheet --format json
    perfmodel hardware show h100-sxm          # every figure with its source and basis
    perfmodel models show llama-3.1-70b       # parameters, KV bytes per token, layer groups
    perfmodel demo                            # an 8-GPU node vs an NVL72 slice vs a GPU/LPU split
    ```

    Next: notebook 02 reproduces the reference article's worked examples, 04 puts this model under
    load.
    """),
]


# =============================================================================================
# 02 the reference article
# =============================================================================================

NB02 = [
    md("""
    # 02 · The reference article, reproduced

    The article this project starts from asks why the fastest GPU does not always give the fastest
    answer. This notebook recomputes each of its worked examples with perfmodel, in the article's
    order (§1–§10 below; `docs/concepts.md` explains the same ideas). Every number the article states is checked with an
    `assert`, so a wrong result stops the notebook. Where the article's point is qualitative, we show
    it on a real model and hardware pair.
    """),
    code("""
    %matplotlib inline

    import numpy as np
    import pandas as pd

    import perfmodel as pm
    """, PANDAS_OPTIONS),
    md("""
    ## §1 What "fast" means

    A request is sent at t0, its first token arrives at t1 and its last (N-th) token at tN:

    * **TTFT** = t1 − t0 (measured at a client it also holds queueing, network and request handling);
    * **TPOT** = (tN − t1) / (N − 1), the time per output token after the first; 1/TPOT is that
      user's generation rate;
    * **E2E** = tN − t0 = TTFT + (N − 1) · TPOT.
    """),
    code("""
    t0, t1, tN, N = 0.0, 0.35, 2.90, 100      # s, s, s, output tokens
    ttft, tpot, e2e = t1 - t0, (tN - t1) / (N - 1), tN - t0
    print(f"TTFT {ttft * 1e3:.0f} ms, TPOT {tpot * 1e3:.2f} ms ({1 / tpot:.1f} tok/s for this user), E2E {e2e:.2f} s")
    assert np.isclose(e2e, ttft + (N - 1) * tpot)
    assert np.isclose(pm.e2e_latency(ttft, tpot, N), e2e)
    """),
    md("""
    **The inverse of the mean TPOT is not the mean of the per-request rates.** Two requests, one at
    10 ms per token and one at 50 ms: the mean TPOT is 30 ms, whose inverse is 33.3 tok/s, but the
    users see 100 and 20 tok/s, a mean of 60 tok/s. Reports must say which one they average.
    """),
    code("""
    tpots = np.array([0.010, 0.050])               # s per token, two requests
    inverse_of_mean = 1 / tpots.mean()             # tok/s
    mean_of_rates = (1 / tpots).mean()             # tok/s
    print(f"1 / mean(TPOT) = {inverse_of_mean:.1f} tok/s, mean(1 / TPOT) = {mean_of_rates:.1f} tok/s")
    assert np.isclose(inverse_of_mean, 100 / 3) and np.isclose(mean_of_rates, 60.0)
    """),
    md("""
    **TPOT is per token, ITL per chunk.** A streaming server may send several tokens per chunk.
    Here 12 tokens arrive in 3 chunks of 4, 40 ms apart: the benchmark tool's inter-chunk latency is
    40 ms, the TPOT 7.3 ms.

    **Reasoning models** emit R reasoning tokens before the answer; the first *answer* token arrives
    at TTFT + R · TPOT (AIPerf's "time to first non-reasoning token"; perfmodel's TTFAT).
    """),
    code("""
    arrivals = np.repeat([0.35, 0.39, 0.43], 4)     # s: 3 chunks of 4 tokens
    tpot_chunked = (arrivals[-1] - arrivals[0]) / (len(arrivals) - 1)
    itl_chunks = np.diff(np.unique(arrivals))
    print(f"TPOT {tpot_chunked * 1e3:.2f} ms per token, inter-chunk latency {itl_chunks.mean() * 1e3:.0f} ms per chunk")
    assert np.isclose(tpot_chunked, 0.08 / 11) and np.allclose(itl_chunks, 0.040)

    R = 500                                          # reasoning tokens
    ttfat = ttft + R * tpot
    print(f"with {R} reasoning tokens the first answer token arrives after {ttfat:.2f} s (TTFT was {ttft:.2f} s)")
    """),
    md("""
    ## §2 Starting earlier is not finishing earlier

    Configuration A starts sooner (TTFT 0.2 s) but streams slower (TPOT 40 ms); B starts later
    (0.5 s) and streams faster (30 ms). They finish an N-token answer together when
    TTFT_A + (N−1)·TPOT_A = TTFT_B + (N−1)·TPOT_B, i.e. N* = 1 + (TTFT_B − TTFT_A) / (TPOT_A − TPOT_B)
    = **31 tokens**, both at **1.4 s**. Shorter answers favour A, longer ones B.
    """),
    code("""
    from perfmodel.planning import output_crossover

    n_star = float(pm.crossover_tokens(ttft_a=0.2, tpot_a=0.040, ttft_b=0.5, tpot_b=0.030))
    e2e_a, e2e_b = pm.e2e_latency(0.2, 0.040, 31), pm.e2e_latency(0.5, 0.030, 31)
    print(f"N* = {n_star:.1f} tokens; a 31-token answer takes {e2e_a:.2f} s on A and {e2e_b:.2f} s on B")
    assert np.isclose(n_star, 31.0) and np.isclose(e2e_a, 1.4) and np.isclose(e2e_b, 1.4)

    x = output_crossover((0.2, 0.040), (0.5, 0.030))
    assert x["faster_below"] == "a" and x["faster_beyond"] == "b"
    lengths = np.array([10, 31, 100, 500])
    pd.DataFrame({"output tokens": lengths,
                  "A finishes [s]": pm.e2e_latency(0.2, 0.040, lengths),
                  "B finishes [s]": pm.e2e_latency(0.5, 0.030, lengths)}).round(2)
    """),
    code("""
    from perfmodel.plots import completion_time

    completion_time({"A: 0.2 s + 40 ms/token": (0.2, 0.040), "B: 0.5 s + 30 ms/token": (0.5, 0.030)},
                    max_tokens=80);
    """),
    md("""
    ## §3 Prefill and decode are different workloads

    Prefill pushes the whole prompt through the model at once: many tokens per matrix product, so it
    is usually **compute-bound**. Decode adds one token per request per step and must re-read the
    weights and the KV cache each time: at small batch it is **bandwidth-bound**. We check this on the
    pure roofline (`efficiency="datasheet"`), where the bound is unambiguous.
    """),
    code("""
    p = pm.predict("llama-3.1-8b", "h100-sxm", isl=[1024, 8192], osl=256, batch=1, efficiency="datasheet")
    d = p.to_dataframe()
    print(d[["isl", "prefill_bound", "decode_bound"]].to_string(index=False))
    assert (d["prefill_bound"] == "compute").all() and (d["decode_bound"] == "memory").all()
    """),
    md("""
    **Input + output tokens/s can flatter a benchmark.** With longer prompts the system processes
    many more *input* tokens per second, so a figure that adds input and output tokens rises, while
    every user waits longer and gets fewer output tokens per second.
    """),
    code("""
    p = pm.predict("llama-3.1-8b", "h100-sxm", isl=[1024, 8192], osl=256, batch=8)
    d = p.to_dataframe()
    pd.DataFrame({"ISL [tok]": d["isl"].astype(int),
                  "input+output [tok/s]": d["total_tokens_per_s"],
                  "output only [tok/s]": d["output_tokens_per_s"],
                  "per user [tok/s]": d["per_user_tokens_per_s"],
                  "E2E [s]": d["e2e_s"]}).round(1)
    """),
    code("""
    assert d["total_tokens_per_s"][1] > d["total_tokens_per_s"][0]        # the headline number rises
    assert d["output_tokens_per_s"][1] < d["output_tokens_per_s"][0]      # fewer answer tokens per second
    assert d["e2e_s"][1] > d["e2e_s"][0]                                  # and every user waits longer
    """),
    md("""
    ## §4 Memory: fits, how fast, how far

    Per operation, first approximation: **T ≈ max(F / P, D / B)**. A decode step that must read
    exactly 70 GB at an effective 2 TB/s takes at least **35 ms**, in decimal units (1 GB = 10⁹ B).
    Adding FLOP/s does not move that bound; only fewer bytes or more bandwidth do.
    """),
    code("""
    D = pm.to_si("70 GB", "bytes")                    # B
    B = pm.to_si("2 TB/s", "bandwidth")               # B/s
    t = float(pm.roofline_time(flops=1e12, bytes_moved=D, peak_flops=1e15, bandwidth=B))
    t_more_flops = float(pm.roofline_time(flops=1e12, bytes_moved=D, peak_flops=1e18, bandwidth=B))
    t_more_bw = float(pm.roofline_time(flops=1e12, bytes_moved=D, peak_flops=1e15, bandwidth=2 * B))
    print(f"70 GB at 2 TB/s: {t * 1e3:.1f} ms; with 1000x the FLOP/s: {t_more_flops * 1e3:.1f} ms; "
          f"with twice the bandwidth: {t_more_bw * 1e3:.1f} ms")
    assert np.isclose(t, 0.035) and t_more_flops == t and np.isclose(t_more_bw, 0.0175)
    print(f"(70 GiB would be {pm.to_si('70 GiB', 'bytes') / B * 1e3:.1f} ms: units matter)")
    """),
    md("""
    The KV cache belongs in the memory budget. Llama-3.1-70B in bf16 on two H100s (TP2): 70.6 GB of
    weights per GPU fit under the 72 GB usable, one or two sequences of 2,304 tokens fit, eight do
    not. (`max_batch_at_context` reports 0 here because it reserves a serving engine's full prefill
    workspace of 16,384 tokens, which this layout cannot spare.)
    """),
    code("""
    p = pm.predict("llama-3.1-70b", "h100-sxm", tp=2, isl=2048, osl=256, batch=[1, 2, 8, 32])
    usable = p.memory_capacity_bytes * (1 - p.config["reserve_fraction"])
    print(f"weights {p.weights_bytes_per_device / 1e9:.1f} GB per GPU, usable {usable / 1e9:.1f} GB")
    d = p.to_dataframe()
    print(pd.DataFrame({"batch": d["batch"].astype(int), "used [GB]": d["memory_used_bytes_per_device"] / 1e9,
                        "fits": d["fits"], "reason": d["fit_reason"],
                        "max_batch_at_context [sequences]": d["max_batch_at_context"].astype(int)}).round(1).to_string(index=False))
    assert p.weights_bytes_per_device < usable and d["fits"][0] and not d["fits"][3]
    """),
    md("""
    ## §5 More total throughput can mean slower users

    The article's example: A serves **8** concurrent requests at TPOT **20 ms**, B serves **41** at
    **54 ms**. Total output rate is concurrency / TPOT.
    """),
    code("""
    conc_a, tpot_a = 8, 0.020      # requests, s
    conc_b, tpot_b = 41, 0.054
    total_a, total_b = conc_a / tpot_a, conc_b / tpot_b          # tok/s
    user_a, user_b = 1 / tpot_a, 1 / tpot_b                      # tok/s per user
    print(f"A: {user_a:.1f} tok/s per user, {total_a:.0f} tok/s in total")
    print(f"B: {user_b:.1f} tok/s per user, {total_b:.0f} tok/s in total")
    print(f"B yields {total_b / total_a:.2f}x the tokens; A serves each user {user_a / user_b:.2f}x faster")
    assert np.isclose(total_a, 400) and round(total_b, -1) == 760
    assert round(total_b / total_a, 1) == 1.9 and np.isclose(user_a / user_b, 2.7)
    """),
    md("""
    The same trade-off from a real pair: Llama-3.1-70B (fp8) on 8 H100s at the article's two
    concurrencies. The exact ratios depend on the hardware and the efficiency profile; the direction
    does not.
    """),
    code("""
    p = pm.predict("llama-3.1-70b", "h100-sxm", tp=8, isl=2048, osl=256, batch=[8, 41],
                   weights="fp8", kv_cache="fp8")
    total, per_user = p.decode_tokens_per_s, p.per_user_tokens_per_s
    for b, t, u, s in zip(p.batch, total, per_user, p.tpot_s):
        print(f"batch {b:.0f}: TPOT {s * 1e3:.1f} ms, {u:.0f} tok/s per user, {t:,.0f} tok/s in total")
    print(f"batch 41 yields {total[1] / total[0]:.2f}x the tokens; batch 8 serves each user "
          f"{per_user[0] / per_user[1]:.2f}x faster")
    assert total[1] > total[0] and per_user[1] < per_user[0]
    """),
    md("""
    Real services also have arrivals, departures, mixed lengths and a scheduler; the token budget of
    chunked prefill trades TTFT against inter-token latency. Notebook 04 simulates that.

    ## §6 Splitting work across processors: rack figures are not chip figures

    NVIDIA's announced Vera Rubin + Groq 3 LPX design runs attention on GPUs and the decode FFN/MoE on
    LPUs. The announced LPX *rack* figures — 256 LPUs, 128 GB SRAM, ~40 PB/s SRAM bandwidth, 640 TB/s
    scale-up — are aggregates. perfmodel keeps them as a system of 256 per-chip LP30 specs, and the
    per-chip figures drive the model.
    """),
    code("""
    lpx, lp30, rubin = pm.load_hardware("groq-lpx"), pm.load_hardware("groq-lp30"), pm.load_hardware("rubin")
    sram = lp30.memory["sram"]
    print(f"{lpx.name}: {lpx.count} x {lpx.accelerator}, status {lpx.status}")
    print(f"per LP30: {sram.capacity.value / 1e9:.1f} GB SRAM at {sram.bandwidth.value / 1e12:.0f} TB/s, "
          f"{lp30.peak_flops('fp8') / 1e15:.1f} PFLOP/s fp8 (basis: {', '.join(lp30.compute['fp8'].basis)})")
    rack_sram, rack_bw = lpx.count * lp30.memory_capacity, lpx.count * lp30.memory_bandwidth
    print(f"rack aggregate: {rack_sram / 1e9:.0f} GB SRAM, {rack_bw / 1e15:.1f} PB/s (announced: 128 GB, ~40 PB/s)")
    print(f"one Rubin GPU for comparison: {rubin.memory_capacity / 1e9:.0f} GB HBM at {rubin.memory_bandwidth / 1e12:.0f} TB/s")
    print(f"rack notes: {lpx.notes}")
    assert np.isclose(rack_sram, 128e9) and lpx.count == 256
    """),
    md("""
    Three cautions from the article, made concrete:

    * The rack's 38–40 PB/s is the sum over 256 chips; each chip reads only its own 0.5 GB at
      150 TB/s. It cannot be compared with one GPU's HBM bandwidth.
    * 128 GB of SRAM does not mean a large model's weights fit. `min_devices_for_weights` gives the
      capacity bound for the FFN/MoE weights (the part the LPUs hold).
    * The 640 TB/s scale-up does not set the speed of a GPU↔LPU exchange; a deployment names that
      link (notebook 03).
    """),
    code("""
    from perfmodel.deployment import min_devices_for_weights

    rows = []
    for model in ["llama-3.1-70b", "deepseek-r1", "kimi-k2"]:
        n0 = min_devices_for_weights(model, "groq-lp30", "fp8")
        n10 = min_devices_for_weights(model, "groq-lp30", "fp8", reserve=0.10)
        rows.append({"model": model, "LP30 chips (no reserve)": n0, "LP30 chips (10 % reserve)": n10,
                     "LPX racks (no reserve)": n0 / lpx.count})
    need = pd.DataFrame(rows)
    print(need.round(2).to_string(index=False))
    assert (need.loc[need.model == "kimi-k2", "LP30 chips (no reserve)"] > lpx.count).all()
    """),
    md("""
    ## §7 Communication decides whether a split pays

    A message costs about **α + S / B**: a fixed latency plus size over bandwidth. For the small
    per-layer messages of a split, α dominates. The article: **80 dependent round trips per token at
    10 µs fixed cost each add 0.8 ms per token; at 50 µs each, 4 ms**. A round trip is two messages,
    so 10 µs per round trip is α = 5 µs per message.
    """),
    code("""
    t10 = float(pm.round_trips_time(80, size=0.0, bandwidth=1e12, alpha=5e-6))
    t50 = float(pm.round_trips_time(80, size=0.0, bandwidth=1e12, alpha=25e-6))
    print(f"80 round trips: {t10 * 1e3:.1f} ms per token at 10 us each, {t50 * 1e3:.1f} ms at 50 us each")
    assert np.isclose(t10, 0.8e-3) and np.isclose(t50, 4e-3)

    S = 8 * 7168 * 2                                 # B: 8 tokens x hidden 7168 x bf16
    for bw in (200e9, 400e9):
        m = float(pm.message_time(S, bw, 5e-6))
        print(f"a {S / 1e3:.0f} kB message at {bw / 1e9:.0f} GB/s and alpha 5 us: {m * 1e6:.2f} us "
              f"(of which S/B {S / bw * 1e6:.2f} us)")
    """),
    md("""
    **When does delegating pay?** Without overlap, sending a part of the work elsewhere pays when
    **T_local > T_remote + T_comm**; with overlap, only the communication left on the critical path
    counts. Example: the part takes 1.0 ms locally, 0.4 ms remotely, and the exchange 0.8 ms.
    """),
    code("""
    t_local, t_remote, t_comm = 1.0e-3, 0.4e-3, 0.8e-3       # s
    no_overlap = bool(pm.offload_pays(t_local, t_remote, t_comm))
    half_hidden = bool(pm.offload_pays(t_local, t_remote, t_comm, overlap=0.5))
    print(f"no overlap: {t_local * 1e3:.1f} ms > {(t_remote + t_comm) * 1e3:.1f} ms? {no_overlap}")
    print(f"half the exchange hidden: {t_local * 1e3:.1f} ms > {(t_remote + 0.5 * t_comm) * 1e3:.1f} ms? {half_hidden}")
    assert not no_overlap and half_hidden
    """),
    md("""
    The same holds when adding GPUs: tensor parallelism over 4 cards splits the weights (and their
    reads) four ways but adds two all-reduces per layer. **"Runs on four cards" is not "each user is
    four times faster".**
    """),
    code("""
    from perfmodel.deployment import scaling_curve

    sc = scaling_curve("llama-3.1-70b", "h100-sxm", devices=[1, 2, 4, 8], batch=8, isl=2048, osl=256,
                       weights="fp8", kv_cache="fp8")
    print(pd.DataFrame({"GPUs": sc["devices"], "TPOT [ms]": sc["tpot_s"] * 1e3,
                        "per-user speed-up": sc["speedup"], "ideal": sc["ideal_speedup"],
                        "collectives [% of step]": sc["comm_share"] * 100, "fits": sc["fits"]}).round(2).to_string(index=False))
    four = sc.set_index("devices").loc[4]
    assert 1.0 < four["speedup"] < 4.0
    """),
    md("""
    ## §9 Goodput: requests that meet every limit at once

    An SLO such as "95 % of requests with TTFT < 2 s **and** TPOT < 50 ms" is a *joint* condition.
    Reporting the p95 of each metric separately does not guarantee it: the slow-TTFT requests and the
    slow-TPOT requests can be different ones. Twenty requests, one misses only the TTFT limit and
    another only the TPOT limit:
    """),
    code("""
    ttfts = np.full(20, 0.8); ttfts[3] = 2.5          # s
    tpots = np.full(20, 0.030); tpots[7] = 0.070      # s
    ok_ttft, ok_tpot = ttfts < 2.0, tpots < 0.050
    print(f"TTFT < 2 s: {ok_ttft.mean():.0%} of requests; TPOT < 50 ms: {ok_tpot.mean():.0%}; "
          f"both: {(ok_ttft & ok_tpot).mean():.0%}")
    assert ok_ttft.mean() == 0.95 and ok_tpot.mean() == 0.95 and (ok_ttft & ok_tpot).mean() == 0.90
    """),
    md("""
    The simulator reports both views. Below, Llama-3.1-8B on one H100 serves bursty traffic with
    mixed lengths; we set each limit at the 96th percentile of its own metric, so each p95 passes by
    construction — and the share of requests meeting *both* still falls short of 95 %.
    **Goodput** counts only the requests that meet every limit.
    """),
    code("""
    from perfmodel.serving import SLO, Workload, load_workload, simulate

    sm8 = pm.StepModel("llama-3.1-8b", "h100-sxm")
    mixed = load_workload({"arrival": {"process": "gamma", "rate": 14, "cv": 1.5},
                           "isl": {"dist": "lognormal", "mean": 1500, "sigma": 0.9, "max": 8000},
                           "osl": {"dist": "lognormal", "mean": 200, "sigma": 0.8, "min": 2, "max": 1500}})
    res = simulate(sm8, mixed, requests=2000, seed=7)
    done = res.completed
    slo = SLO(ttft=float(np.percentile(res.ttft_s[done], 96)), tpot=float(np.percentile(res.tpot_s[done], 96)),
              target=0.95)
    s = res.summary(slo=slo)
    print(f"limits: TTFT < {slo.ttft * 1e3:.0f} ms, TPOT < {slo.tpot * 1e3:.1f} ms, for 95 % of requests")
    print(f"p95 TTFT {s['ttft_p95_s'] * 1e3:.0f} ms, p95 TPOT {s['tpot_p95_s'] * 1e3:.1f} ms -> "
          f"separate percentiles pass: {s['slo_separate_percentiles_pass']}")
    print(f"meeting both: {s['slo_attainment']:.1%} -> joint SLO met: {s['slo_met']}")
    print(f"throughput {s['throughput_rps']:.2f} req/s, goodput {s['goodput_rps']:.2f} req/s")
    assert s["slo_separate_percentiles_pass"] and not s["slo_met"] and s["goodput_rps"] < s["throughput_rps"]
    """),
    md("""
    ## §10 Open loop vs closed loop

    A **closed loop** keeps C clients busy: each sends its next request when the previous one ends, so
    a slow service slows its own load. An **open loop** sends requests at a fixed rate regardless.
    Beyond capacity the open-loop queue grows for as long as the test runs, while the closed loop
    settles. We measure capacity with a closed loop, then offer 1.5× that rate open-loop, in a short
    and a three-times-longer run.
    """),
    code("""
    cache = {}                                           # shares step tables between the runs
    cap = simulate(sm8, Workload.fixed(1024, 256, concurrency=256), requests=1500, seed=1, timer_cache=cache)
    capacity = cap.summary(warmup=0.3)["throughput_rps"]
    over = Workload.fixed(1024, 256, rate=1.5 * capacity)
    closed = Workload.fixed(1024, 256, concurrency=64)
    rows = []
    for label, w in (("open loop, 1.5x capacity", over), ("closed loop, 64 clients", closed)):
        for n in (1000, 3000):
            r = simulate(sm8, w, requests=n, seed=1, timer_cache=cache)
            rows.append({"load": label, "requests": n, "queueing of the last 100 [s]": r.queue_s[-100:].mean(),
                         "TTFT p50 [s]": r.summary()["ttft_p50_s"]})
    ol = pd.DataFrame(rows)
    print(f"capacity (closed loop, 256 clients): {capacity:.1f} req/s")
    ol.round(3)
    """),
    code("""
    q = ol.set_index(["load", "requests"])["queueing of the last 100 [s]"]
    assert q["open loop, 1.5x capacity", 3000] > 2 * q["open loop, 1.5x capacity", 1000]   # keeps growing
    assert np.isclose(q["closed loop, 64 clients", 3000], q["closed loop, 64 clients", 1000], rtol=0.25)  # settles
    """),
    md("""
    ## What to take away

    The article's worked numbers all follow from a handful of formulas — E2E = TTFT + (N−1)·TPOT,
    T ≈ max(F/P, D/B), α + S/B — and perfmodel computes them the same way. The qualitative points
    (batching trades per-user speed for total throughput, splits pay only when the exchange is cheap,
    goodput needs a joint SLO) show up on real model/hardware pairs. Notebooks 03–06 take each theme
    further.
    """),
]


# =============================================================================================
# 03 GPU/LPU split and disaggregation
# =============================================================================================

NB03 = [
    md("""
    # 03 · Placement: GPU/LPU split and prefill/decode disaggregation

    One model can be served by several **pools** of devices: which pool runs the prefill, which
    runs decode attention, which runs the decode FFN/MoE, and what the links between them cost. This
    notebook loads the shipped deployment files, predicts them, measures how sensitive the GPU/LPU
    split is to its (unpublished) link figures, asks whether the split pays, balances prefill
    against decode pools and plots how tensor and expert parallelism scale.

    | mode | placement | exchanged between pools |
    |---|---|---|
    | aggregated | one pool does everything | nothing |
    | disaggregated | prefill pool ≠ decode pool | the KV cache, once per request |
    | af-split | attention (and prefill) on one pool, decode FFN/MoE on another | activations, twice per layer per step |
    """),
    code("""
    %matplotlib inline

    import copy
    from pathlib import Path

    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    import yaml

    import perfmodel as pm
    from perfmodel.deployment import load_deployment, offload_analysis, pd_balance, predict_deployment, scaling_curve
    """, PANDAS_OPTIONS, FIND_ROOT, """
    DEPLOYMENTS = sorted((ROOT / "deployments").glob("*.yaml"))
    print([f.name for f in DEPLOYMENTS])
    """),
    md("""
    ## 1. The shipped deployments

    Each file names a model, one precision for all pools, the pools (hardware, count, layout), the
    placement of the roles and the links. `load_deployment` validates it strictly (a typo is an error
    that names the field) and `predict_deployment` evaluates it over arrays of batch sizes. The
    results use the same columns as `predict`, plus the time spent exchanging data between pools.
    """),
    code("""
    rows = []
    for f in DEPLOYMENTS:
        dep = load_deployment(f)
        d = predict_deployment(dep, isl=2048, osl=256, batch=[1, 64]).to_dataframe()
        for _, r in d.iterrows():
            rows.append({"deployment": f.stem, "mode": r["mode"], "devices": r["devices"], "batch": int(r["batch"]),
                         "TTFT [ms]": r["ttft_s"] * 1e3, "TPOT [ms]": r["tpot_s"] * 1e3,
                         "per user [tok/s]": r["per_user_tokens_per_s"],
                         "per device [tok/s]": r["per_device_tokens_per_s"],
                         "exchange [ms/token]": r["comm_s_per_token"] * 1e3,
                         "KV transfer [ms]": r["kv_transfer_s"] * 1e3,
                         "power [kW]": (r["power_w"] or np.nan) / 1e3, "fits": r["fits"]})
    overview = pd.DataFrame(rows)
    overview.round(3)
    """),
    md("""
    Points to notice: the split's **per-device** rate is small because its tokens are divided over
    72 GPUs *and* 2,304 LPUs; its power is unknown because neither Rubin nor LP30 has a published
    power figure (perfmodel reports none rather than inventing one). The printed prediction also lists
    every pool and the assumptions it rests on:
    """),
    code("""
    split_path = ROOT / "deployments" / "kimi-k2-vera-rubin-lpx-split.yaml"
    split_pred = predict_deployment(split_path, isl=2048, osl=256, batch=[1, 64])
    print(split_pred)
    for a in split_pred.records()[0]["assumptions"]:
        print(" -", a)
    """),
    md("""
    ## 2. How much do the unpublished link figures matter?

    In the attention–FFN split, each decode step sends the activations from the GPUs to the LPUs and
    back in every layer: 2L messages of m = α + S / (B · min(N_gpu, N_lpu)) each. Neither α nor B is
    published for the GPU↔LPU path; the shipped file assumes 5 µs and 200 GB/s per direction per GPU.
    We vary one at a time. At batch 1 the message is tiny and α is all that counts; bandwidth only
    shows at large batches.
    """),
    code("""
    split = yaml.safe_load(split_path.read_text())
    L = pm.load_model(split["model"]).num_layers

    def with_link(**link):
        d = copy.deepcopy(split)
        d["links"]["gpu-lpu"].update(link)
        return predict_deployment(d, isl=2048, osl=256, batch=[1, 64, 1024]).to_dataframe()

    alphas = ["0.5 us", "1 us", "2 us", "5 us", "10 us", "25 us", "50 us"]
    by_alpha = pd.DataFrame([{"alpha [us]": pm.to_si(a, "time") * 1e6,
                              **{f"TPOT b={int(b)} [ms]": t * 1e3 for b, t in zip(r["batch"], r["tpot_s"])},
                              "exchange b=1 [ms/token]": r["comm_s_per_token"][0] * 1e3}
                             for a in alphas for r in [with_link(alpha=a)]])
    bandwidths = ["25 GB/s", "50 GB/s", "100 GB/s", "200 GB/s", "400 GB/s", "800 GB/s", "1.6 TB/s"]
    by_bw = pd.DataFrame([{"bandwidth [GB/s]": pm.to_si(b, "bandwidth") / 1e9,
                           **{f"TPOT b={int(n)} [ms]": t * 1e3 for n, t in zip(r["batch"], r["tpot_s"])}}
                          for b in bandwidths for r in [with_link(bandwidth=b)]])
    print(by_alpha.round(3).to_string(index=False))
    print()
    print(by_bw.round(3).to_string(index=False))
    """),
    code("""
    # at batch 1 the exchange is almost exactly 2 L alpha: L round trips of two messages
    row = by_alpha.set_index("alpha [us]").loc[5.0]
    print(f"{L} layers x 2 messages x 5 us = {2 * L * 5e-3:.2f} ms; predicted exchange {row['exchange b=1 [ms/token]']:.2f} ms per token")
    assert np.isclose(row["exchange b=1 [ms/token]"], 2 * L * 5e-3, rtol=0.05)
    assert (np.diff(by_alpha["TPOT b=1 [ms]"]) > 0).all()

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    for col in [c for c in by_alpha if c.startswith("TPOT")]:
        a1.plot(by_alpha["alpha [us]"], by_alpha[col], marker="o", label=col.replace("TPOT ", "").replace(" [ms]", ""))
        a2.plot(by_bw["bandwidth [GB/s]"], by_bw[col], marker="o", label=col.replace("TPOT ", "").replace(" [ms]", ""))
    a1.set(xscale="log", xlabel="GPU-LPU alpha per message [us]", ylabel="TPOT [ms]", title="sensitivity to alpha")
    a2.set(xscale="log", xlabel="GPU-LPU bandwidth per direction per GPU [GB/s]", ylabel="TPOT [ms]",
           title="sensitivity to bandwidth")
    a1.legend(title="batch"); a2.legend(title="batch");
    """),
    md("""
    ## 3. Does the split pay?

    `offload_analysis` compares, per decode step, the FFN part run **locally** on the attention GPUs
    (T_local) with the same part on the LPU pool (T_remote) plus the exchange (T_comm), less what
    micro-batch overlap hides. The split pays when T_local > T_remote + exposed T_comm. `local_fits`
    says whether the FFN weights would fit on the attention GPUs at all, i.e. whether the local
    alternative is real (Kimi-K2's ~1 TB of fp8 FFN weights over 72 Rubin GPUs of 288 GB each).
    """),
    code("""
    def offload_table(dep, batches):
        oa = offload_analysis(dep, isl=2048, osl=256, batch=batches).to_dataframe()
        return pd.DataFrame({"batch": oa["batch"].astype(int), "T_local [ms]": oa["t_local_ffn_s"] * 1e3,
                             "T_remote [ms]": oa["t_remote_ffn_s"] * 1e3, "T_comm [ms]": oa["t_comm_s"] * 1e3,
                             "exposed T_comm [ms]": oa["t_comm_exposed_s"] * 1e3, "pays": oa["pays"],
                             "local fits": oa["local_fits"], "TPOT local [ms]": oa["tpot_local_s"] * 1e3,
                             "TPOT split [ms]": oa["tpot_split_s"] * 1e3})

    batches = [1, 8, 64, 256, 1024]
    plain = offload_table(split, batches)
    plain.round(3)
    """),
    md("""
    With two micro-batches in flight (ping-pong), attention of one overlaps the exchange and FFN of
    the other, so part of T_comm leaves the critical path — but each micro-batch re-reads the weights
    and launches its own kernels. Whether overlap helps depends on which of the two is larger.
    """),
    code("""
    overlapped = copy.deepcopy(split)
    overlapped.setdefault("options", {})["micro_batches"] = 2
    mb2 = offload_table(overlapped, batches)
    pd.DataFrame({"batch": plain["batch"], "pays (1 micro-batch)": plain["pays"], "pays (2 micro-batches)": mb2["pays"],
                  "TPOT split, 1 mb [ms]": plain["TPOT split [ms]"], "TPOT split, 2 mb [ms]": mb2["TPOT split [ms]"]}).round(3)
    """),
    code("""
    pays = plain.set_index("batch")["pays"]
    if pays.all():
        print(f"with one micro-batch the split pays at every batch from {pays.index[0]} to {pays.index[-1]}")
    elif not pays.any():
        print(f"with one micro-batch the split never pays between batch {pays.index[0]} and {pays.index[-1]}")
    else:
        print(f"with one micro-batch the split pays from batch {pays[pays].index[0]}: below that the exchange "
              f"costs more than the FFN time it saves on the GPUs")
    """),
    md("""
    Read this with the efficiencies in mind: the LPU pool is priced at the pure roofline (no LP30 has
    been measured), while the GPU pool uses a calibrated profile (Rubin borrows its family's, with
    per-kernel overheads). T_local therefore carries overheads that T_remote does not; with both
    pools on the same footing the comparison can turn. The per-pool settings are in the deployment
    file and in the prediction's assumptions above.
    """),
    md("""
    ## 4. Prefill/decode disaggregation

    The shipped `llama-3.1-70b-h200-disaggregated.yaml` runs prefill on two TP4 replicas and decode on
    one TP8 replica, with the KV cache sent over InfiniBand NDR (50 GB/s per direction per GPU,
    α 5 µs) **layer by layer** while the prefill continues. TTFT includes the exposed part of the
    transfer. Sending it all **after** the prefill, or over a slower link, shows what the layerwise
    overlap buys.
    """),
    code("""
    disagg = yaml.safe_load((ROOT / "deployments" / "llama-3.1-70b-h200-disaggregated.yaml").read_text())

    def variant(kv_transfer, link):
        d = copy.deepcopy(disagg)
        d.setdefault("options", {})["kv_transfer"] = kv_transfer
        d["links"]["prefill-decode"] = link
        return predict_deployment(d, isl=2048, osl=256, batch=[1, 16, 64]).to_dataframe()

    rows = []
    for kv in ("layerwise", "after_prefill"):
        for name, link in (("IB NDR 50 GB/s", "ib-ndr"), ("12.5 GB/s, 20 us", {"bandwidth": "12.5 GB/s", "alpha": "20 us"})):
            d = variant(kv, link)
            for _, r in d.iterrows():
                rows.append({"KV transfer": kv, "link": name, "batch": int(r["batch"]),
                             "KV transfer exposed [ms]": r["kv_transfer_s"] * 1e3, "TTFT [ms]": r["ttft_s"] * 1e3,
                             "TPOT [ms]": r["tpot_s"] * 1e3})
    kv = pd.DataFrame(rows)
    kv.pivot_table(index=["link", "batch"], columns="KV transfer", values=["KV transfer exposed [ms]", "TTFT [ms]"]).round(3)
    """),
    code("""
    t = kv.set_index(["KV transfer", "link", "batch"])["KV transfer exposed [ms]"]
    assert (t.loc["layerwise"] <= t.loc["after_prefill"] + 1e-12).all()
    assert (kv.groupby(["batch"])["TPOT [ms]"].nunique() == 1).all()   # the KV link does not touch decode
    """),
    md("""
    **How many prefill devices per decode device?** `pd_balance` divides the prefill work a decode pool
    generates by what a prefill device delivers: N_p/N_d = ISL · r_d / ((OSL − 1) · r_p), with r_p the
    prefill tokens/s per prefill device and r_d the decode tokens/s per decode device. Larger decode
    batches produce more tokens per decode GPU, so they need relatively more prefill capacity.
    """),
    code("""
    bal = pd_balance(ROOT / "deployments" / "llama-3.1-70b-h200-disaggregated.yaml", isl=2048, osl=256,
                     batch=[1, 8, 32, 64, 128], prefill_batch=1).to_dataframe()
    pd.DataFrame({"decode batch": bal["batch"].astype(int),
                  "prefill [tok/s per device]": bal["prefill_tokens_per_s_per_device"],
                  "decode [tok/s per device]": bal["decode_tokens_per_s_per_device"],
                  "prefill : decode devices": bal["prefill_to_decode_devices"]}).round(2)
    """),
    md("""
    The static model cannot show disaggregation's main benefit — decode steps that are never
    interrupted by someone else's prefill. That needs the serving simulator (notebook 04, `Disaggregated`).

    ## 5. Scaling curves: more devices, how much faster per user?

    `scaling_curve` predicts the same batch on 1, 2, 4, 8 devices and reports the per-user speed-up
    against the ideal. Tensor parallelism for the dense Llama-3.1-70B; expert parallelism plus
    tensor parallelism (`tp-ep`) for the MoE Qwen3-30B-A3B.
    """),
    code("""
    dense = scaling_curve("llama-3.1-70b", "h100-sxm", devices=[1, 2, 4, 8], batch=8, isl=2048, osl=256,
                          weights="fp8", kv_cache="fp8")
    moe = scaling_curve("qwen3-30b-a3b", "h100-sxm", devices=[1, 2, 4, 8], batch=8, isl=2048, osl=256,
                        parallelism="tp-ep")
    curves = pd.concat([dense.assign(model="llama-3.1-70b (tp)"), moe.assign(model="qwen3-30b-a3b (tp-ep)")])
    print(pd.DataFrame({"model": curves["model"], "devices": curves["devices"], "layout": curves["layout"],
                        "TPOT [ms]": curves["tpot_s"] * 1e3, "speed-up": curves["speedup"],
                        "efficiency": curves["scaling_efficiency"], "collectives [%]": curves["comm_share"] * 100,
                        "fits": curves["fits"]}).round(2).to_string(index=False))

    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot([1, 8], [1, 8], color="grey", ls="--", label="ideal")
    for name, g in curves.groupby("model"):
        ax.plot(g["devices"], g["speedup"], marker="o", label=name)
    ax.set(xlabel="devices", ylabel="per-user speed-up (TPOT ratio) [x]", title="scaling at batch 8, ISL 2048")
    ax.legend();
    """),
    code("""
    assert (dense["speedup"] <= dense["ideal_speedup"] + 1e-9).all()
    assert (np.diff(dense["comm_share"]) > 0).all()      # coordination takes a growing share
    """),
    md("""
    ## What to take away

    * A split's per-token cost has a floor of 2 L α from the exchange alone; at small batches α, not
      bandwidth, decides whether the split is competitive.
    * Whether offloading pays compares three times that move differently with the batch (the local
      FFN time grows with the work, the exchange barely does), and the comparison is only as fair as
      the efficiencies assumed for each pool.
    * Disaggregation moves the KV cache once per request; layerwise sending hides most of it behind
      the prefill.
    * Adding devices buys less than linear per-user speed; the collectives' share grows.

    The same placements under a vendor claim are in notebook 06.
    """),
]


# =============================================================================================
# 04 serving under load
# =============================================================================================

NB04 = [
    md("""
    # 04 · Serving under load, SLOs and goodput

    `predict` gives the latency floor of an idle replica. A real service has arrivals and departures,
    a scheduler that mixes prefills into decode steps (continuous batching), a KV cache that fills up,
    and clients that give up. `perfmodel.serving` simulates that and reports what users see:
    percentiles of TTFT and TPOT, the share of requests that meet a **joint** SLO and the **goodput**
    (requests per second that meet it).

    All runs here use Llama-3.1-8B on one H100 and a few hundred to a few thousand requests, which
    simulate in well under a second each once the step table is built.
    """),
    code("""
    %matplotlib inline

    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    import perfmodel as pm
    from perfmodel.serving import Workload, load_engine, max_load, simulate, steady_state
    """, PANDAS_OPTIONS, """
    sm = pm.StepModel("llama-3.1-8b", "h100-sxm", tp=1)
    ARTICLE_SLO = {"ttft": "2 s", "tpot": "50 ms"}     # for 95 % of requests (the default target)
    """),
    md("""
    ## 1. One simulation

    A workload is lengths plus an arrival process. `Workload.fixed(isl, osl, rate=...)` is the
    simplest: fixed lengths, Poisson arrivals. The result keeps one row per request and summarises
    them; TTFT here **includes queueing**.
    """),
    code("""
    w = Workload.fixed(1024, 256, rate=8.0, timeout="20 s", slo=ARTICLE_SLO)
    res = simulate(sm, w, engine="vllm", requests=1000, seed=1)
    s = res.summary()
    print(f"{s['completed']} of {s['arrived']} requests completed, {s['cancelled']} cancelled")
    print(f"TTFT p50 {s['ttft_p50_s'] * 1e3:.0f} ms, p95 {s['ttft_p95_s'] * 1e3:.0f} ms; "
          f"TPOT p50 {s['tpot_p50_s'] * 1e3:.1f} ms, p95 {s['tpot_p95_s'] * 1e3:.1f} ms")
    print(f"mean per-user rate {s['user_tokens_per_s_mean']:.0f} tok/s vs 1/mean TPOT "
          f"{s['inverse_mean_tpot_tokens_per_s']:.0f} tok/s (not the same average)")
    print(f"SLO attainment {s['slo_attainment']:.1%}, goodput {s['goodput_rps']:.2f} req/s, "
          f"throughput {s['throughput_rps']:.2f} req/s")
    res.to_dataframe().head()
    """),
    md("""
    ## 2. Open loop and closed loop

    **Open loop** (fixed arrival rate): past capacity the queue grows without bound and TTFT with it.
    **Closed loop** (fixed concurrency, each client waits for its answer before sending the next): a
    slower service lowers its own load, so throughput saturates and TTFT stays bounded. The same
    service looks very different under the two tests.
    """),
    code("""
    cache = {}                                            # share the step tables between runs
    open_rows = []
    for rate in (5, 10, 20, 25, 30, 40):
        r = simulate(sm, Workload.fixed(1024, 256, rate=rate), requests=1500, seed=2, timer_cache=cache).summary()
        open_rows.append({"offered [req/s]": rate, "throughput [req/s]": r["throughput_rps"],
                          "TTFT p95 [s]": r["ttft_p95_s"], "TPOT p95 [ms]": r["tpot_p95_s"] * 1e3})
    closed_rows = []
    for c in (8, 32, 64, 128, 256, 512):
        r = simulate(sm, Workload.fixed(1024, 256, concurrency=c), requests=1500, seed=2, timer_cache=cache).summary(warmup=0.3)
        closed_rows.append({"clients": c, "throughput [req/s]": r["throughput_rps"],
                            "TTFT p95 [s]": r["ttft_p95_s"], "TPOT p95 [ms]": r["tpot_p95_s"] * 1e3})
    open_df, closed_df = pd.DataFrame(open_rows), pd.DataFrame(closed_rows)
    print("open loop");   print(open_df.round(3).to_string(index=False))
    print("closed loop"); print(closed_df.round(3).to_string(index=False))
    """),
    code("""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    a1.plot(open_df["offered [req/s]"], open_df["TTFT p95 [s]"], marker="o")
    a1.set(xlabel="offered rate [req/s]", ylabel="TTFT p95 [s]", yscale="log", title="open loop: the queue explodes")
    a2.plot(closed_df["clients"], closed_df["TTFT p95 [s]"], marker="o")
    a2.set(xlabel="concurrent clients", ylabel="TTFT p95 [s]", xscale="log", yscale="log",
           title="closed loop: the load throttles itself");
    """),
    md("""
    ## 3. Same hardware, different scheduler

    Engine presets (`vllm`, `vllm-2k`, `sglang`, `trtllm`) encode each engine's documented defaults:
    decode-first vs prefill-first scheduling, chunked prefill and its token budget, KV block size,
    admission policy. With long prompts (4,096 tokens) the differences show: a prefill-first engine
    starts answers sooner but interrupts running decodes, so its TPOT and worst inter-token gaps grow;
    a small chunked-prefill budget does the opposite.
    """),
    code("""
    long_prompts = Workload.fixed(4096, 256, rate=4.0)
    rows = []
    for engine in ("vllm", "vllm-2k", "sglang", "trtllm"):
        r = simulate(sm, long_prompts, engine=engine, requests=800, seed=3).summary()
        e = load_engine(engine)
        rows.append({"engine": engine, "policy": e.policy, "chunked": e.chunked_prefill,
                     "budget [tok]": e.max_num_batched_tokens,
                     "TTFT p50 [ms]": r["ttft_p50_s"] * 1e3, "TTFT p95 [ms]": r["ttft_p95_s"] * 1e3,
                     "TPOT p50 [ms]": r["tpot_p50_s"] * 1e3, "TPOT p95 [ms]": r["tpot_p95_s"] * 1e3,
                     "ITL p99 [ms]": r["itl_p99_s"] * 1e3})
    engines = pd.DataFrame(rows)
    assert engines.set_index("engine")["ITL p99 [ms]"].idxmax() == "sglang"   # prefill-first: the longest stalls
    engines.round(2)
    """),
    md("""
    The chunked-prefill token budget is one knob on that trade-off (vLLM documents it): each step
    takes at most `max_num_batched_tokens` tokens, so a small budget cuts long prompts into many
    chunks — lower inter-token latency for the running requests, later first tokens for the new ones.
    """),
    code("""
    rows = []
    for budget in (512, 1024, 2048, 4096, 8192):
        eng = load_engine("vllm", max_num_batched_tokens=budget)
        r = simulate(sm, long_prompts, engine=eng, requests=800, seed=3).summary()
        rows.append({"budget [tok]": budget, "TTFT p50 [ms]": r["ttft_p50_s"] * 1e3,
                     "TPOT p50 [ms]": r["tpot_p50_s"] * 1e3, "ITL p99 [ms]": r["itl_p99_s"] * 1e3})
    budgets = pd.DataFrame(rows)
    print(budgets.round(2).to_string(index=False))

    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(budgets["ITL p99 [ms]"], budgets["TTFT p50 [ms]"], marker="o")
    for _, r in budgets.iterrows():
        ax.annotate(f"{r['budget [tok]']:.0f}", (r["ITL p99 [ms]"], r["TTFT p50 [ms]"]), textcoords="offset points", xytext=(4, 4))
    ax.set(xlabel="ITL p99 [ms]", ylabel="TTFT p50 [ms]", title="chunked-prefill budget [tok]: TTFT vs ITL");
    """),
    code("""
    assert budgets["ITL p99 [ms]"].iloc[0] < budgets["ITL p99 [ms]"].iloc[-1]   # small budget: smoother streams
    assert budgets["TTFT p50 [ms]"].iloc[0] > budgets["TTFT p50 [ms]"].iloc[-1]  # ...and later first tokens
    """),
    md("""
    ## 4. The highest load that meets the SLO

    A single-user test gives the latency floor, not capacity. `max_load` raises the arrival rate until
    the joint attainment (TTFT < 2 s **and** TPOT < 50 ms for 95 % of requests) drops below target,
    then bisects. Every simulated point is kept; `slo_vs_load` draws the latency percentiles and the
    goodput against load. Goodput follows throughput until the SLO starts to fail, then falls away
    from it.
    """),
    code("""
    from perfmodel.plots import slo_vs_load

    search = max_load(sm, Workload.fixed(1024, 256, rate=1.0, slo=ARTICLE_SLO), target=0.95, requests=600)
    print(f"highest rate meeting the SLO: {search.max_load:.1f} req/s (attainment there {search.attainment:.1%}, "
          f"{search.simulations} simulations)")
    curve = search.to_dataframe()
    print(pd.DataFrame({"rate [req/s]": curve["load"], "attainment [%]": curve["slo_attainment"] * 100,
                        "goodput [req/s]": curve["goodput_rps"], "TTFT p95 [s]": curve["ttft_p95_s"],
                        "TPOT p95 [ms]": curve["tpot_p95_s"] * 1e3}).round(2).to_string(index=False))
    slo_vs_load(search, slo_ttft=2.0, slo_tpot=0.050);
    """),
    md("""
    **A closed-form cross-check.** `steady_state` estimates a closed loop's mean TTFT, TPOT and
    throughput without simulating (Little's law around the engine's step). It is a quick first
    answer; the simulator adds the variability.
    """),
    code("""
    conc = [8, 32, 128]
    ss = steady_state(sm, conc, 1024, 256, engine="vllm")
    rows = []
    for c, tpot_ss, x_ss in zip(conc, ss.tpot_s, ss.throughput_rps):
        r = simulate(sm, Workload.fixed(1024, 256, concurrency=c, ramp_up="2 s"), requests=20 * c, seed=4,
                     timer_cache=cache).summary(warmup=0.3)
        rows.append({"clients": c, "TPOT steady state [ms]": tpot_ss * 1e3, "TPOT simulated [ms]": r["tpot_mean_s"] * 1e3,
                     "throughput steady state [req/s]": x_ss, "throughput simulated [req/s]": r["throughput_rps"]})
    pd.DataFrame(rows).round(2)
    """),
    md("""
    ## 5. Saturation and timeouts

    The article describes a production service at ~300 concurrent requests whose TTFT climbed to the
    20 s limit, after which requests without a first token were cancelled. Here: 2,048-token prompts
    arriving at 30 req/s, far beyond what one H100 can prefill, with a 20 s timeout. Many requests are
    cancelled; the ones that complete are counted in throughput, but goodput counts only those that
    met the SLO.
    """),
    code("""
    hot = Workload.fixed(2048, 256, rate=30.0, timeout="20 s", slo=ARTICLE_SLO)
    s = simulate(sm, hot, requests=3000, seed=2).summary()
    print(f"arrived {s['arrived']}, completed {s['completed']}, cancelled after 20 s {s['cancelled']}, "
          f"rejected {s['rejected']}")
    print(f"TTFT p50 {s['ttft_p50_s']:.1f} s, p95 {s['ttft_p95_s']:.1f} s (completed requests)")
    print(f"throughput {s['throughput_rps']:.2f} req/s, goodput {s['goodput_rps']:.2f} req/s, "
          f"attainment {s['slo_attainment']:.1%}")
    assert s["cancelled"] > 0 and s["goodput_rps"] < s["throughput_rps"]
    """),
    md("""
    ## 6. Speculative decoding: where it stops paying

    An engine can carry speculative decoding (`Engine.load("vllm", spec_decode="eagle:k=3")`, or
    `--spec-decode` on the command line; deployment files take `spec_decode:`). A step drafts k tokens
    and verifies k + 1 per sequence in one target forward; E tokens are accepted on average, so
    TPOT = step time / E. At batch 1 the verify step costs about a decode step (the weights dominate)
    and speculation pays nearly E×; as the batch grows the verify step, k + 1 times the GEMM work,
    becomes compute-bound, the gain shrinks and then turns into a loss. Every serving path uses the
    same step (`docs/speculative.md`). The acceptance is the sourced EAGLE-3 default (measured on
    another model, Llama-4-Maverick on HumanEval): the result says so.
    """),
    code("""
    from perfmodel.engine.engine import Engine

    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    ISL, OSL = 2048, 256
    replicas = {"Llama-3.1-8B, 1x H100": sm,
                "Llama-3.1-70B FP8, 8x H100": pm.StepModel("llama-3.1-70b", "h100-sxm", tp=8, weights="fp8",
                                                           kv_cache="fp8")}


    def static(step_model, engine):
        p = pm.predict(None, None, isl=ISL, osl=OSL, batch=batches, step_model=step_model, engine=engine)
        return p.tpot_s, p.fits


    def stops_paying(df):
        \"\"\"First batch (log-linear interpolation) where the speed-up falls to 1; None if it never does.\"\"\"
        x, y = np.log(df["batch"].to_numpy(float)), df["speed-up"].to_numpy()
        below = np.flatnonzero(y < 1.0)
        if below.size == 0:
            return None
        j = below[0]
        return float(np.exp(x[j - 1] + (1.0 - y[j - 1]) * (x[j] - x[j - 1]) / (y[j] - y[j - 1])))


    curves, plain, summary = {}, {}, []
    for name, rep in replicas.items():
        plain[name], fits = static(rep, Engine.load("vllm"))
        for k in (1, 3, 5):
            tp, _ = static(rep, Engine.load("vllm", spec_decode=f"eagle:k={k}"))
            df = pd.DataFrame({"batch": batches, "TPOT [ms]": tp * 1e3, "speed-up": plain[name] / tp,
                               "throughput [tok/s]": np.array(batches) / tp, "fits": fits})
            curves[name, k] = df
            crossing = stops_paying(df)
            summary.append({"replica": name, "k": k, "speed-up at batch 1": df["speed-up"].iloc[0],
                            "stops paying at [seq]": f"{crossing:.0f}" if crossing else f"not within {batches[-1]}",
                            "largest batch that fits": max(b for b, f in zip(batches, fits) if f)})
    print(Engine.load("vllm", spec_decode="eagle:k=3").label)
    pd.DataFrame(summary).round(2)
    """),
    md("""
    The small model keeps paying at every batch that fits: at 2,048 tokens of context its decode step
    is dominated by KV-cache reads, which the k + 1 verified tokens of a sequence share. The 70B
    replica's step is dominated by its weights and GEMMs: verification multiplies the GEMM work, and
    past a few hundred sequences (fewer for longer drafts) speculation costs more than it gains.
    """),
    code("""
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), layout="constrained")
    for row, name in zip(axes, replicas):
        row[0].plot(batches, plain[name] * 1e3, marker="o", color="k", label="no speculation")
        row[1].plot(batches, np.array(batches) / plain[name], marker="o", color="k", label="no speculation")
        for k in (1, 3, 5):
            df = curves[name, k]
            row[0].plot(df["batch"], df["TPOT [ms]"], marker=".", label=f"EAGLE k={k}")
            row[1].plot(df["batch"], df["throughput [tok/s]"], marker=".", label=f"EAGLE k={k}")
        row[0].set(xscale="log", yscale="log", xlabel="batch [sequences]", ylabel="TPOT [ms]", title=name)
        row[1].set(xscale="log", yscale="log", xlabel="batch [sequences]", ylabel="decode throughput [tok/s]",
                   title=f"{name}: where the curves cross, it stops paying")
    axes[0, 0].legend();
    """),
    code("""
    for (name, k), df in curves.items():
        up = df["speed-up"].to_numpy()
        assert up[0] > 1.5 and np.all(np.diff(up[3:]) <= 1e-9)   # the gain only shrinks once compute-bound
    big = "Llama-3.1-70B FP8, 8x H100"
    assert stops_paying(curves[big, 5]) < stops_paying(curves[big, 3]) < 1024 and stops_paying(curves[big, 1]) is None
    small = curves["Llama-3.1-8B, 1x H100", 3]
    assert (small["speed-up"][small["fits"]] > 1).all()
    """),
    md("""
    **Under load.** The draft's weights and KV cache come out of the KV capacity, and at a fixed number
    of clients the closed loop (steady state, the validated path) shows the same turn on the 70B
    replica: speculation helps a lightly loaded replica and costs throughput on a busy one.
    """),
    code("""
    spec3 = Engine.load("vllm", spec_decode="eagle:k=3")
    rep = replicas[big]
    print(f"KV capacity: {rep.kv_capacity_tokens:,} tokens without a draft, "
          f"{spec3.step(rep).kv_capacity_tokens:,} with the EAGLE head's weights and KV cache")
    clients = [1, 8, 32, 128, 512]
    rows = []
    for name, eng in (("off", Engine.load("vllm")), ("EAGLE k=3", spec3)):
        ss = steady_state(rep, clients, ISL, OSL, engine=eng)
        rows += [{"speculation": name, "clients": c, "TPOT [ms]": t * 1e3, "TTFT [ms]": f * 1e3,
                  "output [tok/s]": x * OSL, "limited by": lim}
                 for c, t, f, x, lim in zip(clients, ss.tpot_s, ss.ttft_s, ss.throughput_rps, ss.limited_by)]
    load_df = pd.DataFrame(rows)
    wide = load_df.pivot(index="clients", columns="speculation", values="output [tok/s]")
    assert wide["EAGLE k=3"].iloc[0] > wide["off"].iloc[0] and wide["EAGLE k=3"].iloc[-1] < wide["off"].iloc[-1]
    load_df.round(1)
    """),
    md("""
    ## 7. Prefix caching: TTFT against the hit rate under load

    With a shared system prompt or a resent conversation, part of each prompt is already in the
    engine's prefix cache: those tokens are attended but not computed. `prefix_hit_rate` (on a
    workload, `steady_state`, `predict(engine=...)`, `estimate` and `--prefix-hit-rate`) is the share of
    each prompt found there, given explicitly here; a workload can instead describe the reuse and let the
    simulator's prefix cache find the hits (next section).
    """),
    code("""
    hits = [0.0, 0.25, 0.5, 0.75, 0.9]
    rows = []
    for h in hits:
        ss = steady_state(sm, 32, 4096, 256, engine="vllm", prefix_hit_rate=h)
        w = Workload.fixed(4096, 256, concurrency=32, ramp_up=float(ss.e2e_s), prefix_hit_rate=h)
        r = simulate(sm, w, engine="vllm", requests=640, seed=1).summary(warmup=0.3)
        rows.append({"hit rate": h, "TTFT steady state [ms]": float(ss.ttft_s) * 1e3,
                     "TTFT simulated [ms]": r["ttft_mean_s"] * 1e3, "TPOT simulated [ms]": r["tpot_mean_s"] * 1e3})
    pc = pd.DataFrame(rows)
    ax = pc.plot(x="hit rate", y=["TTFT steady state [ms]", "TTFT simulated [ms]"], marker="o",
                 title="Llama-3.1-8B, 1x H100, vLLM (fitted), 4096/256, 32 clients")
    ax.set_ylabel("mean TTFT [ms]")
    pc.round(1)
    """),
    code("""
    assert pc["TTFT simulated [ms]"].is_monotonic_decreasing
    """),
    md("""
    ### The cache itself: shared prefixes competing for KV

    `prefix: {tokens: S, pool: P}` makes every prompt start with one of P shared prefixes. Each replica
    keeps a block-granular cache that competes with the running sequences for KV and evicts least
    recently used blocks, so the hit rate is an outcome: about S/ISL while the pool fits, less once it
    does not (`expected_hit_rate` is the steady-state rule, optimistic when room is short).
    """),
    code("""
    from perfmodel.serving import expected_hit_rate

    rows = []
    for pool in [1, 64, 256]:
        w = Workload.fixed(4096, 256, rate=6.0, prefix={"tokens": 3072, "pool": pool})
        r = simulate(sm, w, engine="vllm", requests=1200, seed=1).summary(warmup=0.1)
        rule = expected_hit_rate(w, float(sm.kv_capacity_tokens))
        rows.append({"prefixes": pool, "hit rate": r["prefix_hit_rate"], "rule": rule,
                     "TTFT p50 [ms]": r["ttft_p50_s"] * 1e3, "TPOT p50 [ms]": r["tpot_p50_s"] * 1e3})
    pools = pd.DataFrame(rows)
    pools.round(3)
    """),
    code("""
    assert pools["hit rate"].is_monotonic_decreasing and pools["hit rate"].iloc[0] > 0.74
    """),
    md("""
    ## What to take away

    * Test with the load you expect: open loop for a public endpoint, closed loop for a fixed pool of
      agents. They answer different questions.
    * The scheduler is part of the system: the same GPU and model give different TTFT/TPOT trade-offs
      under different engine settings.
    * Capacity is the highest load at which the *joint* SLO holds, and goodput, not throughput, is
      what can be sold.
    * Speculative decoding buys per-user speed with compute: it pays while the step reads weights or
      KV cache and stops paying once verification is compute-bound, sooner for longer drafts.
      Prefix caching cuts TTFT as the cached share grows, down to the uncached part's prefill plus the
      engine's fixed terms; the share itself falls once the prefixes no longer fit beside the running
      sequences.

    On the command line: `perfmodel simulate ... --rate 8 --slo-ttft 2s --slo-tpot 50ms` and
    `perfmodel max-load ... --target 0.95`.
    """),
]


# =============================================================================================
# 05 capacity planning
# =============================================================================================

NB05 = [
    md("""
    # 05 · Capacity planning: sweeps, Pareto fronts, cost and power

    Buying starts from the answer you need: how long the answers are, how many users at once, which
    latency is acceptable. This notebook sweeps the design space of one model on three GPUs, keeps the
    configurations worth having (the Pareto front), puts power and money next to them, sizes a
    deployment for a target load and SLO, and compares deployments by the time to finish a task
    rather than by tokens per second.
    """),
    code("""
    %matplotlib inline

    import numpy as np
    import pandas as pd

    import perfmodel as pm
    from perfmodel.planning import (TotalCost, agent_chain, chain_time, max_concurrency_for_speed, output_crossover,
                                    pareto_front, plan, plot_fronts, plot_pareto, power_basis, sweep,
                                    tokens_per_s_per_mw, usd_per_hour, usd_per_million_tokens)
    """, PANDAS_OPTIONS, """
    PRICES = {"h100-sxm": "2.5/h", "h200-sxm": "3.5/h", "b200": "5/h"}   # example USD per GPU-hour, not quotes
    """),
    md("""
    ## 1. Sweep the design space

    `sweep` evaluates the cartesian product of models × hardware × layouts × precisions × batch ×
    lengths, with one vectorised `predict` per layout. Layouts that cannot run are kept with the
    reason (`valid = False`); points that do not fit in memory keep their numbers with `fits = False`.
    """),
    code("""
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    df = sweep(["llama-3.1-70b"], ["h100-sxm", "h200-sxm", "b200"], tp=[1, 2, 4, 8], precision=["bf16", "fp8"],
               batch=batches, isl=2048, osl=256, price=PRICES)
    print(f"{len(df)} operating points; {int(df['valid'].sum())} valid, {int((df['valid'] & df['fits']).sum())} fit in memory")
    too_big = df[df["valid"] & ~df["fits"]].astype({"reason": str})
    too_big.groupby(["hardware", "tp", "precision"], observed=True).agg(
        **{"smallest batch that does not fit": ("batch", "min"), "reason": ("reason", "first")}).reset_index()
    """),
    md("""
    ## 2. The Pareto front: per-user speed against throughput per GPU

    Each point trades the speed one user sees (1/TPOT) against the tokens each GPU delivers. A
    configuration is on the **front** when no other is better on both. Everything below the front is
    dominated: some other layout, precision or batch gives more of both. With `by="hardware"` each GPU
    gets its own front; comparing the fronts compares the GPUs at every per-user speed at once.
    """),
    code("""
    plot_pareto(df, x="per_user_tokens_per_s", y="per_device_tokens_per_s", by="hardware");
    """),
    code("""
    front = pareto_front(df, "per_user_tokens_per_s", "per_device_tokens_per_s", by="hardware")
    print("points on each hardware's front:", front.groupby("hardware", observed=True).size().to_dict())
    pd.DataFrame({"hardware": front["hardware"], "tp": front["tp"], "precision": front["precision"],
                  "batch": front["batch"].astype(int), "per user [tok/s]": front["per_user_tokens_per_s"],
                  "per GPU [tok/s]": front["per_device_tokens_per_s"], "TTFT [s]": front["ttft_s"],
                  "USD per M output tokens": front["usd_per_m_output_all_in"]}).round(2).head(15)
    """),
    md("""
    The same front per megawatt and per dollar (`plot_fronts`): a different objective can pick a
    different winner.
    """),
    code("""
    plot_fronts(df);
    """),
    md("""
    ## 3. Power: say which basis

    Tokens per megawatt depend on what "power" means. perfmodel states the basis next to every
    figure: the accelerators' **TDP** (the default), a **utilisation** model between idle and TDP, or a
    **system** figure (a rack, with its CPUs, switches and fans) prorated per device. A device with no
    published power (Rubin, LP30) gets none until you give one.
    """),
    code("""
    bases = {"TDP": power_basis("h100-sxm"),
             "utilisation 60 %, idle 150 W": power_basis("h100-sxm", "utilisation", idle="150 W", utilisation=0.6),
             "GB200 NVL72 rack, prorated": power_basis("gb200-nvl72", "system")}
    for name, b in bases.items():
        print(f"{name:32s} 8 devices -> {float(b.power_w(8)) / 1e3:6.2f} kW   [{b.describe()}]")

    best = front.sort_values("per_device_tokens_per_s").iloc[-1]          # the front's highest-throughput point
    for name in ("TDP", "utilisation 60 %, idle 150 W"):
        p_w = float(bases[name].power_w(best["devices"]))
        print(f"{best['hardware']} tp{best['tp']} batch {best['batch']:.0f}: {best['output_tokens_per_s']:,.0f} tok/s on "
              f"{p_w / 1e3:.2f} kW ({name}) -> {float(tokens_per_s_per_mw(best['output_tokens_per_s'], p_w)):,.0f} tok/s per MW")
    """),
    md("""
    ## 4. Money: USD per million tokens

    The hourly cost comes from a price per device-hour, or from a total-cost model (purchase price over
    the lifetime, energy at a PUE, network and operations shares; every default visible). Cost per
    million tokens then divides by the throughput; `usd_per_million_tokens` splits it between input
    (prefill time) and output (decode time).
    """),
    code("""
    tco = TotalCost.of(purchase="$30000")
    print("TCO inputs:", tco.as_dict())
    h100 = pm.load_hardware("h100-sxm")
    print(f"H100 by TCO: {float(tco.usd_per_device_hour(h100.tdp)):.2f} USD per GPU-hour; by price: 2.50 USD per GPU-hour")

    row = df[(df.hardware == "h100-sxm") & (df.tp == 8) & (df.batch == 64) & df.precision.astype(str).str.startswith("w:fp8")].iloc[0]
    for label, hourly in (("price 2.50/h", float(usd_per_hour(8, price="2.5/h"))),
                          ("TCO", float(usd_per_hour(8, tco=tco, device_power_w=h100.tdp)))):
        c = usd_per_million_tokens(hourly, row["input_tokens_per_s"], row["output_tokens_per_s"], row["ttft_s"] / row["e2e_s"])
        print(f"8x H100 tp8 fp8, batch 64, {label}: {hourly:.2f} USD/h -> input {float(c['usd_per_m_input']):.3f}, "
              f"output {float(c['usd_per_m_output']):.3f}, all charged to output {float(c['usd_per_m_output_all_in']):.3f} USD per M tokens")
    """),
    md("""
    Tokens per MW and per dollar leave out what the article lists: purchase terms, network cost, real
    utilisation — and the latency each user gets, which is why the fronts above keep per-user speed on
    the x-axis.

    ## 5. A capacity plan

    `plan` answers "how many devices for this load and SLO, and which design is cheapest?". It screens
    every candidate without simulating (layout, memory, the SLO floor on an idle replica, a capacity
    bound on the replicas it needs), then, best bound first, simulates only those that could still beat
    the best plan found: it finds one replica's highest rate meeting the joint SLO, takes enough
    replicas for the target rate and verifies them together. Rejected candidates come back with the
    reason; `prune=False` ranks every feasible candidate (same winner, slower).
    """),
    code("""
    result = plan("llama-3.1-70b", {"arrival": {"process": "poisson", "rate": 12.0}, "isl": 2048, "osl": 256},
                  slo={"ttft": "2 s", "tpot": "50 ms", "target": 0.95},
                  hardware=["h100-sxm", "h200-sxm"], precisions=["fp8"], tp=[1, 4, 8],
                  price={"h100-sxm": "2.5/h", "h200-sxm": "3.5/h"}, objective="cost", requests=300)
    ranked = result.to_dataframe()
    print(pd.DataFrame({"rank": ranked["rank"], "deployment": ranked["deployment"], "devices": ranked["devices"],
                        "replicas": ranked["replicas"], "per-replica max [req/s]": ranked["per_replica_max_rps"],
                        "goodput [req/s]": ranked["goodput_rps"], "attainment [%]": ranked["slo_attainment"] * 100,
                        "cost [USD/h]": ranked["cost_per_hour"],
                        "USD per M output tokens": ranked["usd_per_m_output_all_in"]}).round(2).to_string(index=False))
    print(result.search_line())
    for r in result.rejected:
        print(f"rejected {r['deployment']}: {r['rejected_for']} - {r['reason']}")
    """),
    md("""
    ## 6. Which deployment finishes first?

    Two deployments with opposite strengths: B200 with bf16 weights has plenty of compute for prefill,
    H200 with fp8 weights reads half the bytes per decode step. Which answers first depends on the
    answer's length (the article's §2): short answers reward the low TTFT, long ones the low TPOT.
    """),
    code("""
    from perfmodel.plots import completion_time

    a = pm.predict("llama-3.1-70b", "b200", tp=2, isl=8192, osl=256, batch=1)
    b = pm.predict("llama-3.1-70b", "h200-sxm", tp=2, isl=8192, osl=256, batch=1, weights="fp8", kv_cache="fp8")
    configs = {"2x B200 bf16": (float(a.ttft_s), float(a.tpot_s)), "2x H200 fp8": (float(b.ttft_s), float(b.tpot_s))}
    for name, (ttft, tpot) in configs.items():
        print(f"{name}: TTFT {ttft * 1e3:.0f} ms, TPOT {tpot * 1e3:.2f} ms")
    x = output_crossover(*configs.values())
    names = list(configs)
    if x["faster_beyond"] is None:
        print("no crossover: one deployment finishes first at every answer length")
    else:
        pick = dict(a=names[0], b=names[1])
        print(f"crossover at {x['crossover_tokens']:.0f} tokens ({x['completion_s']:.2f} s): shorter answers finish first on "
              f"{pick[x['faster_below']]}, longer ones on {pick[x['faster_beyond']]}")
    completion_time(configs, max_tokens=400);
    """),
    md("""
    **How many users at 50 tok/s each?** A static batch (all users decoding in lock-step) is an
    optimistic bound; with continuous batching (`method="steady_state"`) new users' prompts share the
    steps and raise everyone's TPOT, so fewer fit.
    """),
    code("""
    for method in ("static", "steady_state"):
        r = max_concurrency_for_speed(50, "llama-3.1-70b", "h100-sxm", isl=2048, osl=256, tp=8, method=method)
        print(f"{method:12s}: up to {r['concurrency']} concurrent users at >= 50 tok/s each "
              f"({r['per_user_tokens_per_s']:.1f} tok/s per user there)")
    """),
    md("""
    ## 7. Agent pipelines: time to finish the task

    An agent makes K dependent calls; each waits for the previous answer and its tool call. Its task
    time is T = Σ (TTFT_k + (N_k − 1) · TPOT_k) + Σ τ_k, and each call's prompt grows with earlier
    answers and tool results. The ranking by task time can differ from the ranking by tokens/s.
    """),
    code("""
    # the formula by hand: 3 calls, 1 s of tool time between consecutive calls
    t = chain_time(ttft=[0.2, 0.3, 0.4], tpot=[0.02, 0.02, 0.02], output_tokens=[100, 50, 200], tool_time=[1.0, 1.0])
    print(f"3 calls by hand: {t:.2f} s")
    assert np.isclose(t, (0.2 + 99 * 0.02) + (0.3 + 49 * 0.02) + (0.4 + 199 * 0.02) + 2.0)

    chain = agent_chain({"8x H100 tp8 fp8": {"hardware": "h100-sxm", "tp": 8, "weights": "fp8", "kv_cache": "fp8"},
                         "4x H200 tp4 fp8": {"hardware": "h200-sxm", "tp": 4, "weights": "fp8", "kv_cache": "fp8"},
                         "2x B200 tp2 bf16": {"hardware": "b200", "tp": 2}},
                        "llama-3.1-70b", steps=10, isl=2048, osl=256, tool_time=1.0)
    pd.DataFrame({"deployment": chain["deployment"], "task time [s]": chain["completion_s"], "LLM time [s]": chain["llm_s"],
                  "tool time [s]": chain["tool_s"], "first call [s]": chain["first_call_e2e_s"],
                  "last prompt [tok]": chain["last_call_isl"], "fits": chain["fits"]}).round(2)
    """),
    md("""
    ## What to take away

    Start from the service: lengths, concurrency, SLO. Sweep, keep the front, and only then look at
    cost and power — with the basis stated. `plan` turns that into device counts with the reasons for
    every rejection; completion and task times rank deployments the way users experience them.
    The command-line equivalent of section 5 is `perfmodel plan --model llama-3.1-70b --rate 12 ...`.
    """),
]


# =============================================================================================
# 06 vendor claims
# =============================================================================================

NB06 = [
    md("""
    # 06 · Checking vendor claims

    A vendor claim is one number about one configuration in one scenario. To check it we need
    what the announcement rarely gives: the model, the precisions, input and output lengths, the
    concurrency, how many racks, where power is measured and the latency constraint. perfmodel keeps a
    claim as **data** (`perfmodel/data/claims/*.yaml`): the quote and its source, what the source
    states, what had to be assumed, and the **unknowns** — each with a nominal value and a range.
    `check_claim` predicts both systems, computes the ratio, and for each unknown finds the value the
    claim would need.
    """),
    code("""
    %matplotlib inline

    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from perfmodel.planning import check_claim, list_claims, load_claim
    """, PANDAS_OPTIONS, """

    UNITS = {"tokens_per_s_per_mw": "tok/s per MW", "per_device_tokens_per_s": "tok/s per device",
             "per_user_tokens_per_s": "tok/s per user"}


    def needed_table(check):
        \"\"\"One row per unknown: its nominal value, the ratio range over its scan and what the claim needs.\"\"\"
        return pd.DataFrame([{"unknown": n["unknown"], "nominal": n["nominal"],
                              "ratio low [x]": n["ratio_range"][0], "ratio high [x]": n["ratio_range"][1],
                              "finding": n["finding"]} for n in check.needed])
    """),
    md("""
    ## 1. The shipped claims
    """),
    code("""
    claims = {cid: load_claim(cid) for cid in list_claims()}
    pd.DataFrame([{"id": cid, "claim": c.title, "metric": c.metric, "type": c.claim_type, "claimed": c.claimed,
                   "ISL/OSL [tok]": f"{c.operating_point.isl}/{c.operating_point.osl}",
                   "per-user floor [tok/s]": c.operating_point.per_user_tokens_per_s, "batch": c.operating_point.batch}
                  for cid, c in claims.items()])
    """),
    md("""
    ## 2. Quick checks: a value claim and a ratio claim

    **DGX B200, "over 250 tok/s per user" on DeepSeek-R1** is a *value* claim at batch 1. The recipe
    behind it (TensorRT-LLM's min-latency blog) runs speculative decoding with the model's own MTP layer,
    three draft tokens; the claim file runs the same (`spec_decode: {method: mtp, k: 3}`, with the
    blog's accepted lengths), and the `mtp_acceptance` unknown asks which acceptance rate would give
    exactly 250 tok/s. `mtp` off shows the plain decode step.
    """),
    code("""
    b200 = check_claim("nvidia-dgx-b200-dsr1-250-tps-per-user")
    print(b200.verdict)
    print(f"predicted {b200.candidate['value']:.0f} tok/s per user at batch {b200.candidate['batch']}, "
          f"{b200.ratio:.2f}x the claimed {b200.claim.claimed:.0f} tok/s")
    needed_table(b200)
    """),
    md("""
    **GB200 NVL72 vs H200, "up to 15× per GPU at 50 tok/s per user"** is a *ratio* at a fixed
    per-user speed (iso-interactivity): each system uses the batch that maximises tokens per GPU while
    every user still gets at least 50 tok/s.
    """),
    code("""
    gb = check_claim("nvidia-gb200-vs-h200-15x-per-gpu")
    print(gb.verdict)
    for side in ("baseline", "candidate"):
        s = getattr(gb, side)
        print(f"{side:9s}: {s['value']:,.0f} tok/s per device at batch {s['batch']} "
              f"({s['devices']} devices, best per-user speed {s['max_per_user_tokens_per_s']:.0f} tok/s)")
    needed_table(gb)
    """),
    md("""
    ## 3. "Up to 35× throughput per megawatt": Vera Rubin NVL72 + LPX vs GB200 NVL72

    The announcement says: up to 35× more throughput per MW, for trillion-parameter MoE models, at
    about 400 tok/s per user. It does not say which model, which lengths, how many racks, where the
    power is measured or what the baseline runs. The claim file fills each gap with a stated
    assumption.
    """),
    code("""
    c = claims["nvidia-lpx-35x-tokens-per-mw"]
    print(c.title)
    print("source:", c.source)
    print("quote:", repr(c.quote))
    print("\\nstated by the source:")
    for line in c.stated:
        print(" -", line)
    print("\\nassumed here:")
    for line in c.assumed:
        print(" -", line)
    """),
    md("""
    We check it twice. **calibrated** is perfmodel's default: per-op efficiencies fitted to measured
    kernels, with per-kernel overheads (Rubin has no measurements and borrows its family's profile;
    LP30 has none at all). **datasheet** prices both systems at the pure roofline of their published
    (or assumed) peaks — the most favourable reading of both, and the one that isolates the hardware
    and the placement. At an iso-interactivity point each system uses its best batch among those that
    give every user at least 400 tok/s; a system that cannot reach 400 tok/s even at batch 1 scores 0.
    Neither does without speculative decoding, so the claim file runs EAGLE (k = 3) on both sides,
    with a stand-in acceptance (`assumed` above); when a ratio cannot be formed it is None, with the
    reason in `ratio_note`.
    """),
    code("""
    lpx_datasheet = c.model_dump(mode="json")
    for side in ("baseline", "candidate"):
        lpx_datasheet[side]["efficiency"] = "datasheet"
    checks = {"calibrated": check_claim(c), "datasheet": check_claim(lpx_datasheet)}

    unit = UNITS[c.metric]
    op = c.operating_point
    print(f"operating point: >= {op.per_user_tokens_per_s:g} tok/s per user, ISL {op.isl} / OSL {op.osl} tokens\\n")
    for profile, chk in checks.items():
        print(f"[{profile}] {chk.verdict}")
        for side in ("baseline", "candidate"):
            s = getattr(chk, side)
            where = (f"at batch {s['batch']} ({s['per_user_tokens_per_s']:.0f} tok/s per user)" if s["reachable"]
                     else "(cannot reach the per-user floor)")
            power = f"{s['power_w'] / 1e3:,.0f} kW" if s["power_w"] else "unknown power"
            print(f"  {side:9s}: {s['value']:,.0f} {unit} {where}; {s['devices']} devices, {power}; "
                  f"single-user speed {s['max_per_user_tokens_per_s']:.0f} tok/s")
        print()
    """),
    md("""
    **What each unknown would have to be.** For every unknown the check moves it alone across its range
    (the others at nominal) and solves for the value that would give 35×, if there is one:
    """),
    code("""
    pd.concat([needed_table(chk).assign(profile=profile) for profile, chk in checks.items()]).set_index(["profile", "unknown"])
    """),
    md("""
    **Sensitivity.** The ratio at each scanned value of each unknown. A ratio of 0 means the candidate
    cannot reach the per-user floor at that value; None ("—" below) that it cannot be formed, with the
    reason beside it: only the baseline cannot reach the floor (no upper bound), or neither can.
    """),
    code("""
    SCALE = {"time": (1e-6, "us"), "bandwidth": (1e9, "GB/s"), "power": (1.0, "W")}
    dims = {u.name: u.dimension for u in c.unknowns}


    def with_unit(name, value):
        scale, u = SCALE.get(dims[name], (None, ""))
        return f"{float(value) / scale:.4g} {u}" if scale else str(value)


    for profile, chk in checks.items():
        print(f"[{profile}] ratio [x] at each scanned value")
        for name, g in chk.sensitivity.groupby("unknown", sort=False):
            print(f"  {name:18s}", "  ".join(f"{with_unit(name, v)}: " + ("—" if r is None else f"{r:.3g}")
                                             for v, r in zip(g["value"], g["ratio"])))
    """),
    md("""
    **The operating point decides the ratio.** The ratio at per-user floors from 1/16 to 2× the
    claimed 400 tok/s (nominal assumptions). Each system's tokens per MW fall as the floor rises and
    reach zero at its single-user speed; near the *baseline's* ceiling the ratio can be made as large
    as one likes, which is what "up to" allows.
    """),
    code("""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained", sharey=True)
    for ax, (profile, chk) in zip(axes, checks.items()):
        inter = chk.interactivity
        print(f"[{profile}]")
        print(pd.DataFrame({"per-user floor [tok/s]": inter["per_user_floor_tokens_per_s"],
                            f"candidate [{unit}]": inter["candidate"].astype(float).round(0),
                            f"baseline [{unit}]": inter["baseline"].astype(float).round(0),
                            "ratio [x]": inter["ratio"].map(lambda r: "—" if r is None else f"{r:.3g}"),
                            "note": inter["ratio_note"]}).to_string(index=False))
        for col, label in (("candidate", "Rubin + LPX (candidate)"), ("baseline", "GB200 NVL72 (baseline)")):
            ax.plot(inter["per_user_floor_tokens_per_s"], inter[col].astype(float) / 1e3, marker="o", label=label)
        ax.axvline(op.per_user_tokens_per_s, color="grey", ls="--", label="claimed operating point")
        ax.set(xscale="log", xlabel="per-user speed floor [tok/s]", title=f"{profile} efficiencies")
    axes[0].set_ylabel("throughput per MW [k tok/s per MW]")
    axes[0].legend();
    """),
    code("""
    # the reading, from the numbers above
    for profile, chk in checks.items():
        inter = chk.interactivity
        r = inter["ratio"].to_numpy(dtype=float)
        finite = np.isfinite(r)
        at = "—" if chk.ratio is None else f"{chk.ratio:.3g}"
        print(f"[{profile}] ratio at {op.per_user_tokens_per_s:g} tok/s per user: {at} (claimed {c.claimed:g}) "
              f"{chk.ratio_note}")
        if finite.any():
            k = int(np.flatnonzero(finite)[np.argmax(r[finite])])
            print(f"  largest finite ratio over the floors: {r[k]:.3g} at {inter['per_user_floor_tokens_per_s'][k]:g} tok/s per user")
        print(f"  single-user speed: candidate {chk.candidate['max_per_user_tokens_per_s']:.0f} tok/s, "
              f"baseline {chk.baseline['max_per_user_tokens_per_s']:.0f} tok/s")
        met = [n["unknown"] for n in chk.needed if n.get("value_needed") is not None or n.get("values_meeting_claim")]
        print("  unknowns that alone can reach the claim:", ", ".join(met) if met else "none")
    """),
    md("""
    ### What the claim would need

    Reading the tables above, a 35× ratio in tokens per MW at ~400 tok/s per user needs, together:

    1. **An operating point close to the baseline's limit.** The GB200 rack's throughput per MW falls
       steeply as the per-user floor approaches its single-user speed; a ratio quoted there is large
       because the denominator is small, not because the candidate is fast. The ratio-vs-floor tables
       show how quickly the ratio moves with the floor compared with any single hardware unknown.
    2. **A candidate that reaches the floor at a large batch.** The split's per-token floor includes
       its exchange cost, about 2 L α per step (61 layers × 2 messages × α for Kimi-K2: every
       microsecond of α costs ~0.12 ms per token), plus attention and the LPU pool's own collectives.
       At 400 tok/s a token may take 2.5 ms in total, so α and the placement of the dense layer and
       shared expert on the LPX must keep that floor well below it.
    3. **Power far below the assumed 2.3 kW per Rubin and 300 W per LP30**, or a different power
       boundary. Nine LPX racks plus one NVL72 against one NVL72 is roughly seven times the power at
       these assumptions; neither figure is published.
    4. **A specific model, lengths and precisions**, none of which is named. The baseline's weight
       format (NVFP4 vs FP8) and the prompt length move the ratio by large factors.
    5. **Speculation that favours the candidate.** With the same EAGLE head and acceptance on both
       sides the ratio stays far below 35× (the verdict above). The `baseline_spec` and
       `spec_acceptance` rows show how to get more: a baseline without speculation, or with a low
       acceptance, barely reaches (or misses) 400 tok/s per user, and its throughput per MW at the
       floor collapses. No acceptance rate for a Kimi-K2 draft head is published.

    Even then the claim is about throughput per MW at one point. It says nothing about each request
    being faster, about cost (purchase, network, operations) or about other operating points.
    `perfmodel claim nvidia-lpx-35x-tokens-per-mw --format json` prints the same analysis; copy a
    file from `perfmodel/data/claims/` to check another claim.
    """),
]


# =============================================================================================
# 07 validation
# =============================================================================================

NB07 = [
    md("""
    # 07 · Validation against measurements

    A model that predicts is only useful if we know how wrong it is. perfmodel ships public
    measurements of serving runs (`perfmodel/data/validation/serving_measured.csv`: TensorRT-LLM,
    vLLM and SGLang on H100, H200, B200 and GB200, with their provenance) and published end-to-end
    figures. The validation harness maps each measured run to a deployment, predicts its TTFT and TPOT
    at the measured concurrency, and reports the errors — by system, engine and model, and for
    different levels of calibration.
    """),
    code("""
    %matplotlib inline

    import pandas as pd

    import perfmodel as pm
    from perfmodel.plots import predicted_vs_measured
    from perfmodel.validation import shipped_path, validate_file, validate_serving
    """, PANDAS_OPTIONS, """

    def error_row(label, summary):
        \"\"\"Headline errors of one run in percent: median and p90 of |error|, and the median signed error.\"\"\"
        row = {"prediction": label, "rows scored": summary["scored"]}
        for m in ("tpot", "ttft"):
            st = summary[m]
            row.update({f"{m.upper()} median |e| [%]": st["median_abs_pct_error"],
                        f"{m.upper()} p90 |e| [%]": st["p90_abs_pct_error"],
                        f"{m.upper()} bias [%]": st["bias_pct"]})
        return row


    def group_table(summary, group):
        \"\"\"Errors [%] per value of one grouping column (system, engine, model).\"\"\"
        return pd.DataFrame([{group: k, "rows": v["n"],
                              "TPOT median |e| [%]": v["tpot"]["median_abs_pct_error"], "TPOT bias [%]": v["tpot"]["bias_pct"],
                              "TTFT median |e| [%]": v["ttft"]["median_abs_pct_error"], "TTFT bias [%]": v["ttft"]["bias_pct"]}
                             for k, v in summary["by"][group].items()])
    """),
    md("""
    ## 1. The measurements
    """),
    code("""
    measured = pd.read_csv(shipped_path("serving"))
    print(f"{len(measured)} measured runs from {shipped_path('serving').name}")
    measured.groupby(["system", "backend"]).size().unstack(fill_value=0)
    """),
    md("""
    ## 2. Predict every run

    `validate_serving` maps each row (model, system, layout, precisions, engine, ISL/OSL, concurrency)
    to a step model, predicts the closed-loop steady state and compares. Rows it cannot map are
    **skipped with a reason** (an architecture perfmodel does not model, a disaggregated run without
    pool sizes, a duplicate); rows whose measurement contradicts basic physics are **flagged anomalous**
    and kept out of the error figures. With the default arguments it uses the calibrated per-op
    profiles and the fitted engine parameters.
    """),
    code("""
    run = validate_serving(measured)
    s = run.summary
    print(f"{s['rows']} rows: {s['predicted']} predicted, {s['skipped']} skipped, {s['anomalous']} flagged anomalous, "
          f"{s['scored']} scored")
    print(f"per-op profiles: {s['efficiency_profiles']}; engines: {s['engines']}")
    pd.Series(s["skipped_reasons"], name="rows skipped").to_frame()
    """),
    md("""
    ## 3. Errors by system and by engine

    Error is predicted / measured − 1, in percent. The **median |error|** says how close a typical
    prediction is, the **p90** how bad the tail is, and the **bias** (median signed error) whether the
    model is systematically optimistic (negative: predicts faster than measured) or pessimistic.
    """),
    code("""
    group_table(s, "system").round(1)
    """),
    code("""
    group_table(s, "backend").round(1)
    """),
    code("""
    group_table(s, "model").round(1)
    """),
    md("""
    ## 4. Predicted against measured

    Each point is one measured run; the bands are ±10 % and ±25 %. The title gives the share of points
    inside each band.
    """),
    code("""
    import matplotlib.pyplot as plt

    scored = run.predictions[~run.predictions["anomaly"].astype(bool)]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 5), layout="constrained")
    predicted_vs_measured(scored["measured_tpot_s"] * 1e3, scored["predicted_tpot_s"] * 1e3, groups=scored["system"],
                          quantity="TPOT", unit="ms", ax=a1)
    predicted_vs_measured(scored["measured_ttft_s"] * 1e3, scored["predicted_ttft_s"] * 1e3, groups=scored["system"],
                          quantity="TTFT", unit="ms", ax=a2);
    """),
    md("""
    ## 5. Datasheet vs calibrated

    How much does calibration buy? Four predictions of the same rows: the pure datasheet roofline or
    the calibrated per-op profiles, each with the engines' preset overheads (uncalibrated) or the
    fitted engine parameters. Note that the fitted engine parameters were fitted on these same rows,
    so their errors are training errors (`docs/validation.md` reports cross-validated figures).
    """),
    code("""
    rows = []
    for efficiency in ("datasheet", "calibrated"):
        for engines in ("preset", "calibrated"):
            r = run if (efficiency, engines) == ("calibrated", "calibrated") else \\
                validate_serving(measured, efficiency=efficiency, engines=engines)
            rows.append(error_row(f"{efficiency} per-op + {engines} engines", r.summary))
    levels = pd.DataFrame(rows)
    best = levels.loc[levels["TPOT median |e| [%]"].idxmin(), "prediction"]
    print(f"lowest median TPOT error: {best}")
    levels.round(1)
    """),
    md("""
    ## 6. What limits the error on this data?

    Where one deployment point was measured more than once, how far apart are the measurements, within
    one engine release and across releases? And if every (model, system, engine) group — or every
    release — got its own constant correction factor, fitted on the very rows it is scored on, how much
    of this model's error would go?
    """),
    code("""
    import sys
    from pathlib import Path

    # research/ sits beside the package, in the repository (this notebook runs from notebooks/ or the root)
    sys.path.insert(0, str(next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "research").is_dir())))
    from research.attainable import offset_bound, repeat_agreement

    pd.DataFrame(repeat_agreement(scored, by="backend")).round(1)
    """),
    code("""
    pd.DataFrame(offset_bound(scored)).round(1)
    """),
    md("""
    Repeats are few outside vLLM, whose runs reproduce a point within a few percent inside one release;
    two releases of one engine disagree far more, in TTFT most of all. A constant per group removes part
    of both errors but not TTFT's tail: even one factor per release leaves its p90 above the 50 % target.
    `docs/validation.md` shows what is left: how TTFT grows with concurrency, which differs from sweep
    to sweep and which no single recorded column explains.
    """),
    md("""
    ## 7. Published end-to-end figures

    The same harness reads `published_end_to_end_clean.csv`: static-batch latencies and TTFTs that
    vendors and projects published, each with its source row id.
    """),
    code("""
    pub = validate_file(shipped_path("published"))
    ps = pub.summary
    print(f"{ps['rows']} published figures: {ps['predicted']} predicted, {ps['skipped']} skipped {ps['skipped_reasons']}")
    metrics = [m for m in ("batch_latency", "ttft", "tpot") if isinstance(ps.get(m), dict)]
    pd.DataFrame([{"metric": m, "n": ps[m]["n"], "median |e| [%]": ps[m]["median_abs_pct_error"],
                   "p90 |e| [%]": ps[m]["p90_abs_pct_error"], "bias [%]": ps[m]["bias_pct"]} for m in metrics]).round(1)
    """),
    md("""
    ## 8. Estimating a deployment that was not measured

    `pm.estimate` runs this same pipeline (format defaults, steady state, fitted engine
    parameters) on a deployment of your choice, so its figures carry the error measured above. Here
    Llama-3.1-70B FP8 on four H200 with vLLM, and the same with the uncalibrated engine preset: the
    preset's TTFT lacks the request overhead, the synchronised arrivals and the late first token the
    fit found.
    """),
    code("""
    kw = dict(tp=4, precision="fp8", concurrency=[1, 16, 64], isl=1024, osl=1024)
    est = pm.estimate("llama-3.1-70b", "h200-sxm", engine="vllm", **kw)
    pre = pm.estimate("llama-3.1-70b", "h200-sxm", engine="vllm-preset", **kw)
    est.assign(preset_ttft_s=pre["ttft_s"], preset_tpot_s=pre["tpot_s"])[
        ["concurrency", "ttft_s", "preset_ttft_s", "tpot_s", "preset_tpot_s", "output_tokens_per_s_per_gpu"]].round(4)
    """),
    md("""
    ## 9. Our own measurements: whole steps on one H200

    The project measured one H200 itself (`benchmarks/device_ops.py`, rows and provenance in
    `perfmodel/data/validation/own_h200/`): PyTorch kernels and whole Llama-3.1-8B forward steps
    written as plain PyTorch ops, with no serving engine. No profile was fitted on them. A decode
    step is predicted by `StepModel.step_time` alone, so these rows test the op composition without
    any engine parameter. The prefill steps run unfused elementwise kernels that an engine fuses,
    which is why they are predicted fast (`docs/own-measurements.md` has the kernel breakdown).
    """),
    code("""
    steps = pd.concat([validate_file(shipped_path(f"own-h200-{t}")).predictions.assign(table=t)
                       for t in ("decode-step", "prefill-step")])
    steps[["table", "batch_size", "context", "prefill_tokens", "latency_ms", "predicted_ms", "error_pct"]].round(2)
    """),
    md("""
    ## What to take away

    * Read every prediction with its error bar: the tables above are that error bar, per system and
      engine.
    * The datasheet roofline with preset engine overheads is an optimistic bound: its bias is
      negative, it predicts faster than measured. Kernel efficiencies and the engine's per-step and
      per-request overheads are what calibration adds; the table in section 5 shows how much each
      step changes the error on these rows (engine parameters are fitted on top of one per-op
      profile, so mixing a fit with another profile can also make things worse).
    * Skipped and anomalous rows are reported, not hidden: they mark what the model does not cover.

    The command line gives the same figures: `perfmodel validate --data
    perfmodel/data/validation/serving_measured.csv` (add `--efficiency datasheet --calibration preset` for
    the uncalibrated run, `--format json` for scripts), and `perfmodel estimate` the section-7 estimate.
    `docs/validation.md` holds the full report.
    """),
]

# =============================================================================================
NB08 = [
    md("""
    # 08 · SRAM LPUs, wafer-scale and dataflow chips

    Groq LPU / LP30, Cerebras WSE-3 and SambaNova SN40L run a model as a **statically scheduled
    pipeline**: layers over `pp` stages of `tp` chips, deterministic hops on the chip network, weights
    streamed from the tier they live in, and no kernel launches. `perfmodel.dataflow` models them that
    way (equations in `docs/sram.md`). This notebook shows the layout search, per-chip memory by tier,
    the public per-user speeds next to the predictions, and per-user speed against chip count.
    """),
    code("""
    from pathlib import Path

    import matplotlib.pyplot as plt
    import pandas as pd

    import perfmodel as pm
    from perfmodel.dataflow import load_arch
    from perfmodel.dataflow.public import compare_public
    """, PANDAS_OPTIONS),
    md("""
    ## Each architecture: where weights and KV live, and its one fitted parameter
    `stream_efficiency` (η) is the only parameter fitted per architecture; the rest are datasheet
    figures or stated assumptions.
    """),
    code("""
    rows = []
    for ident in pm.dataflow.list_archs():
        a = load_arch(ident)
        rows.append({"architecture": ident, "execution": a.execution, "weights": a.weights_tier,
                     "kv": a.kv_tier, "spill": a.spill_tier, "eta": a.stream_efficiency.value,
                     "basis": a.stream_efficiency.basis, "fitted on": a.stream_efficiency.fitted_on[:70]})
    pd.DataFrame(rows)
    """),
    md("""
    ## The fastest layout of 576 Groq chips for Llama-2-70B
    Every tp × pp × replicas = 576 is tried; layouts whose most loaded chip overflows its 230 MB of
    SRAM are rejected (the reason says by how much).
    """),
    code("""
    layouts = pm.search_layouts("llama-2-70b", "groq-lpu", 576, isl=1024, osl=256, weights="int8",
                                kv_cache="fp16")
    layouts.head(8)
    """),
    code("""
    best = layouts.iloc[0]
    p = pm.predict_dataflow("llama-2-70b", "groq-lpu", tp=int(best.tp), pp=int(best.pp), isl=1024, osl=256,
                            batch=[1, 8, 32], weights="int8", kv_cache="fp16")
    p.to_dataframe()[["batch", "tpot_s", "per_user_tokens_per_s", "stream_s", "sync_s", "hand_off_s",
                      "fits", "sram_used_bytes_per_chip"]]
    """),
    md("""
    ## Memory per tier, and an explicit spill
    Llama-3.1-405B in bf16 on 8 SN40L sockets overflows their 64 GB of HBM: the overflow goes to DDR
    (declared as the spill tier) and is read from there every token, at the blended bandwidth.
    """),
    code("""
    for sockets in (8, 16):
        sn = pm.predict_dataflow("llama-3.1-405b", "sambanova-sn40l", tp=sockets)
        m = sn.memory
        print(f"{sockets} sockets: weights {m.weights / 1e9:.1f} GB per socket, spilled {m.spill_bytes / 1e9:.1f} GB, "
              f"weight reads at {m.weight_bandwidth / 1e12:.2f} TB/s, "
              f"{1 / float(sn.tpot_s):.0f} tok/s per user")
    """),
    md("""
    ## Public per-user speeds next to perfmodel
    `role` says whether a figure was used to fit η (`fit`), predicted with it (`predict`), comes from a
    later software release, or is not explained by the model (`unexplained`); sources in the table.
    """),
    code("""
    table = compare_public()
    table[["hardware", "model", "weights", "devices", "tokens_per_s_per_user", "predicted_tokens_per_s_per_user",
           "ratio", "layout", "role", "source"]]
    """),
    md("""
    ## The η each public figure implies by itself
    Rows of one architecture and software release should imply similar values. Cerebras's launch
    figures and its figures after the October 2024 release do not, which is why each release has
    its own file. SambaNova's figures need more than the datasheet HBM bandwidth (`inf`).
    """),
    code("""
    from perfmodel.dataflow.public import implied_stream_efficiency, public_speeds

    rows = public_speeds()
    rows["eta_implied"] = [implied_stream_efficiency(r) for _, r in rows.iterrows()]
    rows["eta_shipped"] = [load_arch(h).stream_efficiency.value for h in rows["hardware"]]
    rows[["hardware", "model", "devices", "tokens_per_s_per_user", "eta_shipped", "eta_implied", "role"]]
    """),
    md("""
    ## Per-user speed against chip count
    More chips never lower the per-user speed through capacity (the search can always use fewer as
    replicas); hops and per-layer synchronisation limit the gain. On 126 wafers a 405B pipeline of
    126 one-layer stages would pay 126 wafer-to-wafer hops per token, so the search keeps 63 stages
    × 2 replicas and the curve flattens.
    """),
    code("""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for model, hw, w, counts in (("llama-2-70b", "groq-lpu", "int8", [576, 1152, 2304, 4608]),
                                 ("llama-3.1-70b", "cerebras-wse3", "bf16", [4, 8, 16, 32]),
                                 ("llama-3.1-405b", "cerebras-wse3-oct2024", "bf16", [21, 42, 63, 126])):
        speeds = [pm.best_layout(model, hw, n, isl=1024, osl=256, weights=w)["per_user_tokens_per_s"]
                  for n in counts]
        ax.plot(counts, speeds, marker="o", label=f"{model} on {hw}")
    ax.set_xscale("log"); ax.set_xlabel("chips"); ax.set_ylabel("tok/s per user (batch 1)"); ax.legend()
    ax.grid(alpha=0.3)
    """),
]


NOTEBOOKS: dict[str, list[Cell]] = {
    "01-quickstart": NB01,
    "02-reference-article": NB02,
    "03-placement-split-disaggregation": NB03,
    "04-serving-under-load": NB04,
    "05-capacity-planning": NB05,
    "06-vendor-claims": NB06,
    "07-validation": NB07,
    "08-sram-dataflow": NB08,
}


def build(name: str, cells: list[Cell]):
    """The notebook object: cells in order, no outputs, deterministic ids, python3 kernel."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    nb = new_notebook(metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    for i, (kind, source) in enumerate(cells):
        cell = new_markdown_cell(source) if kind == "markdown" else new_code_cell(source)
        cell["id"] = f"{name[:2]}-{i:03d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(name: str, cells: list[Cell]) -> str:
    """The .ipynb text exactly as written to disk."""
    import nbformat

    text = nbformat.writes(build(name, cells))
    return text if text.endswith("\n") else text + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a notebook differs from this source")
    parser.add_argument("--list", action="store_true", help="print the notebook names and exit")
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write into (default notebooks/)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(f"{name}.ipynb" for name in NOTEBOOKS))
        return 0
    stale = []
    for name, cells in NOTEBOOKS.items():
        path = args.out / f"{name}.ipynb"
        text = render(name, cells)
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({len(cells)} cells)")
    if stale:
        print("out of date (run python scripts/build_notebooks.py):", *(str(p) for p in stale), sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
