//! A counter of the application's own, given to the builder by name:
//! requests and profiles count with it, and a text is cut to fit by
//! counting alone.

use super::*;
use crate::tokenizer::TokenCounter;
use crate::types::ModelProfile;
use std::sync::atomic::{AtomicU32, Ordering};

/// One token a word (a run of non-space characters): a counter that can
/// only count, as a function of the user's is.
#[derive(Default)]
struct Words {
    calls: AtomicU32,
}

impl TokenCounter for Words {
    fn count(&self, text: &str) -> u32 {
        self.calls.fetch_add(1, Ordering::Relaxed);
        text.split_whitespace().count() as u32
    }
}

fn words(text: &str) -> u32 {
    text.split_whitespace().count() as u32
}

fn chat(n: usize) -> Vec<ConversationTurn> {
    alternating(n, |i| "word ".repeat(1 + i % 7))
}

#[test]
fn a_text_is_cut_to_fit_by_counting_alone_in_few_counts() {
    let counter = Words::default();
    let text = "one two three four five six seven eight nine ten";
    for max in 0..=11 {
        counter.calls.store(0, Ordering::Relaxed);
        let cut = counter.truncate(text, max);
        assert!(text.starts_with(&cut));
        assert!(words(&cut) <= max, "{max}: {cut:?}");
        // The longest: one more character would count more (or it is all).
        if cut.len() < text.len() {
            let next = text[cut.len()..].chars().next().unwrap();
            assert!(
                words(&text[..cut.len() + next.len_utf8()]) > max,
                "{max}: {cut:?}"
            );
        }
        // ⌈log₂ 50⌉ + 1.
        assert!(counter.calls.load(Ordering::Relaxed) <= 7, "{max}");
    }
    // On character boundaries, whatever the bytes.
    let text = "é ü 🙂 ñ ß ø";
    for max in 0..=6 {
        assert!(words(&counter.truncate(text, max)) <= max);
    }
}

#[test]
fn a_request_counts_with_a_counter_the_builder_was_given() {
    let house = ModelProfile {
        name: "house".into(),
        tokenizer: Tokenizer::Named("words".into()),
        context_window: 1_000,
        output_reserve: 100,
        message_overhead: 2,
        reply_overhead: 0,
        cache_min_tokens: None,
        images: None,
    };
    let config = BuilderConfig {
        models: vec![house],
        ..BuilderConfig::default()
    };
    let counters: Vec<(String, Box<dyn TokenCounter + Send + Sync>)> =
        vec![("words".into(), Box::new(Words::default()))];
    let builder = Builder::with_counters(config, counters).unwrap();
    for budget in [6, 17, 40, 400] {
        let mut r = request(budget);
        r.tokenizer = Some(Tokenizer::Named("words".into()));
        r.conversation = chat(30);
        let pack = builder.assemble(&r, &mut NoHost).unwrap();
        // Recounted apart from ctxpack: the text whole, and the messages.
        assert_eq!(pack.snapshot.text_tokens, words(&pack.text));
        let messages: u32 = pack.messages.iter().map(|m| words(&m.content)).sum();
        assert_eq!(pack.snapshot.message_tokens, messages);
        assert!(
            words(&pack.text) <= budget && messages <= budget,
            "{budget}"
        );
        assert!(pack.budget_used <= budget);
    }
    // Through a model's profile that names it.
    let mut r = request(40);
    r.tokenizer = None;
    r.budget = None;
    r.model = Some("house".into());
    r.conversation = chat(30);
    let pack = builder.assemble(&r, &mut NoHost).unwrap();
    assert_eq!(pack.snapshot.tokenizer, Tokenizer::Named("words".into()));
    let messages: u32 = pack.messages.iter().map(|m| words(&m.content) + 2).sum();
    assert_eq!(pack.snapshot.message_tokens, messages);
}

#[test]
fn a_counters_name_must_be_its_own() {
    let refused = |name: &str, config: BuilderConfig| {
        let counters: Vec<(String, Box<dyn TokenCounter + Send + Sync>)> = vec![
            ("words".into(), Box::new(Words::default())),
            (name.into(), Box::new(Words::default())),
        ];
        match Builder::with_counters(config, counters) {
            Err(Error::InvalidField { field, message }) => (field, message),
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("{name:?} was taken"),
        }
    };
    let (field, message) = refused("words", BuilderConfig::default());
    assert_eq!(field, "counters[1]");
    assert!(message.contains("\"words\" names a tokenizer the builder has already"));
    let (field, _) = refused(" ", BuilderConfig::default());
    assert_eq!(field, "counters[1]");
}
