//! Tokenizer files through the public face: the files users have held to
//! their reference implementations, and a builder counting with a file it
//! was given, by name.

use crate::tokenizer::{Count, LoadedTokenizer, TokenCounter};
use std::path::Path;

/// The reference counts `tests/tokenizers/fetch` writes, if it has run
/// (`CTXPACK_TOKENIZERS` names its directory; with
/// `CTXPACK_REQUIRE_TOKENIZERS=1` the test fails without it).
#[test]
fn loaded_files_count_as_their_reference_implementations() {
    let Some(dir) = std::env::var_os("CTXPACK_TOKENIZERS") else {
        assert!(
            std::env::var_os("CTXPACK_REQUIRE_TOKENIZERS").is_none(),
            "CTXPACK_TOKENIZERS is not set: run tests/tokenizers/fetch"
        );
        eprintln!("no reference counts: run tests/tokenizers/fetch and set CTXPACK_TOKENIZERS");
        return;
    };
    let mut seen = 0;
    let mut entries: Vec<_> = std::fs::read_dir(Path::new(&dir))
        .unwrap()
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(entry.path()).unwrap()).unwrap();
        let file = std::fs::read(record["file"].as_str().unwrap()).unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let counter = LoadedTokenizer::from_file(&file, record["pattern"].as_str())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let cases = record["cases"].as_array().unwrap();
        for (i, case) in cases.iter().enumerate() {
            let text = case["text"].as_str().unwrap();
            let want = case["tokens"].as_u64().unwrap() as u32;
            assert_eq!(counter.count(text), want, "{name} #{i} {text:?}");
            // In chunks, and stopping early once over a limit.
            let whole = counter.count_up_to(text, u32::MAX);
            assert_eq!(whole, Count::Exact(want), "{name} #{i}");
            let half = counter.count_up_to(text, want / 2);
            assert!(
                half == Count::Exact(want)
                    || matches!(half, Count::Over(n) if n >= want / 2 && n < want),
                "{name} #{i} up to {}: {half:?}",
                want / 2
            );
            assert!(counter.at_least(text) <= want, "{name} #{i} floor");
            // Cut at a token boundary: the whole text fits its count, and
            // a cut one token shorter is shorter and counts less.
            assert_eq!(counter.truncate(text, want), text, "{name} #{i}");
            if want > 0 {
                let cut = counter.truncate(text, want - 1);
                assert!(
                    cut.len() < text.len() && counter.count(&cut) < want,
                    "{name} #{i} cut"
                );
            }
        }
        eprintln!("{name}: {} texts agree", cases.len());
        seen += 1;
    }
    assert!(seen >= 4, "{seen} reference files in {dir:?}");
}

/// A request that counts with `tokenizer`, with a conversation of turns
/// in several scripts and a budget only some of them fit.
fn conversation_request(tokenizer: crate::Tokenizer) -> crate::AssembleRequest {
    let turns: Vec<String> = (0..12)
        .map(|i| {
            format!(
                "turn {i}: naïve café, 東京 and 🙂 — don't stop; x{}",
                "y".repeat(i * 7)
            )
        })
        .collect();
    let request = serde_json::json!({
        "context": {"trace-id": "t", "session-id": "s"}, "query": "q",
        "tokenizer": "o200k-base", "budget": 160, "entry-overhead": 3,
        "system-prompt": "You are terse.", "keep-last": 12,
        "conversation": turns.iter().enumerate().map(|(i, t)| serde_json::json!({
            "role": if i % 2 == 0 { "user" } else { "assistant" }, "content": t
        })).collect::<Vec<_>>(),
    });
    let mut request: crate::AssembleRequest = serde_json::from_value(request).unwrap();
    request.tokenizer = Some(tokenizer);
    request
}

