//! The capabilities a host lends, as data: one per function the
//! component imports, written for the core (`Capability`), from which the
//! host traits' defaults, the snapshot's call records, the service's
//! upstream table and the fixture store read their names.

use crate::wit::{Wit, upper_camel};

/// `crates/ctxpack-core/src/capability.rs`.
pub fn rust(wit: &Wit) -> String {
    let mut out = vec![
        "//! The functions a host lends the core, one per import of".to_string(),
        "//! `wit/world.wit`, in the order it lists them. Written by".to_string(),
        "//! `cargo run -p ctxpack-codegen`: do not edit.".to_string(),
        String::new(),
        "/// One function the host lends: an import of the component.".to_string(),
        "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]".to_string(),
        "pub enum Capability {".to_string(),
    ];
    for import in &wit.imports {
        out.push(format!("    /// `{}.{}`.", import.interface, import.name));
        out.push(format!("    {},", upper_camel(&import.name)));
    }
    out.push("}".to_string());
    out.push(String::new());
    out.push("impl Capability {".to_string());
    out.push("    /// Every capability, in the order the WIT lists them.".to_string());
    out.push(format!(
        "    pub const ALL: [Capability; {}] = [",
        wit.imports.len()
    ));
    for import in &wit.imports {
        out.push(format!(
            "        Capability::{},",
            upper_camel(&import.name)
        ));
    }
    out.push("    ];".to_string());
    out.push(String::new());
    out.push(
        "    /// Its name, the interface's and the function's: `sources.retrieve`.".to_string(),
    );
    out.push("    pub const fn name(self) -> &'static str {".to_string());
    out.push("        match self {".to_string());
    for import in &wit.imports {
        out.push(format!(
            "            Capability::{} => \"{}.{}\",",
            upper_camel(&import.name),
            import.interface,
            import.name
        ));
    }
    out.push("        }".to_string());
    out.push("    }".to_string());
    out.push(String::new());
    out.push("    /// The function's name alone: `retrieve`.".to_string());
    out.push("    pub const fn function(self) -> &'static str {".to_string());
    out.push("        match self {".to_string());
    for import in &wit.imports {
        out.push(format!(
            "            Capability::{} => \"{}\",",
            upper_camel(&import.name),
            import.name
        ));
    }
    out.push("        }".to_string());
    out.push("    }".to_string());
    out.push(String::new());
    out.push(
        "    /// The capability whose [`Capability::name`] or [`Capability::function`] is `name`."
            .to_string(),
    );
    out.push("    pub fn named(name: &str) -> Option<Capability> {".to_string());
    out.push("        Capability::ALL".to_string());
    out.push("            .into_iter()".to_string());
    out.push("            .find(|c| c.name() == name || c.function() == name)".to_string());
    out.push("    }".to_string());
    out.push("}".to_string());
    out.push(String::new());
    out.push("impl std::fmt::Display for Capability {".to_string());
    out.push(
        "    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {".to_string(),
    );
    out.push("        f.write_str(self.name())".to_string());
    out.push("    }".to_string());
    out.push("}".to_string());
    out.join("\n") + "\n"
}
