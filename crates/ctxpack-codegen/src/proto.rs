//! `stores.proto`: the functions the component imports as gRPC services a
//! store implements, one service per WIT interface and one method per
//! function, with the WIT's types as messages.
//!
//! The mapping, which the service's connector reads back generically
//! (`ctxpack_service::upstream`):
//!
//! - a record is a message, its fields in order from 1, snake_case;
//! - an enum is an enum whose value 0 is `…_UNSPECIFIED` (an answer that
//!   leaves it unset is refused), its cases `TYPE_CASE` from 1;
//! - a variant is a message with one `oneof kind`, a case without payload
//!   holding the empty message `Unit`;
//! - `option<T>` is an `optional` field (a message field for a message);
//! - a method's request holds the function's parameters, the request's
//!   `context` first; its reply holds what the function answers on
//!   success, in `answer`. A failure is a gRPC status, its message the
//!   store's reason.

use crate::wit::{Def, Import, Kind, Ty, Wit, snake, upper_camel};
use std::collections::BTreeSet;

/// The package the stores' services are in.
pub const PACKAGE: &str = "ctxpack.stores.v1";

/// `TRUST_TIER` for `trust-tier`.
fn upper_snake(name: &str) -> String {
    name.replace('-', "_").to_uppercase()
}

/// The named types `ty` needs, into `into`.
fn named(ty: &Ty, into: &mut Vec<String>) {
    match ty {
        Ty::List(t) | Ty::Option(t) => named(t, into),
        Ty::Ref(name) => into.push(name.clone()),
        Ty::Prim(_) | Ty::Other => {}
    }
}

/// Every named type the imports reach, transitively.
fn reached(wit: &Wit) -> Result<BTreeSet<String>, String> {
    let mut todo = Vec::new();
    for import in &wit.imports {
        for (_, ty) in &import.params {
            named(ty, &mut todo);
        }
        named(&import.answer, &mut todo);
    }
    let mut seen = BTreeSet::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let def = wit
            .def(&name)
            .ok_or_else(|| format!("`{name}`: not a named type of the WIT"))?;
        for m in &def.members {
            if let Some(ty) = &m.ty {
                named(ty, &mut todo);
            }
        }
    }
    Ok(seen)
}

fn scalar(prim: &str) -> Result<&'static str, String> {
    Ok(match prim {
        "bool" => "bool",
        "u8" | "u16" | "u32" | "char" => "uint32",
        "u64" => "uint64",
        "s8" | "s16" | "s32" => "int32",
        "s64" => "int64",
        "f32" => "float",
        "f64" => "double",
        "string" => "string",
        other => return Err(format!("`{other}` has no protobuf spelling")),
    })
}

/// A field of type `ty` named `name`, numbered `n`.
fn field(wit: &Wit, name: &str, ty: &Ty, n: usize) -> Result<String, String> {
    let (label, inner) = match ty {
        Ty::List(t) => ("repeated ", t.as_ref()),
        Ty::Option(t) => {
            // A message has presence of its own; a scalar or an enum is
            // `optional`.
            let message = matches!(t.as_ref(), Ty::Ref(r) if wit.def(r).is_some_and(|d| d.kind != Kind::Enum));
            (if message { "" } else { "optional " }, t.as_ref())
        }
        t => ("", t),
    };
    let type_name = match inner {
        Ty::Prim(p) => scalar(p)?.to_string(),
        Ty::Ref(r) => upper_camel(r),
        Ty::List(_) | Ty::Option(_) | Ty::Other => {
            return Err(format!(
                "field `{name}`: a nested list or option has no protobuf spelling"
            ));
        }
    };
    Ok(format!("{label}{type_name} {} = {n};", snake(name)))
}

