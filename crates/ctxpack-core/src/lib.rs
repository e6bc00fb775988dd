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
//! [`Builder::assemble`] runs these stages in order; each is one module.
//!
//! | stage | module | what it does |
//! |---|---|---|
//! | validate | `validate` | checks the request, naming the first bad field |
//! | layer | `layer` | the request's own candidates: L0 (counted first; alone over the budget, the assembly fails), the conversation (L1), stage summaries (L2) |
//! | gather | `gather` | calls the sources the [`Profile`] names, each once |
//! | rank | `rank` | fuses the sources by reciprocal rank, trust and recency |
//! | admit | `admit` | refuses what can never be included: limits, taken ids, sections hosts may not fill, no provenance, out of scope, duplicates (`dedup`) |
//! | policy | `policy` | one `policy.review` of what was admitted |
//! | conversation | `conversation` | keep-last, cut steps, tool calls with their results |
//! | budget | `budget` | sections fill their shares, the rest flows in priority order |
//! | compress | `compress` | a section over its share is summarised, or cut |
//! | render | `render` | the flat text and the messages, counted whole; over-budget packs are settled |
//! | snapshot | `snapshot` | every candidate's entry and reason, metrics, the event, content-hash ids |
//!
//! The candidate in flight is an `item`; the tokenizers are in
//! `tokenizer` and `encoding`.
//!
//! # The public API
//!
//! - Building: [`Builder`], [`BuilderConfig`], [`Plan`], [`SectionShare`],
//!   [`Ranking`], [`Profile`] ([`RagSettings`], [`RagMemorySettings`],
//!   [`FullSettings`]) and every default in [`defaults`].
//! - Driving an assembly step by step: [`Assembly`], [`Next`],
//!   [`SourceRequest`], [`REVIEW_ROUNDS`]; with JSON text, one string each
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
//!   [`Count`].
//!
//! # Features
//!
//! `o200k` and `cl100k` (both on by default) each embed an exact
//! encoding's tables, static data built with the crate and read in place
//! (nothing to build at start); a build without one refuses a request for
//! it with [`Error::TokenizerUnavailable`] naming it.

#![deny(missing_docs)]

mod admit;
mod assembly;
mod budget;
mod compress;
mod config;
mod conversation;
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
mod pack;
mod policy;
mod prefetch;
mod rank;
mod render;
mod router;
mod snapshot;
mod tokenizer;
mod types;
mod validate;

#[cfg(test)]
mod tests;

pub use assembly::{Assembly, Next, SourceRequest};
pub use budget::REVIEW_ROUNDS;
pub use config::{
    BuilderConfig, FullSettings, Plan, Profile, RagMemorySettings, RagSettings, Ranking,
    SectionShare,
};
pub use diff::{Change, ChangeKind, EntryState, SnapshotDiff, diff};
pub use digest::{content_id, text_hash};
pub use error::{Error, Failure, HostError};
pub use handle::{Dispatch, FallbackDispatch, Handling, SkillDispatch, context_from_pack, handle};
pub use host::{Host, NoHost, Verdict};
pub use pack::{
    CompressionMetadata, CompressionOutcome, ContextAssembled, ContextPack, Counted, Message,
    Metrics, Origin, PackEntry, Reason, ReasonCount, RequestContext, Run, SectionCompression,
    SectionTokens, Shortfall, Snapshot, SnapshotEntry, SnapshotStatus, SourceCall, SourceOutcome,
    Strategy,
};
pub use router::{
    ConfigFormat, Entity, RouteConfig, RouteScore, Router, RouterConfig, RoutingDecision,
    RuleConfig, RuleScore,
};
pub use tokenizer::{Count, TokenCounter, Tokenizers};
pub use types::{
    AgentContext, AssembleRequest, Candidate, ConversationTurn, Layer, Provenance, Role, Section,
    StageSummary, SummaryRequest, Tokenizer, TrustTier, WorkflowStatus,
};
pub use validate::request as validate_request;

use budget::Budgeting;
use render::Layers;
use std::sync::{Mutex, TryLockError};
use tokenizer::{CountCache, Meter};