#[test]
fn a_builder_counts_with_a_file_it_was_given_by_name() {
    #[cfg(feature = "o200k")]
    let (builtin, name) = (&crate::encoding::O200K, "o200k");
    #[cfg(not(feature = "o200k"))]
    let (builtin, name) = (&crate::encoding::CL100K, "cl100k");
    let file = crate::TokenizerFile {
        name: "my-model".into(),
        text: String::from_utf8(builtin.rank_file()).unwrap(),
        pattern: Some(name.into()),
    };
    let config = crate::BuilderConfig {
        tokenizers: vec![file.clone()],
        ..crate::BuilderConfig::default()
    };
    let builder = crate::Builder::new(config).unwrap();
    let builtin_tokenizer = if name == "o200k" {
        crate::Tokenizer::O200kBase
    } else {
        crate::Tokenizer::Cl100kBase
    };
    let by_name = builder
        .assemble(
            &conversation_request(crate::Tokenizer::Named("my-model".into())),
            &mut crate::NoHost,
        )
        .unwrap();
    let built_in = builder
        .assemble(&conversation_request(builtin_tokenizer), &mut crate::NoHost)
        .unwrap();
    // The same tokens, so the same pack; only the snapshot's tokenizer
    // differs.
    assert_eq!(by_name.text, built_in.text);
    assert_eq!(by_name.budget_used, built_in.budget_used);
    assert!(by_name.budget_used <= 160);
    assert!(by_name.messages.len() < 13, "the budget must drop turns");
    assert_eq!(
        by_name.snapshot.tokenizer,
        crate::Tokenizer::Named("my-model".into())
    );

    // A name no file was given under is refused, naming those there are.
    let unknown = builder
        .assemble(
            &conversation_request(crate::Tokenizer::Named("llama".into())),
            &mut crate::NoHost,
        )
        .unwrap_err();
    let text = unknown.error.to_string();
    assert!(
        text.contains("\"llama\"") && text.contains("it was given my-model"),
        "{text}"
    );
    let none = crate::Builder::new(crate::BuilderConfig::default())
        .unwrap()
        .assemble(
            &conversation_request(crate::Tokenizer::Named("x".into())),
            &mut crate::NoHost,
        )
        .unwrap_err();
    assert!(
        none.error.to_string().contains("given no tokenizer files"),
        "{}",
        none.error
    );

    // A bad file, an empty or repeated name refuse the builder, naming
    // the field.
    let refused = |files: Vec<crate::TokenizerFile>| {
        let config = crate::BuilderConfig {
            tokenizers: files,
            ..crate::BuilderConfig::default()
        };
        crate::Builder::new(config).err().unwrap().to_string()
    };
    let bad = crate::TokenizerFile {
        name: "other".into(),
        text: "{\"model\": {\"type\": \"Unigram\"}}".into(),
        pattern: None,
    };
    let e = refused(vec![file.clone(), bad]);
    assert!(
        e.contains("config.tokenizers[1].text") && e.contains("Unigram"),
        "{e}"
    );
    let e = refused(vec![file.clone(), file.clone()]);
    assert!(
        e.contains("config.tokenizers[1].name") && e.contains("an earlier file"),
        "{e}"
    );
    let blank = crate::TokenizerFile {
        name: " ".into(),
        ..file
    };
    assert!(refused(vec![blank.clone()]).contains("config.tokenizers[0].name"));
    // A pattern that is no pattern, or given to a file that carries its
    // own, is the pattern's fault: named so, with the nearest names.
    let misspelt = crate::TokenizerFile {
        name: "mine".into(),
        pattern: Some("O200K-base".into()),
        ..blank.clone()
    };
    let e = refused(vec![misspelt]);
    assert!(
        e.contains("config.tokenizers[0].pattern") && e.contains("nearest: o200k,"),
        "{e}"
    );
    let given_to_json = crate::TokenizerFile {
        name: "mine".into(),
        text: "{\"model\": {\"type\": \"BPE\"}}".into(),
        pattern: Some("o200k".into()),
    };
    assert!(refused(vec![given_to_json]).contains("config.tokenizers[0].pattern"));
    // A built-in tokenizer's name is not a file's.
    let built_in_name = crate::TokenizerFile {
        name: "o200k-base".into(),
        ..blank
    };
    let e = refused(vec![built_in_name]);
    assert!(
        e.contains("config.tokenizers[0].name") && e.contains("built-in"),
        "{e}"
    );
}
