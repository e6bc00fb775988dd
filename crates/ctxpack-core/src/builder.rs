//! The builder: a configuration made once, and the pipeline it runs for
//! each assembly, stage by stage (each stage is a module of its own).

use crate::assembly::{self, Assembly};
use crate::budget::{self, Budgeting};
use crate::config::{BuilderConfig, Plan, Profile, Ranking};
use crate::error::{Error, Failure};
use crate::fence::FenceKey;
use crate::host::Host;
use crate::pack::{ContextPack, Origin, SnapshotStatus};
use crate::render::{self, Layers};
use crate::snapshot::{self, Decided};
use crate::tokenizer::{CountCache, Meter, Tokenizers};
use crate::types::{AssembleRequest, ConversationStart};
use crate::{admit, conversation, fence, gather, layer, rank, validate};
use std::sync::{Mutex, TryLockError};

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
    fence_key: Option<FenceKey>,
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
            fence_key: config.fence_key.as_deref().and_then(FenceKey::new),
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
    pub(crate) async fn run(
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
            let decided = Decided {
                own,
                hosted: Vec::new(),
                calls: Vec::new(),
                degraded: false,
            };
            return Err(self.failed(request, decided, error, budget));
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
        let nonce = fence::Nonce::of(request, self.fence_key.as_ref());
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
                let decided = Decided {
                    own,
                    hosted: stopped.hosted,
                    calls,
                    degraded: gathered.degraded,
                };
                return Err(self.failed(request, decided, stopped.error, budget));
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
        let mut rendered = render::settle(&mut layers, request, meter, overhead, u64::from(budget));
        // The kept conversation begins where the request says it may.
        if request.conversation_start.unwrap_or_default() == ConversationStart::UserTurn
            && conversation::start_on_user(&request.conversation, &mut layers.l1)
        {
            rendered = render::account(&layers, meter, overhead);
        }

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
            keyed: self.fence_key.is_some(),
        };
        Ok(snapshot::pack(request, layers, record, &self.plan))
    }

    /// The failure of an assembly that had begun: `error`, with the
    /// snapshot of what it had `decided` when it stopped.
    fn failed(
        &self,
        request: &AssembleRequest,
        decided: Decided,
        error: Error,
        budget: u32,
    ) -> Failure {
        let keyed = self.fence_key.is_some();
        snapshot::failed(
            request,
            decided,
            error,
            &self.plan,
            self.profile,
            budget,
            keyed,
        )
    }
}
