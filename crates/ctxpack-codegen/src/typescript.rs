//! `packages/ctxpack/src/types.d.ts` and `reasons.js`.
//!
//! Every record becomes an interface with camelCase fields, as the package
//! gives it back (every field present, an `option` as `null`), and an
//! `…Init` interface, as the package accepts it: a field the core fills in
//! when it is left out is optional (the core's own `Deserialize` says
//! which: [`crate::defaults`]). Every enum becomes a union of its
//! kebab-case names, every variant a union of its unit cases' names and one
//! `{caseName: payload}` object per case that carries one.

use crate::defaults::Structs;
use crate::wit::{Def, Kind, Ty, Wit, lower_camel, upper_camel};
use std::collections::{BTreeMap, BTreeSet};

fn ts_type(t: &Ty, init: bool, kinds: &BTreeMap<String, Kind>) -> Result<String, String> {
    Ok(match t {
        Ty::Prim(p) => match *p {
            "string" | "char" => "string",
            "bool" => "boolean",
            _ => "number",
        }
        .to_string(),
        Ty::List(t) => {
            let inner = ts_type(t, init, kinds)?;
            if inner.contains(' ') {
                format!("({inner})[]")
            } else {
                format!("{inner}[]")
            }
        }
        Ty::Option(t) => format!("{} | null", ts_type(t, init, kinds)?),
        Ty::Ref(name) => {
            let cls = upper_camel(name);
            match kinds.get(name) {
                Some(Kind::Record | Kind::Variant) if init => format!("{cls}Init"),
                _ => cls,
            }
        }
        Ty::Other => return Err("a type TypeScript has no spelling for here".into()),
    })
}

fn doc(text: &str, indent: &str) -> Option<String> {
    (!text.is_empty()).then(|| format!("{indent}/** {} */", text.replace("*/", "* /")))
}

/// `types.d.ts`.
pub fn types(wit: &Wit, skip: &[&str], structs: &Structs) -> Result<String, String> {
    let mut out: Vec<String> = [
        "// The WIT's types as the `ctxpack` package gives and takes them.",
        "// Written by `cargo run -p ctxpack-codegen` from wit/*.wit and the",
        "// core's defaults: do not edit.",
        "",
    ]
    .map(String::from)
    .to_vec();
    let mut seen = BTreeSet::new();
    let defs: Vec<_> = wit
        .defs
        .iter()
        .filter(|d| seen.insert(upper_camel(&d.name)))
        .collect();
    let kinds: BTreeMap<String, Kind> = defs.iter().map(|d| (d.name.clone(), d.kind)).collect();
    for def in defs
        .into_iter()
        .filter(|d| !skip.contains(&d.name.as_str()))
    {
        let cls = upper_camel(&def.name);
        let fail = |e: String| format!("{}: {e}", def.name);
        if def.kind == Kind::Enum {
            out.extend(doc(&def.docs, ""));
            let names: Vec<String> = def
                .members
                .iter()
                .map(|m| format!("\"{}\"", m.name))
                .collect();
            out.push(format!("export type {cls} = {};", names.join(" | ")));
            out.push(String::new());
            continue;
        }
        let optional = optional(def, structs).map_err(fail)?;
        for init in [false, true] {
            let name = if init {
                format!("{cls}Init")
            } else {
                cls.clone()
            };
            let what = if init {
                "as the package accepts it"
            } else {
                "as the package gives it"
            };
            if !def.docs.is_empty() {
                out.extend(doc(&format!("{} ({what})", def.docs), ""));
            }
            out.extend(declaration(def, &name, init, &optional, &kinds).map_err(fail)?);
            out.push(String::new());
        }
    }
    out.extend(callbacks(wit, &kinds)?);
    Ok(out.join("\n"))
}

/// The fields of `def` the core fills in when they are left out: none for
/// a record the core has no struct of its own for (a variant's payload, an
/// output built in place).
fn optional<'d>(def: &'d Def, structs: &Structs) -> Result<BTreeSet<&'d str>, String> {
    let Some(read) = structs.get(upper_camel(&def.name).as_str()) else {
        return Ok(BTreeSet::new());
    };
    let wit: BTreeSet<&str> = def.members.iter().map(|m| m.name.as_str()).collect();
    let core: BTreeSet<&str> = read.fields.iter().copied().collect();
    if wit != core {
        return Err(format!(
            "the core's struct has fields {core:?}, the WIT's record {wit:?}"
        ));
    }
    Ok(wit
        .into_iter()
        .filter(|f| !read.required.contains(f))
        .collect())
}

