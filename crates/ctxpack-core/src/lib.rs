//! ctxpack-core: decides what goes into a model's context window, within an
//! exact token budget, and records why every candidate was taken or dropped.
//!
//! Pure Rust: no I/O, no clocks, no randomness, nothing wasm-specific. The
//! host's stores, policy and summariser are reached through [`Host`]; the
//! WebAssembly component and the browser build are thin adapters over this
//! crate, and a Rust application can use it directly:
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

mod budget;
mod dedup;
mod diff;
mod digest;
mod encoding;
mod error;
mod gather;
mod handle;
mod host;
mod layered;
mod prefetch;
mod render;
mod report;
mod router;
mod tokenizer;
mod types;

pub use diff::{Change, ChangeKind, EntryState, SnapshotDiff, diff};
pub use digest::{content_id, text_hash};
pub use error::{Error, Failure, HostError};
pub use handle::{Dispatch, FallbackDispatch, Handling, SkillDispatch, context_from_pack, handle};
pub use host::{Host, NoHost, Verdict};
pub use layered::validate as validate_request;
pub use router::{
    ConfigFormat, DEFAULT_REFERENCE_CUES, Entity, RouteConfig, RouteScore, Router, RouterConfig,
    RoutingDecision, RuleConfig, RuleScore, normalize,
};
use std::sync::{Mutex, TryLockError};
pub use tokenizer::{
    CharsPerToken, Count, CountCache, DEFAULT_COUNT_CACHE_ENTRIES, TokenCounter, Tokenizers,
};
pub use types::*;

/// A context builder. Build it once and reuse it: it keeps the token counts
/// it has made (up to `count-cache-entries`), so a conversation
/// re-assembled every turn recounts only its new text. The tokenizer
/// tables, expensive to construct, are built once per process and shared
/// by every builder.
pub struct Builder {
    tokenizers: Tokenizers,
    counts: Mutex<CountCache>,
    profile: Profile,
    near_duplicate_threshold: f64,
    ranking: Ranking,
    plan: Plan,
}

impl Builder {
    /// A builder from `config`; tokenizers named in `preload` are built now.
    pub fn new(config: BuilderConfig) -> Result<Self, Error> {
        let tokenizers = Tokenizers;
        for (i, t) in config.preload.iter().enumerate() {
            tokenizers.counter(*t).map_err(|e| match e {
                Error::InvalidField { field, message } => Error::InvalidField {
                    field: format!(
                        "config.preload[{i}].{}",
                        field.trim_start_matches("tokenizer.")
                    ),
                    message,
                },
                other => other,
            })?;
        }
        let t = config.near_duplicate_threshold;
        if !(t > 0.0 && t <= 1.0) {
            return Err(Error::invalid(
                "config.near-duplicate-threshold",
                format!("{t} is outside (0, 1]"),
            ));
        }
        let r = config.ranking;
        for (field, value) in [
            ("trust-system", r.trust_system),
            ("trust-trusted", r.trust_trusted),
            ("trust-unverified", r.trust_unverified),
            ("trust-untrusted", r.trust_untrusted),
            ("recency", r.recency),
        ] {
            if !value.is_finite() {
                return Err(Error::invalid(
                    format!("config.ranking.{field}"),
                    "must be a finite number",
                ));
            }
        }
        config.plan.validate()?;
        Ok(Builder {
            tokenizers,
            counts: Mutex::new(CountCache::new(config.count_cache_entries as usize)),
            profile: config.profile,
            near_duplicate_threshold: t,
            ranking: r,
            plan: config.plan,
        })
    }

    /// Assembles the pack for `request` within its budget.
    ///
    /// `host` lends the stores, policy and summariser; an assembly calls each
    /// at most once, and only those the builder's profile needs
    /// (`passthrough` calls none).
    ///
    /// An assembly that had begun and fails — L0 alone over the budget,
    /// the policy failing — gives its `failed` snapshot with the error
    /// (see [`Failure`]); an invalid request gives the error alone.
    pub fn assemble(
        &self,
        request: &AssembleRequest,
        host: &mut dyn Host,
    ) -> Result<ContextPack, Failure> {
        let counter = self
            .tokenizers
            .counter(request.tokenizer)
            .map_err(|e| match e {
                Error::InvalidField { field, message } => Error::InvalidField {
                    field: format!("request.{field}"),
                    message,
                },
                other => other,
            })?;
        let budget = self.budget_for(request)?;
        // Assemblies on one builder share its counts; one that finds the
        // cache in use by another thread counts without it rather than
        // wait (the counts, and so the pack, are the same either way).
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
        let meter = tokenizer::Meter::new(counter.as_ref(), request.tokenizer, cache);
        let prepared = layered::prepare(request, &meter, budget)?;
        if prepared.l0_cost > u64::from(budget) {
            let error = Error::MandatoryOverBudget {
                mandatory_tokens: prepared.l0_cost,
                budget,
            };
            return Err(self.failed(
                request,
                prepared,
                gather::Gathered::default(),
                error,
                budget,
            ));
        }
        let mut gathered = gather::gather(
            request,
            gather::Settings {
                profile: self.profile,
                near_duplicate_threshold: self.near_duplicate_threshold,
                ranking: self.ranking,
            },
            host,
            || prepared.ids(),
        );
        if let Some(error) = gathered.failure.take() {
            return Err(self.failed(request, prepared, gathered, error, budget));
        }
        Ok(layered::assemble(
            request,
            prepared,
            self.profile,
            gathered,
            &self.plan,
            &meter,
            host,
        ))
    }

    fn failed(
        &self,
        request: &AssembleRequest,
        prepared: layered::Prepared,
        gathered: gather::Gathered,
        error: Error,
        budget: u32,
    ) -> Failure {
        layered::failed(
            request,
            prepared,
            gathered,
            error,
            &self.plan,
            self.profile,
            budget,
        )
    }

    /// The request's budget, or the plan's default, checked against the
    /// model window less its safety margin.
    fn budget_for(&self, request: &AssembleRequest) -> Result<u32, Error> {
        let budget = request.budget.unwrap_or(self.plan.default_budget);
        match self.plan.window_limit() {
            Some(limit) if budget > limit => Err(Error::invalid(
                if request.budget.is_some() {
                    "request.budget"
                } else {
                    "config.plan.default-budget"
                },
                format!(
                    "{budget} is above the model window {} less its {}% safety margin ({limit})",
                    self.plan.model_window.unwrap_or(0),
                    self.plan.safety_margin * 100.0
                ),
            )),
            _ => Ok(budget),
        }
    }
}
