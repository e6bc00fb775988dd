//! Gathering the host's candidates for a profile: one batched call per
//! source, filtering, one policy review, and rank fusion.
//!
//! - `passthrough` calls nothing; `rag` calls `sources.retrieve`;
//!   `rag-memory` also calls `sources.recall-memory` when the request has a
//!   user id, and records the skip when it has none.
//! - A failing source degrades the assembly (recorded, status Degraded).
//! - Filters, in order: an id already taken is a `duplicate-of` it; a host
//!   candidate may not claim an L0 section or the conversation
//!   (`section-not-allowed`), so host text never lands in L0; no provenance,
//!   no inclusion (`no-provenance`); a candidate scoped outside the
//!   attempt's scopes is `out-of-scope`.
//! - What passed is deduplicated in fused-rank order (see [`crate::dedup`]):
//!   an exact or near copy of a higher-ranked candidate is `duplicate-of` it,
//!   before review, so duplicates cost no policy work.
//! - Everything that passed goes to `policy.review` in one batch: allowed,
//!   redacted (text replaced, tokens recounted) or denied (`policy-denied`).
//!   If the review fails, or answers a different number of verdicts, the
//!   assembly fails: nothing unreviewed is ever returned.
//! - Ranking fuses the sources by reciprocal rank (`1 / (60 + rank)`, rank
//!   by the source's own score, highest first, ties by id); the fused order
//!   breaks ties by id, so it is total and does not depend on the order a
//!   host returns items in.

use crate::dedup::Deduper;
use crate::error::{Error, HostError};
use crate::host::{Host, Verdict};
use crate::layered::Item;
use crate::tokenizer::TokenCounter;
use crate::types::{
    AssembleRequest, Candidate, Layer, Origin, Profile, Reason, Role, Section, SourceCall,
    SourceOutcome,
};
use std::collections::HashSet;

/// Reciprocal-rank-fusion constant (the usual 60).
const RRF_K: f64 = 60.0;

/// The host's candidates, filtered, reviewed and in fused-rank order.
/// Items still eligible carry `Reason::WithinBudget`; the rest carry the
/// reason they were dropped.
#[derive(Default)]
pub(crate) struct Gathered {
    pub items: Vec<Item>,
    pub calls: Vec<SourceCall>,
    pub degraded: bool,
}

fn record(
    calls: &mut Vec<SourceCall>,
    capability: &str,
    answer: Result<Vec<Candidate>, HostError>,
) -> Vec<Candidate> {
    let (outcome, items) = match answer {
        Ok(items) => (
            SourceOutcome::Answered(u32::try_from(items.len()).unwrap_or(u32::MAX)),
            items,
        ),
        Err(e) => (SourceOutcome::Failed(e.message), Vec::new()),
    };
    calls.push(SourceCall {
        capability: capability.to_owned(),
        outcome,
    });
    items
}

/// What the builder's configuration says about gathering.
pub(crate) struct Settings {
    pub profile: Profile,
    pub near_duplicate_threshold: f64,
}

