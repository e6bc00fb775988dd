"""Writes ``src/types.d.ts`` from the WIT (``wit/*.wit``) and the core's
serde defaults.

Every record becomes an interface with camelCase fields, as the package
gives it back (every field present, an ``option`` as ``null``), and an
``…Init`` interface, as the package accepts it: a field the core fills in
when it is left out (``#[serde(default)]`` or an ``Option``, read from
``crates/ctxpack-core/src``) is optional. Every enum becomes a union of
its kebab-case names, every variant a union of its unit cases' names and
one ``{caseName: payload}`` object per case that carries one. Run it
after changing the WIT or a default; a test fails while the file is
stale::

    python3 packages/ctxpack/tools/gen_ts.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
# One reader of the WIT for every generated binding.
sys.path.insert(0, str(ROOT / "hosts" / "python" / "tools"))
from gen_types import WIT, blocks, camel  # noqa: E402

CORE = ROOT / "crates" / "ctxpack-core" / "src"
OUT = HERE.parent / "src" / "types.d.ts"
# The reasons' documentation, for `explainReason`.
REASONS = HERE.parent / "src" / "reasons.js"

# The typed step protocol's outcome (`result<…>`): the package drives the
# steps itself and gives the pack, or rejects.
SKIP = {"Step"}

PRIMS = {"string": "string", "u32": "number", "u64": "number", "s32": "number",
         "s64": "number", "u8": "number", "u16": "number", "f64": "number",
         "f32": "number", "bool": "boolean"}


def lower_camel(name: str) -> str:
    head, *rest = name.split("-")
    return head + "".join(p.capitalize() for p in rest)


def rust_structs() -> dict[str, dict[str, bool]]:
    """For each kebab-case serde struct of the core: its fields in
    kebab-case, each with whether the core fills it in when left out."""
    structs: dict[str, dict[str, bool]] = {}
    for path in sorted(CORE.rglob("*.rs")):
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = re.match(r"\s*pub struct (\w+) \{$", lines[i])
            attrs = " ".join(lines[max(0, i - 3):i])
            if not m or 'rename_all = "kebab-case"' not in attrs:
                i += 1
                continue
            fields: dict[str, bool] = {}
            pending = ""
            i += 1
            while not lines[i].startswith("}"):
                line = lines[i].strip()
                if line.startswith("#["):
                    pending += line
                fm = re.match(r"pub (\w+): (.+?),?$", line)
                if fm:
                    defaulted = "serde(default" in pending or fm.group(2).startswith("Option<")
                    fields[fm.group(1).replace("_", "-")] = defaulted
                    pending = ""
                elif not line.startswith("#[") and not line.startswith("//"):
                    pending = "" if line == "" else pending
                i += 1
            structs[m.group(1)] = fields
        # next file
    return structs


def ts_type(t, init: bool, types: dict[str, str]) -> str:
    if isinstance(t, str):
        return PRIMS[t]
    if t[0] == "list":
        inner = ts_type(t[1], init, types)
        return f"({inner})[]" if " " in inner else f"{inner}[]"
    if t[0] == "option":
        return f"{ts_type(t[1], init, types)} | null"
    name = t[1]
    return f"{name}Init" if init and types.get(name) in ("record", "variant") else name


def doc(text: str, indent: str) -> list[str]:
    safe = text.replace("*/", "* /")
    return [f"{indent}/** {safe} */"] if text else []


def generate() -> str:
    parsed = []
    seen: set[str] = set()
    for path in WIT:
        for kind, name, d, members in blocks(path.read_text()):
            if camel(name) not in seen:
                seen.add(camel(name))
                parsed.append((kind, camel(name), d, members))
    types = {cls: kind for kind, cls, _, _ in parsed}
    structs = rust_structs()
    out = [
        "// The WIT's types as the `ctxpack` package gives and takes them.",
        "// Written by tools/gen_ts.py from wit/*.wit and the core's",
        "// defaults: do not edit.",
        "",
    ]
    for kind, cls, d, members in parsed:
        if cls in SKIP:
            continue
        if kind == "enum":
            out += doc(d, "")
            names = " | ".join(f'"{m}"' for m, _, _ in members)
            out.append(f"export type {cls} = {names};")
            out.append("")
            continue
        for init in (False, True):
            name = f"{cls}Init" if init else cls
            what = "as the package accepts it" if init else "as the package gives it"
            out += doc(f"{d} ({what})" if d else "", "")
            if kind == "variant":
                cases = []
                for m, t, _ in members:
                    cases.append(f'"{m}"' if t is None
                                 else f"{{ {lower_camel(m)}: {ts_type(t, init, types)} }}")
                out.append(f"export type {name} =")
                out += [f"  | {c}" for c in cases]
                out[-1] += ";"
            else:
                # A record the core has no struct of its own for (a variant's
                # payload, an output built in place) has no defaults.
                fields = structs.get(cls, {m: False for m, _, _ in members})
                if set(fields) != {m for m, _, _ in members}:
                    raise SystemExit(f"record {cls}: the core has no kebab-case struct with "
                                     f"its fields (found {sorted(fields or [])})")
                out.append(f"export interface {name} {{")
                for m, t, fd in members:
                    out += doc(fd, "  ")
                    optional = "?" if init and fields[m] else ""
                    out.append(f"  {lower_camel(m)}{optional}: {ts_type(t, init, types)};")
                out.append("}")
            out.append("")
    return "\n".join(out)


def reasons() -> str:
    """`src/reasons.js`: each `reason` case's WIT documentation."""
    import json
    for path in WIT:
        for kind, name, _, members in blocks(path.read_text()):
            if kind == "variant" and name == "reason":
                lines = ["// The WIT's documentation of each drop or keep reason. Written by",
                         "// tools/gen_ts.py from wit/types.wit: do not edit.",
                         "export const REASONS = {"]
                lines += [f"  {lower_camel(m)}: {json.dumps(d, ensure_ascii=False)}," for m, _, d in members]
                return "\n".join(lines + ["};", ""])
    raise SystemExit("no `reason` variant in the WIT")


if __name__ == "__main__":
    outputs = {OUT: generate(), REASONS: reasons()}
    if "--check" in sys.argv:
        sys.exit(0 if all(p.exists() and p.read_text() == t for p, t in outputs.items()) else 1)
    for path, text in outputs.items():
        path.write_text(text)
