//! `hosts/python/src/ctxpack_wasm/types.py`: every record a dataclass with
//! snake_case fields (an `option` defaults to `None`, a `list` to `[]`, the
//! rest to `UNSET`: left out of the JSON, so the core's documented default
//! applies or the core refuses the request naming the field it requires),
//! every enum a `str` enum, every variant a class with one constructor per
//! case; a decoder per type from the component's JSON, and the `_SCHEMA`
//! the codec in `ctxpack_wasm._codec` encodes with.

use crate::wit::{Def, Kind, Ty, Wit, snake, upper_camel};
use std::collections::BTreeSet;

/// Lists whose items are made into classes when first looked at (they grow
/// with the candidates: a 10k-candidate pack's snapshot has 10k entries).
const LAZY: &[(&str, &str)] = &[("snapshot", "entries")];

fn py_type(t: &Ty) -> Result<String, String> {
    Ok(match t {
        Ty::Prim(p) => match *p {
            "string" | "char" => "str",
            "f32" | "f64" => "float",
            "bool" => "bool",
            _ => "int",
        }
        .to_string(),
        Ty::List(t) => format!("List[{}]", py_type(t)?),
        Ty::Option(t) => format!("Optional[{}]", py_type(t)?),
        Ty::Ref(name) => format!("\"{}\"", upper_camel(name)),
        Ty::Other => return Err("a type Python has no spelling for".into()),
    })
}

/// The type as the codec's schema holds it (a Python literal).
pub fn schema_type(t: &Ty) -> String {
    match t {
        Ty::Prim(p) => format!("'{p}'"),
        Ty::List(t) => format!("['list', {}]", schema_type(t)),
        Ty::Option(t) => format!("['option', {}]", schema_type(t)),
        Ty::Ref(name) => format!("['ref', '{}']", upper_camel(name)),
        Ty::Other => "None".into(),
    }
}

/// A Python expression decoding JSON `v` of type `t`.
fn decode(t: &Ty, v: &str) -> String {
    match t {
        Ty::Prim(_) | Ty::Other => v.to_string(),
        Ty::List(inner) => {
            let item = decode(inner, "x");
            if item == "x" {
                v.to_string()
            } else {
                format!("[{item} for x in {v}]")
            }
        }
        Ty::Option(inner) => {
            let some = decode(inner, "y");
            if some == "y" {
                v.to_string()
            } else {
                format!("(None if (y := {v}) is None else {some})")
            }
        }
        Ty::Ref(name) => format!("_d_{}({v})", upper_camel(name)),
    }
}

/// A docstring line for `doc`.
fn docstring(doc: &str, indent: &str) -> String {
    let mut doc = doc.replace('\\', "\\\\").replace("\"\"\"", "'''");
    if doc.ends_with('"') {
        doc.push(' ');
    }
    format!("{indent}\"\"\"{doc}\"\"\"")
}

