//! The WIT read once, with `wit-parser`, into what the writers need: every
//! named record, variant and enum in the order they are written, and every
//! function the component imports.

use std::path::Path;
use wit_parser::{Resolve, Type, TypeDefKind, TypeId, TypeOwner, WorldItem};

/// What a named type is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Record,
    Variant,
    Enum,
}

/// A field's, a case's payload's or a parameter's type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A primitive, by its WIT name (`u32`, `string`).
    Prim(&'static str),
    List(Box<Ty>),
    Option(Box<Ty>),
    /// A named record, variant or enum, by its WIT name.
    Ref(String),
    /// Anything else (a `result`, a handle): no binding spells it.
    Other,
}

/// A record's field, a variant's case or an enum's case.
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    /// `None` for an enum's case and a variant's case without payload.
    pub ty: Option<Ty>,
    /// Its documentation, the lines joined by spaces.
    pub docs: String,
}

/// A named record, variant or enum.
#[derive(Clone, Debug)]
pub struct Def {
    pub kind: Kind,
    pub name: String,
    /// The interface it is declared in.
    pub interface: String,
    pub docs: String,
    pub members: Vec<Member>,
}

/// A function the component imports.
#[derive(Clone, Debug)]
pub struct Import {
    pub interface: String,
    pub name: String,
    pub params: Vec<(String, Ty)>,
    /// What a success answers (the `ok` of its `result`).
    pub answer: Ty,
    /// Whether it is its interface's only function (a host may lend a
    /// plain function for it).
    pub alone: bool,
}

/// The WIT package, as the writers read it.
#[derive(Debug)]
pub struct Wit {
    pub defs: Vec<Def>,
    pub imports: Vec<Import>,
}

impl Wit {
    /// Reads the package in `dir` (`wit/`).
    pub fn read(dir: &Path) -> Result<Wit, String> {
        let mut resolve = Resolve::default();
        let (package, _) = resolve
            .push_dir(dir)
            .map_err(|e| format!("{}: {e:#}", dir.display()))?;
        let mut defs = Vec::new();
        let mut ids: Vec<(TypeId, (String, u32))> = Vec::new();
        for (_, &interface) in &resolve.packages[package].interfaces {
            for (_, &id) in &resolve.interfaces[interface].types {
                let span = resolve.types[id].span;
                if !span.is_known() {
                    continue;
                }
                // `path:line:column`.
                let location = resolve.render_location(span);
                let file = location.rsplitn(3, ':').last().unwrap_or_default();
                ids.push((id, (file.to_string(), span.start())));
            }
        }
        // In the order they are written: the files as they are named
        // (`types.wit`, `world.wit`), each from the top.
        ids.sort_by(|a, b| a.1.cmp(&b.1));
        for (id, _) in ids {
            let def = &resolve.types[id];
            let (Some(name), TypeOwner::Interface(owner)) = (&def.name, def.owner) else {
                continue;
            };
            let interface = resolve.interfaces[owner].name.clone().unwrap_or_default();
            let (kind, members) = match &def.kind {
                TypeDefKind::Record(r) => (
                    Kind::Record,
                    r.fields
                        .iter()
                        .map(|f| Member {
                            name: f.name.clone(),
                            ty: Some(ty(&resolve, &f.ty)),
                            docs: docs(&f.docs),
                        })
                        .collect(),
                ),
                TypeDefKind::Variant(v) => (
                    Kind::Variant,
                    v.cases
                        .iter()
                        .map(|c| Member {
                            name: c.name.clone(),
                            ty: c.ty.as_ref().map(|t| ty(&resolve, t)),
                            docs: docs(&c.docs),
                        })
                        .collect(),
                ),
                TypeDefKind::Enum(e) => (
                    Kind::Enum,
                    e.cases
                        .iter()
                        .map(|c| Member {
                            name: c.name.clone(),
                            ty: None,
                            docs: docs(&c.docs),
                        })
                        .collect(),
                ),
                TypeDefKind::Flags(_) | TypeDefKind::Tuple(_) => {
                    return Err(format!(
                        "`{name}`: flags and tuples have no spelling in the bindings yet"
                    ));
                }
                _ => continue,
            };
            defs.push(Def {
                kind,
                name: name.clone(),
                interface,
                docs: docs(&def.docs),
                members,
            });
        }
        let imports = imports(&resolve, package)?;
        Ok(Wit { defs, imports })
    }

