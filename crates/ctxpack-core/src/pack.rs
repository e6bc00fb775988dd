//! What an assembly gives back: the pack — its entries, its flat text and
//! its messages — and the snapshot that says why every candidate was taken
//! or dropped, with the metrics and the `ContextAssembled` event. Mirrored
//! one to one in `wit/types.wit`.
//!
//! They serialise to JSON with the WIT names (kebab-case), as the request
//! types do.

use crate::snapshot::{Snapshot, SnapshotStatus};
use crate::types::{ConversationTurn, Layer, Provenance, Role, Section, TrustTier};
use serde::{Deserialize, Serialize};

/// One entry of an assembled pack.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PackEntry {
    /// Candidate id.
    pub id: String,
    /// Layer.
    pub layer: Layer,
    /// Section.
    pub section: Section,
    /// Role in a message list.
    pub role: Role,
    /// Text as charged and rendered.
    pub text: String,
    /// Tokens, without the entry overhead.
    pub tokens: u32,
    /// Where it came from (the citation).
    pub provenance: Provenance,
    /// Trust tier.
    pub trust: TrustTier,
}

/// A strategy that removed something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// L0 charged first and kept whole.
    L0Immutable,
    /// Turns older than keep-last left out.
    KeepLast,
    /// Oldest turns over budget left out.
    ConversationBudget,
    /// Oldest stage summaries evicted.
    EvictOldest,
    /// An optional section's leftovers summarised into its room.
    Summarize,
    /// A text cut at a token boundary to fit (the summariser could not
    /// be used).
    Truncate,
}

/// What was done to fit the budget.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CompressionMetadata {
    /// Strategies applied, in the order they ran.
    pub applied_strategies: Vec<Strategy>,
    /// Layers that lost an entry.
    pub truncated_layers: Vec<Layer>,
    /// Candidates left out.
    pub entries_dropped: u32,
}

/// An assembled context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ContextPack {
    /// `"<session-id or unknown>-router-pack"`.
    pub id: String,
    /// Session.
    pub session_id: Option<String>,
    /// A key that keeps a session's requests on the provider's cache
    /// (OpenAI's `prompt_cache_key`): a hash of the tenant and the
    /// session, or of the stable prefix for a request that names no
    /// session; none where it has neither.
    pub cache_key: Option<String>,
    /// Trace.
    pub trace_id: String,
    /// Current stage.
    pub stage_id: Option<String>,
    /// Included entries in render order.
    pub entries: Vec<PackEntry>,
    /// Entry texts joined by blank lines.
    pub text: String,
    /// The same context as chat messages, in the request's layout: L0 as
    /// the first system message (the stable prefix), the other context as
    /// a second, and the kept conversation turns with their roles and
    /// tool-call ids.
    pub messages: Vec<Message>,
    /// Tokens used, overhead included.
    pub budget_used: u32,
    /// Budget.
    pub budget_limit: u32,
    /// The conversation's compaction, to pass back with the next turn's
    /// request: the one the request passed, or a newer one; none where
    /// the plan does not compact and the request passed none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<crate::types::Compaction>,
    /// The request to send, in the shape of the request's chat; none
    /// where it carried none, or asked for the flat text (`form: text`).
    /// Not written when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatRequest>,
    /// What was done to fit.
    pub compression: CompressionMetadata,
    /// Why every candidate was taken or dropped.
    pub snapshot: Snapshot,
    /// The `ContextAssembled` event, for the host to publish.
    pub event: ContextAssembled,
    /// Metrics of this assembly, for the host to record.
    pub metrics: Metrics,
}

/// What to send: a pack given back in the shape its chat came in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ChatRequest {
    /// The shape, the chat's.
    pub shape: crate::types::ChatShape,
    /// JSON text of the request's body but the model and its options: the
    /// system text, the kept messages in the pack's layout (the caller's
    /// own, unchanged but for a cache hint), the other context as a
    /// message of the pack's, and the provider's cache hints.
    pub body: String,
    /// For each message of the body's list, the index in the chat's
    /// messages of the one it is, or none for one the pack made.
    pub sources: Vec<Option<u32>>,
}

/// One chat message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: String,
    /// The tool call a turn makes or answers.
    pub tool_call_id: Option<String>,
    /// Tokens the turn sends beside its text (its images, which the pack
    /// holds no copy of), charged with it: send them with it. Not written
    /// when absent, so a pack's digest is what it was before the field
    /// existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached_tokens: Option<u32>,
}

/// The `ContextAssembled` event: what a host publishes once an assembly's
/// snapshot is stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ContextAssembled {
    /// The snapshot's id.
    pub context_snapshot_id: String,
    /// Tenant.
    pub tenant_id: Option<String>,
    /// Run.
    pub run_id: Option<String>,
    /// Attempt.
    pub attempt_id: Option<String>,
    /// Outcome.
    pub status: Vec<SnapshotStatus>,
    /// Tokens used.
    pub tokens_used: u32,
    /// The budget.
    pub token_budget: u32,
}

/// Metrics of one assembly.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Metrics {
    /// Tokens included per section (entry overhead included), sections
    /// with none left out, in section order.
    pub tokens_per_section: Vec<SectionTokens>,
    /// Dropped candidates per reason, by the reason's name, sorted.
    pub dropped_by_reason: Vec<ReasonCount>,
}

/// Tokens of one section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SectionTokens {
    /// Section.
    pub section: Section,
    /// Tokens.
    pub tokens: u32,
}

/// How many candidates were dropped for one reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ReasonCount {
    /// The reason's name, e.g. `over-budget`.
    pub reason: String,
    /// How many.
    pub count: u32,
}

/// The context a skill receives after dispatch (see [`crate::handle()`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RequestContext {
    /// The raw query.
    pub user_query: String,
    /// The conversation turns the pack kept, oldest first.
    pub conversation_history: Vec<ConversationTurn>,
    /// Retrieved items the pack kept, as packed (after policy).
    pub retrieved_context: Vec<PackEntry>,
    /// Memory items the pack kept, as packed (after policy).
    pub memory_items: Vec<PackEntry>,
    /// Session.
    pub session_id: Option<String>,
    /// Trace.
    pub trace_id: String,
    /// User.
    pub user_id: Option<String>,
}
