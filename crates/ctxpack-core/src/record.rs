//! The last stage, the record: the pack with its snapshot — one entry per
//! candidate (a run of turns or stage summaries dropped alike, one entry)
//! with why it was taken or dropped, the compression metadata,
//! the metrics, the `ContextAssembled` event and, last, the content-hash
//! ids — or, for an assembly that failed once begun, the failed snapshot.

use crate::config::{Plan, Profile};
use crate::digest::{content_id, text_hash};
use crate::error::{Error, Failure};
use crate::item::{Decision, Item};
use crate::model::Settled;
use crate::pack::{
    CompressionMetadata, ContextAssembled, ContextPack, Message, Metrics, ReasonCount,
    SectionTokens, Strategy,
};
use crate::snapshot::{Origin, Reason, SectionCompression, SourceCall};

use crate::render::{self, Layers, Rendered};
use crate::snapshot::{
    CacheBoundary, CachePrefix, Counted, FenceReport, Run, Snapshot, SnapshotEntry, SnapshotStatus,
    numbered,
};
use crate::tokenizer::{Count, clamp};
use crate::types::{AssembleRequest, Layer, PackForm, Section};
use sha2::Digest;
use std::collections::{BTreeMap, BTreeSet};

/// What the assembly did besides deciding the items.
pub(crate) struct Record {
    pub profile: Profile,
    pub source_calls: Vec<SourceCall>,
    pub status: Vec<SnapshotStatus>,
    pub budget: u32,
    pub rendered: Rendered,
    /// What L0 costs rendered together: the stable prefix.
    pub l0_cost: u64,
    /// What compression did to each section over its share.
    pub compressions: Vec<SectionCompression>,
    /// Whether the fences' nonce is keyed.
    pub keyed: bool,
}

/// A snapshot of `request` with nothing in it yet: the agent context, the
/// tokenizer, the budget, the profile and the plan; no entries, calls or
/// tokens, status `complete`.
fn blank(
    (request, settled): (&AssembleRequest, &Settled),
    budget: u32,
    profile: Profile,
    plan: &Plan,
) -> Snapshot {
    let ctx = &request.context;
    Snapshot {
        id: String::new(),
        tenant_id: ctx.tenant_id.clone(),
        project_id: ctx.project_id.clone(),
        run_id: ctx.run_id.clone(),
        attempt_id: ctx.attempt_id.clone(),
        scopes: ctx.scopes.clone(),
        tokenizer: settled.tokenizer.clone(),
        model: settled.model.clone(),
        token_budget: budget,
        tokens_used: 0,
        text_tokens: 0,
        message_tokens: 0,
        stable_prefix_tokens: 0,
        cache_prefixes: Vec::new(),
        content_hash: String::new(),
        index_revisions: Vec::new(),
        memory_items: Vec::new(),
        status: vec![SnapshotStatus::Complete],
        failure: None,
        profile,
        plan: plan.clone(),
        source_calls: Vec::new(),
        compressions: Vec::new(),
        fence: FenceReport::default(),
        chat: None,
        entries: Vec::new(),
    }
}

/// `item`'s record in the snapshot. An item no stage decided is recorded
/// as not included (`assembly-failed`): a stage that forgets to decide
/// fails the tests, and never includes anything.
fn entry(mut item: Item) -> SnapshotEntry {
    debug_assert!(
        !item.is_pending(),
        "{} was never decided: a stage forgot it",
        item.id
    );
    item.name();
    let reason = match item.decision {
        Decision::Made(reason) => reason,
        Decision::Pending => Reason::AssemblyFailed,
    };
    SnapshotEntry {
        layer: item.section.layer(),
        included: reason.is_inclusion(),
        id: item.id,
        section: item.section,
        origin: item.origin,
        provenance: item.provenance,
        trust: item.trust,
        score: item.score,
        tokens: match item.count {
            Some(Count::Exact(n) | Count::Over(n)) => n,
            None => 0,
        },
        counted: match item.count {
            Some(Count::Exact(_)) => Counted::Exact,
            Some(Count::Over(_)) => Counted::Over,
            None => Counted::Uncounted,
        },
        reason,
        compressed: item.compressed,
        redacted: item.redacted,
        run: None,
    }
}