/// A context builder. Build it once and reuse it: it keeps the token counts
/// it has made (up to `count-cache-entries`), so a conversation
/// re-assembled every turn recounts only its new text. The tokenizer
/// tables are static: builders share them and nothing is built for them.
pub struct Builder {
    tokenizers: Tokenizers,
    counts: Mutex<CountCache>,
    profile: Profile,
    near_duplicate_threshold: f64,
    ranking: Ranking,
    plan: Plan,
}

impl Builder {
    /// A builder from `config`. Tokenizers named in `preload` must be in
    /// this build: one it left out is refused here rather than at the first
    /// assembly that asks for it.
    pub fn new(config: BuilderConfig) -> Result<Self, Error> {
        // Numbers as every host spells them (−0 is 0).
        let config = config.canonical();
        validate::config(&config)?;
        let tokenizers = Tokenizers;
        for &t in &config.preload {
            tokenizers.counter(t)?;
        }
        Ok(Builder {
            tokenizers,
            counts: Mutex::new(CountCache::new(config.count_cache_entries as usize)),
            profile: config.profile,
            near_duplicate_threshold: config.near_duplicate_threshold,
            ranking: config.ranking,
            plan: config.plan,
        })
    }

    /// Assembles the pack for `request` within its budget.
    ///
    /// `host` lends the stores, policy and summariser; an assembly calls each
    /// source at most once, and only those the builder's profile needs
    /// (`passthrough` calls none). This is [`Builder::start`] driven to its
    /// end over `host` (see [`Assembly::drive`]).
    ///
    /// An assembly that had begun and fails — L0 alone over the budget,
    /// the policy failing — gives its `failed` snapshot with the error
    /// (see [`Failure`]); an invalid request gives the error alone.
    pub fn assemble(
        &self,
        request: &AssembleRequest,
        host: &mut dyn Host,
    ) -> Result<ContextPack, Failure> {
        self.start(request).drive(host, &request.context)
    }

    /// Starts assembling the pack for `request`, for a host that answers
    /// step by step (see [`Assembly`]). Nothing runs until
    /// [`Assembly::next`] is called; an invalid request is refused there.
    pub fn start<'a>(&'a self, request: &'a AssembleRequest) -> Assembly<'a> {
        Assembly::new(move |channel| async move { self.assemble_on(request, &channel).await })
    }

    /// As [`Builder::start`], for an assembly that owns what it needs: a
    /// shared builder (an `Rc`, an `Arc`, a `Box`) and its request. An
    /// adapter that holds assemblies between calls (the component's
    /// `assembly` resource) starts them so.
    pub fn start_owned<B>(builder: B, request: AssembleRequest) -> Assembly<'static>
    where
        B: std::ops::Deref<Target = Builder> + 'static,
    {
        Assembly::new(move |channel| async move { builder.assemble_on(&request, &channel).await })
    }

