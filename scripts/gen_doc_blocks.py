"""Regenerate the command outputs quoted in README.md and docs pages, so that their numbers cannot drift.

In each page of PAGES, every block between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``
is replaced by the output of the command NAME stands for (COMMANDS below), run on this checkout, inside a
code fence; ``<!-- generated-md: NAME -->`` blocks take the output as Markdown (tables), unfenced;
``--check`` only reports stale pages (exit 1), as tests/test_split_microbatch.py does
(tests/test_readme_figures.py checks README.md alone, in the fast tier). The README's figures
(``readme-*`` blocks) are printed by ``scripts/readme_figures.py`` from the reports' JSON summaries
(``docs/data/``), so regenerating a report and then this script moves them.

    python scripts/gen_doc_blocks.py [--check] [--page README.md ...]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "docs" / "placement.md", ROOT / "docs" / "sram.md", ROOT / "docs" / "calibration.md",
         ROOT / "docs" / "planning.md", ROOT / "docs" / "speculative.md"]
PLAN = [sys.executable, "-m", "perfmodel", "plan"]

#: block name -> command (run from the repository root with this checkout's package first on the path)
COMMANDS = {
    "split-cli": [sys.executable, "-m", "perfmodel", "predict", "--deployment",
                  "deployments/kimi-k2-vera-rubin-lpx-split.yaml", "--isl", "2048", "--osl", "256",
                  "--batch", "1,64,1024"],
    "spec-mtp-deployment": [sys.executable, "-m", "perfmodel", "predict", "--deployment",
                            "deployments/deepseek-r1-dgx-b200-mtp.yaml", "--isl", "1024", "--osl", "2048",
                            "--batch", "1,64"],
    "split-micro-batches": [sys.executable, "benchmarks/split_micro_batches.py", "micro-batches"],
    "offload": [sys.executable, "benchmarks/split_micro_batches.py", "offload"],
    "placement-table": [sys.executable, "benchmarks/placement_table.py"],
    "sram-layout": [sys.executable, "-m", "perfmodel", "predict", "--model", "llama-2-70b", "--hardware",
                    "groq-lpu", "--devices", "576", "--isl", "1024", "--osl", "256", "--weights", "int8",
                    "--kv-cache", "fp16", "--batch", "1,8"],
    "sram-public": [sys.executable, "benchmarks/sram_public.py", "public"],
    "sram-implied": [sys.executable, "benchmarks/sram_public.py", "implied"],
    "sram-speculative": [sys.executable, "benchmarks/sram_public.py", "speculative"],
    "sram-releases": [sys.executable, "benchmarks/sram_public.py", "releases"],
    "sram-scaling": [sys.executable, "benchmarks/sram_public.py", "scaling"],
    "sram-claim": [sys.executable, "benchmarks/sram_public.py", "claim"],
    "plan-list-prices": [*PLAN, "--model", "llama-3.1-8b", "--rate", "4", "--isl", "1024", "--osl", "256",
                         "--slo-ttft", "2s", "--slo-tpot", "50ms", "--hardware", "l4,l40s,h100-sxm", "--tp", "1,2",
                         "--objective", "cost"],
    "plan-cost": [*PLAN, "--model", "llama-3.1-70b", "--rate", "20", "--isl", "2048", "--osl", "256", "--slo-ttft",
                  "2s", "--slo-tpot", "50ms", "--target", "0.95", "--hardware", "h100-sxm,h200-sxm,b200",
                  "--price", "h100-sxm=2.5/h,h200-sxm=3.5/h,b200=5/h", "--objective", "cost"],
    "plan-moe-pd": [*PLAN, "--model", "deepseek-v3", "--rate", "8", "--isl", "8192", "--osl", "1024", "--slo-ttft",
                    "3s", "--slo-tpot", "40ms", "--target", "0.95", "--hardware", "gb200-nvl72,hgx-b200,hgx-h200",
                    "--weights", "fp8", "--tp", "1,8", "--dp-attention", "1,8", "--disaggregated"],
    "plan-engines": [*PLAN, "--model", "llama-3.1-70b", "--rate", "20", "--isl", "2048", "--osl", "256", "--slo-ttft",
                     "2s", "--slo-tpot", "50ms", "--target", "0.95", "--hardware", "b200", "--tp", "2",
                     "--engine", "vllm,sglang,trtllm", "--no-prune", "--launch"],
    "plan-pp": [*PLAN, "--model", "llama-3.1-405b", "--rate", "1", "--isl", "1024", "--osl", "128", "--slo-ttft", "3s",
                "--slo-tpot", "100ms", "--hardware", "h100-sxm", "--tp", "8", "--pp", "1,2"],
    "plan-decode-weights": [*PLAN, "--model", "deepseek-v3", "--rate", "8", "--isl", "8192", "--osl", "1024",
                            "--slo-ttft", "3s", "--slo-tpot", "40ms", "--hardware", "gb200-nvl72", "--weights", "fp8",
                            "--decode-weights", "fp8,nvfp4", "--tp", "1", "--dp-attention", "8", "--disaggregated",
                            "--no-prune"],
    "plan-launch": [*PLAN, "--model", "llama-3.1-70b", "--rate", "4", "--isl", "1024", "--osl", "256", "--slo-ttft",
                    "2s", "--slo-tpot", "50ms", "--hardware", "h200-sxm", "--weights", "fp8", "--tp", "4,8",
                    "--requests", "100", "--launch", "vllm"],
    "list-price-table": [sys.executable, "-m", "scripts.list_price_table"],
    **{f"calibration-{t}": [sys.executable, "scripts/calibration_tables.py", t]
       for t in ("scalars", "op-params", "errors-calibrated", "errors-plain", "errors-datasheet")},
    **{f"readme-{b}": [sys.executable, "scripts/readme_figures.py", b]
       for b in ("error-table", "by-engine", "open-loop", "limits", "plan-vs-measured", "peer")},
}
BLOCK = re.compile(r"(?P<open><!-- generated: (?P<name>[\w-]+) -->\n```\n)(?P<body>.*?)(?P<close>```\n<!-- end generated -->)"
                   r"|(?P<mdopen><!-- generated-md: (?P<md>[\w-]+) -->\n)(?P<mdbody>.*?)(?P<mdclose><!-- end generated -->)",
                   re.S)


#: An unlabelled fence holding a command, then prose without headings, up to the end of the text.
SHOWN = re.compile(r"^```\n(?P<body>(?:perfmodel|python3?) [^`]*?)^```\n(?:(?!#|```|<!--)[^\n]*\n)*\s*\Z", re.M)


def shown(name: str) -> list[str]:
    """COMMANDS[name] as a reader types it: ``perfmodel ...`` / ``python ...``."""
    argv = list(COMMANDS[name])
    if argv[:3] == [sys.executable, "-m", "perfmodel"]:
        return ["perfmodel", *argv[3:]]
    return ["python", *argv[1:]] if argv[0] == sys.executable else argv


def shown_mismatches(text: str) -> list[str]:
    """Blocks whose page shows the command just above them (a fence right before the marker) with other
    arguments than COMMANDS runs: the output would not be that command's."""
    out = []
    for m in BLOCK.finditer(text):
        name = m.group("name") or m.group("md")
        before = SHOWN.search(text[:m.start()])
        if before and name in COMMANDS:
            body = re.sub(r"\s*\[[^\]]*\]", "", before.group("body").replace("\\\n", " "))  # [--optional] parts
            typed = shlex.split(body)
            if typed != shown(name):
                out.append(f"{name}: the page shows {' '.join(typed)!r}, the block runs {' '.join(shown(name))!r}")
    return out