/// The entries of `items`, in order: each item's, except that a run of
/// consecutive conversation turns or stage summaries dropped for the same
/// reason without being counted is one entry (see [`Run`]) — a long
/// history trimmed is thousands of turns never looked at, and only a run's
/// first and last are named.
fn records(items: impl Iterator<Item = Item>, n: usize) -> Vec<SnapshotEntry> {
    // Sized for one entry each of the `n` items: ten thousand entries grown
    // by doubling were copied twice over. Pages a trim's runs leave unused
    // are never touched, and are given back below.
    let mut out: Vec<SnapshotEntry> = Vec::with_capacity(n);
    // The last member of the run the last entry starts, and how many.
    let mut open: Option<(Item, u32)> = None;
    let close = |out: &mut Vec<SnapshotEntry>, open: &mut Option<(Item, u32)>| {
        if let (Some(last), Some((mut member, count))) = (out.last_mut(), open.take()) {
            member.name();
            last.run = Some(Run {
                last_id: member.id,
                count,
            });
        }
    };
    for item in items {
        let tail = open.as_ref().map(|(member, _)| member);
        if let Some(last) = out.last()
            && extends(last, tail, &item)
        {
            let count = open.as_ref().map_or(1, |&(_, n)| n) + 1;
            open = Some((item, count));
            continue;
        }
        close(&mut out, &mut open);
        out.push(entry(item));
    }
    close(&mut out, &mut open);
    if out.len() < out.capacity() / 2 {
        out.shrink_to_fit();
    }
    out
}

/// Whether `item` is the next member of a run that `last` starts (its
/// last member so far `tail`, if it has one).
fn extends(last: &SnapshotEntry, tail: Option<&Item>, item: &Item) -> bool {
    let Decision::Made(reason) = &item.decision else {
        return false;
    };
    let runs = item.origin == Origin::Request
        && matches!(
            item.section,
            Section::ConversationState | Section::StageSummaries
        );
    if !(runs
        && item.count.is_none()
        && !reason.is_inclusion()
        && !item.compressed
        && !item.redacted
        && last.section == item.section
        && last.origin == item.origin
        && last.counted == Counted::Uncounted
        && !last.included
        && !last.compressed
        && !last.redacted
        && &last.reason == reason)
    {
        return false;
    }
    // Members are consecutive ids, so a run can be read back.
    fn index(item: &Item) -> Option<(&str, u64)> {
        match item.turn {
            Some(i) => Some(("turn-", i as u64)),
            None => numbered(&item.id),
        }
    }
    let before = match tail {
        Some(member) => index(member),
        None => numbered(&last.id),
    };
    match (before, index(item)) {
        (Some((a, m)), Some((b, n))) => a == b && m.checked_add(1) == Some(n),
        _ => false,
    }
}

/// What was done to fit the budget, read off the decided items.
fn compression(layers: &Layers) -> CompressionMetadata {
    let mut strategies = vec![Strategy::L0Immutable];
    let any =
        |items: &[Item], f: fn(&Reason) -> bool| items.iter().any(|i| i.reason().is_some_and(f));
    if any(&layers.l1, |r| {
        matches!(r, Reason::KeepLast(_) | Reason::ToolPair(_))
    }) {
        strategies.push(Strategy::KeepLast);
    }
    if any(&layers.l1, |r| matches!(r, Reason::OverBudget(_))) {
        strategies.push(Strategy::ConversationBudget);
    }
    if any(&layers.l2, |r| matches!(r, Reason::EvictedOldest)) {
        strategies.push(Strategy::EvictOldest);
    }
    let hosted = || layers.l2.iter().chain(layers.l1_hosted.iter());
    let compacted = || any(&layers.l1, |r| matches!(r, Reason::Summarized(_)));
    if hosted().any(|i| i.included() && i.origin == Origin::Summary) || compacted() {
        strategies.push(Strategy::Summarize);
    }
    if hosted().any(|i| i.included() && i.compressed && i.origin != Origin::Summary) {
        strategies.push(Strategy::Truncate);
    }
    // A host candidate refused for claiming an L0 section is no loss of L0.
    let mut truncated_layers: Vec<Layer> = layers
        .l1
        .iter()
        .chain(layers.l1_hosted.iter())
        .chain(layers.l2.iter())
        .filter(|i| !i.included() && i.reason() != Some(&Reason::SectionNotAllowed))
        .map(|i| i.section.layer())
        .collect();
    truncated_layers.sort();
    truncated_layers.dedup();
    let dropped = [&layers.l0, &layers.l2, &layers.l1_hosted, &layers.l1]
        .iter()
        .flat_map(|items| items.iter())
        .filter(|i| !i.included())
        .count();
    CompressionMetadata {
        applied_strategies: strategies,
        truncated_layers,
        entries_dropped: crate::tokenizer::clamp_len(dropped),
    }
}