    /// The named type `name`.
    pub fn def(&self, name: &str) -> Option<&Def> {
        self.defs.iter().find(|d| d.name == name)
    }
}

fn ty(resolve: &Resolve, t: &Type) -> Ty {
    let prim = match t {
        Type::Bool => "bool",
        Type::U8 => "u8",
        Type::U16 => "u16",
        Type::U32 => "u32",
        Type::U64 => "u64",
        Type::S8 => "s8",
        Type::S16 => "s16",
        Type::S32 => "s32",
        Type::S64 => "s64",
        Type::F32 => "f32",
        Type::F64 => "f64",
        Type::Char => "char",
        Type::String => "string",
        Type::Id(id) => {
            let def = &resolve.types[*id];
            return match &def.kind {
                TypeDefKind::Type(t) => ty(resolve, t),
                TypeDefKind::List(t) => Ty::List(Box::new(ty(resolve, t))),
                TypeDefKind::Option(t) => Ty::Option(Box::new(ty(resolve, t))),
                TypeDefKind::Record(_) | TypeDefKind::Variant(_) | TypeDefKind::Enum(_) => {
                    match &def.name {
                        Some(name) => Ty::Ref(name.clone()),
                        None => Ty::Other,
                    }
                }
                _ => Ty::Other,
            };
        }
        _ => return Ty::Other,
    };
    Ty::Prim(prim)
}

/// The documentation's lines, each trimmed, joined by spaces.
fn docs(docs: &wit_parser::Docs) -> String {
    docs.contents
        .as_deref()
        .map(|c| c.lines().map(str::trim).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Every function the package's worlds import, in the order they list them.
fn imports(resolve: &Resolve, package: wit_parser::PackageId) -> Result<Vec<Import>, String> {
    let mut imports = Vec::new();
    for (_, &world) in &resolve.packages[package].worlds {
        for (_, item) in &resolve.worlds[world].imports {
            let WorldItem::Interface { id, .. } = item else {
                continue;
            };
            let interface = &resolve.interfaces[*id];
            for (name, f) in &interface.functions {
                let answer = match f.result.map(|t| (t, resolve)) {
                    Some((Type::Id(id), r)) => match &r.types[id].kind {
                        TypeDefKind::Result(result) => result.ok.as_ref().map(|t| ty(r, t)),
                        _ => None,
                    },
                    _ => None,
                };
                let Some(answer) = answer else {
                    return Err(format!(
                        "import `{name}`: a call a host answers gives a `result<T, host-error>`"
                    ));
                };
                imports.push(Import {
                    interface: interface.name.clone().unwrap_or_default(),
                    name: name.clone(),
                    params: f
                        .params
                        .iter()
                        .map(|p| (p.name.clone(), ty(resolve, &p.ty)))
                        .collect(),
                    answer,
                    alone: interface.functions.len() == 1,
                });
            }
        }
    }
    Ok(imports)
}

/// `keep-last` → `KeepLast`.
pub fn upper_camel(name: &str) -> String {
    name.split('-').map(capitalized).collect()
}

/// `keep-last` → `keepLast`.
pub fn lower_camel(name: &str) -> String {
    let mut parts = name.split('-');
    let head = parts.next().unwrap_or_default().to_string();
    head + &parts.map(capitalized).collect::<String>()
}

/// `keep-last` → `keep_last`.
pub fn snake(name: &str) -> String {
    name.replace('-', "_")
}

fn capitalized(part: &str) -> String {
    let mut chars = part.chars();
    match chars.next() {
        Some(c) => c
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}
