//! The crate's modules import one another without a circle.

/// The files of the crate and the modules each refers to (`crate::name`,
/// `crate::{a, b}`; a submodule's `super::` is its parent), outside
/// comments and tests. A submodule is a node of its own (`snapshot/write`):
/// it may use what its parent's siblings define without making a circle of
/// its parent. The crate root, which names every module, is left out.
fn module_graph() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = std::collections::BTreeMap::new();
    let read = |sources: &mut std::collections::BTreeMap<String, String>,
                folder: &std::path::Path,
                prefix: &str| {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
            if name == "tests" || (prefix.is_empty() && name == "lib") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            sources.insert(format!("{prefix}{name}"), text);
        }
    };
    read(&mut sources, &dir, "");
    let parents: Vec<String> = sources.keys().cloned().collect();
    for parent in &parents {
        if dir.join(parent).is_dir() {
            read(&mut sources, &dir.join(parent), &format!("{parent}/"));
        }
    }
    let names: Vec<String> = sources.keys().cloned().collect();
    sources
        .iter()
        .map(|(name, text)| {
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
            let parent = name.split('/').next().unwrap_or(name);
            let mut uses = std::collections::BTreeSet::new();
            let mut add = |used: &str| {
                if used != name && names.iter().any(|n| n == used) {
                    uses.insert(used.to_owned());
                }
            };
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                if name.contains('/') && line.contains("super::") {
                    add(parent);
                }
                for (at, _) in line.match_indices("crate::") {
                    let rest = &line[at + "crate::".len()..];
                    if let Some(group) = rest.strip_prefix('{') {
                        let group = group.split('}').next().unwrap_or("");
                        group.split(',').for_each(|m| add(m.trim()));
                        continue;
                    }
                    let end = rest
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    add(&rest[..end]);
                }
            }
            (name.clone(), uses)
        })
        .collect()
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = module_graph();
    assert!(graph.len() > 20, "{graph:?}");
    assert!(graph["compress"].contains("budget"), "{graph:?}");
    // The builder runs every stage; a stage does not run the builder.
    for stage in [
        "layer",
        "gather",
        "rank",
        "admit",
        "conversation",
        "budget",
        "policy",
    ] {
        assert!(graph["builder"].contains(stage), "{stage}: {graph:?}");
    }
    for stage in ["compress", "render", "snapshot"] {
        assert!(graph["builder"].contains(stage), "{stage}: {graph:?}");
    }
    // A depth-first walk from each module: meeting a module still on the
    // path is a cycle.
    fn walk<'g>(
        at: &'g str,
        graph: &'g std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<&'g str>,
        done: &mut std::collections::BTreeSet<&'g str>,
    ) {
        if let Some(k) = path.iter().position(|&p| p == at) {
            panic!("import cycle: {} -> {at}", path[k..].join(" -> "));
        }
        if !done.insert(at) {
            return;
        }
        path.push(at);
        for next in &graph[at] {
            walk(next, graph, path, done);
        }
        path.pop();
    }
    let mut done = std::collections::BTreeSet::new();
    for name in graph.keys() {
        walk(name, &graph, &mut Vec::new(), &mut done);
    }
}
