//! Properties of the core over generated requests and host answers (see
//! `ctxpack_conformance::generate`): the invariants hold for every input,
//! not only for the corpus.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use ctxpack_conformance::generate::{Source, scenario};
use ctxpack_conformance::invariants::{self, Sent};
use ctxpack_core::{ConversationTurn, Error, Origin, Role, Tokenizers};
use ctxpack_host::stores::Answer;
use ctxpack_host::{Outcome, Reply, Scenario, run_native};
use proptest::prelude::*;
use std::collections::HashMap;

fn generated(seed: u64) -> Scenario {
    scenario(&mut Source::seeded(seed))
}

/// Checks `outcome` of `s`: the invariants of a pack or of a failure, and
/// what the generated host answers say must hold.
fn check(name: &str, s: &Scenario, outcome: &Outcome) {
    let pack = match &outcome.reply {
        Reply::Failed(f) => {
            invariants::check_failure(name, &s.request, f);
            // Refusals for generated input: L0 over the budget, the policy
            // failing, or an invalid request or configuration (with no
            // snapshot).
            match &f.error {
                Error::MandatoryOverBudget {
                    mandatory_tokens,
                    budget,
                } => assert!(*mandatory_tokens > u64::from(*budget), "{name}"),
                Error::HostFailed { capability, .. } => {
                    assert_eq!(capability, "policy.review", "{name}")
                }
                Error::InvalidField { .. } => assert!(f.snapshot.is_none(), "{name}"),
                other => panic!("{name}: {other}"),
            }
            return;
        }
        reply => match reply.pack() {
            Some(p) => p,
            None => return,
        },
    };
    invariants::check(name, &s.request, pack, &Tokenizers);
    let denied: Vec<&String> = s
        .host
        .policy
        .as_ref()
        .map(|p| p.deny.keys().collect())
        .unwrap_or_default();
    for e in pack.snapshot.entries.iter().filter(|e| e.included) {
        if e.origin == Origin::Request || e.origin == Origin::Summary {
            continue;
        }
        assert!(!denied.contains(&&e.id), "{name}: {} was denied", e.id);
        // An included host item was answered with provenance, in scope.
        let answers = [
            &s.host.retrieve,
            &s.host.expand_graph,
            &s.host.recall_memory,
            &s.host.repository_state,
        ];
        let ok = answers.iter().any(|a| match a {
            Some(Answer::Items(items) | Answer::AllItems(items)) => items.iter().any(|c| {
                c.id == e.id
                    && c.provenance.is_some()
                    && c.scope
                        .as_ref()
                        .is_none_or(|sc| s.request.context.scopes.contains(sc))
            }),
            _ => false,
        });
        assert!(ok, "{name}: {} included without provenance or scope", e.id);
    }
    // A text marked compressed was changed: an included host text cut to
    // a token boundary is shorter than every text its id was answered
    // with (or redacted to).
    for (e, origin) in pack.entries.iter().zip(invariants::origins(pack)) {
        let compressed = pack
            .snapshot
            .entries
            .iter()
            .any(|x| x.included && x.id == e.id && x.compressed);
        if !compressed || origin == Origin::Request || origin == Origin::Summary {
            continue;
        }
        let body = invariants::framed_parts(e, origin)[1];
        let mut texts: Vec<&str> = [
            &s.host.retrieve,
            &s.host.expand_graph,
            &s.host.recall_memory,
            &s.host.repository_state,
        ]
        .iter()
        .filter_map(|a| match a {
            Some(Answer::Items(items) | Answer::AllItems(items)) => Some(items),
            _ => None,
        })
        .flatten()
        .filter(|c| c.id == e.id)
        .map(|c| c.text.as_str())
        .collect();
        if let Some(p) = &s.host.policy {
            texts.extend(p.redact.get(&e.id).map(String::as_str));
        }
        assert!(
            texts.iter().any(|t| body.len() < t.len()),
            "{name}: {} is marked compressed but whole",
            e.id
        );
    }
    // A tool call is never separated from its results.
    let kept: HashMap<usize, &ConversationTurn> = pack
        .snapshot
        .turns()
        .enumerate()
        .filter(|(_, e)| e.included)
        .map(|(i, _)| (i, &s.request.conversation[i]))
        .collect();
    for (i, t) in s.request.conversation.iter().enumerate() {
        if let (Role::Tool, Some(id)) = (t.role, &t.tool_call_id) {
            let call = s.request.conversation[..i]
                .iter()
                .position(|c| c.role == Role::Assistant && c.tool_call_id.as_ref() == Some(id));
            match call {
                Some(c) => assert_eq!(
                    kept.contains_key(&c),
                    kept.contains_key(&i),
                    "{name}: turn {i} split from call {c}"
                ),
                None => assert!(!kept.contains_key(&i), "{name}: orphan {i} kept"),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold(seed in any::<u64>()) {
        let s = generated(seed);
        let outcome = run_native(&s);
        check(&format!("seed {seed}"), &s, &outcome);
        // Deterministic: the same input gives the same bytes.
        let again = run_native(&s);
        prop_assert_eq!(
            ctxpack_conformance::render(&outcome),
            ctxpack_conformance::render(&again)
        );
    }

    /// A builder's count cache never shows: after assembling the same
    /// material under other budgets (counts made exactly, or stopped at
    /// other limits), it gives the bytes a fresh builder gives.
    #[test]
    fn a_warm_builder_gives_what_a_cold_one_gives(seed in any::<u64>(), other in 0u32..3000) {
        let s = generated(seed);
        let Ok(builder) = ctxpack_core::Builder::new(s.config.clone()) else {
            return Ok(());
        };
        for budget in [other, other / 7, u32::MAX] {
            let mut warm_up = s.clone();
            warm_up.request.budget = Some(budget);
            ctxpack_host::run_native_with(&builder, &warm_up);
        }
        let warm = ctxpack_host::run_native_with(&builder, &s);
        prop_assert_eq!(
            ctxpack_conformance::render(&warm),
            ctxpack_conformance::render(&run_native(&s))
        );
    }

    #[test]
    fn host_order_does_not_matter(seed in any::<u64>(), shuffle in any::<u64>()) {
        let case = generated(seed);
        let mut shuffled = case.clone();
        for answer in [
            &mut shuffled.host.retrieve,
            &mut shuffled.host.expand_graph,
            &mut shuffled.host.recall_memory,
            &mut shuffled.host.repository_state,
        ] {
            if let Some(Answer::AllItems(items)) = answer {
                let mut x = shuffle | 1;
                for i in (1..items.len()).rev() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    items.swap(i, (x % (i as u64 + 1)) as usize);
                }
            }
        }
        // Ids repeated across or within sources make "the first one"
        // depend on the order by definition; and a source cut to its limit
        // keeps what the host put first. The property is for hosts that
        // answer all they have, with distinct ids.
        let mut ids: Vec<&str> = Vec::new();
        for a in [&case.host.retrieve, &case.host.expand_graph, &case.host.recall_memory, &case.host.repository_state] {
            match a {
                Some(Answer::AllItems(v)) => ids.extend(v.iter().map(|c| c.id.as_str())),
                Some(Answer::Items(v)) if !v.is_empty() => return Ok(()),
                _ => {}
            }
        }
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        prop_assume!(ids.len() == n);
        let a = ctxpack_conformance::render(&run_native(&case));
        let b = ctxpack_conformance::render(&run_native(&shuffled));
        prop_assert_eq!(a, b);
    }
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
    for seed in 0..cases {
        let s = generated(seed);
        let outcome = run_native(&s);
        check(&format!("seed {seed}"), &s, &outcome);
        if let Reply::Failed(f) = &outcome.reply {
            *refused
                .entry(ctxpack_host::scenario::error_kind(&f.error))
                .or_default() += 1;
        }
        let Some(pack) = outcome.reply.pack() else {
            continue;
        };
        packs += 1;
        if matches!(
            s.request.tokenizer,
            ctxpack_core::Tokenizer::O200kBase | ctxpack_core::Tokenizer::Cl100kBase
        ) {
            exact += 1;
        }
        let Sent { text, messages, .. } = invariants::sent(&s.request, pack);
        let budget = u64::from(pack.budget_limit);
        let sent = text.max(messages);
        tightest = tightest.min(budget - sent);
        if budget > 0 && budget < u64::from(u32::MAX / 2) {
            largest_share = largest_share.max(sent as f64 / budget as f64);
        }
        if budget - sent <= budget / 20 {
            full += 1;
        }
        let own: u64 = pack.entries.iter().map(|e| u64::from(e.tokens)).sum();
        added_max = added_max.max(text.saturating_sub(own));
    }
    eprintln!(
        "{cases} generated requests: {packs} packs ({exact} with an exact encoding), \
         refused {refused:?}; every pack's text and messages within the budget; \
         smallest margin {tightest} tokens, largest share of a budget used {:.1}%, \
         {full} packs within 5% of their budget; the rendering added at most {added_max} \
         tokens to the entries' own",
        largest_share * 100.0
    );
    assert!(packs > cases / 2, "most generated requests give a pack");
}
