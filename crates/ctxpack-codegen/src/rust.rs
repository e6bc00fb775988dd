//! `crates/ctxpack-wit/src/generated.rs`: the `wit_conversions!` macro,
//! one `Convert` pair per WIT type of the interfaces the core mirrors, field
//! for field and case for case.

use crate::wit::{Def, Kind, Ty, Wit, snake, upper_camel};
use std::collections::BTreeSet;

/// The interfaces whose types the core mirrors, each with the name the
/// generated bindings' module is used under.
const INTERFACES: &[(&str, &str)] = &[("types", "wit"), ("policy", "policy")];

/// WIT types whose core counterpart is shaped differently: converted by
/// hand in `ctxpack-wit`'s `__shaped_conversions!`.
const SHAPED: &[&str] = &[
    "ctxpack-error",
    "assembly-failure",
    "field-error",
    "mandatory-shortfall",
];

/// WIT types whose core counterpart has another name.
const RENAMED: &[(&str, &str)] = &[("entry-run", "Run")];

fn core_name(wit: &str) -> String {
    RENAMED
        .iter()
        .find(|(w, _)| *w == wit)
        .map(|(_, c)| c.to_string())
        .unwrap_or_else(|| upper_camel(wit))
}

/// The types an import takes that hold a string or a list: wit-bindgen,
/// asked to borrow import parameters, names their owned form `…Result`.
fn borrowed(wit: &Wit) -> BTreeSet<String> {
    fn reach(wit: &Wit, t: &Ty, into: &mut BTreeSet<String>) {
        match t {
            Ty::List(t) | Ty::Option(t) => reach(wit, t, into),
            Ty::Ref(name) => {
                if into.insert(name.clone())
                    && let Some(def) = wit.def(name)
                {
                    for m in &def.members {
                        if let Some(t) = &m.ty {
                            reach(wit, t, into);
                        }
                    }
                }
            }
            Ty::Prim(_) | Ty::Other => {}
        }
    }
    fn owns(wit: &Wit, t: &Ty, seen: &mut BTreeSet<String>) -> bool {
        match t {
            Ty::Prim(p) => *p == "string",
            Ty::List(_) => true,
            Ty::Option(t) => owns(wit, t, seen),
            Ty::Ref(name) => {
                seen.insert(name.clone())
                    && wit.def(name).is_some_and(|d| {
                        d.members
                            .iter()
                            .any(|m| m.ty.as_ref().is_some_and(|t| owns(wit, t, seen)))
                    })
            }
            Ty::Other => false,
        }
    }
    let mut reached = BTreeSet::new();
    for import in &wit.imports {
        for (_, t) in &import.params {
            reach(wit, t, &mut reached);
        }
    }
    reached
        .into_iter()
        .filter(|name| owns(wit, &Ty::Ref(name.clone()), &mut BTreeSet::new()))
        .collect()
}

