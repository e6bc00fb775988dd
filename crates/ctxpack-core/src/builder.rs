//! The builder: a configuration made once, and the pipeline it runs for
//! each assembly, stage by stage (each stage is a module of its own).

use crate::assembly::{self, Assembly};
use crate::budget::{self, Budgeting, Filling, Shared, Stopped};
use crate::config::{BuilderConfig, Plan, Profile, Ranking};
use crate::error::{Error, Failure};
use crate::fence::FenceKey;
use crate::host::Host;
use crate::item::{Group, Item};
use crate::model::{self, Models, Settled};
use crate::pack::ContextPack;

use crate::capability::Capability;
use crate::policy::{self, Husks};
use crate::record::{self, Decided};
use crate::render::{self, Layers, Rendered};
use crate::snapshot::{SectionCompression, SnapshotStatus, SourceCall};
use crate::tokenizer::{CountCache, HostCounts, Meter, TokenCounter, Tokenizers};
use crate::types::{AssembleRequest, ConversationStart, Section, Tokenizer};
use crate::{admit, chat, compact, compress, conversation, fence, gather, layer, rank, validate};
use std::rc::Rc;
use std::sync::{Mutex, TryLockError};

/// The most rounds of `counter.count-tokens` an assembly asks: far more
/// than a host whose counts grow with the text needs (a few per step,
/// and ⌈log₁₆ bytes⌉ + 1 for a cut).
const MOST_COUNT_ROUNDS: u32 = 256;

/// A context builder. Build it once and reuse it: it keeps the token counts
/// it has made (up to `count-cache-entries`), so a conversation
/// re-assembled every turn recounts only its new text. The tokenizer
/// tables are static: builders share them and nothing is built for them.
pub struct Builder {
    tokenizers: Tokenizers,
    pub(crate) models: Models,
    counts: Mutex<CountCache>,
    profile: Profile,
    near_duplicate_threshold: f64,
    ranking: Ranking,
    plan: Plan,
    fence_key: Option<FenceKey>,
}

/// The builder's counts as one user holds them (see [`Builder::counts`]).
pub(crate) struct HeldCounts<'b> {
    held: Option<std::sync::MutexGuard<'b, CountCache>>,
    spare: CountCache,
}

impl HeldCounts<'_> {
    /// The cache to count with: the builder's, or a spare that keeps
    /// nothing.
    pub(crate) fn cache(&mut self) -> &mut CountCache {
        match self.held.as_deref_mut() {
            Some(cache) => cache,
            None => &mut self.spare,
        }
    }
}

impl Builder {
    /// A builder from `config`. Tokenizers named in `preload` must be in
    /// this build: one it left out is refused here rather than at the first
    /// assembly that asks for it.
    pub fn new(config: BuilderConfig) -> Result<Self, Error> {
        Self::with_counters(config, Vec::new())
    }

    /// A builder from `config` that also counts with the application's own
    /// counters, each under its name: a request counts with one as
    /// `Tokenizer::Named(name)`, and a profile of `config.models` may name
    /// one as its tokenizer. A counter need only count: cutting a text to
    /// fit is then found by counting (see [`TokenCounter::truncate`]). A
    /// name that is empty or taken is refused as `counters[i]`.
    pub fn with_counters(
        config: BuilderConfig,
        counters: Vec<(String, Box<dyn TokenCounter + Send + Sync>)>,
    ) -> Result<Self, Error> {
        // Numbers as every host spells them (−0 is 0).
        let config = config.canonical();
        validate::config(&config)?;
        let mut tokenizers = Tokenizers::with_files(&config.tokenizers, "config.tokenizers")?;
        for (i, (name, counter)) in counters.into_iter().enumerate() {
            tokenizers = tokenizers.with_counter(&name, counter, &format!("counters[{i}]"))?;
        }
        let models = Models::new(&config.models, &tokenizers.names(), "config.models")?;
        for t in &config.preload {
            tokenizers.counter(t)?;
        }
        Ok(Builder {
            tokenizers,
            models,
            counts: Mutex::new(CountCache::new(config.count_cache_entries as usize)),
            profile: config.profile,
            near_duplicate_threshold: config.near_duplicate_threshold,
            ranking: config.ranking,
            plan: config.plan,
            fence_key: config.fence_key.as_deref().and_then(FenceKey::new),
        })
    }

