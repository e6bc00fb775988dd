//! The types of ctxpack, mirrored one to one in `wit/types.wit`.
//!
//! They serialise to JSON with the WIT names (kebab-case), so a scenario file
//! reads like the contract. Requests reject unknown fields, so a misspelt key
//! is an error naming it instead of a silently ignored setting.

use serde::{Deserialize, Serialize};

/// Who and what an assembly is for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AgentContext {
    /// Conversation session; the pack id derives from it.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Trace id, copied through.
    pub trace_id: String,
    /// End user; long-term memory is recalled only when present.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Tenant.
    #[serde(default)]
    pub tenant_id: Option<String>,
    /// Project within the tenant.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Run within the project.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Attempt within the run.
    #[serde(default)]
    pub attempt_id: Option<String>,
    /// Scopes the attempt may read.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// How text is turned into tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tokenizer {
    /// Exact `o200k_base` counts.
    O200kBase,
    /// Exact `cl100k_base` counts.
    Cl100kBase,
    /// One token per this many characters, rounded up (an estimate).
    CharsPerToken(u32),
}

/// A layer of the pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// Never dropped, charged first.
    L0,
    /// Recent working state.
    L1,
    /// Long-term and retrieved.
    L2,
}

/// A section of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Section {
    /// System prompt (L0).
    SystemPrompt,
    /// Workflow status (L0).
    WorkflowStatus,
    /// Mandatory instructions (L0).
    MandatoryInstructions,
    /// Current task (L0).
    CurrentTask,
    /// Conversation turns (L1).
    ConversationState,
    /// The change under work (L1).
    CurrentDiff,
    /// Tool results outside the conversation (L1).
    ToolResults,
    /// Repository state (L2).
    RepositoryState,
    /// Retrieved knowledge (L2).
    RelevantKnowledge,
    /// Graph expansion (L2).
    GraphNeighbours,
    /// Long-term memory (L2).
    EpisodicMemory,
    /// Anything else (L2).
    SupportingContext,
    /// Completed stage summaries (L2).
    StageSummaries,
}

impl Section {
    /// The layer the section belongs to.
    pub fn layer(self) -> Layer {
        match self {
            Section::SystemPrompt
            | Section::WorkflowStatus
            | Section::MandatoryInstructions
            | Section::CurrentTask => Layer::L0,
            Section::ConversationState | Section::CurrentDiff | Section::ToolResults => Layer::L1,
            Section::RepositoryState
            | Section::RelevantKnowledge
            | Section::GraphNeighbours
            | Section::EpisodicMemory
            | Section::SupportingContext
            | Section::StageSummaries => Layer::L2,
        }
    }
}

/// How far a text may be trusted, most trusted first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrustTier {
    /// Written by the operator.
    System,
    /// First-party data the application vouches for.
    Trusted,
    /// Known origin, unreviewed.
    Unverified,
    /// From outside; fenced when rendered, never in L0.
    Untrusted,
}

/// Where a candidate came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Provenance {
    /// Kind of source.
    pub source_kind: String,
    /// The id the candidate cites.
    pub reference: String,
    /// Version of the source document.
    #[serde(default)]
    pub source_version: Option<String>,
    /// Index revision it was retrieved from.
    #[serde(default)]
    pub index_revision: Option<String>,
}

/// Role of a conversation turn or pack entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// System message.
    System,
    /// End user.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

impl Role {
    /// The lowercase name used in rendered text.
    pub fn name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One conversation turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ConversationTurn {
    /// Who spoke.
    pub role: Role,
    /// What was said.
    pub content: String,
    /// The tool call this turn makes (assistant) or answers (tool).
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// The workflow's status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct WorkflowStatus {
    /// Status word.
    pub status: String,
    /// Current stage.
    #[serde(default)]
    pub stage_id: Option<String>,
}

/// A completed stage's summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct StageSummary {
    /// Stage id.
    pub stage_id: String,
    /// How it ended.
    pub outcome: String,
    /// What it did.
    pub summary: String,
}

