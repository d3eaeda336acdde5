"""The vocabulary tables of ``docs/cli.md`` (formats, engine knobs), read off the parsers and the public
signatures.

Rows: weight, KV-cache and activation formats; for each, the commands taking the flag (and those taking
a comma list), the public functions and classes taking the keyword, and the default rule
(:data:`perfmodel.formats.DEFAULTS`); then the deprecated spellings still accepted. Built by
``scripts/gen_docs.py``; ``tests/test_cli_vocabulary.py`` enforces what it shows.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
from collections.abc import Iterator

#: (concept, flag, keyword) of each row.
TERMS = (("weight format", "--weights", "weights"), ("KV-cache format", "--kv-cache", "kv_cache"),
         ("activation format", "--activations", "activations"),
         ("weight format of a P/D decode pool", "--decode-weights", "decode_weights"))
#: Deprecated keywords that are not a format (old -> new), left out of the formats' list.
OTHER_RENAMED_ARGS = {"concurrency": "sequences"}   # pm.sweep: batch x dp, not closed-loop clients
#: Packages whose public names make up the Python API.
API_PACKAGES = ("perfmodel", "perfmodel.planning", "perfmodel.serving", "perfmodel.deployment",
                "perfmodel.dataflow", "perfmodel.validation")


def _parsers(parser: argparse.ArgumentParser, prefix: str = "") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix}{name}", sub
                yield from _parsers(sub, f"{prefix}{name} ")


def _signatures() -> Iterator[tuple[str, inspect.Signature]]:
    seen: set[int] = set()
    for package in API_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            try:
                yield name, inspect.signature(obj)
            except (TypeError, ValueError):
                continue


def vocabulary_md() -> str:
    """The Markdown section: one row per format concept, then the deprecated spellings."""
    from ..formats import DEFAULTS, DEPRECATED
    from . import build_parser
    from .argtypes import name_list

    parsers = list(_parsers(build_parser()))
    signatures = list(_signatures())
    out = ["## Vocabulary: formats\n",
           "Every command and function names a format the same way, with the same default; where a command "
           "searches or sweeps, `--weights` takes a comma list (`--weights fp8,bf16`), and in Python "
           "`sweep`, `plan`, `estimate` and `enumerate_candidates` take `weights=\"fp8,bf16\"` or a list. "
           "Read off the parsers and signatures (`tests/test_cli_vocabulary.py` enforces it):\n",
           "| concept | flag | commands | comma list in | Python keyword | functions and classes taking it, "
           "default = the rule | default |",
           "|---|---|---|---|---|---|---|"]
    for concept, flag, keyword in TERMS:
        actions = {name: next((a for a in p._actions if flag in a.option_strings), None) for name, p in parsers}
        commands = [n for n, a in actions.items() if a is not None]
        lists = [n for n, a in actions.items() if a is not None and a.type is name_list]
        functions = sorted({n for n, sig in signatures if keyword in sig.parameters
                            and sig.parameters[keyword].default in (None, "")}, key=str.lower)
        out.append(f"| {concept} | `{flag}` | {', '.join(commands)} | {', '.join(lists) or '—'} | "
                   f"`{keyword}=` | {', '.join(f'`{f}`' for f in functions)} | {DEFAULTS[keyword]} |")
    old_flags: dict[tuple[str, str], list[str]] = {}
    for n, p in parsers:
        for a in p._actions:
            if a.help == argparse.SUPPRESS and a.dest in {keyword for _, _, keyword in TERMS}:
                for flag in a.option_strings:
                    old_flags.setdefault((flag, a.dest), []).append(n)
    old_args = sorted({(p.name, n) for n, sig in signatures for p in sig.parameters.values()
                       if p.default is DEPRECATED and p.name not in OTHER_RENAMED_ARGS},
                      key=lambda t: (t[0], t[1].lower()))
    flags = "; ".join(f"`{f}` ({', '.join(ns)}) = `--{d.replace('_', '-')}`" for (f, d), ns in old_flags.items())
    args = ", ".join(f"`{n}({p}=)`" for p, n in old_args)
    others = ", ".join(f"`{n}({p.name}=)` = `{OTHER_RENAMED_ARGS[p.name]}=`" for n, sig in signatures
                       for p in sig.parameters.values() if p.default is DEPRECATED and p.name in OTHER_RENAMED_ARGS)
    out.append(f"\nDeprecated spellings, accepted for one release: {flags}: hidden from `--help`, each use "
               f"prints one note on stderr naming the new flag; {args}: each is `weights=` and raises a "
               f"`DeprecationWarning`" + (f" (so does {others}, not a format)" if others else "") + ".\n")
    return "\n".join(out) + "\n" + engine_knobs_md(parsers, signatures)


#: What each engine knob is, by its engine-profile field name.
KNOB_CONCEPTS = {"max_num_batched_tokens": "token budget of one step (tokens; each running decode counts one)",
                 "max_num_seqs": "sequences running at once"}


def engine_knobs_md(parsers: list, signatures: list) -> str:
    """The engine-knob rows: one name per knob (the engine profile's field), the commands and functions
    taking it, and each engine's own launch argument for it."""
    from ..planning.engine_space import ENGINE_NAMES

    out = ["## Vocabulary: engine knobs\n",
           "An engine's scheduler knobs keep the engine profile's field names everywhere (`--engine-set "
           "FIELD=VALUE` of `simulate` and `max-load` takes the same names); `plan` searches comma lists of "
           "them, and the launch configuration writes each engine's own argument:\n",
           "| knob | flag | commands | Python keyword | functions and classes taking it | vLLM | SGLang | "
           "TensorRT-LLM |", "|---|---|---|---|---|---|---|---|"]
    for knob, concept in KNOB_CONCEPTS.items():
        flag = f"--{knob.replace('_', '-')}"
        commands = [n for n, p in parsers if any(flag in a.option_strings for a in p._actions)]
        functions = sorted({n for n, sig in signatures if knob in sig.parameters}, key=str.lower)
        names = ENGINE_NAMES[knob]
        out.append(f"| `{knob}`: {concept} | `{flag}` | {', '.join(commands)} | `{knob}=` | "
                   f"{', '.join(f'`{f}`' for f in functions)} | `{names['vllm']}` | `{names['sglang']}` | "
                   f"`{names['trtllm']}` |")
    return "\n".join(out) + "\n"
