"""Record an engine release's command-line flags from its wheel, for ``perfmodel/data/engines/args/``.

Usage (the wheel from the engine's package registry, e.g. ``pip download vllm==0.18.0 --no-deps``)::

    python scripts/record_engine_args.py vllm   vllm-0.18.0-cp38-abi3-manylinux_2_31_x86_64.whl
    python scripts/record_engine_args.py sglang sglang-0.5.9-py3-none-any.whl
    python scripts/record_engine_args.py dynamo-trtllm ai_dynamo-0.8.1-py3-none-any.whl

prints the ``args:`` section (flag -> type, choices, aliases, nargs) as YAML. The wheel's Python
source is read with :mod:`ast`; nothing in it is imported or run. Types follow argparse as the engine
sets it up: ``flag`` (store_true), ``bool`` (BooleanOptionalAction), ``int``, ``float``, ``str``,
``json``. Where a vLLM flag takes its settings from a config dataclass field (``**kwargs[...]``),
the type comes from the ``EngineArgs`` annotation the way vLLM's ``_compute_kwargs`` derives it: a
config class or dict is JSON, bool is BooleanOptionalAction, a ``Literal`` gives choices unless the
union also admits ``str``, list/tuple/set give ``nargs: "+"``.
"""

from __future__ import annotations

import argparse
import ast
import sys
import zipfile

import yaml

FILES = {  # engine -> (source with the flags, extra sources holding Literal aliases / choice lists)
    "vllm": ("vllm/engine/arg_utils.py", ("vllm/config/", "vllm/model_executor/layers/quantization/__init__.py")),
    "sglang": ("sglang/srt/server_args.py", ()),
    "dynamo-vllm": ("dynamo/vllm/args.py", ()),
    "dynamo-trtllm": ("dynamo/trtllm/utils/trtllm_utils.py", ("dynamo/trtllm/request_handlers/handler_base.py",)),
}


def _sources(wheel: str, engine: str) -> tuple[str, list[str]]:
    main, extra = FILES[engine]
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        others = [n for n in names if n.endswith(".py") and any(n.startswith(e) or n == e for e in extra)]
        return z.read(main).decode("utf-8"), [z.read(n).decode("utf-8") for n in others]


def _const_list(node: ast.AST, consts: dict[str, list]) -> list | None:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        vals = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        return vals if len(vals) == len(node.elts) else None
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.ListComp) and isinstance(node.generators[0].iter, ast.Name):
        # [m.value for m in SomeEnum]
        return consts.get(node.generators[0].iter.id)
    return None


def _literal_values(node: ast.AST, consts: dict[str, list]) -> list | None:
    """Values of ``Literal[...]`` (nested Literals and alias names resolved), else None."""
    if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Literal":
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        out: list = []
        for it in items:
            if isinstance(it, ast.Constant):
                out.append(it.value)
            else:
                sub = _literal_values(it, consts) if not isinstance(it, ast.Name) else consts.get(it.id)
                if sub is None:
                    return None
                out += sub
        return out
    return None


def _constants(texts: list[str]) -> dict[str, list]:
    """Module-level ``X = Literal[...]``, ``X = [constants]`` and Enum classes (their values), by name."""
    consts: dict[str, list] = {}
    for _ in range(2):  # twice, so aliases built from other aliases resolve
        for text in texts:
            for node in ast.parse(text).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    v = _literal_values(node.value, consts) or _const_list(node.value, consts)
                    if v is not None:
                        consts[node.targets[0].id] = v
                elif isinstance(node, ast.ClassDef) and any(getattr(b, "id", "") in ("Enum", "StrEnum")
                                                             for b in node.bases):
                    consts[node.name] = [s.value.value for s in node.body if isinstance(s, ast.Assign)
                                         and isinstance(s.value, ast.Constant)]
    return consts


def _split_union(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _split_union(node.left) + _split_union(node.right)
    if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) in ("Optional", "Union"):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [p for it in items for p in _split_union(it)] + ([ast.Constant(None)]
                                                                if node.value.id == "Optional" else [])
    return [node]


def _from_annotation(ann: ast.AST, consts: dict[str, list]) -> dict:
    """argparse settings vLLM derives from a field annotation (see the module docstring)."""
    parts = _split_union(ann)
    names = [getattr(p, "id", None) or getattr(getattr(p, "value", None), "id", None) for p in parts]
    if any(n and n.endswith("Config") for n in names):
        return {"type": "json"}
    if "bool" in names:
        return {"type": "bool"}
    lits = [v for p in parts if (v := (_literal_values(p, consts) or consts.get(getattr(p, "id", ""))))]
    if lits:
        vals = [x for v in lits for x in v]
        kind = {int: "int", float: "float"}.get(type(vals[0]), "str")
        return {"type": kind} if "str" in names else {"type": kind, "choices": vals}
    for p, name in zip(parts, names, strict=True):
        if name in ("tuple", "list", "set"):
            elem = p.slice.elts[0] if isinstance(getattr(p, "slice", None), ast.Tuple) else getattr(p, "slice", None)
            return {"type": {"int": "int", "float": "float"}.get(getattr(elem, "id", ""), "str"), "nargs": "+"}
    for kind in ("int", "float"):
        if kind in names:
            return {"type": kind}
    if "dict" in names or "HfOverrides" in names:
        return {"type": "json"}
    return {"type": "str"}


def _field_annotations(tree: ast.Module, cls: str) -> dict[str, ast.AST]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {s.target.id: s.annotation for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return {}


def record(engine: str, wheel: str) -> dict[str, dict]:
    """Flag -> settings, in source order (the first spelling is the key, the others its aliases)."""
    main, extra = _sources(wheel, engine)
    tree = ast.parse(main)
    consts = _constants([main, *extra])
    fields = _field_annotations(tree, "EngineArgs")
    out: dict[str, dict] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("-")]
        if not flags or flags[0] in ("--help", "--version"):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        dest = flags[0].lstrip("-").replace("-", "_")
        spec = _from_annotation(fields[dest], consts) if dest in fields and \
            any(k.arg is None for k in node.keywords) else {"type": "str"}
        action = kw.get("action")
        act = action.value if isinstance(action, ast.Constant) else \
            getattr(action, "attr", None) or getattr(action, "id", None)
        if act in ("store_true", "store_false"):
            spec = {"type": "flag"}
        elif act == "BooleanOptionalAction":
            spec = {"type": "bool"}
        elif act == "version" or (act and act.startswith("Deprecated")):
            continue
        if "type" in kw:
            t = getattr(kw["type"], "id", None) or getattr(kw["type"], "attr", None)
            spec["type"] = {"int": "int", "float": "float", "bool": "str"}.get(t, "json" if t in (
                "loads", "json_loads") else "str")
        if "choices" in kw:
            ch = _const_list(kw["choices"], consts)
            if ch is not None:
                spec["choices"] = ch
        if "nargs" in kw and isinstance(kw["nargs"], ast.Constant):
            spec["nargs"] = kw["nargs"].value
        if len(flags) > 1:
            spec["aliases"] = flags[1:]
        out[flags[0]] = spec
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("engine", choices=sorted(FILES))
    p.add_argument("wheel")
    a = p.parse_args(argv)
    args = record(a.engine, a.wheel)
    sys.stdout.write(yaml.safe_dump({"args": args}, sort_keys=False, default_flow_style=None, width=110))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
