//! No import circles anywhere in the repository: among the top-level
//! modules of each Rust crate, the Python package's modules and the
//! JavaScript modules of the npm package, the jco host and the
//! playground. A circle means neither side can be read, tested or
//! changed without the other; each module here leans only on modules
//! below it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files(dir: &Path, ext: &str, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !matches!(name, "node_modules" | "target" | "dist" | "out") {
                files(&path, ext, into);
            }
        } else if path.extension().and_then(|e| e.to_str()) == Some(ext) {
            into.push(path);
        }
    }
}

/// The code of `text`, its line comments left out (a doc link is no
/// import).
fn code(text: &str, comment: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with(comment))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The circles of `graph`: its strongly connected components of more than
/// one module (Tarjan's algorithm).
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        w.on.insert(v);
        for next in w.graph.get(v).into_iter().flatten() {
            let next = next.as_str();
            if !w.index.contains_key(next) {
                visit(w, next);
                let l = w.low[next].min(w.low[v]);
                w.low.insert(v, l);
            } else if w.on.contains(next) {
                let l = w.index[next].min(w.low[v]);
                w.low.insert(v, l);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(m) = w.stack.pop() {
                w.on.remove(m);
                component.push(m.to_string());
                if m == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.out.push(component);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.out
}

/// A Rust crate's top-level modules, each leaning on those it names as
/// `crate::module`.
fn rust_crate(src: &Path) -> Graph {
    let mut paths = Vec::new();
    files(src, "rs", &mut paths);
    let module = |p: &Path| -> Option<String> {
        let rel = p.strip_prefix(src).ok()?;
        let first = rel.components().next()?.as_os_str().to_str()?;
        let name = first.trim_end_matches(".rs");
        (!matches!(name, "lib" | "main" | "bin")).then(|| name.to_string())
    };
    let modules: BTreeSet<String> = paths.iter().filter_map(|p| module(p)).collect();
    // What the root re-exports (`pub use budget::{Plan, Shortfall};`): a
    // name used as `crate::Plan` leans on the module that defines it.
    let mut exported: BTreeMap<String, String> = BTreeMap::new();
    for root in ["lib.rs", "main.rs"] {
        let text = code(
            &std::fs::read_to_string(src.join(root)).unwrap_or_default(),
            "//",
        );
        for item in text.split(';') {
            let Some(path) = item.trim().strip_prefix("pub use ") else {
                continue;
            };
            let Some((m, names)) = path.split_once("::") else {
                continue;
            };
            if !modules.contains(m) {
                continue;
            }
            for name in names.split([',', '{', '}', ':']) {
                let name = name.trim();
                if !name.is_empty() {
                    exported.insert(name.to_string(), m.to_string());
                }
            }
        }
    }
    let mut graph = Graph::new();
    for p in &paths {
        let Some(from) = module(p) else { continue };
        let text = code(&std::fs::read_to_string(p).unwrap_or_default(), "//");
        let deps = graph.entry(from.clone()).or_default();
        let mut named = |name: &str| {
            let name = exported.get(name).map_or(name, String::as_str);
            if name != from && modules.contains(name) {
                deps.insert(name.to_string());
            }
        };
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // `use crate::{a::X, b::{Y, Z}}`: every path's first name.
                let group = &group[..group.find("};").unwrap_or(group.len())];
                for part in group.split([',', '{']) {
                    named(part.trim().split("::").next().unwrap_or(""));
                }
            } else {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                named(&rest[..end]);
            }
        }
    }
    graph
}

/// The Python package's modules, each leaning on those it imports
/// relatively (`from ._codec import …`, `from . import types`).
fn python_package(dir: &Path) -> Graph {
    let mut paths = Vec::new();
    files(dir, "py", &mut paths);
    let mut graph = Graph::new();
    for p in &paths {
        let from = p
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .to_string();
        let text = code(&std::fs::read_to_string(p).unwrap_or_default(), "#");
        let deps = graph.entry(from.clone()).or_default();
        for line in text.lines().map(str::trim) {
            let target = if let Some(rest) = line.strip_prefix("from . import ") {
                rest.split([' ', ',']).next()
            } else if let Some(rest) = line.strip_prefix("from .") {
                rest.split(' ').next()
            } else {
                None
            };
            if let Some(t) = target.filter(|t| !t.is_empty() && *t != from) {
                deps.insert(t.to_string());
            }
        }
    }
    graph
}

/// JavaScript modules under `dirs`, each leaning on those it imports by a
/// relative path.
fn javascript(dirs: &[PathBuf]) -> Graph {
    let mut paths = Vec::new();
    for dir in dirs {
        files(dir, "js", &mut paths);
    }
    let mut graph = Graph::new();
    let name = |p: &Path| p.to_string_lossy().into_owned();
    for p in &paths {
        let text = code(&std::fs::read_to_string(p).unwrap_or_default(), "//");
        let from = std::fs::canonicalize(p).unwrap_or(p.clone());
        let deps = graph.entry(name(&from)).or_default();
        for quote in ['\'', '"'] {
            let mut rest = text.as_str();
            while let Some(i) = rest.find(&format!("from {quote}.")) {
                let spec = &rest[i + 6..];
                let end = spec.find(quote).unwrap_or(spec.len());
                let target = p.parent().unwrap_or(Path::new(".")).join(&spec[..end]);
                if let Ok(target) = std::fs::canonicalize(&target) {
                    deps.insert(name(&target));
                }
                rest = &spec[end..];
            }
        }
    }
    graph
}

#[test]
fn no_module_leans_on_a_module_that_leans_on_it() {
    let root = root();
    let mut found = Vec::new();
    let mut crates = vec![root.join("tests/src"), root.join("host-example/src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        crates.push(entry.path().join("src"));
    }
    let mut read = 0;
    for src in &crates {
        let graph = rust_crate(src);
        read += graph.len();
        found.extend(circles(&graph).into_iter().map(|c| (src.clone(), c)));
    }
    assert!(read > 50, "only {read} Rust modules read");
    let python = root.join("hosts/python/src/ctxpack_wasm");
    let graph = python_package(&python);
    assert!(graph["__init__"].contains("_codec"), "{graph:?}");
    found.extend(circles(&graph).into_iter().map(|c| (python.clone(), c)));
    let js = [
        root.join("packages/ctxpack/src"),
        root.join("hosts/jco"),
        root.join("web"),
    ];
    let graph = javascript(&js);
    assert!(
        graph
            .values()
            .any(|d| d.iter().any(|t| t.ends_with("calls.js"))),
        "{graph:?}"
    );
    found.extend(circles(&graph).into_iter().map(|c| (js[0].clone(), c)));
    assert!(found.is_empty(), "import circles: {found:#?}");
}

#[test]
fn a_circle_is_found() {
    let graph: Graph = [
        ("a", &["b"][..]),
        ("b", &["c"]),
        ("c", &["a"]),
        ("d", &["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
    .collect();
    assert_eq!(circles(&graph), vec![vec!["a", "b", "c"]]);
    // And the reader sees one written as Rust does.
    let dir = std::env::temp_dir().join(format!("ctxpack-circles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(dir.join("a.rs"), "use crate::{b::B, c};\n").unwrap();
    std::fs::write(
        dir.join("b.rs"),
        "// crate::a in a comment is no import\npub fn f() { crate::a::g() }\n",
    )
    .unwrap();
    assert_eq!(circles(&rust_crate(&dir)), vec![vec!["a", "b"]]);
    std::fs::write(dir.join("b.rs"), "// crate::a in a comment is no import\n").unwrap();
    assert!(circles(&rust_crate(&dir)).is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}
