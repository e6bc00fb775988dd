//! The properties every generated request keeps (see [`crate::generate`]),
//! each a function of the seeds that make its case, so that one code path
//! serves `cargo test` — the same fixed seeds every run
//! (`tests/tests/properties.rs`) — and the exploration with fresh ones
//! (`cargo run -p ctxpack-conformance --release --bin explore`), whose
//! findings become corpus scenarios.
//!
//! A broken property panics with a message that names the case.

// Test support: a broken property is a failed test, so it panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::generate::{CANARY, Source, fence_scenario, scenario};
use crate::invariants;
use ctxpack_core::{ConversationTurn, Error, Origin, Role, Tokenizer, Tokenizers};
use ctxpack_scenario::stores::{Answer, CounterRule};
use ctxpack_scenario::{Outcome, Reply, Scenario, run_native};
use std::collections::HashMap;

/// The scenario the generator makes from `seed`.
pub fn generated(seed: u64) -> Scenario {
    scenario(&mut Source::seeded(seed))
}

/// The `n` seeds a property runs on in `cargo test`: spread from `base`
/// (splitmix64), the same on every run.
pub fn fixed_seeds(base: u64, n: u64) -> impl Iterator<Item = u64> {
    (0..n).map(move |i| mix(base.wrapping_add(i)))
}

/// splitmix64's finaliser: consecutive inputs give unrelated outputs.
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One property: its name, and the check of one case made from a seed.
pub struct Property {
    pub name: &'static str,
    /// Checks the case of `seed`; panics if the property does not hold.
    pub check: fn(u64),
    /// The scenario the case assembles, for a finding to be kept as a
    /// corpus file.
    pub scenario: fn(u64) -> Scenario,
}

/// Every property, in the order `explore` runs them.
pub const ALL: &[Property] = &[
    Property {
        name: "invariants-hold",
        check: invariants_hold,
        scenario: generated,
    },
    Property {
        name: "warm-builder-gives-what-a-cold-one-gives",
        check: warm_builder_gives_what_a_cold_one_gives,
        scenario: generated,
    },
    Property {
        name: "host-order-does-not-matter",
        check: host_order_does_not_matter,
        scenario: generated,
    },
    Property {
        name: "untrusted-text-stays-in-its-fence",
        check: untrusted_text_stays_in_its_fence,
        scenario: hostile,
    },
];

/// The scenario [`fence_scenario`] makes from `seed`, its host fields
/// hostile.
pub fn hostile(seed: u64) -> Scenario {
    fence_scenario(&mut Source::seeded(seed), None)
}

/// Checks `outcome` of `s`: the invariants of a pack or of a failure, and
/// what the generated host answers say must hold.
pub fn check(name: &str, s: &Scenario, outcome: &Outcome) {
    check_with(name, s, outcome, &Tokenizers::new());
}

