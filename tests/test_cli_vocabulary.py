"""One vocabulary: every command spells a concept the same way (issue: "One vocabulary").

Walks every sub-command's parser: a concept shared by several commands has one canonical flag; an older
spelling may survive only as an alias of the canonical one (listed after it), and the README uses only
canonical flags.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from perfmodel.cli import build_parser
from perfmodel.cli.output import FORMATS

#: Older spelling -> the canonical flag it is an alias of.
ALIASES = {"--arrival-rate": "--rate", "--attention-dp": "--dp-attention", "--slo-target": "--target",
           "--engines": "--calibration", "--dp": "--replicas", "--system": "--hardware", "--backend": "--engine"}
#: Flags with one meaning everywhere they appear (a sample of the shared vocabulary).
SHARED = ("--model", "--hardware", "--engine", "--spec-decode", "--prefix-hit-rate", "--isl", "--osl", "--tp",
          "--pp", "--ep", "--dp-attention", "--rate", "--concurrency", "--target", "--format", "--seed")
README = Path(__file__).resolve().parents[1] / "README.md"
#: Commands that print results: each takes --format with the same choices.
RESULT_COMMANDS = ("predict", "sweep", "simulate", "max-load", "estimate", "validate", "plan", "claim",
                   "hardware list", "hardware show", "models list", "models show")
#: Commands that can run long: each draws a progress bar that --quiet silences.
PROGRESS_COMMANDS = ("sweep", "simulate", "max-load", "validate", "plan")


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command and sub-command parser by its name (``"hardware list"``)."""
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    out[f"{prefix} {name}".strip()] = sub
                    walk(sub, f"{prefix} {name}")

    walk(build_parser(), "")
    return out


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


def test_every_result_command_takes_format_with_the_same_choices():
    commands = _commands()
    assert set(RESULT_COMMANDS) <= set(commands)
    for name in RESULT_COMMANDS:
        action = _option(commands[name], "--format")
        assert action is not None, f"{name} has no --format"
        assert tuple(action.choices) == FORMATS and action.default == "table", name
    # and no command outside the list takes --format with other choices
    for name, parser in commands.items():
        action = _option(parser, "--format")
        assert action is None or tuple(action.choices) == FORMATS, name


def test_every_long_command_takes_quiet():
    commands = _commands()
    for name in PROGRESS_COMMANDS:
        action = _option(commands[name], "--quiet")
        assert action is not None and action.default is False and action.dest == "quiet", name


def _actions():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        for action in command._actions:
            yield name, action


def test_old_spellings_are_only_aliases_of_the_canonical_flag():
    for command, action in _actions():
        flags = [o for o in action.option_strings if o.startswith("--")]
        for old, new in ALIASES.items():
            if old in flags:
                assert flags[0] == new, f"{command}: {old} must be an alias listed after {new}, got {flags}"


#: Deprecated spellings kept by one command for one release where the shared flag means something else:
#: (command, old flag) -> the command's own flag (hidden from --help, a note on stderr when used).
RENAMED_FLAGS = {("sweep", "--concurrency"): "--sequences"}   # batch x dp, not closed-loop clients


def test_a_shared_flag_has_one_destination_everywhere():
    dests: dict[str, set[str]] = {}
    for command, action in _actions():
        for flag in action.option_strings:
            if (command, flag) in RENAMED_FLAGS:
                assert action.help == argparse.SUPPRESS, f"{command}: {flag} shown in --help"
                assert action.dest == RENAMED_FLAGS[command, flag].removeprefix("--").replace("-", "_")
                continue
            if flag in SHARED:
                dests.setdefault(flag, set()).add(action.dest)
    for flag, names in dests.items():
        assert len(names) == 1, f"{flag} is stored under several names: {sorted(names)}"
    assert {"--engine", "--spec-decode", "--rate", "--target"} <= set(dests)


def test_the_readme_uses_canonical_flags():
    text = README.read_text(encoding="utf-8")
    used = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", text))
    assert not used & set(ALIASES), sorted(used & set(ALIASES))


# ---------------------------------------------------------------------------------------------------------
# Formats: one name, meaning, default and list syntax in every parser and public signature (issue 21)

