//! Each error worded once, in the core (`ctxpack_core::Error::WORDING`),
//! and written from there for the host packages: the npm package's (which
//! the jco host imports too) and the Python package's. A host's message
//! for an error is then the core's, whichever host raised it.

use ctxpack_core::{Error, NOT_PROVIDED};

/// `packages/ctxpack/src/errors.js`.
pub fn javascript() -> String {
    let mut out = vec![
        "// How each ctxpack-error reads, as the core words it (ctxpack_core::Error::WORDING):"
            .to_string(),
        "// `{name}` is the case's field of that WIT name, `{0}` its one string. Written by"
            .to_string(),
        "// `cargo run -p ctxpack-codegen`: do not edit.".to_string(),
        "export const WORDING = {".to_string(),
    ];
    for (case, template) in Error::WORDING {
        out.push(format!("  '{case}': {},", js_string(template)));
    }
    out.push("};".to_string());
    out.push(String::new());
    out.push("/** The message a host writes for a capability it does not provide. */".to_string());
    out.push(format!(
        "export const NOT_PROVIDED = {};",
        js_string(NOT_PROVIDED)
    ));
    out.push(String::new());
    out.push(
        "const kebab = (name) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);".to_string(),
    );
    out.push(
        "const camel = (name) => name.replace(/-(.)/g, (_, c) => c.toUpperCase());".to_string(),
    );
    out.push(String::new());
    out.push("/**".to_string());
    out.push(
        " * The message of the error case `tag` (its WIT name, or camelCase) with".to_string(),
    );
    out.push(" * `value`, its payload: the one string, or an object of its fields in".to_string());
    out.push(" * camelCase or kebab-case.".to_string());
    out.push(" */".to_string());
    out.push("export function wording(tag, value) {".to_string());
    out.push("  const template = WORDING[kebab(String(tag))];".to_string());
    out.push("  if (template === undefined) return `${tag}: ${typeof value === 'string' ? value : JSON.stringify(value)}`;".to_string());
    out.push("  return template.replace(/\\{([a-z0-9-]+)\\}/g, (whole, name) => {".to_string());
    out.push("    if (name === '0') return String(value);".to_string());
    out.push("    const v = value?.[camel(name)] ?? value?.[name];".to_string());
    out.push("    return v === undefined ? whole : String(v);".to_string());
    out.push("  });".to_string());
    out.push("}".to_string());
    out.join("\n") + "\n"
}

/// `hosts/python/src/ctxpack_wasm/_errors.py`.
pub fn python() -> String {
    let mut out = vec![
        "\"\"\"How each ctxpack-error reads, as the core words it".to_string(),
        "(``ctxpack_core::Error::WORDING``): ``{name}`` is the case's field of that WIT"
            .to_string(),
        "name, ``{0}`` its one string. Written by ``cargo run -p ctxpack-codegen``: do".to_string(),
        "not edit.\"\"\"".to_string(),
        String::new(),
        "import re".to_string(),
        "from typing import Any".to_string(),
        String::new(),
        "WORDING = {".to_string(),
    ];
    for (case, template) in Error::WORDING {
        out.push(format!("    {}: {},", py_string(case), py_string(template)));
    }
    out.push("}".to_string());
    out.push(String::new());
    out.push("NOT_PROVIDED = ".to_string() + &py_string(NOT_PROVIDED));
    out.push(
        "\"\"\"The message a host writes for a capability it does not provide.\"\"\"".to_string(),
    );
    out.push(String::new());
    out.push(String::new());
    out.push("def wording(tag: str, value: Any) -> str:".to_string());
    out.push(
        "    \"\"\"The message of the error case ``tag`` (its WIT name) with ``value``,"
            .to_string(),
    );
    out.push(
        "    its payload: the one string, or an object or dict of its fields.\"\"\"".to_string(),
    );
    out.push("    template = WORDING.get(tag)".to_string());
    out.push("    if template is None:".to_string());
    out.push("        return f\"{tag}: {value}\"".to_string());
    out.push(String::new());
    out.push("    def field(m: \"re.Match[str]\") -> str:".to_string());
    out.push("        name = m.group(1)".to_string());
    out.push("        if name == \"0\":".to_string());
    out.push("            return str(value)".to_string());
    out.push("        if isinstance(value, dict):".to_string());
    out.push("            v = value.get(name, value.get(name.replace(\"-\", \"_\")))".to_string());
    out.push("        else:".to_string());
    out.push("            v = getattr(value, name.replace(\"-\", \"_\"), None)".to_string());
    out.push("        return m.group(0) if v is None else str(v)".to_string());
    out.push(String::new());
    out.push("    return re.sub(r\"\\{([a-z0-9-]+)\\}\", field, template)".to_string());
    out.join("\n") + "\n"
}

fn js_string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn py_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}