/// The pack of the decided items in `layers`, with its snapshot: the
/// conversation `compaction` to pass back, and for a request's `chat`
/// the request to send in its shape.
pub(crate) fn pack(
    request: &AssembleRequest,
    settled: &Settled,
    mut layers: Layers,
    record: Record,
    plan: &Plan,
    (chat, compaction): (Option<&crate::chat::Read>, Option<crate::types::Compaction>),
) -> ContextPack {
    let compression = compression(&layers);
    let (entries, turns) = render::entries(&mut layers, crate::budget::Sent::of(request, settled));
    let fence = fence_report(&layers, record.keyed);
    let text = render::text(&entries);
    let (messages, message_turns) = render::messages(request, &entries, &turns);
    let cache_prefixes = cache_prefixes(request, settled, &messages, &record.rendered);
    let cache_key = cache_key(request, &cache_prefixes);
    let sent_chat = chat
        .filter(|_| request.form != Some(PackForm::Text))
        .map(|read| {
            crate::chat::write(
                read,
                &crate::chat::Pack {
                    messages: &messages,
                    turns: &message_turns,
                    prefixes: &cache_prefixes,
                    cache_key: cache_key.as_deref(),
                    compaction: compaction.as_ref(),
                    model: request.model.as_deref(),
                },
            )
        });
    // Render order: L0, then the slow-moving L2, then L1 with the
    // conversation last; or laid out cache-first (see `Layers::order`).
    let order: Option<Vec<render::At>> = layers.cache_first.map(|_| layers.order().collect());
    let Layers {
        l0,
        l2,
        l1_hosted,
        l1,
        ..
    } = layers;
    let n = l0.len() + l2.len() + l1_hosted.len() + l1.len();
    let layered = [l0, l2, l1_hosted, l1];
    let snapshot_entries = match order {
        None => records(layered.into_iter().flatten(), n),
        Some(order) => {
            let mut at: Vec<Vec<Option<Item>>> = layered
                .into_iter()
                .map(|l| l.into_iter().map(Some).collect())
                .collect();
            records(order.into_iter().filter_map(|(l, k)| at[l][k].take()), n)
        }
    };
    let ctx = &request.context;
    let used = clamp(record.rendered.used);
    let mut pack = ContextPack {
        id: format!(
            "{}-router-pack",
            ctx.session_id.as_deref().unwrap_or("unknown")
        ),
        session_id: ctx.session_id.clone(),
        cache_key,
        trace_id: ctx.trace_id.clone(),
        stage_id: request.workflow.as_ref().and_then(|w| w.stage_id.clone()),
        entries,
        text,
        messages,
        budget_used: used,
        budget_limit: record.budget,
        compaction,
        chat: sent_chat,
        compression,
        event: ContextAssembled::default(),
        metrics: Metrics::default(),
        snapshot: Snapshot {
            tokens_used: used,
            text_tokens: clamp(record.rendered.text),
            message_tokens: clamp(record.rendered.messages),
            stable_prefix_tokens: clamp(record.l0_cost),
            cache_prefixes,
            status: record.status,
            source_calls: record.source_calls,
            compressions: record.compressions,
            fence,
            chat: chat.map(crate::chat::report),
            entries: snapshot_entries,
            ..blank((request, settled), record.budget, record.profile, plan)
        },
    };
    complete(&mut pack, settled.overhead, request.form);
    pack
}

/// The fewest prefix tokens a provider caches where the request names no
/// model: OpenAI's, and the least of Claude's and Gemini's.
const CACHE_MIN_TOKENS: u32 = 1_024;

/// The prefixes of `messages` at each boundary (see [`CacheBoundary`]):
/// the stable system message, the conversation leading after it, and the
/// whole pack; none for a pack sent as text. A prefix's hash is of its
/// messages in order, each written as [`cache_bytes`] writes it, so a
/// host hashes another pack's first messages the same way.
fn cache_prefixes(
    request: &AssembleRequest,
    settled: &Settled,
    messages: &[Message],
    rendered: &Rendered,
) -> Vec<CachePrefix> {
    if request.form == Some(PackForm::Text) || messages.is_empty() {
        return Vec::new();
    }
    let least = match &settled.model {
        Some(model) => model.profile.cache_min_tokens,
        None => Some(CACHE_MIN_TOKENS),
    };
    let lead = rendered.lead;
    let stable = lead.stable.map(|tokens| (1, tokens));
    let history = (lead.turns > 0).then(|| {
        let (n, tokens) = stable.unwrap_or((0, 0));
        (n + lead.turns as usize, tokens + lead.turn_tokens)
    });
    // The reply's priming follows the messages: no prefix holds it.
    let turn = Some((
        messages.len(),
        rendered.messages.saturating_sub(u64::from(settled.reply)),
    ));
    let mut chain = sha2::Sha256::new();
    let mut hashed = 0;
    let mut out = Vec::new();
    for (boundary, at) in [
        (CacheBoundary::Stable, stable),
        (CacheBoundary::History, history),
        (CacheBoundary::Turn, turn),
    ] {
        let Some((n, tokens)) = at else { continue };
        let n = n.min(messages.len());
        for m in &messages[hashed..n] {
            cache_bytes(m, &mut |bytes| chain.update(bytes));
        }
        hashed = hashed.max(n);
        let tokens = clamp(tokens);
        out.push(CachePrefix {
            boundary,
            messages: crate::tokenizer::clamp_len(n),
            tokens,
            hash: format!("{:x}", chain.clone().finalize()),
            cacheable: least.is_some_and(|least| tokens >= least),
        });
    }
    out
}

