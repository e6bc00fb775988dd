//! Tokenizer files through the component: a builder given the files users
//! have (fetched by `tests/tokenizers/fetch`) counts every text of the
//! generated corpus as the file's reference implementation does, under
//! wasmtime as natively, and the two packs are the same byte for byte.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use ctxpack_core::{
    AgentContext, AssembleRequest, Builder, BuilderConfig, ContextPack, NoHost, Section, Tokenizer,
    TokenizerFile,
};
use ctxpack_host::Runtime;
use std::path::Path;

/// One reference file: the tokenizer file, its pattern, and each text
/// with its reference count.
struct Reference {
    name: String,
    file: TokenizerFile,
    cases: Vec<(String, u32)>,
}

/// The reference files `tests/tokenizers/fetch` wrote, if it has run
/// (`CTXPACK_TOKENIZERS`; with `CTXPACK_REQUIRE_TOKENIZERS=1` their
/// absence fails).
fn references() -> Vec<Reference> {
    let Some(dir) = std::env::var_os("CTXPACK_TOKENIZERS") else {
        assert!(
            std::env::var_os("CTXPACK_REQUIRE_TOKENIZERS").is_none(),
            "CTXPACK_TOKENIZERS is not set: run tests/tokenizers/fetch"
        );
        eprintln!("no reference counts: run tests/tokenizers/fetch and set CTXPACK_TOKENIZERS");
        return Vec::new();
    };
    let mut paths: Vec<_> = std::fs::read_dir(Path::new(&dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let record: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(record["file"].as_str().unwrap()).unwrap();
            let cases = record["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    let text = c["text"].as_str().unwrap().to_owned();
                    (text, c["tokens"].as_u64().unwrap() as u32)
                })
                .collect();
            Reference {
                file: TokenizerFile {
                    name: name.clone(),
                    text,
                    pattern: record["pattern"].as_str().map(str::to_owned),
                },
                name,
                cases,
            }
        })
        .collect()
}

/// A request whose mandatory instructions are `texts`, counted with the
/// file named `name`, within a budget they all fit.
fn request(name: &str, texts: &[String]) -> AssembleRequest {
    AssembleRequest {
        context: AgentContext {
            trace_id: "tokenizers".into(),
            ..AgentContext::default()
        },
        query: String::new(),
        tokenizer: Tokenizer::Named(name.into()),
        budget: Some(u32::MAX / 2),
        entry_overhead: 0,
        system_prompt: String::new(),
        workflow: None,
        instructions: texts.to_vec(),
        current_task: None,
        conversation: Vec::new(),
        keep_last: 0,
        conversation_start: None,
        stage_summaries: Vec::new(),
    }
}

/// The tokens of each instruction entry of `pack`, by its text.
fn counted(pack: &ContextPack) -> Vec<(&str, u32)> {
    pack.entries
        .iter()
        .filter(|e| e.section == Section::MandatoryInstructions)
        .map(|e| (e.text.as_str(), e.tokens))
        .collect()
}

#[test]
fn the_component_counts_with_a_file_as_its_reference_does() {
    let references = references();
    if references.is_empty() {
        return;
    }
    let runtime = Runtime::load_bundled().unwrap();
    for r in &references {
        let config = BuilderConfig {
            tokenizers: vec![r.file.clone()],
            plan: ctxpack_core::Plan {
                model_window: Some(u32::MAX),
                ..Default::default()
            },
            ..BuilderConfig::default()
        };
        let native = Builder::new(config.clone()).unwrap();
        let mut instance = runtime.instantiate(NoHost, &config).unwrap().unwrap();
        // Instructions are kept whole and in order; texts that are only
        // whitespace are not instructions, and are left out.
        let texts: Vec<String> = r
            .cases
            .iter()
            .map(|(t, _)| t.clone())
            .filter(|t| !t.trim().is_empty())
            .collect();
        let want: Vec<u32> = r
            .cases
            .iter()
            .filter(|(t, _)| !t.trim().is_empty())
            .map(|&(_, n)| n)
            .collect();
        let request = request(&r.name, &texts);
        let ours = native.assemble(&request, &mut NoHost).unwrap();
        let theirs = instance.assemble(&request).unwrap().unwrap();
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&theirs).unwrap(),
            "{}: the component's pack differs",
            r.name
        );
        let counted = counted(&theirs);
        assert_eq!(counted.len(), texts.len(), "{}", r.name);
        let mut compared = 0;
        for ((text, tokens), (given, &reference)) in counted.iter().zip(texts.iter().zip(&want)) {
            // An instruction whose text the fence changed (a control
            // character removed) is not the text the reference counted.
            if text == given {
                assert_eq!(*tokens, reference, "{}: {given:?}", r.name);
                compared += 1;
            }
        }
        assert!(
            compared * 10 >= texts.len() * 9,
            "{}: {compared} compared",
            r.name
        );
        eprintln!("{}: {compared} texts counted as the reference does", r.name);
    }
}

#[test]
fn a_file_the_component_cannot_read_refuses_the_builder_naming_it() {
    let runtime = Runtime::load_bundled().unwrap();
    let config = BuilderConfig {
        tokenizers: vec![TokenizerFile {
            name: "gemma".into(),
            text: r#"{"model": {"type": "BPE", "byte_fallback": true, "vocab": {}}, "normalizer": null}"#
                .into(),
            pattern: None,
        }],
        ..BuilderConfig::default()
    };
    let refused = runtime.instantiate(NoHost, &config).unwrap().err().unwrap();
    let text = refused.to_string();
    assert!(
        text.contains("config.tokenizers[0].text") && text.contains("byte fallback"),
        "{text}"
    );
}