/// An item a host source returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Candidate {
    /// Stable id, unique within one assembly.
    pub id: String,
    /// Section it is for.
    pub section: Section,
    /// The text.
    pub text: String,
    /// Where it came from.
    #[serde(default)]
    pub provenance: Option<Provenance>,
    /// Trust tier.
    pub trust: TrustTier,
    /// The source's relevance score.
    #[serde(default)]
    pub score: Option<f64>,
    /// Order of creation, higher is newer.
    #[serde(default)]
    pub sequence: Option<u64>,
    /// Scope it belongs to.
    #[serde(default)]
    pub scope: Option<String>,
    /// The tokens of `text` in the request's tokenizer, if the host already
    /// has them: used as given, without recounting, while the text is
    /// rendered unchanged (a redaction, or an untrusted text whose fence
    /// markers had to be defused, is counted). A wrong count makes the
    /// budget wrong by as much.
    #[serde(default)]
    pub token_count: Option<u32>,
}

/// What an application asks to be packed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AssembleRequest {
    /// Who and what the assembly is for.
    pub context: AgentContext,
    /// The raw query.
    pub query: String,
    /// The tokenizer the budget is counted in.
    pub tokenizer: Tokenizer,
    /// Most tokens the pack may hold; the plan's default budget when left
    /// out (the snapshot records the budget used).
    #[serde(default)]
    pub budget: Option<u32>,
    /// Tokens charged on top of each included entry.
    pub entry_overhead: u32,
    /// System prompt (L0).
    pub system_prompt: String,
    /// Workflow status (L0).
    #[serde(default)]
    pub workflow: Option<WorkflowStatus>,
    /// Mandatory instructions (L0).
    #[serde(default)]
    pub instructions: Vec<String>,
    /// Current task (L0).
    #[serde(default)]
    pub current_task: Option<String>,
    /// Conversation, oldest first (L1).
    #[serde(default)]
    pub conversation: Vec<ConversationTurn>,
    /// How many of the newest turns are considered.
    pub keep_last: u32,
    /// Stage summaries, oldest first (L2).
    #[serde(default)]
    pub stage_summaries: Vec<StageSummary>,
}

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

/// The numbers behind an over-budget drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Shortfall {
    /// Tokens needed, overhead included (and, for an older turn, every
    /// newer one left out): exact when the entry's tokens were counted
    /// exactly, otherwise the fewest it could need, since counting stops
    /// once an item cannot fit. The true sum, which an overhead near the
    /// u32 limit can take past it.
    pub needed: u64,
    /// Tokens that remained.
    pub remaining: u64,
}

/// Why a candidate was taken or dropped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// Included: L0.
    Mandatory,
    /// Included: it fit.
    WithinBudget,
    /// Dropped: older than the last N turns.
    KeepLast(u32),
    /// Dropped: more tokens than remained.
    OverBudget(Shortfall),
    /// Dropped: an older stage summary evicted so newer ones fit.
    EvictedOldest,
    /// Dropped with the tool-call turn of this id.
    ToolPair(String),
    /// Dropped: a tool result without its call.
    OrphanToolResult,
    /// Dropped: a copy of this included candidate.
    DuplicateOf(String),
    /// Dropped: denied by policy.
    PolicyDenied(String),
    /// Dropped: outside the attempt's scopes.
    OutOfScope,
    /// Dropped: no provenance.
    NoProvenance,
    /// Dropped: a host candidate claimed a section hosts may not fill
    /// (an L0 section or the conversation).
    SectionNotAllowed,
    /// Dropped as itself: its text went into the summary with this id.
    Summarized(String),
    /// Dropped with older ones so the first kept turn or stage summary
    /// moves in steps of this many (the plan's cut step).
    StepCut(u32),
    /// Dropped: the source answered more than the limit it was asked for
    /// (given), and this one ranked beyond it.
    BeyondLimit(u32),
    /// Not decided: the assembly failed first (the snapshot's `failure`
    /// says why). Only a failed snapshot has it.
    AssemblyFailed,
}

