//! Every generated spelling of the WIT is what `ctxpack-codegen` writes
//! from today's WIT and core, and the generator notices a change to either.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ctxpack_codegen::{outputs, repository_root, stale};
use std::path::{Path, PathBuf};

#[test]
fn every_generated_file_is_fresh() {
    let root = repository_root();
    let outputs = outputs(&root).unwrap();
    assert_eq!(outputs.len(), 12);
    let stale = stale(&root, &outputs);
    assert!(
        stale.is_empty(),
        "stale, run `cargo run -p ctxpack-codegen`: {stale:?}"
    );
}

/// A copy of the repository's WIT and generated files, `edit` applied to
/// `wit/types.wit`.
fn copy_with(edit: impl Fn(String) -> String) -> PathBuf {
    let root = repository_root();
    let dir = std::env::temp_dir().join(format!(
        "ctxpack-codegen-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut files = vec![
        PathBuf::from("wit/world.wit"),
        PathBuf::from("wit/types.wit"),
    ];
    files.extend(outputs(&root).unwrap().into_iter().map(|o| o.path));
    for file in files {
        let to = dir.join(&file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root.join(&file), &to).unwrap();
    }
    let types = dir.join("wit/types.wit");
    let text = std::fs::read_to_string(&types).unwrap();
    let edited = edit(text.clone());
    assert_ne!(edited, text, "the edit changed nothing");
    std::fs::write(&types, edited).unwrap();
    dir
}

#[test]
fn a_changed_wit_makes_each_spelling_of_it_stale() {
    // A reason's documentation is spelt in Python, TypeScript and the
    // reasons' texts; a case added to an enum in every file; a candidate's
    // field's in the stores' `.proto` too.
    let dir = copy_with(|t| {
        t.replacen(
            "/// Included: it fit the budget.",
            "/// Included: it fit the budget, with room to spare.",
            1,
        )
        .replacen("        l2,\n", "        l2,\n        l3,\n", 1)
        .replacen(
            "        /// The text.\n        text: string,\n        /// Where it came from",
            "        /// The text, as the store has it.\n        text: string,\n        /// Where it came from",
            1,
        )
    });
    let generated = outputs(&dir).unwrap();
    let mut stale = stale(&dir, &generated);
    stale.sort();
    let expect: Vec<PathBuf> = [
        "crates/ctxpack-service/openapi/core-schemas.json",
        "crates/ctxpack-service/proto/ctxpack/stores/v1/stores.proto",
        "crates/ctxpack-wit/src/generated.rs",
        "hosts/python/src/ctxpack_wasm/types.py",
        "packages/ctxpack/src/reasons.js",
        "packages/ctxpack/src/types.d.ts",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(stale, expect);
    let text = |p: &str| {
        generated
            .iter()
            .find(|o| o.path == Path::new(p))
            .unwrap()
            .text
            .clone()
    };
    assert!(text("packages/ctxpack/src/reasons.js").contains("with room to spare"));
    assert!(text("hosts/python/src/ctxpack_wasm/types.py").contains("    L3 = \"l3\""));
    assert!(text("crates/ctxpack-wit/src/generated.rs").contains("[L0, L1, L2, L3]"));
    assert!(text("packages/ctxpack/src/types.d.ts").contains("\"l0\" | \"l1\" | \"l2\" | \"l3\""));
    assert!(
        text("crates/ctxpack-service/proto/ctxpack/stores/v1/stores.proto")
            .contains("  // The text, as the store has it.\n  string text = 3;")
    );
    // The API description's schemas: the new layer, the new field text.
    let schemas: serde_json::Value =
        serde_json::from_str(&text("crates/ctxpack-service/openapi/core-schemas.json")).unwrap();
    assert_eq!(
        schemas["Layer"]["enum"],
        serde_json::json!(["l0", "l1", "l2", "l3"])
    );
    assert!(
        schemas["camel.Candidate"]["properties"]["text"]["description"]
            .as_str()
            .unwrap()
            .starts_with("The text, as the store has it.")
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_record_the_core_reads_otherwise_is_refused_naming_it() {
    // The core's `Candidate` has no `weight`: the TypeScript types could
    // not say which fields the core fills in.
    let dir = copy_with(|t| {
        t.replacen(
            "    record candidate {\n",
            "    record candidate {\n        weight: u32,\n",
            1,
        )
    });
    let Err(e) = outputs(&dir) else {
        panic!("a record the core does not read as the WIT says was spelt");
    };
    assert!(e.starts_with("candidate: "), "{e}");
    assert!(e.contains("\"weight\""), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}
