//! The snapshot: the record of one assembly — one entry per candidate (a
//! run of turns or stage summaries dropped alike, one entry) with why it
//! was taken or dropped, what each source was asked and answered, the
//! compression metadata and the fence's report. Mirrored one to one in
//! `wit/types.wit`, and serialised with the WIT names as the pack is.
//!
//! The stage that writes it, last in the pipeline, is `record`.

use crate::config::{Plan, Profile};
use crate::types::{Layer, Provenance, Role, Section, Tokenizer, TrustTier};
use serde::{Deserialize, Serialize};

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
    /// Set when the entry stands for a run of the request's own
    /// candidates (see [`Run`]); the entry's fields are the first one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Run>,
}

/// A run of consecutive conversation turns or stage summaries, dropped for
/// the same reason without being counted, recorded as one entry: the
/// entry's `id` is the first one's and `last_id` the last one's, and the
/// ids between are consecutive (`turn-12` … `turn-9911`). Every member has
/// the entry's layer, section, origin and reason, is uncounted and is not
/// included; its provenance and trust follow from the request as the
/// first's do (`conversation[i]`, trust by role). For an over-budget run
/// the shortfall is the first member's: every older one needs more.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Run {
    /// The last member's id.
    pub last_id: String,
    /// How many candidates the entry stands for, first and last included
    /// (at least 2).
    pub count: u32,
}

/// An id as the request's own candidates are numbered: a stem and a
/// decimal index (`turn-` and `12`).
pub(crate) fn numbered(id: &str) -> Option<(&str, u64)> {
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, n) = id.split_at(id.len() - digits);
    // A leading zero would not round-trip.
    if n.is_empty() || (n.len() > 1 && n.starts_with('0')) {
        return None;
    }
    Some((stem, n.parse().ok()?))
}

impl SnapshotEntry {
    /// How many candidates it stands for: its run's count, or 1.
    pub fn candidates(&self) -> u32 {
        self.run.as_ref().map_or(1, |r| r.count)
    }

    /// The ids of the candidates it stands for, in order: its own, or its
    /// run's members. A run whose ids are not consecutive (a snapshot
    /// made elsewhere) gives its first id once for each member.
    pub fn ids(&self) -> Vec<String> {
        let Some(run) = &self.run else {
            return vec![self.id.clone()];
        };
        match (numbered(&self.id), numbered(&run.last_id)) {
            (Some((stem, first)), Some((last_stem, last)))
                if stem == last_stem
                    && last.checked_sub(first) == Some(u64::from(run.count) - 1) =>
            {
                (first..=last).map(|n| format!("{stem}{n}")).collect()
            }
            _ => vec![self.id.clone(); run.count as usize],
        }
    }
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
    /// The model the request named: its profile, and which of the
    /// request's values were taken from it. Not written when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::types::ModelUse>,
    /// Budget.
    pub token_budget: u32,
    /// Tokens used: for a request that names its form, that form's tokens;
    /// otherwise every included entry's tokens and entry overhead, plus
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
    /// The prefixes of the pack's messages the next turn's pack can repeat
    /// byte for byte, at each boundary in order; none for a pack sent as
    /// text.
    pub cache_prefixes: Vec<CachePrefix>,
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
    /// What each host source was asked and how it answered: the sources in
    /// the profile's order, then each review round and the summariser in
    /// the order they were asked.
    pub source_calls: Vec<SourceCall>,
    /// Each optional section that was still over its share once the flow
    /// was done, in priority order, and what compression did to it.
    pub compressions: Vec<SectionCompression>,
    /// How host texts and turns were written into the rendered context.
    pub fence: FenceReport,
    /// How the request's chat was read and charged. Not written when
    /// absent, so a snapshot's id is what it was before the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatReport>,
    /// One entry per candidate; a run of turns or stage summaries dropped
    /// alike is one entry (see [`Run`]).
    pub entries: Vec<SnapshotEntry>,
}

/// How a request's chat was read and charged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ChatReport {
    /// The shape it came in.
    pub shape: crate::types::ChatShape,
    /// For each turn of the conversation (`turn-N`), the index in the
    /// chat's messages of its first message.
    pub turns: Vec<u32>,
    /// Where a charge is an upper bound rather than exact, each naming its
    /// place and why.
    pub bounded: Vec<String>,
}

