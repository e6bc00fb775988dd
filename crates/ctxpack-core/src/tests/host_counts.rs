//! Counting by the host: the assembly asks `counter.count-tokens` in
//! rounds, runs again with what it was told, and packs as it would with
//! the same counts from a built-in encoding, asking each store once.

use super::*;
use crate::encoding::O200K;
use crate::tokenizer::{Exact, TokenCounter};

fn o200k(text: &str) -> u32 {
    Exact(&O200K).count(text)
}

/// A host with a knowledge base, a policy that allows everything and a
/// counter that counts as o200k does, writing down what it was asked.
#[derive(Default)]
struct Store {
    docs: Vec<Candidate>,
    /// Every call but the counts, in order.
    asked: Vec<&'static str>,
    /// The texts of each round of counts.
    rounds: Vec<usize>,
    /// Whether it summarises (or the builder cuts instead).
    summaries: bool,
    /// The counter's answer instead of o200k's.
    answer: Option<Result<Vec<u32>, HostError>>,
}

fn doc(i: usize, words: usize) -> Candidate {
    let text: Vec<String> = (0..words)
        .map(|w| {
            format!(
                "{}{}",
                ["refund", "ledger", "café", "🙂", "x=1;"][(w + i) % 5],
                w % 13
            )
        })
        .collect();
    Candidate {
        id: format!("kb-{i:02}"),
        section: Section::RelevantKnowledge,
        text: text.join(" "),
        provenance: Some(Provenance {
            source_kind: "kb".into(),
            reference: format!("kb/{i:02}"),
            source_version: None,
            index_revision: None,
        }),
        trust: if i.is_multiple_of(2) {
            TrustTier::Trusted
        } else {
            TrustTier::Untrusted
        },
        score: Some(1.0 - i as f64 / 100.0),
        sequence: None,
        scope: None,
        token_count: None,
    }
}

impl Host for Store {
    fn retrieve(&mut self, _: &AgentContext, _: &str, _: u32) -> Result<Vec<Candidate>, HostError> {
        self.asked.push("retrieve");
        Ok(self.docs.clone())
    }
    fn review(
        &mut self,
        _: &AgentContext,
        items: &[&Candidate],
    ) -> Result<Vec<Verdict>, HostError> {
        self.asked.push("review");
        Ok(items.iter().map(|_| Verdict::Allow).collect())
    }
    fn summarize(&mut self, r: &[SummaryRequest], _: Tokenizer) -> Result<Vec<String>, HostError> {
        self.asked.push("summarize");
        if !self.summaries {
            return NoHost.summarize(r, Tokenizer::O200kBase);
        }
        Ok(r.iter()
            .map(|_| "In short: refunds take five days.".into())
            .collect())
    }
    fn count_tokens(&mut self, tokenizer: &str, texts: &[String]) -> Result<Vec<u32>, HostError> {
        assert_eq!(tokenizer, "o200k-by-the-host");
        assert!(!texts.is_empty(), "a round with nothing to count");
        self.rounds.push(texts.len());
        match &self.answer {
            Some(answer) => answer.clone(),
            None => Ok(texts.iter().map(|t| o200k(t)).collect()),
        }
    }
}

fn builder(compress: bool) -> Builder {
    Builder::new(BuilderConfig {
        profile: Profile::Rag(RagSettings { retrieve_limit: 40 }),
        plan: Plan {
            compress,
            ..Plan::default()
        },
        ..BuilderConfig::default()
    })
    .unwrap()
}

fn chat(n: usize) -> Vec<ConversationTurn> {
    alternating(n, |i| "how do refunds work, and when? ".repeat(1 + i % 9))
}

#[test]
fn a_host_counter_packs_as_the_encoding_it_counts_with_asking_each_store_once() {
    for compress in [false, true] {
        for budget in [120, 401, 900, 2_501, 9_000] {
            let docs: Vec<Candidate> = (0..12).map(|i| doc(i, 20 + 37 * i)).collect();
            let mut r = request(budget);
            r.conversation = chat(24);
            r.entry_overhead = Some(3);
            r.tokenizer = Some(Tokenizer::O200kBase);
            let mut built_in = Store {
                docs: docs.clone(),
                summaries: budget % 2 == 0,
                ..Store::default()
            };
            let expected = builder(compress).assemble(&r, &mut built_in).unwrap();
            assert!(built_in.rounds.is_empty());

            r.tokenizer = Some(Tokenizer::Host("o200k-by-the-host".into()));
            let mut host = Store {
                docs,
                summaries: budget % 2 == 0,
                ..Store::default()
            };
            let pack = builder(compress).assemble(&r, &mut host).unwrap();
            let at = format!("compress {compress}, budget {budget}");
            // The same stores asked the same things, once each.
            assert_eq!(host.asked, built_in.asked, "{at}");
            assert!(!host.rounds.is_empty(), "{at}");
            // The same pack, but where a text was cut: the host's cut is
            // the longest prefix that fits, on a character boundary, where
            // the encoding's ends on a token boundary.
            let ids = |p: &ContextPack| p.entries.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
            assert_eq!(ids(&pack), ids(&expected), "{at}");
            if !expected
                .snapshot
                .status
                .contains(&SnapshotStatus::Truncated)
            {
                assert_eq!(pack.text, expected.text, "{at}");
                assert_eq!(pack.messages, expected.messages, "{at}");
            }
            // Within the budget as the host counts, recounted apart.
            assert_eq!(pack.snapshot.text_tokens, o200k(&pack.text), "{at}");
            assert!(o200k(&pack.text) <= budget, "{at}");
            let messages: u32 = pack.messages.iter().map(|m| o200k(&m.content) + 3).sum();
            assert!(messages <= budget, "{at}");
            assert_eq!(
                pack.snapshot.tokenizer,
                Tokenizer::Host("o200k-by-the-host".into())
            );
        }
    }
}