    /// The counter of `tokenizer`, as an assembly counts with it.
    pub(crate) fn counter(
        &self,
        tokenizer: &Tokenizer,
    ) -> Result<Box<dyn TokenCounter + '_>, Error> {
        self.tokenizers.counter(tokenizer)
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
        // 1. validate: the first bad field is named; what the request
        // leaves out is taken from the model it names.
        validate::request(request)?;
        let settled = self.models.settle(request)?;
        let budget = settled.budget(&self.plan)?;
        // A chat is read once, its images priced by the model's rule;
        // each pass counts its turns (see `run`).
        let chat = match &request.chat {
            Some(given) => {
                let images = settled
                    .model
                    .as_ref()
                    .and_then(|m| m.profile.images.as_ref());
                Some(chat::read(given, images, request.model.as_deref())?)
            }
            None => None,
        };
        let chat = chat.as_ref();
        if let (Some(model), Tokenizer::Named(file)) = (&settled.model, &settled.tokenizer)
            && let Some(pattern) = self.tokenizers.pattern_of(file)
        {
            model::check_file(model, file, pattern)?;
        }
        if let Tokenizer::Host(name) = &settled.tokenizer {
            return self
                .counted_by_host(name, (request, chat), channel, &settled, budget)
                .await;
        }
        let counter = match (self.tokenizers.counter(&settled.tokenizer), &settled.model) {
            (Ok(counter), _) => counter,
            (Err(error), Some(model)) => return Err(model::missing_file(model, error).into()),
            (Err(error), None) => return Err(error.into()),
        };
        let mut held = self.counts();
        let meter = Meter::new(counter.as_ref(), &settled.tokenizer, held.cache());
        self.run((request, chat), channel, &meter, &settled, budget)
            .await
    }

    /// The counts the builder remembers, for one assembly, trim or count.
    /// Those on one builder share them; one that finds them in use by
    /// another (on another thread, or waiting for its host) counts without
    /// them rather than wait (the counts, and so the outcome, are the same
    /// either way).
    pub(crate) fn counts(&self) -> HeldCounts<'_> {
        HeldCounts {
            held: match self.counts.try_lock() {
                Ok(guard) => Some(guard),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            },
            spare: CountCache::new(0),
        }
    }

    /// The pipeline, counting with the host (`Tokenizer::Host(name)`): a
    /// pass runs until it needs a count the host has not given and then
    /// reaches a step (or its end); the host is asked, in one round, for
    /// every text the pass needed, and the pipeline runs again from the
    /// start. What the host answered before is answered again from the
    /// channel's record without asking, so each source, review and
    /// summary is still asked once: a step is only ever asked by a pass
    /// whose every count was the host's, which the next pass, counting
    /// the same, repeats exactly.
    async fn counted_by_host(
        &self,
        name: &str,
        (request, chat): (&AssembleRequest, Option<&chat::Read>),
        channel: &assembly::Channel,
        settled: &Settled,
        budget: u32,
    ) -> Result<ContextPack, Failure> {
        let counts = Rc::new(HostCounts::default());
        channel.replaying(Rc::clone(&counts));
        let mut rounds = 0;
        loop {
            let outcome = {
                // The host's counts are the host's: they are not kept
                // for other assemblies, whose host may count otherwise.
                let mut none = CountCache::new(0);
                let meter = Meter::new(counts.as_ref(), &settled.tokenizer, &mut none);
                let pass =
                    std::pin::pin!(self.run((request, chat), channel, &meter, settled, budget));
                channel.until_counts_wanted(pass).await
            };
            match outcome {
                Some(outcome) if !counts.wants() => return outcome,
                _ if rounds == MOST_COUNT_ROUNDS => {
                    return Err(Error::HostFailed {
                        capability: Capability::CountTokens.name().into(),
                        message: format!(
                            "the assembly still needed counts after {MOST_COUNT_ROUNDS} rounds: a host whose counts do not grow with the text?"
                        ),
                    }
                    .into());
                }
                _ => {}
            }
            rounds += 1;
            let texts = counts.take_missing();
            let counted = channel.count_tokens(name, texts.clone()).await;
            match counted {
                Ok(n) if n.len() == texts.len() => counts.learn(texts, &n),
                Ok(n) => {
                    return Err(Error::HostFailed {
                        capability: Capability::CountTokens.name().into(),
                        message: format!("answered {} counts for {} texts", n.len(), texts.len()),
                    }
                    .into());
                }
                // Not lent: say what is wanted, and where it is lent.
                Err(e) if e.message == crate::NOT_PROVIDED => {
                    return Err(Error::HostFailed {
                        capability: e.capability,
                        message: format!(
                            "{}: the request counts with the host's counter, as {name:?}{}; lend it (Python: counter=, JavaScript: countTokens, Rust: Host::count_tokens)",
                            crate::NOT_PROVIDED,
                            match &request.model {
                                Some(model) => format!(" (the tokenizer of model {model:?})"),
                                None => String::new(),
                            }
                        ),
                    }
                    .into());
                }
                Err(e) => return Err(Error::from(e).into()),
            }
        }
    }

    /// The pipeline, on a valid request (stage 1, `validate`, is done) and
    /// its `chat` as read, counting with `meter`: each stage is a module,
    /// run in the order the book's pipeline chapter numbers them.
    pub(crate) async fn run(
        &self,
        (request, chat): (&AssembleRequest, Option<&chat::Read>),
        channel: &assembly::Channel,
        meter: &Meter<'_>,
        settled: &Settled,
        budget: u32,
    ) -> Result<ContextPack, Failure> {
        // A chat's turns, charged as sent: the request as the pipeline
        // sees it (see `chat::derive`).
        let derived;
        let request = match chat {
            Some(read) => {
                derived = chat::request(request, read, meter);
                validate::request(&derived)?;
                &derived
            }
            None => request,
        };
        // 2. layer: the request's own candidates. L0 is charged first, as
        // it renders; alone over the budget, the assembly fails before any
        // host is asked for anything.
        let sent = budget::Sent::of(request, settled);
        let mut own = layer::own(request, meter, sent);
        if let Some(error) = own.over(budget) {
            return Err(self.failed(request, settled, Decided::own(own), error, budget));
        }

        // The conversation compacted, as the previous turn left it or
        // anew: from here on the request is the one compacted.
        let mut compacted = compact::compact(
            request,
            &self.plan,
            meter,
            channel,
            (budget, settled.tokenizer.clone()),
        )
        .await;
        // A chat's cleared results are charged as their messages are then
        // sent (the flat text sends the placeholder alone).
        if let (Some(read), Some(state), std::borrow::Cow::Owned(compacted_request)) =
            (chat, compacted.state.as_ref(), &mut compacted.request)
            && compacted_request.form == Some(crate::types::PackForm::Messages)
        {
            chat::charge_cleared(read, compacted_request, state, meter);
        }
        let request: &AssembleRequest = &compacted.request;
        // Untrusted text, and a summary of it, is fenced with the
        // request's nonce.
        let nonce = fence::Nonce::of(request, self.fence_key.as_ref());
        if let Some(at) = compacted.summary_turn() {
            own.l1 = layer::conversation_items(&request.conversation, sent);
            layer::summarised(&mut own.l1, at, nonce);
        } else if matches!(compacted.request, std::borrow::Cow::Owned(_)) {
            own.l1 = layer::conversation_items(&request.conversation, sent);
        }

        // 3. gather: each source the profile names, once.
        let gathered = gather::gather(request, self.profile, channel).await;
        if gathered.sources.iter().any(|s| !s.candidates.is_empty()) {
            // Host candidates may not take the ids of the request's own.
            own.name_all();
        }
        let (mut calls, degraded) = (gathered.calls, gathered.degraded);
        calls.splice(0..0, compacted.call.clone());
        // 4. rank: the sources fused.
        let ranked = rank::rank(gathered.sources, &self.ranking);
        // 5. admit: what can never be included is refused; untrusted host
        // text is fenced with the request's nonce.
        let ids = || own.ids();
        let admitted = admit::admit(ranked, &request.context, ids, self.near_duplicate_threshold);
        let hosted = admitted.into_items(nonce, meter.controls());

        // 6. conversation: the window; only the turns the budget can reach
        // are rendered. Each entry after L0 is charged its overhead and,
        // where the form joins it to the one before by a blank line, the
        // join.
        let room = u64::from(budget) - own.l0_cost;
        let separator = u64::from(meter.count(render::SEPARATOR));
        let steps = conversation::Steps::of(request, &self.plan, u64::from(budget));
        let start = compacted.summary_turn().unwrap_or(0);
        let window =
            conversation::window(request, &mut own.l1, (&steps, self.plan.cut_step, start));
        let turns = &request.conversation;
        let turn = (
            sent.charge(Section::ConversationState, separator),
            sent.written(),
        );
        // The question being answered and what follows it are sent whole
        // with L0, or the assembly fails as for L0 alone: counted first.
        let tail = conversation::mandatory(request, &window);
        for &m in window[..tail].iter().flat_map(|g| g.iter()) {
            conversation::render_into(turns, &mut own.l1, m, sent.written(), meter.controls());
            own.l1[m].measure(meter, u32::MAX);
        }
        if tail > 0 {
            let needed = layer::with_tail(&own, &window[..tail], request, meter, sent);
            if needed > u64::from(budget) {
                let error = Error::MandatoryOverBudget {
                    mandatory_tokens: needed,
                    budget,
                };
                let decided = Decided {
                    calls,
                    degraded,
                    ..Decided::own(own)
                };
                return Err(self.failed(request, settled, decided, error, budget));
            }
        }
        let mandatory_from = window[..tail].iter().flat_map(|g| g.iter()).min().copied();
        conversation::render_reachable(turns, &mut own.l1, &window, meter, room, turn);

        // 7, 8 and 9. budget, policy, compress: the sections share the
        // budget, what they take is reviewed, a section over its share is
        // compressed.
        let mut b = Budgeting::new(
            (&self.plan, &steps),
            budget,
            (sent, separator),
            meter,
            settled.tokenizer.clone(),
            channel,
        );
        b.mandatory = tail;
        let (l1, l2) = (std::mem::take(&mut own.l1), std::mem::take(&mut own.l2));
        let (shared, mut reviewer) = match Self::fill(&b, l1, l2, hosted, window, room).await {
            Ok(filled) => filled,
            Err(stopped) => {
                let failed = (calls, degraded, stopped);
                return Err(self.stopped(request, settled, own, failed, budget));
            }
        };
        calls.extend(shared.calls);

        // 10. render: the flat text and the messages, counted whole, and
        // settled within the budget.
        let mut layers = Layers::of(
            std::mem::take(&mut own.l0),
            shared.l2,
            shared.l1_hosted,
            shared.l1,
        )
        .laid_out(request);
        layers.mandatory_from = mandatory_from;
        let rendered = render::settle(&mut layers, request, meter, sent, u64::from(budget));
        let rendered = self.start_conversation(request, &mut layers, meter, sent, rendered);
        // Room the settling or the conversation's start left is offered
        // again to what was left out, until nothing more fits; a section
        // whose summariser was not asked is cut into it.
        let mut compressions = shared.compressions;
        let uncompressed = compress::skipped(&compressions, &self.plan);
        let limits = (u64::from(budget), &self.plan, uncompressed.as_slice());
        let (mut restored, mut cut) = (Vec::new(), Vec::new());
        let mut rendered = rendered;
        // Texts the fill left out before the policy saw them are reviewed
        // where that room would hold them, in the rounds left, and
        // offered it.
        let reviewed = loop {
            let again = render::refill(&mut layers, request, meter, sent, limits, rendered);
            rendered = again.0;
            restored.extend(again.1);
            cut.extend(again.2);
            let room = (u64::from(budget), uncompressed.as_slice());
            let wanted = match reviewer.spent() {
                true => Vec::new(),
                false => render::unseen(&mut layers, meter, sent, room, &rendered),
            };
            if wanted.is_empty() {
                break Ok(());
            }
            if let Err(error) = reviewer.review_late(&mut layers, channel, &wanted).await {
                break Err(error);
            }
        };
        calls.extend(reviewer.calls);
        if let Err(error) = reviewed {
            let decided = Decided {
                own: layer::Own {
                    l0: layers.l0,
                    l1: layers.l1,
                    l2: layers.l2,
                    ..own
                },
                hosted: layers.l1_hosted,
                calls,
                degraded,
            };
            return Err(self.failed(request, settled, decided, error, budget));
        }
        render::unreviewed_left(&mut layers, meter, sent, u64::from(budget), &rendered);

        // 11. record: the pack and its snapshot.
        let status = SnapshotStatus::of(degraded, layers.truncated(), false);
        compress::restored(&mut compressions, &layers, &restored);
        compress::cut_instead(&mut compressions, &cut);
        let record = self.record(calls, status, budget, rendered, own.stable, compressions);
        let made = (chat, compacted.state);
        Ok(record::pack(
            request, settled, layers, record, &self.plan, made,
        ))
    }

    /// Stages 7 to 9 over what the budget decides: the fill's phases
    /// (`budget`), each reviewed (`policy`) where it took something not
    /// reviewed yet, and compression (`compress`), in the order they run;
    /// with the review, whose rounds left may be spent on room freed later.
    async fn fill(
        b: &Budgeting<'_, '_>,
        l1: Vec<Item>,
        l2: Vec<Item>,
        (hosted, husks): (Vec<Item>, Husks),
        window: Vec<Group>,
        room: u64,
    ) -> Result<(Shared, policy::Reviewer), Stopped> {
        let (mut pool, mut state) = budget::Pool::new(l1, l2, hosted, window, room);
        let controls = b.meter.controls().clone();
        let mut reviewer = policy::Reviewer::new(husks, pool.hosted_from, controls);
        match Self::phases(b, &mut pool.items, &mut state, &mut reviewer).await {
            Ok((summaries, records)) => {
                let calls = std::mem::take(&mut reviewer.calls);
                Ok((pool.shared(summaries, calls, records), reviewer))
            }
            Err(error) => {
                let (l1, l2, hosted) = pool.stopped();
                let calls = reviewer.calls;
                Err(Stopped {
                    error,
                    l1,
                    l2,
                    hosted,
                    calls,
                })
            }
        }
    }

    /// The fill's phases in order (numbered as in [`crate::budget`]);
    /// returns the summaries made and what compression did to each
    /// section, in priority order.
    async fn phases(
        b: &Budgeting<'_, '_>,
        pool: &mut [Item],
        state: &mut Filling,
        reviewer: &mut policy::Reviewer,
    ) -> Result<(Vec<Item>, Vec<SectionCompression>), Error> {
        let channel = b.channel;
        // Phases 1 and 2, the shares and the flow, and which sections are
        // then compressed: reviewed with what they would summarise.
        let (compressing, skipped) =
            policy::reviewed(state, pool, channel, reviewer, |s, pool, strict| {
                let reserved = s.share_and_flow(pool, b, strict);
                let chosen = compress::choose(s, reserved, pool, b, strict);
                let mut besides = compress::unreviewed(s, &chosen.0, pool);
                if !strict {
                    besides.extend(compress::heads(s, &chosen.1, pool, b));
                }
                (chosen, besides)
            })
            .await?;
        // Phase 3: every section over is summarised in one call, or cut.
        let calls = &mut reviewer.calls;
        let mut compressed = compress::summarise(state, &compressing, pool, b, calls).await;
        // Phases 3 (what flows once more) and 4 (the steps), reviewed.
        policy::reviewed(state, pool, channel, reviewer, |s, pool, strict| {
            s.flow_again(pool, b, strict);
            s.steps(pool, b, strict);
            ((), Vec::new())
        })
        .await?;
        // Phase 5: what compression cut or summarised goes in whole where
        // the room now left holds it (all of it reviewed already). A
        // summary that cost more than what it summarised leaves room for
        // what was left over, which flows to it, reviewed: nothing that
        // fits is dropped.
        if compress::take_whole(state, pool, &mut compressed, b) {
            policy::reviewed(state, pool, channel, reviewer, |s, pool, strict| {
                s.fill_freed(pool, b, strict);
                ((), Vec::new())
            })
            .await?;
        }
        // Phase 6: what is left over is dropped, with the numbers.
        state.leftovers(pool, b);
        let mut records = skipped;
        records.append(&mut compressed.records);
        records.sort_by_key(|r| budget::PRIORITY.iter().position(|&s| s == r.section));
        Ok((compressed.summaries, records))
    }

    /// The kept conversation begins where the request says it may: with
    /// `user-turn`, turns before the first kept user turn are dropped and
    /// the pack is counted again.
    fn start_conversation(
        &self,
        request: &AssembleRequest,
        layers: &mut Layers,
        meter: &Meter<'_>,
        sent: budget::Sent,
        rendered: Rendered,
    ) -> Rendered {
        if request.conversation_start.unwrap_or_default() == ConversationStart::UserTurn
            && conversation::start_on_user(&request.conversation, &mut layers.l1)
        {
            return render::account(layers, meter, sent);
        }
        rendered
    }

    /// What the assembly did besides deciding the items, for the record.
    fn record(
        &self,
        source_calls: Vec<SourceCall>,
        status: Vec<SnapshotStatus>,
        budget: u32,
        rendered: Rendered,
        l0_cost: u64,
        compressions: Vec<SectionCompression>,
    ) -> record::Record {
        record::Record {
            profile: self.profile,
            source_calls,
            status,
            budget,
            rendered,
            l0_cost,
            compressions,
            keyed: self.fence_key.is_some(),
        }
    }

    /// The failure of an assembly whose fill `stopped` (the policy
    /// failed): the snapshot of what it had decided, with every call made.
    fn stopped(
        &self,
        request: &AssembleRequest,
        settled: &Settled,
        own: layer::Own,
        (mut calls, degraded, stopped): (Vec<SourceCall>, bool, Stopped),
        budget: u32,
    ) -> Failure {
        calls.extend(stopped.calls);
        let own = layer::Own {
            l1: stopped.l1,
            l2: stopped.l2,
            ..own
        };
        let hosted = stopped.hosted;
        let decided = Decided {
            own,
            hosted,
            calls,
            degraded,
        };
        self.failed(request, settled, decided, stopped.error, budget)
    }

    /// The failure of an assembly that had begun: `error`, with the
    /// snapshot of what it had `decided` when it stopped.
    fn failed(
        &self,
        request: &AssembleRequest,
        settled: &Settled,
        decided: Decided,
        error: Error,
        budget: u32,
    ) -> Failure {
        let keyed = self.fence_key.is_some();
        record::failed(
            (request, settled),
            decided,
            error,
            &self.plan,
            self.profile,
            budget,
            keyed,
        )
    }
}
