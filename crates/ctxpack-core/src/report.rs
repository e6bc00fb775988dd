//! What a finished pack reports about itself: the seed-004 snapshot fields
//! derived from its entries, the `ContextAssembled` event, the metrics and,
//! last, the content-hash ids.

use crate::digest::{content_id, text_hash};
use crate::types::{ContextAssembled, ContextPack, Metrics, Origin, ReasonCount, SectionTokens};
use std::collections::{BTreeMap, BTreeSet};

/// Fills in everything derived from the pack's entries, then the ids.
pub(crate) fn complete(pack: &mut ContextPack, entry_overhead: u32) {
    let snap = &mut pack.snapshot;
    let included = || snap.entries.iter().filter(|e| e.included);
    snap.index_revisions = included()
        .filter_map(|e| e.provenance.as_ref()?.index_revision.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    snap.memory_items = included()
        .filter(|e| e.origin == Origin::Memory)
        .map(|e| e.id.clone())
        .collect();
    snap.content_hash = text_hash(&pack.text);

    let mut per_section = BTreeMap::new();
    for e in &pack.entries {
        *per_section.entry(e.section).or_insert(0u32) += e.tokens.saturating_add(entry_overhead);
    }
    let mut dropped = BTreeMap::new();
    for e in snap.entries.iter().filter(|e| !e.included) {
        *dropped.entry(e.reason.name()).or_insert(0u32) += 1;
    }
    pack.metrics = Metrics {
        tokens_per_section: per_section
            .into_iter()
            .map(|(section, tokens)| SectionTokens { section, tokens })
            .collect(),
        dropped_by_reason: dropped
            .into_iter()
            .map(|(reason, count)| ReasonCount {
                reason: reason.to_owned(),
                count,
            })
            .collect(),
    };

    // The id covers the snapshot — every decision, and through
    // `content-hash` every rendered text — with the pack's own ids and its
    // accounting; the texts, already hashed, are not hashed again (the
    // message form and the entries are made from the same texts). The
    // event carries it.
    pack.snapshot.id = String::new();
    pack.event = ContextAssembled::default();
    pack.snapshot.id = content_id(&(
        &pack.id,
        &pack.trace_id,
        &pack.stage_id,
        pack.budget_used,
        &pack.compression,
        &pack.metrics,
        &pack.snapshot,
    ));
    let snap = &pack.snapshot;
    pack.event = ContextAssembled {
        context_snapshot_id: snap.id.clone(),
        tenant_id: snap.tenant_id.clone(),
        run_id: snap.run_id.clone(),
        attempt_id: snap.attempt_id.clone(),
        status: snap.status.clone(),
        tokens_used: snap.tokens_used,
        token_budget: snap.token_budget,
    };
}
