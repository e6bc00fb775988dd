//! `crates/ctxpack-service/openapi/core-schemas.json`: every WIT type as a
//! JSON Schema (2020-12, the dialect of OpenAPI 3.1), for the service's
//! API description.
//!
//! Each type is written twice:
//!
//! - as the core reads and writes it, `Name`: kebab-case fields (the
//!   WIT's names), the body of an assembly request. A field the core fills
//!   in when it is left out is not required ([`crate::defaults`]).
//! - as the service answers it inside its camelCase JSON, `camel.Name`:
//!   every object key in camelCase (the service's `camel_keys`), values as
//!   they are. A field is required there only when the core cannot read
//!   the type without it (a field it may leave out when empty is not).
//!
//! A field the core holds to a rule of its own beyond its type (a text
//! not empty, a number at least 1: `ctxpack_core::REQUEST_RULES`) says so
//! as the core reads it.
//!
//! A record the core reads refusing fields it does not know admits no
//! other properties, as it is read.
//!
//! An enum is a string of its kebab-case names; a variant is one of its
//! payload-less cases' names, or an object holding exactly one case with
//! its payload; an `option` also admits `null`.

use crate::defaults::Structs;
use crate::wit::{Def, Kind, Ty, Wit, lower_camel, upper_camel};
use ctxpack_core::{REQUEST_RULES, RequestRule};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The two spellings.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keys {
    Kebab,
    Camel,
}

impl Keys {
    fn name(self, def: &str) -> String {
        match self {
            Keys::Kebab => upper_camel(def),
            Keys::Camel => format!("camel.{}", upper_camel(def)),
        }
    }

    fn key(self, name: &str) -> String {
        match self {
            Keys::Kebab => name.to_owned(),
            Keys::Camel => lower_camel(name),
        }
    }
}

fn schema(t: &Ty, keys: Keys) -> Result<Value, String> {
    Ok(match t {
        Ty::Prim(p) => match *p {
            "string" => json!({"type": "string"}),
            "char" => json!({"type": "string", "minLength": 1, "maxLength": 1}),
            "bool" => json!({"type": "boolean"}),
            "f32" | "f64" => json!({"type": "number"}),
            "u8" => json!({"type": "integer", "minimum": 0, "maximum": u8::MAX}),
            "u16" => json!({"type": "integer", "minimum": 0, "maximum": u16::MAX}),
            "u32" => json!({"type": "integer", "minimum": 0, "maximum": u32::MAX}),
            "u64" => json!({"type": "integer", "minimum": 0}),
            "s8" | "s16" | "s32" | "s64" => json!({"type": "integer"}),
            other => return Err(format!("the primitive {other} has no JSON Schema here")),
        },
        Ty::List(t) => json!({"type": "array", "items": schema(t, keys)?}),
        Ty::Option(t) => json!({"anyOf": [schema(t, keys)?, {"type": "null"}]}),
        Ty::Ref(name) => json!({"$ref": format!("#/components/schemas/{}", keys.name(name))}),
        Ty::Other => return Err("a type JSON Schema has no spelling for here".into()),
    })
}

/// A character `str::trim` does not take for white space: a text holding
/// one is not blank.
const NOT_BLANK: &str = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";

/// `v` (or, of an option, its value) held to the core's `rule` for the
/// field (`ctxpack_core::REQUEST_RULES`).
fn ruled(mut v: Value, rule: RequestRule) -> Value {
    if let Some(cases) = v.get_mut("anyOf").and_then(Value::as_array_mut) {
        for case in cases.iter_mut().filter(|c| c["type"] != "null") {
            *case = ruled(case.take(), rule);
        }
        return v;
    }
    if let Some(m) = v.as_object_mut() {
        match rule {
            RequestRule::NotEmpty => {
                m.insert("minLength".into(), json!(1));
            }
            RequestRule::NotBlank => {
                m.insert("minLength".into(), json!(1));
                m.insert("pattern".into(), json!(NOT_BLANK));
            }
            RequestRule::AtLeastOne => {
                m.insert("minimum".into(), json!(1));
            }
        }
    }
    v
}

