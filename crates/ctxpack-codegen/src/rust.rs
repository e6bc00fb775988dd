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
