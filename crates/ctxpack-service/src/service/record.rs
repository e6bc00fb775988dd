//! What an assembly records: its pack's snapshot, content and event, or
//! a failed assembly's snapshot and event.

use crate::snapshots::{Record, now_rfc3339};
use ctxpack_core::{AssembleRequest, ContextAssembled, ContextPack, Snapshot};

/// Tokens per section of a pack, by the section's name.
fn sections(pack: &ContextPack) -> Vec<(String, u32)> {
    pack.metrics
        .tokens_per_section
        .iter()
        .map(|s| (crate::snapshots::name(&s.section), s.tokens))
        .collect()
}

/// The record of an assembled pack: its snapshot, text and event, with
/// the request's session, trace and user.
pub(super) fn record_of_pack(pack: ContextPack, request: &AssembleRequest) -> Record {
    let sections = sections(&pack);
    Record {
        sections,
        text: pack.text,
        compression: pack.compression,
        session_id: request.context.session_id.clone(),
        trace_id: request.context.trace_id.clone(),
        event: pack.event,
        assembled_at: now_rfc3339(),
        snapshot: pack.snapshot,
        request_hash: String::new(),
        user_id: request.context.user_id.clone(),
    }
}

/// The record of a failed assembly: its snapshot says why (`failure`).
pub(super) fn record_of_failure(snapshot: Snapshot, request: &AssembleRequest) -> Record {
    let event = ContextAssembled {
        context_snapshot_id: snapshot.id.clone(),
        tenant_id: snapshot.tenant_id.clone(),
        run_id: snapshot.run_id.clone(),
        attempt_id: snapshot.attempt_id.clone(),
        status: snapshot.status.clone(),
        tokens_used: snapshot.tokens_used,
        token_budget: snapshot.token_budget,
    };
    Record {
        sections: Vec::new(),
        text: String::new(),
        compression: Default::default(),
        session_id: request.context.session_id.clone(),
        trace_id: request.context.trace_id.clone(),
        event,
        assembled_at: now_rfc3339(),
        snapshot,
        request_hash: String::new(),
        user_id: request.context.user_id.clone(),
    }
}