impl Reason {
    /// The reason's name, as in the WIT (`over-budget`, `duplicate-of`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Reason::Mandatory => "mandatory",
            Reason::WithinBudget => "within-budget",
            Reason::KeepLast(_) => "keep-last",
            Reason::OverBudget(_) => "over-budget",
            Reason::EvictedOldest => "evicted-oldest",
            Reason::ToolPair(_) => "tool-pair",
            Reason::OrphanToolResult => "orphan-tool-result",
            Reason::DuplicateOf(_) => "duplicate-of",
            Reason::PolicyDenied(_) => "policy-denied",
            Reason::OutOfScope => "out-of-scope",
            Reason::NoProvenance => "no-provenance",
            Reason::SectionNotAllowed => "section-not-allowed",
            Reason::Summarized(_) => "summarized",
            Reason::StepCut(_) => "step-cut",
            Reason::BeyondLimit(_) => "beyond-limit",
            Reason::AssemblyFailed => "assembly-failed",
        }
    }

    /// Whether this reason keeps the candidate in the pack.
    pub fn is_inclusion(&self) -> bool {
        matches!(self, Reason::Mandatory | Reason::WithinBudget)
    }
}

/// One condition of an assembly's outcome. A snapshot's status lists
/// every condition that holds, in this order: `complete` alone, or any of
/// `degraded`, `truncated` and `failed` together (see
/// [`SnapshotStatus::of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SnapshotStatus {
    /// Everything considered, every source answered.
    Complete,
    /// A source failed; assembled from what remained.
    Degraded,
    /// An optional section's text was cut at a token boundary (the
    /// summariser failed or was absent).
    Truncated,
    /// Not assembled: the snapshot's `failure` says why.
    Failed,
}

impl SnapshotStatus {
    /// The status list for these conditions: each that holds, in order,
    /// or `[complete]` when none does.
    pub fn of(degraded: bool, truncated: bool, failed: bool) -> Vec<SnapshotStatus> {
        let held: Vec<SnapshotStatus> = [
            (degraded, SnapshotStatus::Degraded),
            (truncated, SnapshotStatus::Truncated),
            (failed, SnapshotStatus::Failed),
        ]
        .into_iter()
        .filter_map(|(on, s)| on.then_some(s))
        .collect();
        if held.is_empty() {
            vec![SnapshotStatus::Complete]
        } else {
            held
        }
    }
}

/// How far a candidate's tokens were counted. Counting stops as soon as
/// the decision is clear, so only what decides something is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Counted {
    /// `tokens` is exact (every included candidate).
    Exact,
    /// It has more than `tokens`: counting stopped there, past the room
    /// left for it.
    Over,
    /// Not counted: it was dropped before its size could matter (a filter,
    /// a duplicate, the policy, keep-last, or an older turn behind a cut).
    Uncounted,
}

/// One candidate in a snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SnapshotEntry {
    /// Candidate id.
    pub id: String,
    /// Layer.
    pub layer: Layer,
    /// Section.
    pub section: Section,
    /// What produced it.
    pub origin: Origin,
    /// Where it came from; absent only for a no-provenance drop.
    pub provenance: Option<Provenance>,
    /// Trust tier.
    pub trust: TrustTier,
    /// Score it was ranked by.
    pub score: Option<f64>,
    /// Tokens, without the entry overhead, as `counted` says.
    pub tokens: u32,
    /// How far its tokens were counted.
    pub counted: Counted,
    /// Whether it is in the pack.
    pub included: bool,
    /// Why.
    pub reason: Reason,
    /// Whether its text was summarised or truncated.
    pub compressed: bool,
    /// Whether the policy replaced its text.
    pub redacted: bool,
}

