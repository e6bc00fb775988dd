//! Every default a builder, a plan or a router uses when a field is left
//! out, in one place. The WIT documents the same values.

use crate::types::Section;

/// The budget of a request that names none (`plan.default-budget`).
pub const BUDGET: u32 = 24_000;

/// Share of the model window kept free (`plan.safety-margin`).
pub const SAFETY_MARGIN: f64 = 0.1;

/// Whether a section over its share is summarised, else truncated
/// (`plan.compress`).
pub const COMPRESS: bool = true;

/// The least room, in tokens, worth a summary (`plan.min-summary-tokens`).
pub const MIN_SUMMARY_TOKENS: u32 = 32;

/// The step the first kept turn and stage summary move in
/// (`plan.cut-step`): by one.
pub const CUT_STEP: u32 = 1;

/// The share of the budget a cache-first layout's conversation gives way
/// by at a time (`plan.cut-share`): a little over half, measured at 4
/// bytes a token, so its start stays byte for byte over the turns that
/// fill it (about a third of the budget for English text; its half or
/// quarter where the conversation's room is smaller). Of the shares
/// measured on the prompt-cache benchmark's three conversations
/// (`hosts/python/bench/prompt_cache.py`), 0.55 served the most in two
/// and as much as any in the third.
pub const CUT_SHARE: f64 = 0.55;

/// The most tokens of a compacted conversation's summary
/// (`plan.compact-tokens`).
pub const COMPACT_TOKENS: u32 = 512;

/// Each section's share of the budget (`plan.shares`). L0 and the
/// conversation each have a tenth; the host's sections share the rest,
/// retrieved knowledge and repository state most; stage summaries and
/// supporting context have no share of their own and are filled from what
/// the others leave.
pub const SHARES: [(Section, f64); 9] = [
    (Section::MandatoryInstructions, 0.1),
    (Section::CurrentTask, 0.1),
    (Section::ConversationState, 0.1),
    (Section::RepositoryState, 0.2),
    (Section::RelevantKnowledge, 0.25),
    (Section::GraphNeighbours, 0.1),
    (Section::EpisodicMemory, 0.05),
    (Section::CurrentDiff, 0.05),
    (Section::ToolResults, 0.05),
];

/// Estimated Jaccard similarity at which a host candidate is a
/// near-duplicate of a higher-ranked one (`near-duplicate-threshold`): a
/// few words edited in a 300-token chunk leave about 0.85–0.95 over
/// three-word shingles; unrelated chunks on one topic stay far below.
pub const NEAR_DUPLICATE_THRESHOLD: f64 = 0.8;

/// Most token counts a builder keeps between assemblies
/// (`count-cache-entries`).
pub const COUNT_CACHE_ENTRIES: u32 = 100_000;

/// Reference and comparison cues a router uses when its config names none
/// (`reference-cues`): a query with one goes to the builder even on a
/// confident route.
pub const REFERENCE_CUES: &[&str] = &[
    "like last time",
    "same as last time",
    "as last time",
    "compared to what you said",
    "compared to last time",
    "compared with before",
    "what you said",
    "you said earlier",
    "you mentioned",
    "the same as before",
    "as before",
    "as we discussed",
    "that one",
    "the previous one",
    "the other one",
    "again like",
];