#[test]
fn a_long_text_is_cut_by_the_host_in_few_rounds() {
    // One untrusted text of about 60 kB, in a budget it cannot fit whole.
    let mut r = request(700);
    r.tokenizer = Some(Tokenizer::Host("o200k-by-the-host".into()));
    let mut host = Store {
        docs: vec![doc(1, 9_000)],
        ..Store::default()
    };
    let pack = builder(true).assemble(&r, &mut host).unwrap();
    assert!(pack.entries.iter().any(|e| e.id == "kb-01"));
    assert!(pack.snapshot.status.contains(&SnapshotStatus::Truncated));
    assert!(o200k(&pack.text) <= 700);
    // Longest: the budget left after the cut is less than a few tokens.
    assert!(700 - o200k(&pack.text) <= 8, "{}", o200k(&pack.text));
    // ⌈log₁₆ 60,000⌉ + 1 = 5 rounds for the cut, a few for the rest;
    // each round of the cut asks for at most 15 prefixes (and the rest).
    assert!(host.rounds.len() <= 12, "{:?}", host.rounds);
}

#[test]
fn a_counter_that_fails_or_miscounts_fails_the_assembly_naming_it() {
    let mut r = request(300);
    r.tokenizer = Some(Tokenizer::Host("o200k-by-the-host".into()));
    r.conversation = chat(4);
    let failed = |answer: Option<Result<Vec<u32>, HostError>>| {
        let mut host = Store {
            docs: vec![doc(0, 10)],
            answer,
            ..Store::default()
        };
        let error = builder(false).assemble(&r, &mut host).unwrap_err().error;
        // Nothing was asked of the stores on a guess.
        assert!(host.asked.is_empty(), "{:?}", host.asked);
        error
    };
    let quota = HostError::new("counter.count-tokens", "429 from the provider");
    assert_eq!(
        failed(Some(Err(quota))).to_string(),
        "host import `counter.count-tokens` failed: 429 from the provider"
    );
    match failed(Some(Ok(vec![1]))) {
        Error::HostFailed {
            capability,
            message,
        } => {
            assert_eq!(capability, "counter.count-tokens");
            assert!(message.starts_with("answered 1 counts for "), "{message}");
        }
        other => panic!("{other}"),
    }
    // A host that does not count is told what to lend, and where.
    let error = builder(false).assemble(&r, &mut NoHost).unwrap_err().error;
    let message = error.to_string();
    assert!(
        message.starts_with(
            "host import `counter.count-tokens` failed: not provided by this host: the request counts with the host's counter, as "
        ),
        "{message}"
    );
    assert!(
        message.ends_with(
            "lend it (Python: counter=, JavaScript: countTokens, Rust: Host::count_tokens)"
        ),
        "{message}"
    );
}

#[test]
fn counts_are_asked_as_a_step_and_answered_as_json() {
    let builder = std::rc::Rc::new(crate::json::builder("{}").unwrap());
    let request = r#"{
        "context": {"session-id": "s1", "trace-id": "t1"},
        "query": "q", "tokenizer": {"host": "claude"}, "budget": 50,
        "system-prompt": "Answer briefly.",
        "conversation": [{"role": "user", "content": "hello there"}], "keep-last": 4
    }"#;
    let mut a = crate::json::JsonAssembly::start(builder, request);
    let mut step = a.step(None).unwrap();
    let mut rounds = 0;
    while !step.starts_with(r#"{"done":"#) {
        let asked: serde_json::Value = serde_json::from_str(&step).unwrap();
        let calls = asked["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{step}");
        let texts = calls[0]["count-tokens"]["texts"].as_array().unwrap();
        assert_eq!(calls[0]["count-tokens"]["tokenizer"], "claude");
        let counts: Vec<usize> = texts.iter().map(|t| t.as_str().unwrap().len()).collect();
        step = a.step(Some(&format!(r#"[{{"ok": {counts:?}}}]"#))).unwrap();
        rounds += 1;
    }
    assert!(rounds >= 1);
    let reply: serde_json::Value = serde_json::from_str(&step).unwrap();
    let pack: ContextPack = serde_json::from_value(reply["done"]["pack"].clone()).unwrap();
    // One token a byte: the system prompt, and the turn with its blank line.
    assert_eq!(pack.snapshot.text_tokens as usize, pack.text.len());
    assert!(pack.text.contains("hello there"));
}