/// The record of one assembly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Snapshot {
    /// Content hash (hex SHA-256 of a canonical binary form, see
    /// [`crate::content_id`]) of everything below and the pack.
    pub id: String,
    /// Tenant.
    pub tenant_id: Option<String>,
    /// Project.
    pub project_id: Option<String>,
    /// Run.
    pub run_id: Option<String>,
    /// Attempt.
    pub attempt_id: Option<String>,
    /// Scopes used.
    pub scopes: Vec<String>,
    /// Tokenizer.
    pub tokenizer: Tokenizer,
    /// Budget.
    pub token_budget: u32,
    /// Tokens used: every included entry's tokens and entry overhead, plus
    /// what rendering them together adds (the blank lines between entries,
    /// and pieces that merge or split across a join) in whichever form adds
    /// more, so it is never less than `text-tokens` nor `message-tokens`.
    pub tokens_used: u32,
    /// Tokens of the pack's flat text, counted whole by the tokenizer.
    pub text_tokens: u32,
    /// Tokens of the pack's messages: each message's content counted whole
    /// by the tokenizer, plus the entry overhead once per message.
    pub message_tokens: u32,
    /// Tokens of the leading L0 entries rendered together, overhead
    /// included.
    pub stable_prefix_tokens: u32,
    /// Hex SHA-256 of the rendered text's UTF-8 bytes: the reference of
    /// the assembled content, which a host stores by hash (content never
    /// in the row) and can check.
    pub content_hash: String,
    /// Index revisions of the included items, sorted, each once.
    pub index_revisions: Vec<String>,
    /// Ids of the included memory items, in render order.
    pub memory_items: Vec<String>,
    /// Outcome: every condition that holds (see [`SnapshotStatus::of`]).
    pub status: Vec<SnapshotStatus>,
    /// Why the assembly failed, when the status says `failed`.
    pub failure: Option<String>,
    /// The builder profile that gathered the candidates.
    pub profile: Profile,
    /// The plan the budget was shared by.
    pub plan: Plan,
    /// What each host source was asked and how it answered, in call order.
    pub source_calls: Vec<SourceCall>,
    /// One entry per candidate.
    pub entries: Vec<SnapshotEntry>,
}

/// What produced a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// The request itself (prompt, instructions, conversation, summaries).
    Request,
    /// `sources.retrieve`.
    Retrieval,
    /// `sources.recall-memory`.
    Memory,
    /// `sources.expand-graph`.
    Graph,
    /// `sources.repository-state`.
    Repository,
    /// `summarizer.summarize`, from other candidates of its section.
    Summary,
}

/// One text to summarise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SummaryRequest {
    /// The section the summary is for.
    pub section: Section,
    /// The text.
    pub text: String,
    /// Most tokens the summary may have.
    pub target_tokens: u32,
}

/// How one host source fared in an assembly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SourceCall {
    /// The capability, e.g. `sources.retrieve`.
    pub capability: String,
    /// What came of it.
    pub outcome: SourceOutcome,
}

/// What came of a source call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceOutcome {
    /// It answered with this many candidates.
    Answered(u32),
    /// It failed with this message; the assembly is Degraded.
    Failed(String),
    /// It was not called, for this reason.
    Skipped(String),
}

/// An assembled context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ContextPack {
    /// `"<session-id or unknown>-router-pack"`.
    pub id: String,
    /// Session.
    pub session_id: Option<String>,
    /// Trace.
    pub trace_id: String,
    /// Current stage.
    pub stage_id: Option<String>,
    /// Included entries in render order.
    pub entries: Vec<PackEntry>,
    /// Entry texts joined by blank lines.
    pub text: String,
    /// The same context as chat messages: L0 as the first system message
    /// (the stable prefix), the other context as a second, then the kept
    /// conversation turns with their roles and tool-call ids.
    pub messages: Vec<Message>,
    /// Tokens used, overhead included.
    pub budget_used: u32,
    /// Budget.
    pub budget_limit: u32,
    /// What was done to fit.
    pub compression: CompressionMetadata,
    /// Why every candidate was taken or dropped.
    pub snapshot: Snapshot,
    /// The `ContextAssembled` event, for the host to publish.
    pub event: ContextAssembled,
    /// Metrics of this assembly, for the host to record.
    pub metrics: Metrics,
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
}

/// The `ContextAssembled` event payload (seed 004).
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

/// What a builder is constructed from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BuilderConfig {
    /// Tokenizers to build at construction.
    #[serde(default)]
    pub preload: Vec<Tokenizer>,
    /// What the builder gathers from the host (seed 000's builders).
    #[serde(default)]
    pub profile: Profile,
    /// Estimated Jaccard similarity (of three-word shingles) at which a host
    /// candidate is a near-duplicate of a higher-ranked one, in (0, 1];
    /// 1 keeps exact duplicate detection only.
    #[serde(default = "default_near_threshold")]
    pub near_duplicate_threshold: f64,
    /// Terms added to the fused rank score; all zero (the default) ranks
    /// by reciprocal-rank fusion alone.
    #[serde(default)]
    pub ranking: Ranking,
    /// Budget defaults, the model window and the sections' shares.
    #[serde(default)]
    pub plan: Plan,
    /// Most token counts the builder keeps between assemblies (keyed by a
    /// hash of the text and the tokenizer), so a conversation re-assembled
    /// every turn recounts only its new text; 0 keeps none.
    #[serde(default = "default_count_cache_entries")]
    pub count_cache_entries: u32,
}