    /// The whole assembly, asking `channel` for what the host lends.
    async fn assemble_on(
        &self,
        request: &AssembleRequest,
        channel: &assembly::Channel,
    ) -> Result<ContextPack, Failure> {
        validate::tokenizer(request.tokenizer, "request.tokenizer")?;
        let budget = validate::budget(request, &self.plan)?;
        validate::request(request)?;
        let counter = self.tokenizers.counter(request.tokenizer)?;
        // Assemblies on one builder share its counts; one that finds the
        // cache in use by another (on another thread, or waiting for its
        // host) counts without it rather than wait (the counts, and so the
        // pack, are the same either way).
        let mut spare = CountCache::new(0);
        let mut held = match self.counts.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        };
        let cache = match held.as_deref_mut() {
            Some(cache) => cache,
            None => &mut spare,
        };
        let meter = Meter::new(counter.as_ref(), request.tokenizer, cache);
        self.run(request, channel, &meter, budget).await
    }

    /// The pipeline, on a valid request, counting with `meter`.
    async fn run(
        &self,
        request: &AssembleRequest,
        channel: &assembly::Channel,
        meter: &Meter<'_>,
        budget: u32,
    ) -> Result<ContextPack, Failure> {
        let overhead = u64::from(request.entry_overhead);

        // The request's own candidates. L0 is charged first, as it
        // renders; alone over the budget, the assembly fails before any
        // host is asked for anything.
        let mut own = layer::own(request, meter);
        if own.l0_cost > u64::from(budget) {
            let error = Error::MandatoryOverBudget {
                mandatory_tokens: own.l0_cost,
                budget,
            };
            return Err(self.failed(request, own, Vec::new(), Vec::new(), false, error, budget));
        }

        // The host's candidates: gathered, ranked, admitted. They are
        // reviewed while the budget is filled: only what it would take.
        let gathered = gather::gather(request, self.profile, channel).await;
        if gathered.sources.iter().any(|s| !s.candidates.is_empty()) {
            // Host candidates may not take the ids of the request's own.
            own.name_all();
        }
        let mut calls = gathered.calls;
        let ranked = rank::rank(gathered.sources, &self.ranking);
        let admitted = admit::admit(
            ranked,
            &request.context,
            || own.ids(),
            self.near_duplicate_threshold,
        );
        // Untrusted host text is fenced with the request's nonce.
        let nonce = fence::Nonce::of(request);
        let hosted = admitted.into_items(nonce);

        // The conversation's window; only the turns the budget can reach
        // are rendered. Each entry after L0 is charged its overhead and the
        // blank line that joins it to the one before.
        let room = u64::from(budget) - own.l0_cost;
        let charge = overhead + u64::from(meter.count(render::SEPARATOR));
        let window = conversation::window(request, &mut own.l1, self.plan.cut_step);
        conversation::render_reachable(
            &request.conversation,
            &mut own.l1,
            &window,
            meter,
            room,
            charge,
        );

        // The budget, shared among the sections; reviewed, and compressed
        // where a section is over its share.
        let shared = budget::share(
            Budgeting {
                plan: &self.plan,
                budget: u64::from(budget),
                overhead: charge,
                meter,
                tokenizer: request.tokenizer,
                channel,
            },
            own.l1,
            own.l2,
            hosted,
            window,
            room,
        )
        .await;
        let shared = match shared {
            Ok(shared) => shared,
            Err(stopped) => {
                calls.extend(stopped.calls);
                let own = layer::Own {
                    l0: own.l0,
                    l1: stopped.l1,
                    l2: stopped.l2,
                    l0_cost: own.l0_cost,
                };
                return Err(self.failed(
                    request,
                    own,
                    stopped.hosted,
                    calls,
                    gathered.degraded,
                    stopped.error,
                    budget,
                ));
            }
        };
        calls.extend(shared.calls);
        let compressions = shared.compressions;

        // Rendered, counted whole, and settled within the budget.
        let mut layers = Layers {
            l0: own.l0,
            l2: shared.l2,
            l1_hosted: shared.l1_hosted,
            l1: shared.l1,
        };
        let rendered = render::settle(&mut layers, request, meter, overhead, u64::from(budget));

        // The pack and its snapshot. Truncated only where a text that
        // stays in the pack was cut.
        let truncated = layers
            .l2
            .iter()
            .chain(&layers.l1_hosted)
            .any(|i| i.compressed && i.included() && i.origin != Origin::Summary);
        let record = snapshot::Record {
            profile: self.profile,
            source_calls: calls,
            status: SnapshotStatus::of(gathered.degraded, truncated, false),
            budget,
            rendered,
            l0_cost: own.l0_cost,
            compressions,
        };
        Ok(snapshot::pack(request, layers, record, &self.plan))
    }

    #[allow(clippy::too_many_arguments)]
    fn failed(
        &self,
        request: &AssembleRequest,
        own: layer::Own,
        hosted: Vec<item::Item>,
        calls: Vec<SourceCall>,
        degraded: bool,
        error: Error,
        budget: u32,
    ) -> Failure {
        snapshot::failed(
            request,
            own,
            hosted,
            calls,
            degraded,
            error,
            &self.plan,
            self.profile,
            budget,
        )
    }
}