/// The declaration of the record or variant `def` as `name`: as the
/// package accepts it (`init`, the core's optional fields marked) or as it
/// gives it.
fn declaration(
    def: &Def,
    name: &str,
    init: bool,
    optional: &BTreeSet<&str>,
    kinds: &BTreeMap<String, Kind>,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    if def.kind == Kind::Variant {
        out.push(format!("export type {name} ="));
        for m in &def.members {
            let case = match &m.ty {
                None => format!("\"{}\"", m.name),
                Some(t) => format!(
                    "{{ {}: {} }}",
                    lower_camel(&m.name),
                    ts_type(t, init, kinds)?
                ),
            };
            out.push(format!("  | {case}"));
        }
        if let Some(last) = out.last_mut() {
            last.push(';');
        }
    } else {
        out.push(format!("export interface {name} {{"));
        for m in &def.members {
            out.extend(doc(&m.docs, "  "));
            let Some(t) = &m.ty else {
                return Err(format!("field `{}` has no type", m.name));
            };
            let mark = if init && optional.contains(m.name.as_str()) {
                "?"
            } else {
                ""
            };
            // JSON text a caller may give as the value itself (see the
            // Python codegen's `JSON_TEXT`): the package writes its text.
            let text = crate::python::JSON_TEXT.contains(&(def.name.as_str(), m.name.as_str()));
            let ty = match init && text {
                true => "string | unknown".to_owned(),
                false => ts_type(t, init, kinds)?,
            };
            out.push(format!("  {}{mark}: {ty};", lower_camel(&m.name)));
        }
        out.push("}".into());
    }
    Ok(out)
}

/// The `Callbacks` a builder is lent: one optional method per function the
/// component imports, named as the package's steps spell its call, taking
/// its arguments as the package gives them (the context as the request
/// gave it) and answering its `ok` as the package accepts it.
fn callbacks(wit: &Wit, kinds: &BTreeMap<String, Kind>) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = [
        "/** A value, or a Promise of it. */",
        "export type Awaitable<T> = T | PromiseLike<T>;",
        "",
        "/**",
        " * The host's functions a builder is lent, one per function the component",
        " * imports. Each may return its value or a Promise; one it lacks is a",
        " * capability this host does not provide (the review: every item allowed).",
        " * A callback that throws or rejects is that call's failure.",
        " */",
        "export interface Callbacks {",
    ]
    .map(String::from)
    .to_vec();
    for import in &wit.imports {
        let fail = |e: String| format!("import `{}`: {e}", import.name);
        let mut params = Vec::new();
        for (name, ty) in &import.params {
            let t = ts_type(ty, name == "context", kinds).map_err(fail)?;
            params.push(format!("{}: {t}", lower_camel(name)));
        }
        out.push(format!(
            "  {}?({}): Awaitable<{}>;",
            lower_camel(&import.name),
            params.join(", "),
            ts_type(&import.answer, true, kinds).map_err(fail)?
        ));
    }
    out.push("}".into());
    out.push(String::new());
    Ok(out)
}

/// `reasons.js`: each `reason` case's WIT documentation, for
/// `explainReason`.
pub fn reasons(wit: &Wit) -> Result<String, String> {
    let reason = wit
        .def("reason")
        .filter(|d| d.kind == Kind::Variant)
        .ok_or("no `reason` variant in the WIT")?;
    let mut out = vec![
        "// The WIT's documentation of each drop or keep reason. Written by".to_string(),
        "// `cargo run -p ctxpack-codegen` from wit/types.wit: do not edit.".to_string(),
        "export const REASONS = {".to_string(),
    ];
    for m in &reason.members {
        let text = serde_json::to_string(&m.docs).map_err(|e| e.to_string())?;
        out.push(format!("  {}: {text},", lower_camel(&m.name)));
    }
    out.push("};".into());
    out.push(String::new());
    Ok(out.join("\n"))
}
