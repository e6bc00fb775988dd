//! `hosts/python/src/ctxpack_wasm/types.py`: every record a dataclass with
//! snake_case fields. A field the core requires (its own `Deserialize`
//! says which: [`crate::defaults`]) has no default, so leaving it out is a
//! `TypeError` naming it where the record is made; an `option` defaults to
//! `None`, a `list` to `[]`, the rest to `UNSET`: left out of the JSON, so
//! the core's documented default applies (a record the core has no struct
//! of its own for — an output, a variant's payload — keeps `UNSET` too),
//! every enum a `str` enum, every variant a class with one constructor per
//! case; a decoder per type from the component's JSON, and the `_SCHEMA`
//! the codec in `ctxpack_wasm._codec` encodes with.

use crate::defaults::Structs;
use crate::wit::{Def, Kind, Ty, Wit, snake, upper_camel};
use std::collections::{BTreeMap, BTreeSet};

/// Lists whose items are made into classes when first looked at (they grow
/// with the candidates: a 10k-candidate pack's snapshot has 10k entries).
const LAZY: &[(&str, &str)] = &[("snapshot", "entries")];

/// Fields of JSON text a caller may give as the value itself (a chat's
/// messages as the provider's SDK holds them): the codec writes its text.
pub const JSON_TEXT: &[(&str, &str)] = &[("chat", "messages")];

/// Fields of JSON text given back, each with a method that reads it: the
/// request to send, as the provider's SDK takes it.
const JSON_READ: &[(&str, &str, &str)] = &[(
    "chat-request",
    "body",
    "The body of the request to send, as the provider's SDK takes it: ``client.chat.completions.create(model=…, **pack.chat.json())``.",
)];

/// The names a value of each enum or variant may be written as: its cases
/// without a payload, as the WIT spells them.
type Names = BTreeMap<String, Vec<String>>;

fn names(wit: &Wit) -> Names {
    wit.defs
        .iter()
        .filter(|d| d.kind != Kind::Record)
        .map(|d| {
            let unit = d.members.iter().filter(|m| m.ty.is_none());
            (d.name.clone(), unit.map(|m| m.name.clone()).collect())
        })
        .collect()
}

/// The records a caller writes: those reached from what a caller hands in.
/// Only their fields accept names as strings; what ctxpack gives back is
/// always the class (`entry.reason.tag`).
const WRITTEN: &[&str] = &[
    "builder-config",
    "assemble-request",
    "candidate",
    "count-request",
    "trim-request",
];

fn written(wit: &Wit) -> BTreeSet<String> {
    fn refs(t: &Ty, out: &mut Vec<String>) {
        match t {
            Ty::List(t) | Ty::Option(t) => refs(t, out),
            Ty::Ref(name) => out.push(name.clone()),
            Ty::Prim(_) | Ty::Other => {}
        }
    }
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = WRITTEN.iter().map(|n| n.to_string()).collect();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        for def in wit.defs.iter().filter(|d| d.name == name) {
            for t in def.members.iter().filter_map(|m| m.ty.as_ref()) {
                refs(t, &mut todo);
            }
        }
    }
    seen
}

