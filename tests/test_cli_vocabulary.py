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

#: Older spelling -> the canonical flag it is an alias of.
ALIASES = {"--arrival-rate": "--rate", "--attention-dp": "--dp-attention", "--slo-target": "--target",
           "--engines": "--calibration"}
#: Flags with one meaning everywhere they appear (a sample of the shared vocabulary).
SHARED = ("--model", "--hardware", "--engine", "--spec-decode", "--prefix-hit-rate", "--isl", "--osl", "--tp",
          "--pp", "--ep", "--dp-attention", "--rate", "--concurrency", "--target", "--format", "--seed")
README = Path(__file__).resolve().parents[1] / "README.md"


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