fn conversion(def: &Def, module: &str, borrowed: &BTreeSet<String>) -> String {
    let core = core_name(&def.name);
    // A borrowed type's generated name is the macro's argument.
    let generated = if borrowed.contains(&def.name) {
        format!("${}", upper_camel(&def.name))
    } else {
        upper_camel(&def.name)
    };
    let head = format!("ctx::{core}, {module}::{generated}");
    match def.kind {
        Kind::Record => {
            let fields: Vec<String> = def.members.iter().map(|m| snake(&m.name)).collect();
            format!(
                "            $crate::__record!({head}, {{ {} }});",
                fields.join(", ")
            )
        }
        Kind::Enum | Kind::Variant => {
            let cases = |payload: bool| -> String {
                def.members
                    .iter()
                    .filter(|m| m.ty.is_some() == payload)
                    .map(|m| upper_camel(&m.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!(
                "            $crate::__cases!({head}, [{}] [{}]);",
                cases(false),
                cases(true)
            )
        }
    }
}

/// The arm that expands every conversion, the generated names of the
/// borrowed types its arguments.
fn arm(wit: &Wit, borrowed: &BTreeSet<String>) -> Vec<String> {
    let params: Vec<String> = borrowed
        .iter()
        .map(|b| format!("${}:ident", upper_camel(b)))
        .collect();
    let mut out = vec![
        format!("    (@ $($root:ident)::+; {}) => {{", params.join(", ")),
        "        #[allow(unused_imports)]".into(),
        "        mod ctxpack_wit_conversions {".into(),
        "            use ::ctxpack_core as ctx;".into(),
    ];
    for (interface, module) in INTERFACES {
        out.push(format!(
            "            use $($root)::+::{interface} as {module};"
        ));
    }
    out.push("            use $crate::Convert as _;".into());
    out.push(String::new());
    out.push("            $crate::__shaped_conversions!();".into());
    for def in &wit.defs {
        let Some((_, module)) = INTERFACES.iter().find(|(i, _)| *i == def.interface) else {
            continue;
        };
        if SHAPED.contains(&def.name.as_str()) {
            continue;
        }
        out.push(conversion(def, module, borrowed));
    }
    out.push("        }".into());
    out.push("    };".into());
    out
}

/// `generated.rs`.
pub fn conversions(wit: &Wit) -> String {
    let borrowed = borrowed(wit);
    let mut out: Vec<String> = [
        "// The conversions between the core's types and the bindings' of the",
        "// WIT. Written by `cargo run -p ctxpack-codegen` from wit/*.wit: do",
        "// not edit.",
        "",
        "/// Expands the conversions between `ctxpack_core` and the generated",
        "/// `types` and `policy` modules named here, e.g.",
        "/// `ctxpack_wit::wit_conversions!(crate::bindings::ctxpack::context);`.",
        "/// The calling crate must depend on `ctxpack-core`.",
        "///",
        "/// Bindings generated with borrowed import parameters (wit-bindgen's",
        "/// `ownership: Borrowing { duplicate_if_necessary: true }`) name the owned",
        "/// form of a record passed to imports `…Result`:",
        "/// `wit_conversions!(… , borrowing)` expands for those names, and the",
        "/// borrowed forms are the calling crate's to fill.",
        "#[macro_export]",
        "macro_rules! wit_conversions {",
    ]
    .map(String::from)
    .to_vec();
    let names = |suffix: &str| -> String {
        borrowed
            .iter()
            .map(|b| format!("{}{suffix}", upper_camel(b)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.push("    ($($root:ident)::+) => {".into());
    out.push(format!(
        "        $crate::wit_conversions!(@ $($root)::+; {});",
        names("")
    ));
    out.push("    };".into());
    out.push("    ($($root:ident)::+, borrowing) => {".into());
    out.push(format!(
        "        $crate::wit_conversions!(@ $($root)::+; {});",
        names("Result")
    ));
    out.push("    };".into());
    out.extend(arm(wit, &borrowed));
    out.push("}".into());
    out.push(String::new());
    out.join("\n")
}

/// How a parameter of an import crosses each adapter, and its owned type
/// in the bindings, the core's type as the `Host` trait takes it.
///
/// Kinds: `str` (a string), `strs` (a list of strings), `copy` (a number
/// or a flag), `candidates` (a list of candidates: the core lends
/// references, as it reviews a subset of what it holds), `records` (a
/// list of another record), `value` (an enum, variant or record: the
/// guest lends it, the wasmtime host converts it).
fn parameter(wit: &Wit, ty: &Ty) -> Result<(&'static str, String, String), String> {
    let binding = |name: &str| -> Result<(String, String), String> {
        let def = wit
            .def(name)
            .ok_or_else(|| format!("`{name}` is not a named type of the WIT"))?;
        Ok((
            format!("imports::{}::{}", snake(&def.interface), upper_camel(name)),
            format!("::ctxpack_core::{}", core_name(name)),
        ))
    };
    Ok(match ty {
        Ty::Prim("string") => ("str", "String".into(), "&str".into()),
        Ty::Prim(p) => ("copy", (*p).into(), (*p).into()),
        Ty::List(inner) => match inner.as_ref() {
            Ty::Prim("string") => ("strs", "Vec<String>".into(), "&[String]".into()),
            Ty::Ref(name) if name == "candidate" => {
                let (wit_ty, core) = binding(name)?;
                (
                    "candidates",
                    format!("Vec<{wit_ty}>"),
                    format!("&[&{core}]"),
                )
            }
            Ty::Ref(name) => {
                let (wit_ty, core) = binding(name)?;
                ("records", format!("Vec<{wit_ty}>"), format!("&[{core}]"))
            }
            other => {
                return Err(format!(
                    "an import takes a list of {other:?}: no adapter passes it"
                ));
            }
        },
        Ty::Ref(name) => {
            let (wit_ty, core) = binding(name)?;
            ("value", wit_ty, core)
        }
        other => return Err(format!("an import takes {other:?}: no adapter passes it")),
    })
}

/// An import's answer as the bindings own it, and as the core's `Host`
/// answers it.
fn answer(wit: &Wit, ty: &Ty) -> Result<(String, String), String> {
    Ok(match ty {
        Ty::Prim("string") => ("String".into(), "String".into()),
        Ty::Prim(p) => ((*p).into(), (*p).into()),
        Ty::List(inner) => {
            let (owned, core) = answer(wit, inner)?;
            (format!("Vec<{owned}>"), format!("Vec<{core}>"))
        }
        Ty::Ref(name) => {
            let def = wit
                .def(name)
                .ok_or_else(|| format!("`{name}` is not a named type of the WIT"))?;
            (
                format!("imports::{}::{}", snake(&def.interface), upper_camel(name)),
                format!("::ctxpack_core::{}", core_name(name)),
            )
        }
        other => return Err(format!("an import answers {other:?}: no adapter passes it")),
    })
}

/// The `wit_capabilities!` macro: every import, grouped by interface, as
/// tokens an adapter's macro expands into its arms.
pub fn capabilities(wit: &Wit) -> Result<String, String> {
    let mut out: Vec<String> = [
        "",
        "/// Calls `$callback!` with every function the component imports, by",
        "/// interface, in the order the WIT lists them, one line each:",
        "///",
        "/// `function Capability [Request] (context) { param: kind [Owned] [Core], … } -> [Owned] [Core];`",
        "///",
        "/// `Capability` is the case of the core's `Call` and of the builder's",
        "/// `call` variant, `Request` that case's record (none when it takes",
        "/// nothing), `(context)` present when the function takes the agent",
        "/// context. Each parameter has a kind (`str`, `strs`, `copy`,",
        "/// `candidates`, `records`, `value`), its type as the bindings own it",
        "/// (under the bindings' `ctxpack::context`, which the adapter names",
        "/// `imports`: `imports::types::Candidate`) and as the",
        "/// core's `Host` takes it; so has the answer. Every adapter between the",
        "/// core and the bindings expands its arms from this, so wiring a",
        "/// capability in is the WIT, the core's `Call` and `Host`, and its stage.",
        "#[macro_export]",
        "macro_rules! wit_capabilities {",
        "    ($callback:ident) => {",
        "        $callback! {",
    ]
    .map(String::from)
    .to_vec();
    let mut interfaces: Vec<&str> = Vec::new();
    for import in &wit.imports {
        if !interfaces.contains(&import.interface.as_str()) {
            interfaces.push(&import.interface);
        }
    }
    for interface in interfaces {
        out.push(format!("            {} {{", snake(interface)));
        for import in wit.imports.iter().filter(|i| i.interface == interface) {
            out.push(
                capability(wit, import).map_err(|e| format!("import `{}`: {e}", import.name))?,
            );
        }
        out.push("            }".into());
    }
    out.extend(["        }", "    };", "}", ""].map(String::from));
    out.extend(answers(wit)?);
    Ok(out.join("\n"))
}

/// One import's line of `wit_capabilities!`.
fn capability(wit: &Wit, import: &crate::wit::Import) -> Result<String, String> {
    let mut context = "";
    let mut params = Vec::new();
    for (name, ty) in &import.params {
        if *ty == Ty::Ref("agent-context".into()) {
            context = "context";
            continue;
        }
        let (kind, owned, core) = parameter(wit, ty)?;
        params.push(format!("{}: {kind} [{owned}] [{core}]", snake(name)));
    }
    let request = if params.is_empty() {
        String::new()
    } else {
        format!("{}Request", upper_camel(&import.name))
    };
    let (owned, core) = answer(wit, &import.answer)?;
    let params = if params.is_empty() {
        "{}".to_string()
    } else {
        format!("{{ {} }}", params.join(", "))
    };
    Ok(format!(
        "                {} {} [{request}] ({context}) {params} -> [{owned}] [{core}];",
        snake(&import.name),
        upper_camel(&import.name),
    ))
}

/// The `wit_answers!` macro, from the step protocol's `answer` variant.
fn answers(wit: &Wit) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let answers = wit
        .defs
        .iter()
        .find(|d| d.name == "answer" && d.kind == Kind::Variant)
        .ok_or("the WIT has no `answer` variant for the step protocol")?;
    let cases: Vec<String> = answers
        .members
        .iter()
        .map(|m| upper_camel(&m.name))
        .collect();
    out.extend(
        [
            "/// Both directions between the core's `Answer` and the step protocol's",
            "/// `answer` variant, one case per kind of answer, for a module that",
            "/// names the core `ctx` and the builder's bindings `exported`.",
            "#[macro_export]",
            "macro_rules! wit_answers {",
            "    () => {",
        ]
        .map(String::from),
    );
    out.push(format!(
        "        $crate::__cases!(ctx::Answer, exported::Answer, [] [{}]);",
        cases.join(", ")
    ));
    out.extend(["    };", "}", ""].map(String::from));
    Ok(out)
}