/// [`check`], counting with `tokenizers` (which must have the files the
/// scenario's builder was given).
pub fn check_with(name: &str, s: &Scenario, outcome: &Outcome, tokenizers: &Tokenizers) {
    let pack = match &outcome.reply {
        Reply::Failed(f) => {
            invariants::check_failure(name, &s.request, &s.config, f);
            // Refusals for generated input: L0 over the budget, the policy
            // failing, or an invalid request or configuration (with no
            // snapshot).
            match &f.error {
                Error::MandatoryOverBudget {
                    mandatory_tokens,
                    budget,
                } => assert!(*mandatory_tokens > u64::from(*budget), "{name}"),
                // A counter that fails, answers too few counts or is not lent
                // fails the assembly; the only other store whose failure does is the
                // policy.
                Error::HostFailed { capability, .. } => {
                    let counter_failed = !matches!(s.host.counter, Some(CounterRule::Words));
                    assert!(
                        capability == "policy.review"
                            || (counter_failed && capability == "counter.count-tokens"),
                        "{name}: {capability} failed"
                    )
                }
                Error::InvalidField { .. } => assert!(f.snapshot.is_none(), "{name}"),
                // A tokenizer named (or a model's) that the builder was
                // not given.
                Error::TokenizerUnavailable(_) => {
                    assert!(f.snapshot.is_none(), "{name}");
                    assert!(
                        matches!(s.request.tokenizer, Some(Tokenizer::Named(_)))
                            || s.request.model.is_some(),
                        "{name}: {:?}",
                        s.request.tokenizer
                    );
                }
                other => panic!("{name}: {other}"),
            }
            return;
        }
        reply => match reply.pack() {
            Some(p) => p,
            None => return,
        },
    };
    invariants::check(name, &s.request, &s.config, pack, tokenizers);
    let denied: Vec<&String> = s
        .host
        .policy
        .as_ref()
        .map(|p| p.deny.keys().collect())
        .unwrap_or_default();
    let answers = [
        &s.host.retrieve,
        &s.host.expand_graph,
        &s.host.recall_memory,
        &s.host.repository_state,
    ];
    for e in pack.snapshot.entries.iter().filter(|e| e.included) {
        if e.origin == Origin::Request || e.origin == Origin::Summary {
            continue;
        }
        assert!(!denied.contains(&&e.id), "{name}: {} was denied", e.id);
        // An included host item was answered with provenance, in scope.
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
    // with (or redacted to), each as it goes inside its frame — with the
    // marker spellings defused as this crate's own reading of the fence
    // finds them (see `crate::fence`), not as the core says it did.
    for (e, origin) in pack.entries.iter().zip(crate::fence::origins(pack)) {
        let compressed = pack
            .snapshot
            .entries
            .iter()
            .any(|x| x.included && x.id == e.id && x.compressed);
        if !compressed || origin == Origin::Request || origin == Origin::Summary {
            continue;
        }
        let body = invariants::framed_parts(e, origin)[1];
        // An untrusted body is quoted line by line: compared unquoted.
        let body = match e.trust {
            ctxpack_core::TrustTier::Untrusted => crate::fence::unquoted(body, true)
                .unwrap_or_else(|| panic!("{name}: {} is not quoted", e.id)),
            _ => body.to_owned(),
        };
        let mut texts: Vec<&str> = answers
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
            texts
                .iter()
                .any(|t| body.len() < crate::fence::defused(t).len()),
            "{name}: {} is marked compressed but whole",
            e.id
        );
    }
    // A tool call is never separated from its results, in the
    // conversation as it is sent (compacted, where it was).
    let read = invariants::as_read(name, &s.request, &s.config, &pack.snapshot.tokenizer);
    let sent = invariants::compacted(name, &read, pack);
    let kept: HashMap<usize, &ConversationTurn> = pack
        .snapshot
        .turns()
        .enumerate()
        .filter(|(_, e)| e.included)
        .map(|(i, _)| (i, &sent.conversation[i]))
        .collect();
    for (i, t) in sent.conversation.iter().enumerate() {
        if let (Role::Tool, Some(id)) = (t.role, &t.tool_call_id) {
            let call = sent.conversation[..i]
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

/// The invariants hold for the case of `seed`, and the same input gives
/// the same bytes.
pub fn invariants_hold(seed: u64) {
    let s = generated(seed);
    let outcome = run_native(&s);
    check(&format!("seed {seed}"), &s, &outcome);
    let again = run_native(&s);
    assert_eq!(
        crate::render(&outcome),
        crate::render(&again),
        "seed {seed}: not deterministic"
    );
}

/// A builder's count cache never shows: after assembling the same
/// material under other budgets (counts made exactly, or stopped at other
/// limits), it gives the bytes a fresh builder gives.
pub fn warm_builder_gives_what_a_cold_one_gives(seed: u64) {
    let s = generated(seed);
    let other = (mix(seed ^ 0x5741_524d) % 3000) as u32;
    let Ok(builder) = ctxpack_core::Builder::new(s.config.clone()) else {
        return;
    };
    for budget in [other, other / 7, u32::MAX] {
        let mut warm_up = s.clone();
        warm_up.request.budget = Some(budget);
        ctxpack_scenario::run_native_with(&builder, &warm_up);
    }
    let warm = ctxpack_scenario::run_native_with(&builder, &s);
    assert_eq!(
        crate::render(&warm),
        crate::render(&run_native(&s)),
        "seed {seed} (warmed at {other}): a warm builder differs from a cold one"
    );
}

/// The order a host returns its candidates in does not change the result
/// (for hosts that answer all they have, with distinct ids: repeated ids
/// make "the first one" depend on the order by definition, and a source
/// cut to its limit keeps what the host put first).
pub fn host_order_does_not_matter(seed: u64) {
    let case = generated(seed);
    let mut shuffled = case.clone();
    let mut x = mix(seed ^ 0x5348_5546) | 1;
    for answer in [
        &mut shuffled.host.retrieve,
        &mut shuffled.host.expand_graph,
        &mut shuffled.host.recall_memory,
        &mut shuffled.host.repository_state,
    ] {
        if let Some(Answer::AllItems(items)) = answer {
            for i in (1..items.len()).rev() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                items.swap(i, (x % (i as u64 + 1)) as usize);
            }
        }
    }
    let mut ids: Vec<&str> = Vec::new();
    for a in [
        &case.host.retrieve,
        &case.host.expand_graph,
        &case.host.recall_memory,
        &case.host.repository_state,
    ] {
        match a {
            Some(Answer::AllItems(v)) => ids.extend(v.iter().map(|c| c.id.as_str())),
            Some(Answer::Items(v)) if !v.is_empty() => return,
            _ => {}
        }
    }
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != n {
        return;
    }
    assert_eq!(
        crate::render(&run_native(&case)),
        crate::render(&run_native(&shuffled)),
        "seed {seed}: the host's order changed the result"
    );
}

/// With every host field hostile (see [`fence_scenario`]), the invariants
/// hold — every marker in the pack is ctxpack's own, no host value ends
/// the head it is written in, no turn passes for another (see
/// `crate::fence::check_pack`) — and every canary planted in text of
/// untrusted origin lands inside a fence, in the flat text and in the
/// messages. Then the same again with the spellings carrying the pack's
/// own nonce, as a host that learnt it would write them.
pub fn untrusted_text_stays_in_its_fence(seed: u64) {
    let s = hostile(seed);
    let outcome = run_native(&s);
    fenced(&format!("fence seed {seed}"), &s, &outcome);
    let Some(nonce) = outcome.reply.pack().and_then(crate::fence::nonce) else {
        return;
    };
    let s = fence_scenario(&mut Source::seeded(seed), Some(&nonce));
    let outcome = run_native(&s);
    fenced(&format!("fence seed {seed}, nonce known"), &s, &outcome);
}

/// Checks `outcome` of the hostile `s` (see
/// [`untrusted_text_stays_in_its_fence`]).
pub fn fenced(name: &str, s: &Scenario, outcome: &Outcome) {
    check(name, s, outcome);
    let Some(pack) = outcome.reply.pack() else {
        return;
    };
    let texts = std::iter::once(&pack.text).chain(pack.messages.iter().map(|m| &m.content));
    for text in texts {
        let out = crate::fence::outside(text, CANARY);
        assert!(
            out.is_empty(),
            "{name}: untrusted text outside its fence at {out:?}: {text:?}"
        );
    }
}
