//! ctxpack-core decides what goes into a model's context window, within an
//! exact token budget, and records why every candidate was taken or
//! dropped.
//!
//! Pure Rust: no I/O, no clocks, no randomness, nothing wasm-specific. The
//! host's stores, policy and summariser are reached through [`Host`]; the
//! WebAssembly component is a thin adapter over this crate, and a Rust
//! application can use it directly:
//!
//! ```
//! use ctxpack_core::{AssembleRequest, Builder, BuilderConfig, NoHost};
//!
//! let request: AssembleRequest = serde_json::from_str(r#"{
//!     "context": {"session-id": "s1", "trace-id": "t1"},
//!     "query": "what next?",
//!     "tokenizer": "o200k-base",
//!     "budget": 50,
//!     "entry-overhead": 0,
//!     "system-prompt": "You are a helpful assistant.",
//!     "conversation": [{"role": "user", "content": "hello"}],
//!     "keep-last": 8
//! }"#).unwrap();
//! let builder = Builder::new(BuilderConfig::default()).unwrap();
//! let pack = builder.assemble(&request, &mut NoHost).unwrap();
//! assert_eq!(pack.id, "s1-router-pack");
//! assert!(pack.budget_used <= 50);
//! ```
//!
//! # The pipeline
//!
//! [`Builder::assemble`] runs these stages in order (`builder.rs`, each
//! under a comment with its number; the book's pipeline chapter numbers
//! them alike); each is one module. The review and compression run inside
//! the fill, after each of its phases.
//!
//! | # | stage | what it does |
//! |---|---|---|
//! | 1 | `validate` | checks the request, naming the first bad field |
//! | 2 | `layer` | the request's own candidates: L0 (counted first; alone over the budget, the assembly fails), the conversation (L1), stage summaries (L2) |
//! | 3 | `gather` | calls the sources the [`Profile`] names, each once |
//! | 4 | `rank` | fuses the sources by reciprocal rank, trust and recency |
//! | 5 | `admit` | refuses what can never be included: limits, taken ids, sections hosts may not fill, no provenance, out of scope, duplicates (`dedup`); fences untrusted text (`fence`) |
//! | 6 | `conversation` | keep-last, tool calls with their results, the turns the budget can reach |
//! | 7 | `budget` | sections fill their shares, the rest flows in priority order, cut steps, leftovers |
//! | 8 | `policy` | `policy.review` of what each phase of the fill took, in at most [`REVIEW_ROUNDS`] rounds |
//! | 9 | `compress` | a section over its share is summarised, or cut; whole again where room allows |
//! | 10 | `render` | the flat text and the messages, counted whole; over-budget packs are settled |
//! | 11 | `record` | the pack and its [`Snapshot`] (`snapshot`): every candidate's entry and reason, metrics, the event, content-hash ids |
//!
//! The candidate in flight is an `item`; the tokenizers are in
//! `tokenizer` and `encoding`.
//!
//! # The public API
//!
//! - Building: [`Builder`], [`BuilderConfig`], [`Plan`], [`SectionShare`],
//!   [`Ranking`], [`Profile`] ([`RagSettings`], [`RagMemorySettings`],
//!   [`FullSettings`]) and every default in [`defaults`].
//! - Driving an assembly step by step: [`Assembly`], [`Next`], [`Call`],
//!   [`Answer`], [`REVIEW_ROUNDS`]; with JSON text, one string each
//!   way per step: [`json`] ([`json::JsonAssembly`], [`json::Reply`]).
//! - Asking: [`AssembleRequest`], [`AgentContext`], [`ConversationTurn`],
//!   [`WorkflowStatus`], [`StageSummary`], [`Tokenizer`],
//!   [`validate_request`].
//! - The host's side: [`Host`], [`NoHost`], [`Candidate`], [`Provenance`],
//!   [`Verdict`], [`SummaryRequest`], [`HostError`].
//! - The pack: [`ContextPack`], [`PackEntry`], [`Message`], [`Layer`],
//!   [`Section`], [`Role`], [`TrustTier`], [`CompressionMetadata`],
//!   [`Strategy`], [`Metrics`], [`SectionTokens`], [`ReasonCount`],
//!   [`ContextAssembled`].
//! - The snapshot: [`Snapshot`], [`SnapshotEntry`] ([`Run`]), [`SnapshotStatus`],
//!   [`FenceReport`],
//!   [`Reason`], [`Shortfall`], [`Counted`], [`Origin`], [`SourceCall`],
//!   [`SourceOutcome`], the ids [`content_id`] and [`text_hash`], and
//!   [`diff()`] ([`SnapshotDiff`], [`Change`], [`ChangeKind`],
//!   [`EntryState`]).
//! - Failing: [`Error`], [`Failure`].
//! - Routing and dispatch: [`Router`], [`RouterConfig`], [`RouteConfig`],
//!   [`RuleConfig`], [`ConfigFormat`], [`RoutingDecision`], [`RouteScore`],
//!   [`RuleScore`], [`Entity`], [`handle()`], [`Handling`], [`Dispatch`],
//!   [`SkillDispatch`], [`FallbackDispatch`], [`RequestContext`],
//!   [`context_from_pack`].
//! - Counting as the budget counts: [`Tokenizers`], [`TokenCounter`],
//!   [`Count`]; a model's own tokenizer file: [`LoadedTokenizer`].
//!
//! # Features
//!
//! `o200k` and `cl100k` (both on by default) each embed an exact
//! encoding's tables, static data built with the crate and read in place
//! (nothing to build at start); a build without one refuses a request for
//! it with [`Error::TokenizerUnavailable`] naming it.

