//! Tokenizer files through the component: a builder given the files users
//! have (fetched by `tests/tokenizers/fetch`) counts every text of the
//! generated corpus as the file's reference implementation does, under
//! wasmtime as natively, and the two packs are the same byte for byte.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use ctxpack_conformance::reference;
use ctxpack_core::{
    AgentContext, AssembleRequest, Builder, BuilderConfig, ContextPack, NoHost, Section, Tokenizer,
    TokenizerFile,
};
use ctxpack_host::Runtime;

/// A request whose mandatory instructions are `texts`, counted with the
/// file named `name`, within a budget they all fit.
fn request(name: &str, texts: &[String]) -> AssembleRequest {
    AssembleRequest {
        context: AgentContext {
            trace_id: "tokenizers".into(),
            ..AgentContext::default()
        },
        query: String::new(),
        model: None,
        tokenizer: Some(Tokenizer::Named(name.into())),
        budget: Some(u32::MAX / 2),
        entry_overhead: None,
        reply_overhead: None,
        system_prompt: String::new(),
        workflow: None,
        instructions: texts.to_vec(),
        current_task: None,
        conversation: Vec::new(),
        chat: None,
        keep_last: 0,
        conversation_start: None,
        form: None,
        layout: None,
        stage_summaries: Vec::new(),
        compaction: None,
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
    let Some(references) = reference::all() else {
        return;
    };
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
        let want: Vec<u64> = r
            .cases
            .iter()
            .filter(|(t, _)| !t.trim().is_empty())
            .map(|&(_, n)| n)
            .collect();
        let request = request(&r.file.name, &texts);
        let ours = native.assemble(&request, &mut NoHost).unwrap();
        let theirs = instance.assemble(&request).unwrap().unwrap();
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&theirs).unwrap(),
            "{}: the component's pack differs",
            r.file.name
        );
        let counted = counted(&theirs);
        assert_eq!(counted.len(), texts.len(), "{}", r.file.name);
        let mut compared = 0;
        for ((text, tokens), (given, &reference)) in counted.iter().zip(texts.iter().zip(&want)) {
            // An instruction whose text the fence changed (a control
            // character removed) is not the text the reference counted.
            if text == given {
                assert_eq!(u64::from(*tokens), reference, "{}: {given:?}", r.file.name);
                compared += 1;
            }
        }
        assert!(
            compared * 10 >= texts.len() * 9,
            "{}: {compared} compared",
            r.file.name
        );
        eprintln!(
            "{}: {compared} texts counted as the reference does",
            r.file.name
        );
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