fn default_count_cache_entries() -> u32 {
    crate::tokenizer::DEFAULT_COUNT_CACHE_ENTRIES
}

/// The plan of an assembly: budgets and how they are shared (seed 004).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Plan {
    /// The budget of a request that names none.
    #[serde(default = "Plan::default_budget")]
    pub default_budget: u32,
    /// The model's context window; a budget may not exceed it less the
    /// safety margin.
    #[serde(default)]
    pub model_window: Option<u32>,
    /// Share of the window kept free, in [0, 1).
    #[serde(default = "Plan::default_safety_margin")]
    pub safety_margin: f64,
    /// Each section's share of the budget, in [0, 1], summing to at most 1.
    /// A section left out has no share of its own and is filled only from
    /// what other sections leave unused.
    #[serde(default = "Plan::seed_shares")]
    pub shares: Vec<SectionShare>,
    /// Whether an optional section over its share is summarised (through
    /// `summarizer.summarize`, else truncated) instead of cut.
    #[serde(default = "Plan::yes")]
    pub compress: bool,
    /// The least room, in tokens, worth a summary.
    #[serde(default = "Plan::default_min_summary")]
    pub min_summary_tokens: u32,
    /// The first kept conversation turn (and stage summary) moves in steps
    /// of this many, so the rendered text stays byte-stable across the
    /// turns of a growing conversation and providers' prompt caches hit; a
    /// few more old turns are left out in exchange. 1 moves it by one.
    #[serde(default = "Plan::default_cut_step")]
    pub cut_step: u32,
}

impl Plan {
    fn default_budget() -> u32 {
        24_000
    }
    fn default_safety_margin() -> f64 {
        0.1
    }
    fn yes() -> bool {
        true
    }
    fn default_min_summary() -> u32 {
        32
    }
    fn default_cut_step() -> u32 {
        1
    }
    /// Seed 004's section budgets.
    pub fn seed_shares() -> Vec<SectionShare> {
        [
            (Section::MandatoryInstructions, 0.1),
            (Section::CurrentTask, 0.1),
            (Section::ConversationState, 0.1),
            (Section::RepositoryState, 0.2),
            (Section::RelevantKnowledge, 0.25),
            (Section::GraphNeighbours, 0.1),
            (Section::EpisodicMemory, 0.05),
            (Section::CurrentDiff, 0.05),
            (Section::ToolResults, 0.05),
        ]
        .into_iter()
        .map(|(section, share)| SectionShare { section, share })
        .collect()
    }

    /// The largest budget the model window allows, if the plan names one.
    pub fn window_limit(&self) -> Option<u32> {
        self.model_window
            .map(|w| (f64::from(w) * (1.0 - self.safety_margin)).floor() as u32)
    }