/// Calls the profile's sources and prepares their candidates.
pub(crate) fn gather(
    request: &AssembleRequest,
    settings: Settings,
    host: &mut dyn Host,
    counter: &dyn TokenCounter,
    taken: &HashSet<String>,
) -> Result<Gathered, Error> {
    let ctx = &request.context;
    let mut calls = Vec::new();
    let mut sources: Vec<(Origin, Vec<Candidate>)> = Vec::new();
    let (retrieve_limit, memory_limit) = match settings.profile {
        Profile::Passthrough => (None, None),
        Profile::Rag(s) => (Some(s.retrieve_limit), None),
        Profile::RagMemory(s) => (Some(s.retrieve_limit), Some(s.memory_limit)),
    };
    if let Some(limit) = retrieve_limit {
        let answer = host.retrieve(ctx, &request.query, limit);
        sources.push((
            Origin::Retrieval,
            record(&mut calls, "sources.retrieve", answer),
        ));
    }
    if let Some(limit) = memory_limit {
        match &ctx.user_id {
            Some(user) => {
                let answer = host.recall_memory(ctx, user, &request.query, limit);
                sources.push((
                    Origin::Memory,
                    record(&mut calls, "sources.recall-memory", answer),
                ));
            }
            None => calls.push(SourceCall {
                capability: "sources.recall-memory".to_owned(),
                outcome: SourceOutcome::Skipped("no user id: long-term memory is per user".into()),
            }),
        }
    }
    let degraded = calls
        .iter()
        .any(|c| matches!(c.outcome, SourceOutcome::Failed(_)));

    // Fused score per candidate, from its rank within its own source.
    let mut fused: Vec<(Origin, Candidate, f64)> = Vec::new();
    for (origin, mut items) in sources {
        items.sort_by(|a, b| {
            let (sa, sb) = (
                a.score.unwrap_or(f64::NEG_INFINITY),
                b.score.unwrap_or(f64::NEG_INFINITY),
            );
            // NaN sorts below every number: a score that is not one ranks last.
            let (sa, sb) = (
                if sa.is_nan() { f64::NEG_INFINITY } else { sa },
                if sb.is_nan() { f64::NEG_INFINITY } else { sb },
            );
            sb.total_cmp(&sa).then_with(|| a.id.cmp(&b.id))
        });
        for (rank, c) in items.into_iter().enumerate() {
            let score = 1.0 / (RRF_K + rank as f64 + 1.0);
            fused.push((origin, c, score));
        }
    }
    fused.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.1.id.cmp(&b.1.id)));

    let mut seen: HashSet<String> = taken.clone();
    let mut deduper = Deduper::new(settings.near_duplicate_threshold);
    let mut items = Vec::with_capacity(fused.len());
    let mut to_review = Vec::new();
    for (origin, c, score) in fused {
        let reason = if seen.contains(&c.id) {
            Reason::DuplicateOf(c.id.clone())
        } else if c.section.layer() == Layer::L0 || c.section == Section::ConversationState {
            Reason::SectionNotAllowed
        } else if c.provenance.is_none() {
            Reason::NoProvenance
        } else if c.scope.as_ref().is_some_and(|s| !ctx.scopes.contains(s)) {
            Reason::OutOfScope
        } else if let Some(of) = deduper.offer(&c.id, &c.text) {
            Reason::DuplicateOf(of)
        } else {
            Reason::WithinBudget
        };
        seen.insert(c.id.clone());
        if reason == Reason::WithinBudget {
            to_review.push(items.len());
        }
        items.push((
            Item {
                id: c.id.clone(),
                section: c.section,
                role: Role::System,
                tokens: 0,
                text: String::new(),
                origin,
                provenance: c.provenance.clone(),
                trust: c.trust,
                score: Some(score),
                reason,
                redacted: false,
            },
            c,
        ));
    }

    if !to_review.is_empty() {
        let batch: Vec<Candidate> = to_review.iter().map(|&i| items[i].1.clone()).collect();
        let verdicts = host.review(ctx, &batch)?;
        if verdicts.len() != batch.len() {
            return Err(Error::HostFailed {
                capability: "policy.review".into(),
                message: format!(
                    "answered {} verdicts for {} items",
                    verdicts.len(),
                    batch.len()
                ),
            });
        }
        for (&i, verdict) in to_review.iter().zip(verdicts) {
            let (item, candidate) = &mut items[i];
            match verdict {
                Verdict::Allow => {}
                Verdict::Redact(text) => {
                    candidate.text = text;
                    item.redacted = true;
                }
                Verdict::Deny(why) => item.reason = Reason::PolicyDenied(why),
            }
        }
    }

    let items = items
        .into_iter()
        .map(|(mut item, c)| {
            item.tokens = counter.count(&c.text);
            item.text = c.text;
            item
        })
        .collect();
    Ok(Gathered {
        items,
        calls,
        degraded,
    })
}