/// Writes `message` as a cache prefix's hash takes it: its role, tool-call
/// id, attached tokens (in decimal) and content, each as its UTF-8 byte
/// length in decimal, `:`, and its bytes; an absent field empty.
pub(crate) fn cache_bytes(message: &Message, out: &mut impl FnMut(&[u8])) {
    let m = message;
    crate::digest::hashed_fields(
        m.role,
        m.tool_call_id.as_deref(),
        m.attached_tokens,
        &m.content,
        out,
    );
}

/// The key that keeps a session's requests on one provider cache: a hash
/// of the tenant and the session, or of the stable prefix for a request
/// that names no session.
fn cache_key(request: &AssembleRequest, prefixes: &[CachePrefix]) -> Option<String> {
    let ctx = &request.context;
    let hash = match &ctx.session_id {
        Some(session) => text_hash(&format!(
            "{}\0{session}",
            ctx.tenant_id.as_deref().unwrap_or("")
        )),
        None => prefixes
            .iter()
            .find(|p| p.boundary == CacheBoundary::Stable)?
            .hash
            .clone(),
    };
    Some(format!("ctxpack-{}", hash.get(..32).unwrap_or(&hash)))
}

/// What writing the included items' texts changed, by id (see
/// [`FenceReport`]).
fn fence_report(layers: &Layers, keyed: bool) -> FenceReport {
    let context_role = render::context_role(layers.items());
    let included: Vec<&Item> = layers.items().filter(|i| i.included()).collect();
    let ids = |altered: fn(&Item) -> bool| {
        included
            .iter()
            .filter(|i| altered(i))
            .map(|i| i.id.clone())
            .collect()
    };
    FenceReport {
        keyed,
        stripped: ids(|i| i.altered.removed),
        defused: ids(|i| i.altered.defused),
        context_role,
        quoted_lines: included.iter().map(|i| quoted_lines(i)).sum(),
    }
}

/// The lines of `item` the flat text quotes: every line of a fenced text,
/// every line of a turn after its header (a quote each, about a token).
fn quoted_lines(item: &Item) -> u32 {
    match (item.turn, item.frame()) {
        (Some(_), _) => crate::fence::quotes(&item.text, false),
        (None, Some(_)) if item.trust == crate::types::TrustTier::Untrusted => {
            crate::fence::quotes(&item.text, true)
        }
        _ => 0,
    }
}