#: Commands that take formats; those that search or sweep take --weights as a comma list.
FORMAT_COMMANDS = ("predict", "sweep", "simulate", "max-load", "estimate", "plan", "validate")
LIST_COMMANDS = ("sweep", "plan", "estimate")
#: Spellings of a format concept other than --weights / --kv-cache / --activations.
OTHER_FORMAT_NAME = re.compile(r"precision|dtype|quant|kv[-_]?format|weights?[-_]?format")
#: The deprecated spellings and the commands that keep them (hidden, stored into --weights).
DEPRECATED_FLAGS = {"--precision": ("sweep", "estimate", "plan", "validate"), "--decode-precision": ("plan",)}
#: Packages whose public names are the Python API walked below.
API_PACKAGES = ("perfmodel", "perfmodel.planning", "perfmodel.serving", "perfmodel.deployment",
                "perfmodel.dataflow", "perfmodel.validation")
#: Parameters that match OTHER_FORMAT_NAME and mean something else (name: why).
NOT_A_FORMAT = {("Deployment", "precision"): "the deployment file's section holding weights, activations, kv_cache",
                ("DataflowArch", "tables_in_weight_format"): "a yes/no property of an architecture"}


def test_format_flags_have_one_name_default_and_list_syntax():
    from perfmodel.cli.argtypes import name_list

    commands = _commands()
    for name in FORMAT_COMMANDS:
        weights = _option(commands[name], "--weights")
        assert weights is not None and weights.dest == "weights" and weights.default is None, name
        assert "checkpoint's own" in weights.help, name
        assert (weights.type is name_list) == (name in LIST_COMMANDS), name
        kv = _option(commands[name], "--kv-cache")
        if name != "validate":  # validate maps each measured row's KV cache by the rule itself
            assert kv is not None and kv.dest == "kv_cache" and kv.default is None, name
            assert "fp8 with" in kv.help and "else bf16" in kv.help, name
    assert _option(commands["predict"], "--activations").default is None


def test_no_parser_spells_a_format_otherwise():
    for name, parser in _commands().items():
        for action in parser._actions:
            for flag in action.option_strings:
                if not OTHER_FORMAT_NAME.search(flag) and not OTHER_FORMAT_NAME.search(action.dest):
                    continue
                assert flag in DEPRECATED_FLAGS and name in DEPRECATED_FLAGS[flag], f"{name}: {flag}"
                assert action.help == argparse.SUPPRESS and action.dest in ("weights", "decode_weights"), \
                    f"{name}: {flag}"
                assert flag not in parser.format_help(), f"{name}: {flag} shown in --help"


@pytest.mark.parametrize("command", DEPRECATED_FLAGS["--precision"])
def test_the_old_precision_flag_stores_weights_and_says_the_new_name(command, capsys):
    parser = build_parser()
    required = {"sweep": ["--model", "m", "--hardware", "h"],
                "estimate": ["--model", "m", "--hardware", "h", "--engine", "vllm", "--concurrency", "1",
                             "--isl", "8", "--osl", "8"],
                "plan": ["--model", "m", "--rate", "1", "--isl", "8", "--osl", "8", "--hardware", "h"],
                "validate": ["--data", "x.json"]}[command]
    value = "fp8,bf16" if command in LIST_COMMANDS else "fp8"
    args = parser.parse_args([command, *required, "--precision", value])
    assert args.weights == (["fp8", "bf16"] if command in LIST_COMMANDS else "fp8")
    assert f"perfmodel {command}: note: --precision is deprecated, use --weights" in capsys.readouterr().err
    assert parser.parse_args([command, *required]).weights is None   # no note, the default rule


def _public_signatures():
    import importlib
    import inspect

    for package in API_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj):
                continue
            try:
                yield f"{package}.{name}", name, inspect.signature(obj)
            except (TypeError, ValueError):   # builtins without a signature
                continue


