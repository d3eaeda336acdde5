"""Every code example in README.md and docs/*.md runs: the ``python`` blocks of a page in order in one
namespace, and every ``perfmodel ...`` line of the ``bash`` blocks through the CLI (exit status 0); every
``yaml`` block parses, and one that is a whole spec (``kind`` accelerator, link, system, deployment or
workload) loads through perfmodel's loader (fast tier).

Commands shown in unlabelled fences right above a generated output block are run by
``scripts/gen_doc_blocks.py`` (slow tier, tests/test_split_microbatch.py); here (fast tier) their text is
checked to be the command that generates the block. Not run: installation and other tools' lines of the
bash blocks (OTHER_TOOLS: pip, pytest, jupyter, mkdocs, echo), the README's ``perfmodel plan ... --flag``
fragments (variations of the full command above them), and unlabelled fences that show a command's
syntax (``perfmodel models list [--format json]``, ``perfmodel claim ... [--format json]``) or regenerate
shipped data (``python -m perfmodel.calibration.fit_ops --out perfmodel/data/calibration``).

They run in a scratch folder that holds links to the repository's ``deployments/``, ``workloads/`` and
``perfmodel/`` (the paths the examples name) and a user spec file ``my-gpu.yaml`` (a copy of the H100
SXM spec under another id), so files the examples write (``sweep.csv``) stay out of the checkout.
Blocks that cannot run here are listed in SKIP with the reason; a block known to fail is in BROKEN
(strict xfail: once fixed, the test fails until the entry is removed). Slow tier: about 3 min of CPU.
"""

from __future__ import annotations

import re
import shlex
from importlib import resources
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
#: Text of a block -> why it is not run here.
SKIP = {
    "Client(\"tcp://scheduler:8786\")": "connects to a Dask scheduler that a test machine does not have",
    "validate_serving(sel.assign(spec_decode=spec))": "validates 81 rows under four speculation settings "
                                                      "(about 8 min; the page gives the time)",
    **dict.fromkeys(("vllm-4.0qps-Llama-3.1-8B.json", "--data benchmarks.json", "reports-20260101-000000/"),
                    "reads the reader's own benchmark result (the importers are tested on such files in "
                    "tests/test_validation_openloop.py)"),
}
#: Text of a block -> the failure known today (strict xfail).
BROKEN: dict[str, str] = {}

#: Commands of the bash blocks that are not perfmodel calls (installation, other tools, shell).
OTHER_TOOLS = ("python3 -m pip", "python3 -m pytest", "pip ", "jupyter", "mkdocs", "echo ")


def _blocks(lang: tuple[str, ...]) -> list[tuple[Path, str]]:
    return [(page, m.group(2)) for page in PAGES for m in FENCE.finditer(page.read_text(encoding="utf-8"))
            if m.group(1) in lang]


def _commands() -> list[tuple[str, str]]:
    """``(page#n, command line)`` for every perfmodel call of the bash blocks (continuations joined,
    comments dropped). ``perfmodel plan ... --flags`` stands for the block's last full ``perfmodel plan``
    command with those flags added (a later flag overrides an earlier one, as argparse reads them)."""
    out = []
    for page, text in _blocks(("bash", "sh", "console")):
        full: dict[str, str] = {}
        for n, line in enumerate(text.replace("\\\n", " ").splitlines()):
            line = line.split(" #")[0].strip()
            for part in (p.strip() for p in line.split("&&")):
                if part.startswith("perfmodel "):
                    command, _, rest = part[len("perfmodel "):].partition(" ")
                    if rest.startswith("... "):
                        assert command in full, f"{page.name}: {part!r} elides a command the block has not shown"
                        part = f"{full[command]} {rest[4:]}"
                    else:
                        full[command] = part
                    out.append((f"{page.name}:{n}", part))
                else:
                    assert not part or part.startswith(OTHER_TOOLS), f"{page.name}: unexpected command {part!r}"
    return out


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A folder with the repository paths the examples name and a user spec ``my-gpu.yaml``."""
    out = tmp_path_factory.mktemp("examples")
    for name in ("deployments", "workloads", "perfmodel"):
        (out / name).symlink_to(ROOT / name)
    spec = yaml.safe_load((resources.files("perfmodel.hardware_specs") / "accelerators" / "h100-sxm.yaml")
                          .read_text(encoding="utf-8"))
    text = yaml.safe_dump({**spec, "id": "my-gpu", "name": "My GPU (an H100 SXM copy)", "aliases": []})
    (out / "my-gpu.yaml").write_text(text)
    (out / "path" / "to").mkdir(parents=True)
    (out / "path" / "to" / "my-gpu.yaml").write_text(text)
    return out


def _mark(text: str):
    for needle, why in SKIP.items():
        if needle in text:
            return pytest.mark.skip(reason=why)
    for needle, why in BROKEN.items():
        if needle in text:
            return pytest.mark.xfail(reason=why, strict=True)
    return ()


PYTHON = [(page, text) for page, text in _blocks(("python",))]


def _python_params() -> list:
    """One parameter per python block, named ``PAGE#i`` (the page's i-th python block)."""
    seen: dict[Path, int] = {}
    params = []
    for page, text in PYTHON:
        seen[page] = seen.get(page, -1) + 1
        params.append(pytest.param(page, text, marks=_mark(text), id=f"{page.name}#{seen[page]}"))
    return params


