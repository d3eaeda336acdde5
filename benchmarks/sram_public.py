"""SRAM / dataflow machines: public per-user speeds against perfmodel, and per-user speed against chips.

Run: ``python benchmarks/sram_public.py [public|implied|speculative|releases|scaling|claim]``. Prints (asserts nothing);
``scripts/gen_doc_blocks.py`` copies the output into docs/sram.md.

1. ``public``: every row of ``perfmodel/data/dataflow/public_speeds.csv`` next to the prediction on the
   fastest layout of its chip count (batch 1, ISL 1024 / OSL 256);
2. ``implied``: the stream efficiency η each public figure implies by itself (on its layout), next to
   the shipped one; then, for every SambaNova row, the weight bytes each socket reads per token, the
   read rate the public speed implies, and the per-user speed at 100 % of the datasheet HBM bandwidth
   with no synchronisation (an upper bound no execution model with weights in HBM can beat);
3. ``speculative``: for every row the model does not match (``later-release``, ``unexplained``), the
   tokens a speculative step with a Llama-3.2-1B draft on the same chips would have to emit (E) to
   reach the public speed, and the one acceptance rate that gives it, next to the accepted lengths
   the sourced table holds at the same k;
4. ``releases``: one η for both Cerebras software releases, the later one speculating with a Llama-3.2-1B
   draft at each sourced acceptance (:mod:`perfmodel.dataflow.releases`): the fitted η, the ratio of
   every row and the worst; then the E that would bring every row within 1.5x;
5. ``scaling``: the fastest layout and its per-user speed for growing chip counts (Llama-2-70B int8 on
   Groq LPU v1, Llama-3.1-70B bf16 on Cerebras WSE-3 at launch, Llama-3.1-405B bf16 on Cerebras WSE-3
   after the October 2024 release);
6. ``claim``: the verdict of ``perfmodel claim nvidia-lpx-35x-tokens-per-mw``.
"""

from __future__ import annotations

import argparse

import numpy as np

import perfmodel as pm
from perfmodel.dataflow import load_arch
from perfmodel.dataflow.public import compare_public, implied_stream_efficiency, public_speeds
from perfmodel.dataflow.releases import needed_expected_tokens as release_needed_e
from perfmodel.dataflow.releases import one_eta_table
from perfmodel.dataflow.speculative import needed_expected_tokens
from perfmodel.dataflow.step import DataflowModel
from perfmodel.engine.speculative_acceptance import acceptance_profiles, uniform_rate_for_length
from perfmodel.planning.claims import check_claim

RACK = 16  # RDUs in one SambaRack SN40L-16 node (8 modules of 2; docs.sambanova.ai, sambarack-overview)
CURVES = [("llama-2-70b", "groq-lpu", "int8", "fp16", (576, 1152, 2304, 4608, 9216)),
          ("llama-3.1-70b", "cerebras-wse3", "bf16", "bf16", (4, 8, 16, 32, 64)),
          ("llama-3.1-405b", "cerebras-wse3-oct2024", "bf16", "bf16", (21, 42, 63, 126))]


def public() -> str:
    df = compare_public()
    head = f"{'architecture':<23}{'model':<16}{'weights':<8}{'chips':>6}  {'public':>7}  {'perfmodel':>9}  " \
           f"{'ratio':>6}  {'layout':<12}{'role':<14}date"
    rows = [head, "-" * len(head)]
    for _, r in df.iterrows():
        rows.append(f"{r['hardware']:<23}{r['model']:<16}{r['weights']:<8}{int(r['devices']):>6}  "
                    f"{r['tokens_per_s_per_user']:>7.0f}  {r['predicted_tokens_per_s_per_user']:>9.0f}  "
                    f"{r['ratio']:>6.2f}  {r['layout']:<12}{r['role']:<14}{r['date']}")
    rows.append("tok/s per user at batch 1, ISL 1024 / OSL 256; ratio = perfmodel / public")
    return "\n".join(rows)


