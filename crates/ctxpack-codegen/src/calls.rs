//! The table each JSON driver dispatches a step's calls through, one
//! entry per function the component imports: a call is keyed by the
//! import's name and carries its arguments but the context, named as its
//! parameters (see `ctxpack_core::json`). A driver finds the host's
//! function for it here, or answers that the call is not one it knows.

use crate::python::schema_type;
use crate::wit::{Import, Ty, Wit, lower_camel, snake};

/// Whether the import's first parameter is the request's context, which
/// a call does not carry.
fn takes_context(import: &Import) -> bool {
    matches!(import.params.first(), Some((name, Ty::Ref(ty))) if name == "context" && ty == "agent-context")
}

/// The parameters a call carries.
fn carried(import: &Import) -> &[(String, Ty)] {
    &import.params[usize::from(takes_context(import))..]
}

/// `packages/ctxpack/src/calls.js`, keyed as the package's steps spell
/// the calls (camelCase).
pub fn javascript(wit: &Wit) -> String {
    let mut out = vec![
        "// The calls a step may ask for, one per function the component imports:".to_string(),
        "// the capability it stands for, whether its callback takes the request's".to_string(),
        "// context first, and its arguments in order. Written by".to_string(),
        "// `cargo run -p ctxpack-codegen` from wit/world.wit: do not edit.".to_string(),
        "export const CALLS = {".to_string(),
    ];
    for import in &wit.imports {
        let params: Vec<String> = carried(import)
            .iter()
            .map(|(p, _)| format!("'{}'", lower_camel(p)))
            .collect();
        out.push(format!(
            "  {}: {{ capability: '{}.{}', context: {}, params: [{}] }},",
            lower_camel(&import.name),
            import.interface,
            import.name,
            takes_context(import),
            params.join(", ")
        ));
    }
    out.push("};".into());
    out.push(String::new());
    out.push("// The sources each profile may call (with its settings at their".into());
    out.push("// fullest), from the core's `Profile::sources`.".into());
    out.push(format!(
        "export const DEFAULT_PROFILE = '{}';",
        default_profile()
    ));
    out.push("export const PROFILES = {".into());
    for (name, sources) in profiles() {
        let quoted: Vec<String> = sources.iter().map(|c| format!("'{c}'")).collect();
        out.push(format!("  '{name}': [{}],", quoted.join(", ")));
    }
    out.push("};".into());
    out.push(String::new());
    out.join("\n")
}

/// The profile of a configuration that names none.
fn default_profile() -> String {
    ctxpack_core::Profile::default().name()
}

/// Each profile by the name the configuration gives it, with the sources
/// it may call when its settings call every one they can.
pub fn profiles() -> Vec<(String, Vec<&'static str>)> {
    use ctxpack_core::{FullSettings, Profile, RagMemorySettings, RagSettings};
    let fullest = [
        Profile::Passthrough,
        Profile::Rag(RagSettings { retrieve_limit: 1 }),
        Profile::RagMemory(RagMemorySettings {
            retrieve_limit: 1,
            memory_limit: 1,
        }),
        Profile::Full(FullSettings {
            retrieve_limit: 1,
            graph_depth: 1,
            memory_limit: 1,
            repository_state: true,
        }),
    ];
    fullest
        .into_iter()
        .map(|p| (p.name(), p.sources()))
        .collect()
}

/// `hosts/python/src/ctxpack_wasm/_calls.py`, keyed as the steps spell
/// the calls (kebab-case).
pub fn python(wit: &Wit) -> String {
    let mut out: Vec<String> = [
        "\"\"\"The calls a step may ask for, one per function the component imports.",
        "Written by `cargo run -p ctxpack-codegen` from `wit/world.wit`: do not",
        "edit.\"\"\"",
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, NamedTuple, Tuple",
        "",
        "",
        "class Call(NamedTuple):",
        "    \"\"\"How a host answers one call.\"\"\"",
        "",
        "    interface: str",
        "    \"\"\"The interface that lends it: the keyword argument the host's object",
        "    for it is given as (``sources``, ``policy``, ``summarizer``).\"\"\"",
        "    capability: str",
        "    \"\"\"As a host error names it (``sources.retrieve``).\"\"\"",
        "    method: str",
        "    \"\"\"The host object's method.\"\"\"",
        "    alone: bool",
        "    \"\"\"The interface's only function: a plain function may lend it.\"\"\"",
        "    context: bool",
        "    \"\"\"Whether it takes the request's context first.\"\"\"",
        "    params: Tuple[Tuple[str, Any], ...]",
        "    \"\"\"Its arguments in order: each key in the call and WIT type.\"\"\"",
        "    answer: Any",
        "    \"\"\"The WIT type of what it answers.\"\"\"",
        "",
        "",
        "CALLS = {",
    ]
    .map(String::from)
    .to_vec();
    for import in &wit.imports {
        let params: Vec<String> = carried(import)
            .iter()
            .map(|(p, t)| format!("(\"{p}\", {})", schema_type(t)))
            .collect();
        // A tuple of one needs its comma.
        let comma = if params.len() == 1 { "," } else { "" };
        out.push(format!(
            "    \"{}\": Call(\"{}\", \"{}.{}\", \"{}\", {}, {}, ({}), {}),",
            import.name,
            import.interface,
            import.interface,
            import.name,
            snake(&import.name),
            if import.alone { "True" } else { "False" },
            if takes_context(import) {
                "True"
            } else {
                "False"
            },
            params.join(", ") + comma,
            schema_type(&import.answer)
        ));
    }
    out.push("}".into());
    out.push(String::new());
    out.push("# The sources each profile may call (with its settings at their".into());
    out.push("# fullest), from the core's `Profile::sources`.".into());
    out.push(format!("DEFAULT_PROFILE = \"{}\"", default_profile()));
    out.push("PROFILES = {".into());
    for (name, sources) in profiles() {
        let quoted: Vec<String> = sources.iter().map(|c| format!("\"{c}\"")).collect();
        let comma = if quoted.len() == 1 { "," } else { "" };
        out.push(format!("    \"{name}\": ({}{comma}),", quoted.join(", ")));
    }
    out.push("}".into());
    out.push(String::new());
    out.join("\n")
}