/// How host texts and turns were written into the rendered context (see
/// the book's threat model).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FenceReport {
    /// Whether the fences' nonce is a keyed MAC: the builder was given a
    /// `fence-key`. Unkeyed, it is a hash of the request's context, which a
    /// store that knows that context can compute.
    pub keyed: bool,
    /// Ids of the included entries whose text had control characters
    /// (other than tab, line feed and carriage return) or tag characters
    /// removed, in render order.
    pub stripped: Vec<String>,
    /// Ids of the included entries in whose text a spelling of one of the
    /// rendered context's structures (a fence marker, a role header, a
    /// citation head, a chat format's marker) had its opening bracket
    /// replaced by `(`, or a control token of the request's tokenizer
    /// neutralised, in render order.
    pub defused: Vec<String>,
    /// The role of the message the other context (what is neither L0 nor
    /// a turn) is sent in: `user` where any of it is of unverified or
    /// untrusted origin, which never carries system authority; `system`
    /// otherwise; none where the pack has none.
    #[serde(default)]
    pub context_role: Option<Role>,
    /// How many lines of the flat text begin with the quote (`> `) the
    /// pack writes so that no byte of untrusted origin begins a line:
    /// every line of a fenced text, every line of a turn after its header.
    /// Each costs about a token, counted in the entry's tokens.
    #[serde(default)]
    pub quoted_lines: u32,
}

impl Snapshot {
    /// The entries of the request's conversation in turn order, kept or
    /// not: the n-th is the request's turn n. (A snapshot has one entry
    /// per turn, in render order, and the conversation renders in turn
    /// order; the entry of a run is given once for each turn it stands
    /// for.)
    pub fn turns(&self) -> impl Iterator<Item = &SnapshotEntry> {
        self.entries
            .iter()
            .filter(|e| e.origin == Origin::Request && e.section == Section::ConversationState)
            .flat_map(|e| std::iter::repeat_n(e, e.candidates() as usize))
    }
}

/// What compression did to one optional section still over its share
/// once the flow was done (see [`Snapshot::compressions`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SectionCompression {
    /// The section.
    pub section: Section,
    /// The tokens a summary of its leftovers could have: the room it kept
    /// (the unused part of its share; for the first such section, with
    /// what the flow left), less the entry overhead and the summary's
    /// citation or fence.
    pub target_tokens: u32,
    /// What came of it.
    pub outcome: CompressionOutcome,
}

/// What came of compressing a section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompressionOutcome {
    /// Its leftovers were summarised: the summary (`summary:<section>`)
    /// is in the pack with this many tokens, citation included.
    Summarized(u32),
    /// Its leftovers were cut to fit instead of summarised, for this
    /// reason (the summariser failed, answered the wrong number of
    /// summaries, an empty one, or one that did not fit): whole while they
    /// fit, and the first that did not cut at a token boundary. Or it was
    /// not summarised (as for `Skipped`), and once the pack was settled
    /// its first leftover was cut into the room left.
    Cut(String),
    /// It was not compressed, for this reason (its room is under the
    /// plan's `min-summary-tokens`, or holds no more than the summary's
    /// citation), and no leftover could be cut into the room the pack
    /// left: its leftovers are dropped.
    Skipped(String),
    /// It was compressed, but the room the other sections left once they
    /// were done holds its leftovers whole: they went in whole instead,
    /// for this reason.
    Whole(String),
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
    /// Tokens that remained: for a reviewed text, in the finished pack
    /// (room freed late was offered to it); for one the policy never saw,
    /// when the fill considered it.
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
    /// Dropped: it would have fit, but the review rounds were spent before
    /// the policy saw it (see [`crate::REVIEW_ROUNDS`]).
    Unreviewed,
    /// Dropped: it fit, but came before the first user turn kept, and the
    /// kept conversation begins with a user turn. (Last: a digest numbers
    /// the cases, so a new one goes after every other.)
    BeforeUserTurn,
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
            Reason::BeforeUserTurn => "before-user-turn",
            Reason::AssemblyFailed => "assembly-failed",
            Reason::Unreviewed => "unreviewed",
        }
    }

    /// Whether this reason keeps the candidate in the pack.
    pub fn is_inclusion(&self) -> bool {
        matches!(self, Reason::Mandatory | Reason::WithinBudget)
    }
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

/// Where a prefix of a pack's messages ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheBoundary {
    /// After the first system message, L0's stable part.
    Stable,
    /// After the conversation that leads the pack, before what changes
    /// every turn.
    History,
    /// After the whole pack.
    Turn,
}

/// A prefix of a pack's messages, at one boundary: two snapshots' prefixes
/// of equal hash are byte-identical.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CachePrefix {
    /// Where it ends.
    pub boundary: CacheBoundary,
    /// How many of the pack's messages it holds.
    pub messages: u32,
    /// Its tokens, as `message-tokens` counts them.
    pub tokens: u32,
    /// Hex SHA-256 of its messages in order, each written as its role,
    /// tool-call id, attached tokens and content, each field as its byte
    /// length in decimal, `:` and its bytes.
    pub hash: String,
    /// Whether it reaches the fewest tokens the model's provider caches
    /// (1,024 for a request that names no model).
    pub cacheable: bool,
}