def implied() -> str:
    rows = [f"{'architecture':<23}{'model':<16}{'chips':>6}  {'public':>7}  {'eta shipped':>11}  {'eta implied':>11}",
            "-" * 80]
    for _, r in public_speeds().iterrows():
        eta = implied_stream_efficiency(r)
        shown = f"{eta:>11.3g}" if eta != float("inf") else f"{'> 1':>11}"
        rows.append(f"{r['hardware']:<23}{r['model']:<16}{int(r['devices']):>6}  {r['tokens_per_s_per_user']:>7.0f}  "
                    f"{load_arch(r['hardware']).stream_efficiency.value:>11.3g}  {shown}")
    rows += ["eta implied: the stream efficiency that alone matches the public figure on the row's layout "
             "(> 1: beyond the datasheet bandwidth)", "",
             f"{'SambaNova':<16}{'sockets':>8}  {'GB/socket':>9}  {'public':>7}  {'implied TB/s':>12}  "
             f"{'ceiling':>8}  {'public/ceiling':>14}  {'perfmodel':>9}"]
    hbm = None
    for _, r in public_speeds().query("vendor == 'SambaNova' and role == 'unexplained'").iterrows():
        for n in sorted({int(r["devices"]), RACK}):
            p = pm.predict_dataflow(r["model"], r["hardware"], tp=n, isl=int(r["isl"]), osl=int(r["osl"]),
                                    weights=r["weights"], kv_cache=r["kv_cache"])
            hbm = p.memory.weight_bandwidth
            w = float(p.memory.weights)
            need, top = float(r["tokens_per_s_per_user"]) * w, hbm / w
            mark = "" if n == int(r["devices"]) else "*"
            rows.append(f"{r['model']:<16}{str(n) + mark:>8}  {w / 1e9:>9.2f}  {r['tokens_per_s_per_user']:>7.0f}  "
                        f"{need / 1e12:>12.2f}  {top:>8.0f}  {r['tokens_per_s_per_user'] / top:>14.2f}  "
                        f"{float(np.ravel(p.per_user_tokens_per_s)[0]):>9.0f}")
    rows.append(f"ceiling = HBM bandwidth / weight bytes per socket, at {hbm / 1e12:.2f} TB/s per socket (100 %, "
                "no sync, no KV reads); implied = public x weight bytes per socket")
    rows.append(f"perfmodel: tp over the sockets at the shipped eta; * not the table's count: one SambaRack SN40L-16 "
                f"node ({RACK} RDUs)")
    for _, r in public_speeds().query("vendor == 'SambaNova' and role == 'check'").iterrows():
        n = int(r["devices"])
        top = pm.predict_dataflow(r["model"], r["hardware"], tp=n, isl=int(r["isl"]), osl=int(r["osl"]),
                                  weights=r["weights"], kv_cache=r["kv_cache"], stream_efficiency=1.0)
        top = float(np.ravel(top.per_user_tokens_per_s)[0])
        rows.append(f"check: {r['model']} ({r['weights']}, MoE: routed experts read) on {n} sockets at 100 % of HBM: "
                    f"{top:.0f} tok/s; public {r['tokens_per_s_per_user']:.0f} = "
                    f"{r['tokens_per_s_per_user'] / top:.2f} of it")
    return "\n".join(rows)


def speculative() -> str:
    draft, ks = "llama-3.2-1b", (4, 8)
    head = f"{'architecture':<23}{'model':<16}{'chips':>6}  {'layout':<10}{'public':>7}" + "".join(
        f"  {'E k=' + str(k):>7}  {'accept':>6}" for k in ks)
    rows = [f"draft {draft} on the same chips (target's tp, pp clipped to its layers), batch 1, context 1024",
            head, "-" * len(head)]
    table = compare_public()
    for _, r in table[table["role"].isin(["later-release", "unexplained"])].iterrows():
        tp, pp = (int(x) for x in r["layout"].split("x")[0].removeprefix("tp").split("-pp"))
        target = DataflowModel(r["model"], r["hardware"], tp=tp, pp=pp, weights=r["weights"], kv_cache=r["kv_cache"])
        line = f"{r['hardware']:<23}{r['model']:<16}{int(r['devices']):>6}  {r['layout']:<10}{r['tokens_per_s_per_user']:>7.0f}"
        for k in ks:
            e = needed_expected_tokens(target, draft, k, float(r["tokens_per_s_per_user"]))
            rate = f"{uniform_rate_for_length(e, k):>6.2f}" if e <= k + 1 else f"{'none':>6}"
            line += f"  {e:>7.2f}  {rate}"
        rows.append(line)
    sourced = {k: [dict(p.lengths)[k] for p in acceptance_profiles().values() if k in dict(p.lengths)] for k in ks}
    rows.append("E: tokens a step must emit to reach the public speed; accept: the one rate per position that "
                "gives E (none: E > k + 1)")
    rows.append("sourced accepted lengths (perfmodel/data/speculative/acceptance.csv): " + "; ".join(
        f"k={k}: {min(v):.2f}-{max(v):.2f}" if v else f"k={k}: none" for k, v in sourced.items()))
    return "\n".join(rows)