/// Fills in everything derived from the pack's entries, then the ids.
/// A section's tokens are its entries' and their overhead: each entry's
/// for either form; sent as messages, that of the messages its entries
/// begin (each turn, and the first entry of each system message); sent
/// as text, none.
fn complete(pack: &mut ContextPack, entry_overhead: u32, form: Option<PackForm>) {
    let to_user = pack.snapshot.fence.context_role == Some(crate::types::Role::User);
    let snap = &mut pack.snapshot;
    let included = || snap.entries.iter().filter(|e| e.included);
    snap.index_revisions = included()
        .filter_map(|e| e.provenance.as_ref()?.index_revision.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    snap.memory_items = included()
        .filter(|e| e.origin == Origin::Memory)
        .map(|e| e.id.clone())
        .collect();
    snap.content_hash = text_hash(&pack.text);

    let mut per_section = BTreeMap::new();
    // Whether each message of entries that are not turns (see
    // `render::Block`) was begun, and whether entries now go past the
    // first.
    let (mut begun, mut past_l0) = ([false; 3], false);
    for e in &pack.entries {
        let turn = e.section == Section::ConversationState;
        let m = render::Block::of(e.layer, past_l0, to_user) as usize;
        past_l0 |= turn || m != 0;
        let begins = match form {
            None => true,
            Some(PackForm::Text) => false,
            Some(PackForm::Messages) if turn => true,
            Some(PackForm::Messages) => !std::mem::replace(&mut begun[m], true),
        };
        let overhead = if begins { entry_overhead } else { 0 };
        *per_section.entry(e.section).or_insert(0u32) += e.tokens.saturating_add(overhead);
    }
    let mut dropped = BTreeMap::new();
    for e in snap.entries.iter().filter(|e| !e.included) {
        *dropped.entry(e.reason.name()).or_insert(0u32) += e.candidates();
    }
    pack.metrics = Metrics {
        tokens_per_section: per_section
            .into_iter()
            .map(|(section, tokens)| SectionTokens { section, tokens })
            .collect(),
        dropped_by_reason: dropped
            .into_iter()
            .map(|(reason, count)| ReasonCount {
                reason: reason.to_owned(),
                count,
            })
            .collect(),
    };

    // The id covers the snapshot — every decision, and through
    // `content-hash` every rendered text — with the pack's own ids and its
    // accounting; the texts, already hashed, are not hashed again (the
    // message form and the entries are made from the same texts). The
    // event carries it.
    pack.snapshot.id = String::new();
    pack.event = ContextAssembled::default();
    pack.snapshot.id = content_id(&(
        &pack.id,
        &pack.trace_id,
        &pack.stage_id,
        pack.budget_used,
        &pack.compression,
        &pack.metrics,
        &pack.snapshot,
    ));
    let snap = &pack.snapshot;
    pack.event = ContextAssembled {
        context_snapshot_id: snap.id.clone(),
        tenant_id: snap.tenant_id.clone(),
        run_id: snap.run_id.clone(),
        attempt_id: snap.attempt_id.clone(),
        status: snap.status.clone(),
        tokens_used: snap.tokens_used,
        token_budget: snap.token_budget,
    };
}

/// What an assembly had decided when it stopped: what its failed snapshot
/// records.
pub(crate) struct Decided {
    /// The request's own candidates: L0, the conversation, stage summaries.
    pub own: crate::layer::Own,
    /// The hosts' candidates, as far as they got.
    pub hosted: Vec<Item>,
    /// Every source call made.
    pub calls: Vec<SourceCall>,
    /// Whether a source had failed.
    pub degraded: bool,
}

impl Decided {
    /// Only the request's own candidates: the assembly stopped before any
    /// host was asked.
    pub fn own(own: crate::layer::Own) -> Self {
        Decided {
            own,
            hosted: Vec::new(),
            calls: Vec::new(),
            degraded: false,
        }
    }
}

/// The failure of an assembly that had begun: `error`, with the `failed`
/// snapshot of every candidate known by then — the request's own, counted
/// as far as they were (L0 exactly), and the hosts', with the
/// reasons admission and review gave them. What was not decided, and what
/// was decided in, is `assembly-failed`; nothing is included.
pub(crate) fn failed(
    (request, settled): (&AssembleRequest, &Settled),
    decided: Decided,
    error: Error,
    plan: &Plan,
    profile: Profile,
    budget: u32,
    keyed: bool,
) -> Failure {
    let Decided {
        own: crate::layer::Own { l0, l1, l2, .. },
        hosted,
        calls: source_calls,
        degraded,
    } = decided;
    // Render order, as a pack's: L0, L2, the hosts' L1, the conversation.
    let (hosted_l2, hosted_l1): (Vec<Item>, Vec<Item>) = hosted
        .into_iter()
        .partition(|i| i.section.layer() == Layer::L2);
    let n = l0.len() + l2.len() + hosted_l2.len() + hosted_l1.len() + l1.len();
    let entries = records(
        l0.into_iter()
            .chain(l2)
            .chain(hosted_l2)
            .chain(hosted_l1)
            .chain(l1)
            .map(|mut item| {
                if item.is_pending() || item.included() {
                    item.decide(Reason::AssemblyFailed);
                }
                item
            }),
        n,
    );
    let mut snapshot = Snapshot {
        content_hash: text_hash(""),
        status: SnapshotStatus::of(degraded, false, true),
        failure: Some(error.to_string()),
        source_calls,
        fence: FenceReport {
            keyed,
            ..FenceReport::default()
        },
        entries,
        ..blank((request, settled), budget, profile, plan)
    };
    snapshot.id = content_id(&snapshot);
    Failure {
        error,
        snapshot: Some(Box::new(snapshot)),
    }
}