#![deny(missing_docs)]
// Text is cut only by `text::cut`, which never panics: a byte offset
// inside a character traps the component (a model name of any Unicode
// once did).
#![cfg_attr(not(test), deny(clippy::string_slice))]

mod admit;
mod assembly;
mod budget;
mod builder;
mod call;
mod capability;
mod chat;
mod compact;
mod compress;
mod config;
mod conversation;
mod count;
mod dedup;
pub mod defaults;
mod diff;
mod digest;
mod encoding;
mod error;
mod fence;
mod gather;
mod handle;
mod host;
mod item;
pub mod json;
mod layer;
mod model;
mod near;
mod pack;
mod policy;
mod prefetch;
mod rank;
mod record;
mod render;
mod router;
mod snapshot;
pub mod text;
mod tokenizer;
mod trim;
mod types;
mod validate;

#[cfg(test)]
mod tests;

pub use assembly::{Assembly, Next};
pub use builder::Builder;
pub use call::{Answer, Call};
pub use capability::Capability;
pub use compact::covered_hash as compaction_hash;
pub use config::{
    BuilderConfig, FullSettings, Plan, Profile, RagMemorySettings, RagSettings, Ranking,
    SectionShare, TokenizerFile,
};
pub use count::{CountRequest, TokenCounts};
pub use diff::{Change, ChangeKind, EntryState, SnapshotDiff, diff};
pub use digest::{content_id, text_hash};
pub use error::{Error, Failure, HostError, NOT_PROVIDED};
pub use handle::{Dispatch, FallbackDispatch, Handling, SkillDispatch, context_from_pack, handle};
pub use host::{Host, NoHost, Verdict};
pub use model::built_in_models;
pub use pack::{
    ChatRequest, CompressionMetadata, ContextAssembled, ContextPack, Message, Metrics, PackEntry,
    ReasonCount, RequestContext, SectionTokens, Strategy,
};
pub use policy::REVIEW_ROUNDS;
pub use router::{
    ConfigFormat, Entity, RouteConfig, RouteScore, Router, RouterConfig, RoutingDecision,
    RuleConfig, RuleScore,
};
pub use snapshot::{
    CacheBoundary, CachePrefix, ChatReport, CompressionOutcome, Counted, FenceReport, Origin,
    Reason, Run, SectionCompression, Shortfall, Snapshot, SnapshotEntry, SnapshotStatus,
    SourceCall, SourceOutcome,
};
pub use tokenizer::{Count, LoadedTokenizer, TokenCounter, Tokenizers};
pub use types::{
    AgentContext, AssembleRequest, Assumed, BlockRange, Candidate, Chat, ChatShape, Compaction,
    ConversationStart, ConversationTurn, ImageRule, ImageTiles, KEEP_EVERY_TURN, Layer, Layout,
    MessageList, ModelProfile, ModelUse, PackForm, Partial, Provenance, Role, Section,
    StageSummary, SummaryRequest, TextPieces, TextSplit, Tokenizer, TrimRequest, TrimStrategy,
    Trimmed, TrustTier, WorkflowStatus,
};
pub use validate::request as validate_request;
pub use validate::{RULES as REQUEST_RULES, Rule as RequestRule};

/// What the fence's reading takes `c` for (see `fence.rs`): lowercase
/// ASCII, 1 for an opening bracket, 2 for a closing one, 3 for something
/// of no structure, 4 for any character; nothing for what a model does
/// not see. For the conformance tests' independent reading to compare
/// with; not part of the API.
#[doc(hidden)]
pub fn fence_reading(c: char) -> Vec<u8> {
    fence::read::reading(c).to_vec()
}
