"""Writes ``src/ctxpack_wasm/types.py`` from the WIT (``wit/*.wit``).

Every record becomes a dataclass with snake_case fields (``option`` fields
default to ``None``, ``list`` fields to ``[]``, the rest to ``UNSET``: left
out of the JSON, so the core's documented default applies, or the core
refuses the request naming the field it requires), every enum a ``str`` enum, every variant a class with
one constructor per case. The JSON codec in ``ctxpack_wasm._codec`` reads
the ``_SCHEMA`` written beside them. Run it after changing the WIT; a test
fails while the file is stale::

    python hosts/python/tools/gen_types.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
WIT = [ROOT / "wit" / "types.wit", ROOT / "wit" / "world.wit"]
OUT = Path(__file__).resolve().parents[1] / "src" / "ctxpack_wasm" / "types.py"

PRIMS = {"string": "str", "u32": "int", "u64": "int", "s32": "int", "s64": "int",
         "u8": "int", "u16": "int", "f64": "float", "f32": "float", "bool": "bool"}


def camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("-"))


def snake(name: str) -> str:
    return name.replace("-", "_")


def parse_type(text: str):
    text = text.strip()
    for wrap in ("list", "option"):
        if text.startswith(wrap + "<") and text.endswith(">"):
            return [wrap, parse_type(text[len(wrap) + 1:-1])]
    if text in PRIMS:
        return text
    return ["ref", camel(text)]


def py_type(t) -> str:
    if isinstance(t, str):
        return PRIMS[t]
    if t[0] == "list":
        return f"List[{py_type(t[1])}]"
    if t[0] == "option":
        return f"Optional[{py_type(t[1])}]"
    return f'"{t[1]}"'


def blocks(text: str):
    """(kind, name, docs, [(member, type or None, docs)]) for every
    record, variant and enum."""
    lines = text.splitlines()
    docs: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        m = re.match(r"(record|variant|enum) ([a-z0-9-]+) \{$", line)
        if line.startswith("///"):
            docs.append(line[3:].strip())
        elif m:
            kind, name, own = m.group(1), m.group(2), docs
            docs, members = [], []
            i += 1
            while lines[i].strip() != "}":
                member = lines[i].strip()
                if member.startswith("///"):
                    docs.append(member[3:].strip())
                elif member:
                    mm = re.match(r"([a-z0-9-]+)(?::\s*(.+?)|\((.+)\))?,?$", member)
                    if not mm:
                        raise SystemExit(f"cannot read `{member}` in {name}")
                    ty = mm.group(2) or mm.group(3)
                    members.append((mm.group(1), parse_type(ty) if ty else None, " ".join(docs)))
                    docs = []
                i += 1
            yield kind, name, " ".join(own), members
        else:
            docs = []
        i += 1


def q(doc: str, indent: str) -> str:
    """A docstring line for `doc`."""
    doc = doc.replace("\\", "\\\\").replace('"""', "'''")
    if doc.endswith('"'):
        doc += " "
    return f'{indent}"""{doc}"""'


# Lists whose items are made into classes when first looked at (they grow
# with the candidates: a 10k-candidate pack's snapshot has 10k entries).
LAZY = {("Snapshot", "entries")}


def dec_expr(t, v: str) -> str:
    """A Python expression decoding JSON `v` of WIT type `t`."""
    if isinstance(t, str):
        return v
    if t[0] == "list":
        inner = dec_expr(t[1], "x")
        return v if inner == "x" else f"[{inner} for x in {v}]"
    if t[0] == "option":
        inner = dec_expr(t[1], "y")
        return v if inner == "y" else f"(None if (y := {v}) is None else {inner})"
    return f"_d_{t[1]}({v})"