def releases() -> str:
    t = one_eta_table()
    labels = [c for c in t.columns if c.endswith((" launch", " later"))]
    head = f"{'acceptance profile':<34}{'method':<7}{'k':>2}  {'E':>5}  {'eta':>6}" + "".join(
        f"  {c:>11}" for c in labels) + f"  {'worst':>6}"
    rows = ["one eta for both Cerebras releases: launch rows without speculative decoding, later rows with a "
            "llama-3.2-1b draft", head, "-" * len(head)]
    shown = t[(t["k"] == 4) | (t["k"] == t.groupby("profile")["k"].transform("max"))
              | (t.groupby("profile")["k"].transform("size") == 1)]
    for _, r in shown.iterrows():
        rows.append(f"{r['profile']:<34}{r['method']:<7}{int(r['k']):>2}  {r['expected_tokens']:>5.2f}  "
                    f"{r['eta']:>6.4f}" + "".join(f"  {r[c]:>11.2f}" for c in labels) + f"  {r['worst']:>6.2f}")
    ok = t[t["worst"] <= 1.5]
    rows.append("ratio = perfmodel / public; shown: each profile at k = 4 and at its largest tabulated k; "
                f"every row within 1.5x in {len(ok)} of {len(t)} (profile, k) pairs"
                + (": " + ", ".join(f"{p} k={k}" for p, k in zip(ok["profile"], ok["k"], strict=True)) if len(ok) else ""))
    need = {k: release_needed_e(k) for k in (4, 7)}
    rows.append("E needed for every row within 1.5x (one acceptance rate at every position): " + "; ".join(
        f"k={k}: {e:.2f}" if e is not None else f"k={k}: none" for k, e in need.items()))
    rows.append(f"fitted separately (shipped): launch {load_arch('cerebras-wse3').stream_efficiency.value:.3g}, "
                f"after October 2024 {load_arch('cerebras-wse3-oct2024').stream_efficiency.value:.3g}")
    return "\n".join(rows)


def scaling() -> str:
    rows = []
    for model, hw, w, kv, counts in CURVES:
        rows.append(f"{model} ({w}) on {hw}: fastest layout that fits, batch 1, ISL 1024 / OSL 256")
        rows.append(f"{'chips':>6}  {'layout':<16}{'tok/s/user':>10}  {'TPOT ms':>8}  {'sync ms':>8}  {'hops ms':>8}")
        for n in counts:
            b = pm.best_layout(model, hw, n, isl=1024, osl=256, weights=w, kv_cache=kv)
            p = pm.predict_dataflow(model, hw, tp=b["tp"], pp=b["pp"], isl=1024, osl=256, weights=w, kv_cache=kv)
            lay = f"tp{b['tp']}-pp{b['pp']}" + (f" x{b['replicas']}" if b["replicas"] > 1 else "")
            rows.append(f"{n:>6}  {lay:<16}{b['per_user_tokens_per_s']:>10.0f}  {float(p.tpot_s) * 1e3:>8.3f}  "
                        f"{float(p.sync_s) * 1e3:>8.3f}  {float(p.hand_off_s) * 1e3:>8.3f}")
        rows.append("")
    return "\n".join(rows).rstrip()


def claim() -> str:
    r = check_claim("nvidia-lpx-35x-tokens-per-mw", points=3)
    lines = [r.verdict, "sensitivity (ratio range over each unknown's range, others nominal):"]
    for n in r.needed:
        lo, hi = n["ratio_range"]
        lines.append(f"  {n['unknown']:<18} {lo:.3g} - {hi:.3g}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", nargs="?", choices=("public", "implied", "speculative", "releases", "scaling",
                                                    "claim"), default="public")
    args = p.parse_args(argv)
    print({"public": public, "implied": implied, "speculative": speculative, "releases": releases, "scaling": scaling,
           "claim": claim}[args.what]())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