/// The annotation of a value of type `t`: an enum or variant accepts the
/// names of its cases without a payload as plain strings too
/// (`tokenizer="o200k-base"`), as the codec does.
fn py_type(t: &Ty, names: &Names) -> Result<String, String> {
    Ok(match t {
        Ty::Prim(p) => match *p {
            "string" | "char" => "str",
            "f32" | "f64" => "float",
            "bool" => "bool",
            _ => "int",
        }
        .to_string(),
        Ty::List(t) => format!("List[{}]", py_type(t, names)?),
        Ty::Option(t) => format!("Optional[{}]", py_type(t, names)?),
        Ty::Ref(name) => match names.get(name).filter(|n| !n.is_empty()) {
            Some(unit) => {
                let quoted: Vec<String> = unit.iter().map(|n| format!("\"{n}\"")).collect();
                format!(
                    "Union[\"{}\", Literal[{}]]",
                    upper_camel(name),
                    quoted.join(", ")
                )
            }
            None => format!("\"{}\"", upper_camel(name)),
        },
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
pub fn types(wit: &Wit, skip: &[&str], structs: &Structs) -> Result<String, String> {
    let mut out: Vec<String> = [
        "\"\"\"The WIT's types as Python classes. Written by `cargo run -p ctxpack-codegen`",
        "from `wit/*.wit`: do not edit.\"\"\"",
        "",
        "from __future__ import annotations",
        "",
        "import enum",
        "import json as _json",
        "from dataclasses import dataclass, field",
        "from typing import Any, List, Literal, Optional, Union",
        "",
        "from ._codec import UNSET, LazyList, Variant, Record, register",
        "",
    ]
    .map(String::from)
    .to_vec();
    let mut schema = Vec::new();
    let mut decoders = Vec::new();
    let mut seen = BTreeSet::new();
    let names = names(wit);
    let written = written(wit);
    let none = Names::new();
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
                let lists = Lists {
                    out: &mut out,
                    schema: &mut schema,
                    decoders: &mut decoders,
                };
                variant(def, &cls, own_doc, &names, lists).map_err(fail)?
            }
            Kind::Record => {
                let required = structs
                    .get(cls.as_str())
                    .map(|read| read.required.clone())
                    .unwrap_or_default();
                let lists = Lists {
                    out: &mut out,
                    schema: &mut schema,
                    decoders: &mut decoders,
                };
                let names = if written.contains(&def.name) {
                    &names
                } else {
                    &none
                };
                record(def, &cls, own_doc, (&required, names), lists).map_err(fail)?
            }
        }
        out.push(String::new());
    }
    out.extend(tables(&seen, decoders, schema));
    Ok(out.join("\n"))
}

/// Types whose names the package gives its exceptions (`except
/// ctxpack_wasm.CtxpackError`): left out of `__all__`, so that the
/// package's `from .types import *` does not bring the records under the
/// same names, and a type checker sees the exception. The record is the
/// exception's `.error`, `ctxpack_wasm.types.CtxpackError`.
const EXCEPTIONS: [&str; 2] = ["CtxpackError", "HostError"];

/// The module's tables after its classes: `__all__`, the decoders, the
/// schema, and their registration with the codec.
fn tables(seen: &BTreeSet<String>, decoders: Vec<String>, schema: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    out.push(String::new());
    out.push("__all__ = [".into());
    out.push("    \"UNSET\",".into());
    out.extend(
        seen.iter()
            .filter(|n| !EXCEPTIONS.contains(&n.as_str()))
            .map(|n| format!("    \"{n}\",")),
    );
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
    out
}

fn variant(
    def: &Def,
    cls: &str,
    own_doc: &str,
    names: &Names,
    lists: Lists<'_>,
) -> Result<(), String> {
    let Lists {
        out,
        schema,
        decoders,
    } = lists;
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
                    py_type(t, names)?
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

/// What the module's text is made of, as a record adds to it.
struct Lists<'a> {
    out: &'a mut Vec<String>,
    schema: &'a mut Vec<String>,
    decoders: &'a mut Vec<String>,
}

fn record(
    def: &Def,
    cls: &str,
    own_doc: &str,
    (required, names): (&BTreeSet<&'static str>, &Names),
    lists: Lists<'_>,
) -> Result<(), String> {
    let Lists {
        out,
        schema,
        decoders,
    } = lists;
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
            _ if required.contains(m.name.as_str()) => "",
            Ty::Option(_) => " = None",
            Ty::List(_) => " = field(default_factory=list)",
            _ => " = UNSET",
        };
        let annotation = match JSON_TEXT.contains(&(def.name.as_str(), m.name.as_str())) {
            true => "Any".to_owned(),
            false => py_type(t, names)?,
        };
        out.push(format!("    {}: {annotation}{default}", snake(&m.name)));
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
    for (_, field, doc) in JSON_READ.iter().filter(|r| r.0 == def.name) {
        out.push(String::new());
        out.push("    def json(self) -> Any:".into());
        out.push(docstring(doc, "        "));
        out.push(format!("        return _json.loads(self.{})", snake(field)));
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