/// `t` spelt with `keys`, and held to the core's rule for `field` of
/// `record` if it has one (only as the core reads it).
fn field_schema(t: &Ty, keys: Keys, record: &str, field: &str) -> Result<Value, String> {
    let v = schema(t, keys)?;
    let rule = REQUEST_RULES
        .iter()
        .find(|&&(r, f, _)| r == record && f == field)
        .map(|&(_, _, rule)| rule);
    Ok(match rule {
        Some(rule) if keys == Keys::Kebab => ruled(v, rule),
        _ => v,
    })
}

fn described(mut v: Value, docs: &str) -> Value {
    if !docs.is_empty()
        && let Some(m) = v.as_object_mut()
    {
        m.insert("description".into(), Value::String(docs.to_owned()));
    }
    v
}

/// `def` spelt with `keys`.
fn definition(def: &Def, keys: Keys, structs: &Structs) -> Result<Value, String> {
    let fail = |e: String| format!("{}: {e}", def.name);
    let out = match def.kind {
        Kind::Enum => {
            let names: Vec<&str> = def.members.iter().map(|m| m.name.as_str()).collect();
            json!({"type": "string", "enum": names})
        }
        Kind::Variant => {
            let mut cases = Vec::new();
            let units: Vec<&str> = def
                .members
                .iter()
                .filter(|m| m.ty.is_none())
                .map(|m| m.name.as_str())
                .collect();
            if !units.is_empty() {
                cases.push(json!({"type": "string", "enum": units}));
            }
            for m in &def.members {
                let Some(t) = &m.ty else { continue };
                let key = keys.key(&m.name);
                cases.push(described(
                    json!({
                        "type": "object",
                        "properties": {key.clone(): field_schema(t, keys, &def.name, &m.name).map_err(fail)?},
                        "required": [key],
                        "additionalProperties": false,
                    }),
                    &m.docs,
                ));
            }
            json!({"oneOf": cases})
        }
        Kind::Record => {
            let read = structs.get(upper_camel(&def.name).as_str());
            if let Some(read) = read {
                let wit: BTreeSet<&str> = def.members.iter().map(|m| m.name.as_str()).collect();
                let core: BTreeSet<&str> = read.fields.iter().copied().collect();
                if wit != core {
                    return Err(fail(format!(
                        "the core's struct has fields {core:?}, the WIT's record {wit:?}"
                    )));
                }
            }
            let mut properties = Map::new();
            let mut required = Vec::new();
            for m in &def.members {
                let t =
                    m.ty.as_ref()
                        .ok_or_else(|| fail(format!("{} has no type", m.name)))?;
                let key = keys.key(&m.name);
                properties.insert(
                    key.clone(),
                    described(
                        field_schema(t, keys, &def.name, &m.name).map_err(fail)?,
                        &m.docs,
                    ),
                );
                let needed = match (read, keys) {
                    (Some(read), _) => read.required.contains(m.name.as_str()),
                    // A record the core has no struct of its own for (a
                    // case's payload, an output built in place): whole when
                    // read, and written whole but for what it may leave out.
                    (None, Keys::Kebab) => true,
                    (None, Keys::Camel) => false,
                };
                if needed {
                    required.push(Value::String(key));
                }
            }
            let mut out = json!({"type": "object", "properties": properties, "required": required});
            // A struct that refuses a field it does not know says so where
            // it is read.
            if keys == Keys::Kebab && read.is_some_and(|r| r.closed) {
                out["additionalProperties"] = Value::Bool(false);
            }
            out
        }
    };
    Ok(described(out, &def.docs))
}

/// Every type of `wit` but `skip`, both spellings, as one JSON object of
/// schemas by name.
pub fn schemas(wit: &Wit, skip: &[&str], structs: &Structs) -> Result<String, String> {
    let mut out = Map::new();
    for keys in [Keys::Kebab, Keys::Camel] {
        for def in wit.defs.iter().filter(|d| !skip.contains(&d.name.as_str())) {
            let name = keys.name(&def.name);
            if !out.contains_key(&name) {
                out.insert(name, definition(def, keys, structs)?);
            }
        }
    }
    serde_json::to_string_pretty(&Value::Object(out))
        .map(|t| t + "\n")
        .map_err(|e| e.to_string())
}