fn comment(out: &mut Vec<String>, indent: &str, docs: &str) {
    if docs.is_empty() {
        return;
    }
    let mut line = String::new();
    for word in docs.split_whitespace() {
        if !line.is_empty() && indent.len() + 3 + line.len() + 1 + word.len() > 78 {
            out.push(format!("{indent}// {line}"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push(format!("{indent}// {line}"));
}

fn message(wit: &Wit, def: &Def, out: &mut Vec<String>) -> Result<(), String> {
    comment(out, "", &def.docs);
    let name = upper_camel(&def.name);
    match def.kind {
        Kind::Record => {
            out.push(format!("message {name} {{"));
            for (i, m) in def.members.iter().enumerate() {
                comment(out, "  ", &m.docs);
                let ty = m.ty.as_ref().ok_or("a record's field has a type")?;
                out.push(format!("  {}", field(wit, &m.name, ty, i + 1)?));
            }
        }
        Kind::Variant => {
            out.push(format!("message {name} {{"));
            out.push("  oneof kind {".into());
            for (i, m) in def.members.iter().enumerate() {
                comment(out, "    ", &m.docs);
                let line = match &m.ty {
                    None => format!("Unit {} = {};", snake(&m.name), i + 1),
                    Some(ty) => field(wit, &m.name, ty, i + 1)?,
                };
                if line.starts_with("repeated") || line.starts_with("optional") {
                    return Err(format!(
                        "`{}.{}`: a oneof case cannot be a list or an option",
                        def.name, m.name
                    ));
                }
                out.push(format!("    {line}"));
            }
            out.push("  }".into());
        }
        Kind::Enum => {
            let prefix = upper_snake(&def.name);
            out.push(format!("enum {name} {{"));
            out.push(format!("  {prefix}_UNSPECIFIED = 0;"));
            for (i, m) in def.members.iter().enumerate() {
                comment(out, "  ", &m.docs);
                out.push(format!("  {prefix}_{} = {};", upper_snake(&m.name), i + 1));
            }
        }
    }
    out.push("}".into());
    out.push(String::new());
    Ok(())
}

fn rpc(import: &Import) -> String {
    upper_camel(&import.name)
}

/// `crates/ctxpack-service/proto/ctxpack/stores/v1/stores.proto`.
pub fn stores(wit: &Wit) -> Result<String, String> {
    let mut out: Vec<String> = [
        "// The stores `ctxpack serve` calls: each function the component imports",
        "// (wit/world.wit) as a gRPC method a store implements, one service per",
        "// interface. Written by `cargo run -p ctxpack-codegen` from wit/: do not",
        "// edit.",
        "//",
        "// A failure is a gRPC status; its message is recorded as the store's",
        "// reason. A source's or the summariser's failure degrades the assembly;",
        "// the policy's fails it. Every enum's 0 is unspecified: an answer that",
        "// leaves a required enum unset is refused, naming the field. The service",
        "// sends `authorization: Bearer …` when configured with a token, and the",
        "// summariser's calls carry `x-compression-profile`.",
        "syntax = \"proto3\";",
        "",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    out.push(format!("package {PACKAGE};"));
    out.push(String::new());
    let mut interfaces: Vec<&str> = Vec::new();
    for import in &wit.imports {
        if !interfaces.contains(&import.interface.as_str()) {
            interfaces.push(&import.interface);
        }
    }
    for interface in &interfaces {
        out.push(format!("service {} {{", upper_camel(interface)));
        for import in wit.imports.iter().filter(|i| &i.interface == interface) {
            let name = rpc(import);
            out.push(format!(
                "  rpc {name}({name}Request) returns ({name}Reply);"
            ));
        }
        out.push("}".into());
        out.push(String::new());
    }
    for import in &wit.imports {
        let name = rpc(import);
        out.push(format!(
            "// `{}.{}`'s parameters.",
            import.interface, import.name
        ));
        out.push(format!("message {name}Request {{"));
        for (i, (p, ty)) in import.params.iter().enumerate() {
            out.push(format!("  {}", field(wit, p, ty, i + 1)?));
        }
        out.push("}".into());
        out.push(String::new());
        out.push(format!(
            "// What `{}.{}` answers.",
            import.interface, import.name
        ));
        out.push(format!("message {name}Reply {{"));
        out.push(format!("  {}", field(wit, "answer", &import.answer, 1)?));
        out.push("}".into());
        out.push(String::new());
    }
    let reached = reached(wit)?;
    for def in wit.defs.iter().filter(|d| reached.contains(&d.name)) {
        message(wit, def, &mut out)?;
    }
    out.push("// A variant's case without payload.".into());
    out.push("message Unit {}".into());
    Ok(out.join("\n") + "\n")
}