def test_public_signatures_use_the_shared_format_names():
    from perfmodel.formats import DEPRECATED

    seen = set()
    for where, name, sig in _public_signatures():
        for p in sig.parameters.values():
            if OTHER_FORMAT_NAME.search(p.name) and (name, p.name) not in NOT_A_FORMAT:
                assert p.default is DEPRECATED, f"{where}({p.name}=): a format is weights=/kv_cache=/activations="
            if p.name in ("weights", "kv_cache", "activations") and p.default is not inspect_empty():
                assert p.default in (None, ""), f"{where}({p.name}={p.default!r}): the default is the shared rule"
                seen.add(name)
    # the functions the issue names, and the ones that used to spell it otherwise
    assert {"predict", "sweep", "plan", "estimate", "StepModel", "DataflowModel", "predict_dataflow",
            "scaling_curve", "min_devices_for_weights", "enumerate_candidates", "MeasuredDeployment"} <= seen


def inspect_empty():
    import inspect

    return inspect.Parameter.empty


def test_the_readme_and_docs_use_the_new_format_names():
    root = README.parent
    pages = [README, *sorted((root / "docs").glob("*.md")), *sorted((root / "notebooks").glob("*.ipynb"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if page.name == "cli.md":   # the vocabulary table names the deprecated spellings once
            text = text.split("## perfmodel\n")[1]
        assert "--precision" not in text, page.name
        assert not re.search(r"\b(precisions?|weights_dtype)\s*=\s*[\[\"'(]", text), page.name


def test_abbreviated_flags_are_refused_not_guessed(capsys):
    """argparse would otherwise read ``--mode`` as ``--model`` (its unique prefix) and fail on the model
    name; an abbreviation must be refused by its own name in every sub-command."""
    from perfmodel.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["max-load", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--isl", "256", "--osl", "16",
              "--slo-tpot", "20ms", "--mode", "concurrency"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --mode concurrency" in err and "unknown model" not in err
    with pytest.raises(SystemExit):
        main(["predict", "--mod", "llama-3.1-8b", "--hardware", "h100-sxm"])
    assert "unrecognized arguments: --mod" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------
# Engine knobs: one name each, the engine profile's field name, in every parser and public signature

#: Canonical name of each engine knob concept, and the spellings of that concept in the engines' own CLIs.
ENGINE_KNOBS = {"max_num_seqs": re.compile(r"max[-_]?(num[-_]?)?(seqs|sequences|running[-_]?requests|batch[-_]?size)"),
                "max_num_batched_tokens": re.compile(r"chunked[-_]?prefill[-_]?size|max[-_]?num[-_]?(batched[-_]?)?"
                                                     r"tokens|token[-_]?budget|prefill[-_]?budget")}


def test_engine_knobs_have_one_name_in_parsers_and_signatures():
    flags = {}
    for name, parser in _commands().items():
        for action in parser._actions:
            for flag in action.option_strings:
                for knob, other in ENGINE_KNOBS.items():
                    if other.search(flag) or other.search(action.dest):
                        assert (flag, action.dest) == (f"--{knob.replace('_', '-')}", knob), f"{name}: {flag}"
                        flags.setdefault(knob, set()).add(name)
    assert {"plan"} <= flags.get("max_num_seqs", set()) and {"plan"} <= flags.get("max_num_batched_tokens", set())
    for where, _, sig in _public_signatures():
        for p in sig.parameters:
            for knob, other in ENGINE_KNOBS.items():
                assert not other.search(p) or p == knob, f"{where}({p}=): the engine knob is {knob}="


def test_each_engine_name_of_a_knob_is_recorded_and_written_by_the_launch():
    from perfmodel.planning.engine_args import load_arg_schema
    from perfmodel.planning.engine_space import ENGINE_NAMES, KNOBS
    from perfmodel.planning.launch import LaunchSpec, launch_config

    assert set(ENGINE_NAMES) == set(KNOBS)
    spec = LaunchSpec.from_plan_row({"tp": 1, "replicas": 1, "max_num_seqs": 48, "max_num_batched_tokens": 3072},
                                    {"model": "llama-3.1-8b", "engine": "vllm"})
    for engine in ("vllm", "sglang", "trtllm"):
        recorded = load_arg_schema(engine).args
        (cmd,) = launch_config(spec, engine).commands
        for knob, value in (("max_num_seqs", "48"), ("max_num_batched_tokens", "3072")):
            flag = ENGINE_NAMES[knob][engine]
            assert flag in recorded, (engine, flag)
            assert cmd["argv"][cmd["argv"].index(flag) + 1] == value, (engine, flag)