    /// Checks the plan, naming the offending field.
    pub fn validate(&self) -> Result<(), crate::Error> {
        use crate::Error;
        if !(0.0..1.0).contains(&self.safety_margin) {
            return Err(Error::invalid(
                "config.plan.safety-margin",
                format!("{} is outside [0, 1)", self.safety_margin),
            ));
        }
        if self.cut_step == 0 {
            return Err(Error::invalid("config.plan.cut-step", "must be at least 1"));
        }
        if self.model_window == Some(0) {
            return Err(Error::invalid(
                "config.plan.model-window",
                "must be above 0",
            ));
        }
        let mut seen = Vec::new();
        let mut total = 0.0;
        for (i, s) in self.shares.iter().enumerate() {
            let field = format!("config.plan.shares[{i}]");
            if !(0.0..=1.0).contains(&s.share) {
                return Err(Error::invalid(
                    format!("{field}.share"),
                    format!("{} is outside [0, 1]", s.share),
                ));
            }
            if seen.contains(&s.section) {
                return Err(Error::invalid(
                    format!("{field}.section"),
                    format!("{:?} has a share already", s.section),
                ));
            }
            seen.push(s.section);
            total += s.share;
        }
        if total > 1.0 + 1e-9 {
            return Err(Error::invalid(
                "config.plan.shares",
                format!("shares add up to {total}, above 1"),
            ));
        }
        match self.window_limit() {
            Some(limit) if self.default_budget > limit => Err(Error::invalid(
                "config.plan.default-budget",
                format!(
                    "{} is above the model window less its safety margin ({limit})",
                    self.default_budget
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The share of `section` (0 when it has none).
    pub fn share(&self, section: Section) -> f64 {
        self.shares
            .iter()
            .find(|s| s.section == section)
            .map_or(0.0, |s| s.share)
    }
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            default_budget: Plan::default_budget(),
            model_window: None,
            safety_margin: Plan::default_safety_margin(),
            shares: Plan::seed_shares(),
            compress: true,
            min_summary_tokens: Plan::default_min_summary(),
            cut_step: Plan::default_cut_step(),
        }
    }
}

/// One section's share of the budget.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SectionShare {
    /// The section.
    pub section: Section,
    /// Its share, in [0, 1].
    pub share: f64,
}

/// Terms of the fused score besides reciprocal-rank fusion (which adds at
/// most 1/61 per source, so weights of about 0.01 already reorder).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Ranking {
    /// Added for a `system` candidate.
    #[serde(default)]
    pub trust_system: f64,
    /// Added for a `trusted` candidate.
    #[serde(default)]
    pub trust_trusted: f64,
    /// Added for an `unverified` candidate.
    #[serde(default)]
    pub trust_unverified: f64,
    /// Added for an `untrusted` candidate.
    #[serde(default)]
    pub trust_untrusted: f64,
    /// Times the recency (1 for the newest `sequence`, 0 for the oldest,
    /// 0 without one).
    #[serde(default)]
    pub recency: f64,
}

impl Ranking {
    /// The trust term of a tier.
    pub fn trust(&self, tier: TrustTier) -> f64 {
        match tier {
            TrustTier::System => self.trust_system,
            TrustTier::Trusted => self.trust_trusted,
            TrustTier::Unverified => self.trust_unverified,
            TrustTier::Untrusted => self.trust_untrusted,
        }
    }
}

fn default_near_threshold() -> f64 {
    crate::dedup::DEFAULT_NEAR_THRESHOLD
}

impl Default for BuilderConfig {
    fn default() -> Self {
        BuilderConfig {
            preload: Vec::new(),
            profile: Profile::default(),
            near_duplicate_threshold: default_near_threshold(),
            ranking: Ranking::default(),
            plan: Plan::default(),
            count_cache_entries: default_count_cache_entries(),
        }
    }
}

/// The builder profiles of seed 000, behind one builder interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// No retrieval: the pack holds what the request carries (phase 1).
    #[default]
    Passthrough,
    /// Retrieval through `sources.retrieve`.
    Rag(RagSettings),
    /// Retrieval, plus long-term memory through `sources.recall-memory`,
    /// scoped by the user id (skipped, and recorded so, without one).
    RagMemory(RagMemorySettings),
    /// Every source of seed 004: retrieval, graph expansion from what was
    /// retrieved, long-term memory (with a user id) and repository state.
    Full(FullSettings),
}

/// Settings of the `full` profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FullSettings {
    /// Most candidates to ask `sources.retrieve` for.
    pub retrieve_limit: u32,
    /// Most graph hops from the retrieved items (0: no expansion).
    pub graph_depth: u32,
    /// Most memory items to ask `sources.recall-memory` for.
    pub memory_limit: u32,
    /// Whether to ask `sources.repository-state`.
    pub repository_state: bool,
}

/// Settings of the `rag` profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RagSettings {
    /// Most candidates to ask `sources.retrieve` for.
    pub retrieve_limit: u32,
}

/// Settings of the `rag-memory` profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RagMemorySettings {
    /// Most candidates to ask `sources.retrieve` for.
    pub retrieve_limit: u32,
    /// Most memory items to ask `sources.recall-memory` for.
    pub memory_limit: u32,
}

/// The context a skill receives (seed 000's `RequestContext`).
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