def generate() -> str:
    out = [
        '"""The WIT\'s types as Python classes. Written by `tools/gen_types.py`',
        'from `wit/*.wit`: do not edit."""',
        "",
        "from __future__ import annotations",
        "",
        "import enum",
        "from dataclasses import dataclass, field",
        "from typing import Any, List, Optional",
        "",
        "from ._codec import UNSET, LazyList, Variant, Record, register",
        "",
    ]
    schema = []
    decoders = []
    seen = set()
    for path in WIT:
        for kind, name, doc, members in blocks(path.read_text()):
            cls = camel(name)
            if cls in seen:
                continue
            seen.add(cls)
            out.append("")
            if kind == "enum":
                out.append(f"class {cls}(str, enum.Enum):")
                out.append(q(doc or cls, "    "))
                for m, _, d in members:
                    out.append(f'    {snake(m).upper()} = "{m}"')
                schema.append(f'    "{cls}": ("enum", {cls}),')
                decoders.append(f"_d_{cls} = {cls}._value2member_map_.__getitem__")
            elif kind == "variant":
                out.append(f"class {cls}(Variant):")
                out.append(q(doc or cls, "    "))
                cases = []
                for m, t, d in members:
                    out.append("")
                    out.append("    @classmethod")
                    if t is None:
                        out.append(f"    def {snake(m)}(cls) -> \"{cls}\":")
                        out.append(q(d or m, "        "))
                        out.append(f'        return cls("{m}")')
                    else:
                        out.append(f"    def {snake(m)}(cls, value: {py_type(t)}) -> \"{cls}\":")
                        out.append(q(d or m, "        "))
                        out.append(f'        return cls("{m}", value)')
                    cases.append(f'"{m}": {t!r}')
                schema.append(f'    "{cls}": ("variant", {cls}, {{{", ".join(cases)}}}),')
                decoders.append(f"def _d_{cls}(o):")
                decoders.append("    if o.__class__ is str:")
                decoders.append(f"        return {cls}(o)")
                decoders.append("    ((tag, v),) = o.items()")
                for m, t, _ in members:
                    if t is not None:
                        decoders.append(f'    if tag == "{m}":')
                        decoders.append(f"        return {cls}(tag, {dec_expr(t, 'v')})")
                decoders.append(f"    return {cls}(tag, v)")
            else:
                out.append("@dataclass(kw_only=True, slots=True)")
                out.append(f"class {cls}(Record):")
                out.append(q(doc or cls, "    "))
                fields = []
                for m, t, d in members:
                    default = " = UNSET"
                    if isinstance(t, list) and t[0] == "option":
                        default = " = None"
                    elif isinstance(t, list) and t[0] == "list":
                        default = " = field(default_factory=list)"
                    out.append(f"    {snake(m)}: {py_type(t)}{default}")
                    if d:
                        out.append(q(d, "    "))
                    fields.append(f'("{snake(m)}", "{m}", {t!r})')
                schema.append(f'    "{cls}": ("record", {cls}, [{", ".join(fields)}]),')
                decoders.append(f"def _d_{cls}(o):")
                decoders.append(f"    g = o.get")
                args = []
                for m, t, _ in members:
                    if isinstance(t, list) and t[0] == "option":
                        get = f'g("{m}")'
                    elif isinstance(t, list) and t[0] == "list":
                        get = f'(g("{m}") or [])'
                    else:
                        get = f'o["{m}"]'
                    if (cls, m) in LAZY:
                        args.append(f"{snake(m)}=LazyList({get}, _d_{t[1][1]})")
                    else:
                        args.append(f"{snake(m)}={dec_expr(t, get)}")
                decoders.append(f"    return {cls}({', '.join(args)})")
            out.append("")
    out.append("")
    out.append("__all__ = [")
    out.append('    "UNSET",')
    out.extend(f'    "{name}",' for name in sorted(seen))
    out.append("]")
    out.append("")
    out.append("# Decoders from the component's JSON, one per type.")
    out.extend(decoders)
    out.append("")
    out.append("_DECODE = {")
    out.extend(f'    "{name}": _d_{name},' for name in sorted(seen))
    out.append("}")
    out.append("")
    out.append("_SCHEMA = {")
    out.extend(schema)
    out.append("}")
    out.append("")
    out.append("# The codec reads the tables from here: it never imports this module.")
    out.append("register(_SCHEMA, _DECODE)")
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    text = generate()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.read_text() == text else 1)
    OUT.write_text(text)