/// The module's text.
pub fn types(wit: &Wit, skip: &[&str]) -> Result<String, String> {
    let mut out: Vec<String> = [
        "\"\"\"The WIT's types as Python classes. Written by `cargo run -p ctxpack-codegen`",
        "from `wit/*.wit`: do not edit.\"\"\"",
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
    .map(String::from)
    .to_vec();
    let mut schema = Vec::new();
    let mut decoders = Vec::new();
    let mut seen = BTreeSet::new();
    for def in wit.defs.iter().filter(|d| !skip.contains(&d.name.as_str())) {
        let cls = upper_camel(&def.name);
        if !seen.insert(cls.clone()) {
            continue;
        }
        let fail = |e: String| format!("{}: {e}", def.name);
        out.push(String::new());
        let own_doc = if def.docs.is_empty() { &cls } else { &def.docs };
        match def.kind {
            Kind::Enum => {
                out.push(format!("class {cls}(str, enum.Enum):"));
                out.push(docstring(own_doc, "    "));
                for m in &def.members {
                    out.push(format!(
                        "    {} = \"{}\"",
                        snake(&m.name).to_uppercase(),
                        m.name
                    ));
                }
                schema.push(format!("    \"{cls}\": (\"enum\", {cls}),"));
                decoders.push(format!("_d_{cls} = {cls}._value2member_map_.__getitem__"));
            }
            Kind::Variant => {
                variant(def, &cls, own_doc, &mut out, &mut schema, &mut decoders).map_err(fail)?
            }
            Kind::Record => {
                record(def, &cls, own_doc, &mut out, &mut schema, &mut decoders).map_err(fail)?
            }
        }
        out.push(String::new());
    }
    out.push(String::new());
    out.push("__all__ = [".into());
    out.push("    \"UNSET\",".into());
    out.extend(seen.iter().map(|n| format!("    \"{n}\",")));
    out.push("]".into());
    out.push(String::new());
    out.push("# Decoders from the component's JSON, one per type.".into());
    out.extend(decoders);
    out.push(String::new());
    out.push("_DECODE = {".into());
    out.extend(seen.iter().map(|n| format!("    \"{n}\": _d_{n},")));
    out.push("}".into());
    out.push(String::new());
    out.push("_SCHEMA = {".into());
    out.extend(schema);
    out.push("}".into());
    out.push(String::new());
    out.push("# The codec reads the tables from here: it never imports this module.".into());
    out.push("register(_SCHEMA, _DECODE)".into());
    out.push(String::new());
    Ok(out.join("\n"))
}

fn variant(
    def: &Def,
    cls: &str,
    own_doc: &str,
    out: &mut Vec<String>,
    schema: &mut Vec<String>,
    decoders: &mut Vec<String>,
) -> Result<(), String> {
    out.push(format!("class {cls}(Variant):"));
    out.push(docstring(own_doc, "    "));
    let mut cases = Vec::new();
    for m in &def.members {
        let doc = if m.docs.is_empty() { &m.name } else { &m.docs };
        out.push(String::new());
        out.push("    @classmethod".into());
        match &m.ty {
            None => {
                out.push(format!("    def {}(cls) -> \"{cls}\":", snake(&m.name)));
                out.push(docstring(doc, "        "));
                out.push(format!("        return cls(\"{}\")", m.name));
                cases.push(format!("\"{}\": None", m.name));
            }
            Some(t) => {
                out.push(format!(
                    "    def {}(cls, value: {}) -> \"{cls}\":",
                    snake(&m.name),
                    py_type(t)?
                ));
                out.push(docstring(doc, "        "));
                out.push(format!("        return cls(\"{}\", value)", m.name));
                cases.push(format!("\"{}\": {}", m.name, schema_type(t)));
            }
        }
    }
    schema.push(format!(
        "    \"{cls}\": (\"variant\", {cls}, {{{}}}),",
        cases.join(", ")
    ));
    decoders.push(format!("def _d_{cls}(o):"));
    decoders.push("    if o.__class__ is str:".into());
    decoders.push(format!("        return {cls}(o)"));
    decoders.push("    ((tag, v),) = o.items()".into());
    for m in &def.members {
        if let Some(t) = &m.ty {
            decoders.push(format!("    if tag == \"{}\":", m.name));
            decoders.push(format!("        return {cls}(tag, {})", decode(t, "v")));
        }
    }
    decoders.push(format!("    return {cls}(tag, v)"));
    Ok(())
}

fn record(
    def: &Def,
    cls: &str,
    own_doc: &str,
    out: &mut Vec<String>,
    schema: &mut Vec<String>,
    decoders: &mut Vec<String>,
) -> Result<(), String> {
    out.push("@dataclass(kw_only=True, slots=True)".into());
    out.push(format!("class {cls}(Record):"));
    out.push(docstring(own_doc, "    "));
    let mut fields = Vec::new();
    let mut args = Vec::new();
    for m in &def.members {
        let Some(t) = &m.ty else {
            return Err(format!("field `{}` has no type", m.name));
        };
        let default = match t {
            Ty::Option(_) => " = None",
            Ty::List(_) => " = field(default_factory=list)",
            _ => " = UNSET",
        };
        out.push(format!("    {}: {}{default}", snake(&m.name), py_type(t)?));
        if !m.docs.is_empty() {
            out.push(docstring(&m.docs, "    "));
        }
        fields.push(format!(
            "(\"{}\", \"{}\", {})",
            snake(&m.name),
            m.name,
            schema_type(t)
        ));
        let get = match t {
            Ty::Option(_) => format!("g(\"{}\")", m.name),
            Ty::List(_) => format!("(g(\"{}\") or [])", m.name),
            _ => format!("o[\"{}\"]", m.name),
        };
        let lazy = LAZY.contains(&(def.name.as_str(), m.name.as_str()));
        match (lazy, t) {
            (true, Ty::List(item)) => {
                let Ty::Ref(item) = &**item else {
                    return Err(format!("lazy field `{}` holds no records", m.name));
                };
                args.push(format!(
                    "{}=LazyList({get}, _d_{})",
                    snake(&m.name),
                    upper_camel(item)
                ));
            }
            _ => args.push(format!("{}={}", snake(&m.name), decode(t, &get))),
        }
    }
    schema.push(format!(
        "    \"{cls}\": (\"record\", {cls}, [{}]),",
        fields.join(", ")
    ));
    decoders.push(format!("def _d_{cls}(o):"));
    decoders.push("    g = o.get".into());
    decoders.push(format!("    return {cls}({})", args.join(", ")));
    Ok(())
}