def run(name: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run(COMMANDS[name], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if out.returncode:
        raise SystemExit(f"{name}: {' '.join(COMMANDS[name])} failed:\n{out.stderr}")
    return "\n".join(line.rstrip() for line in out.stdout.rstrip("\n").splitlines()) + "\n"


def render(text: str) -> str:
    """The page with every generated block refreshed."""
    def refresh(m: re.Match) -> str:
        if m.group("md"):
            return m.group("mdopen") + "\n" + run(m.group("md")) + "\n" + m.group("mdclose")
        return m.group("open") + run(m.group("name")) + m.group("close")

    return BLOCK.sub(refresh, text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="report stale pages, write nothing")
    p.add_argument("--page", action="append", default=None, metavar="PATH",
                   help="only this page (repository-relative, e.g. README.md; repeatable); default: all of PAGES")
    args = p.parse_args(argv)
    pages = PAGES
    if args.page:
        known = {str(q.relative_to(ROOT)): q for q in PAGES}
        unknown = sorted(set(args.page) - set(known))
        if unknown:
            raise SystemExit(f"--page: {unknown} not among the generated pages; allowed: {sorted(known)}")
        pages = [known[n] for n in args.page]
    stale = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        names = [m.group("name") or m.group("md") for m in BLOCK.finditer(text)]
        unknown = sorted(set(names) - set(COMMANDS))
        if unknown:
            raise SystemExit(f"{page.relative_to(ROOT)}: unknown generated blocks {unknown}; known: {sorted(COMMANDS)}")
        wrong = shown_mismatches(text)
        if wrong:
            raise SystemExit(f"{page.relative_to(ROOT)}: " + "; ".join(wrong))
        new = render(text)
        if args.check:
            if new != text:
                print(f"stale: {page.relative_to(ROOT)} (run python scripts/gen_doc_blocks.py)")
                stale += 1
            continue
        page.write_text(new, encoding="utf-8")
        print(f"wrote: {page} ({len(names)} blocks)")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
