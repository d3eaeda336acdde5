"""One vocabulary: every command spells a concept the same way (issue: "One vocabulary").

Walks every sub-command's parser: a concept shared by several commands has one canonical flag; an older
spelling may survive only as an alias of the canonical one (listed after it), and the README uses only
canonical flags.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

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


def test_a_shared_flag_has_one_destination_everywhere():
    dests: dict[str, set[str]] = {}
    for _, action in _actions():
        for flag in action.option_strings:
            if flag in SHARED:
                dests.setdefault(flag, set()).add(action.dest)
    for flag, names in dests.items():
        assert len(names) == 1, f"{flag} is stored under several names: {sorted(names)}"
    assert {"--engine", "--spec-decode", "--rate", "--target"} <= set(dests)


def test_the_readme_uses_canonical_flags():
    text = README.read_text(encoding="utf-8")
    used = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", text))
    assert not used & set(ALIASES), sorted(used & set(ALIASES))