@pytest.mark.slow
@pytest.mark.parametrize("page, text", _python_params())
def test_python_example_runs(page, text, scratch, monkeypatch):
    monkeypatch.chdir(scratch)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # the page's earlier blocks first: an example may use names an earlier one defined
    namespace: dict = {}
    for earlier_page, earlier in PYTHON:
        if earlier is text:
            break
        if earlier_page == page and not _mark(earlier):
            exec(compile(earlier, f"{page.name} (earlier block)", "exec"), namespace)
    exec(compile(text, page.name, "exec"), namespace)


@pytest.mark.slow
@pytest.mark.parametrize("where, command", [pytest.param(w, c, marks=_mark(c), id=f"{w} {c[:60]}")
                                            for w, c in _commands()])
def test_cli_example_exits_0(where, command, scratch, monkeypatch, capsys):
    from perfmodel.cli import main

    monkeypatch.chdir(scratch)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    code = main(shlex.split(command)[1:] + (["--quiet"] if _takes_quiet(command) else []))
    captured = capsys.readouterr()
    assert code == 0, f"{where}: {command}\n{captured.err[-2000:]}"
    assert captured.out.strip(), f"{where}: {command} printed nothing"


def _takes_quiet(command: str) -> bool:
    return shlex.split(command)[1] in ("simulate", "max-load", "plan", "sweep", "validate")


YAML_KINDS = ("accelerator", "link", "system", "deployment", "workload")


@pytest.mark.parametrize("page, text", [pytest.param(p, t, id=f"{p.name}#{i}")
                                        for i, (p, t) in enumerate(_blocks(("yaml",)))])
def test_yaml_example_loads(page, text, tmp_path):
    """A yaml block parses (duplicate keys are errors); a whole spec loads as a user file would
    (a hardware spec is checked as ``load_hardware`` checks a file, without remembering its id)."""
    from perfmodel.deployment.load import load_deployment
    from perfmodel.fileio import read_yaml
    from perfmodel.hardware.schema import parse_spec
    from perfmodel.serving.workload import load_workload

    def load_hardware(path: Path):  # load_hardware's checks, without registering the example's id
        return parse_spec(read_yaml(path), str(path), from_file=True)

    doc = read_yaml(f"{page.name} example", text=text)
    assert isinstance(doc, dict) and doc, f"{page.name}: a yaml example that is not a mapping"
    kind = doc.get("kind")
    if kind not in YAML_KINDS:  # a fragment (a figure, a workload's prefix keys) or an engine preset file
        return
    path = tmp_path / f"{doc.get('id', 'example')}.yaml"
    path.write_text(text, encoding="utf-8")
    loader = {"deployment": load_deployment, "workload": load_workload}.get(kind, load_hardware)
    assert loader(path) is not None


def test_shown_commands_are_the_generating_ones():
    """A command shown right above generated output (``perfmodel plan ...`` then its table) is the one
    scripts/gen_doc_blocks.py runs for that block; a changed argument on either side fails."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_doc_blocks", ROOT / "scripts" / "gen_doc_blocks.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    checked = 0
    for page in gen.PAGES:
        text = page.read_text(encoding="utf-8")
        assert gen.shown_mismatches(text) == [], page.name
        checked += sum(bool(gen.SHOWN.search(text[:m.start()])) for m in gen.BLOCK.finditer(text))
    assert checked >= 10
    page = "```\nperfmodel plan --model llama-3.1-405b --rate 2 \\\n    --isl 1024\n```\n\nprints\n\n" \
           "<!-- generated: plan-pp -->\n```\nx\n```\n<!-- end generated -->\n"
    (wrong,) = gen.shown_mismatches(page)
    assert wrong.startswith("plan-pp: the page shows 'perfmodel plan --model llama-3.1-405b --rate 2 --isl 1024'")


def test_the_examples_are_found():
    """The extraction itself (fast tier): the pages hold python and perfmodel examples, each known."""
    assert len(PYTHON) >= 15
    commands = [c for _, c in _commands()]
    assert len(commands) >= 20 and any(c.startswith("perfmodel plan --model deepseek-v3") for c in commands)
    for needle in (*SKIP, *BROKEN):
        assert any(needle in t for t in (*(t for _, t in PYTHON), *commands)), \
            f"{needle!r} matches no example any more: remove it"
