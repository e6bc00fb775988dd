//! The layered pack (seed 002, generalised) with the profiles of seed 000.
//!
//! - **L0** — system prompt, mandatory instructions, current task, workflow
//!   status — is charged first and never dropped. If it alone exceeds the
//!   budget the assembly fails with both numbers; nothing is truncated.
//! - **L1** — the conversation — keeps the newest of the last `keep-last`
//!   turns that fit, as one contiguous run ending at the newest turn. A tool
//!   call and its results are kept or dropped as one unit; a tool result whose
//!   call is not in the conversation is never kept.
//! - **L2** — stage summaries are evicted oldest-first: the kept summaries are
//!   the newest ones that fit, in chronological order. (Seed 002's literal
//!   loop walks oldest-first and skips what does not fit, which keeps the
//!   *oldest*; we follow its stated intent.) Then the host's candidates
//!   (see [`crate::gather`]) fill what remains in fused-rank order; one that
//!   does not fit is skipped and a smaller one after it may still go in.
//!
//! L1 is charged before L2, so under pressure L2 gives way first, then L1.
//! Every candidate, kept or not, ends in the snapshot with its reason.

use crate::budget::{self, Group};
use crate::error::Error;
use crate::gather::Gathered;
use crate::host::Host;
use crate::tokenizer::{Count, Meter};
use crate::types::{
    AssembleRequest, CompressionMetadata, ContextAssembled, ContextPack, ConversationTurn, Counted,
    Layer, Message, Metrics, Origin, PackEntry, Plan, Profile, Provenance, Reason, Role, Section,
    Snapshot, SnapshotEntry, SnapshotStatus, Strategy, TrustTier,
};
use std::collections::HashMap;

/// A candidate on its way through the assembly.
pub(crate) struct Item {
    pub id: String,
    pub section: Section,
    pub role: Role,
    pub text: String,
    pub origin: Origin,
    pub provenance: Option<Provenance>,
    pub trust: TrustTier,
    pub score: Option<f64>,
    /// Its tokens as far as they were counted; `None` until something
    /// depends on them.
    pub count: Option<Count>,
    /// Whether `text` is the body of a host text, rendered in a frame
    /// made from its provenance and trust (see [`Item::frame`]):
    /// the frame and the body are counted apart, and the frame is put
    /// around the body only when it is rendered.
    pub framed: bool,
    /// The host's count of the body, valid while the body is the host's
    /// text unchanged.
    pub hint: Option<u32>,
    pub reason: Reason,
    pub redacted: bool,
    pub compressed: bool,
}

impl Item {
    /// An item ctxpack makes itself (from the request, or a summary), with
    /// provenance of `source_kind` citing `reference`, not yet decided.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn made(
        id: String,
        section: Section,
        role: Role,
        text: String,
        origin: Origin,
        source_kind: &str,
        reference: String,
        trust: TrustTier,
    ) -> Self {
        Item {
            id,
            section,
            role,
            text,
            origin,
            provenance: Some(Provenance {
                source_kind: source_kind.to_owned(),
                reference,
                source_version: None,
                index_revision: None,
            }),
            trust,
            score: None,
            count: None,
            framed: false,
            hint: None,
            // Every path overwrites this; it is the reason an item would
            // have if nothing decided otherwise.
            reason: Reason::WithinBudget,
            redacted: false,
            compressed: false,
        }
    }

    fn from_request(
        id: String,
        section: Section,
        role: Role,
        text: String,
        reference: String,
        trust: TrustTier,
    ) -> Self {
        Item::made(
            id,
            section,
            role,
            text,
            Origin::Request,
            "request",
            reference,
            trust,
        )
    }

    /// The head and tail its text is rendered between, if it is a host
    /// text (see [`crate::gather::frame`]): its text is then the body.
    pub(crate) fn frame(&self) -> Option<(String, &'static str)> {
        self.provenance
            .as_ref()
            .filter(|_| self.framed)
            .map(|p| crate::gather::frame(&p.reference, self.trust))
    }

    /// Asks for the memory its count will read: its text and, for a
    /// framed text, its reference (see [`crate::prefetch`]).
    pub(crate) fn prefetch(&self) {
        crate::prefetch::line(self.text.as_ptr());
        if let Some(p) = &self.provenance {
            crate::prefetch::line(p.reference.as_ptr());
        }
    }

    /// Its text as rendered: a host text in its frame.
    pub(crate) fn rendered(&self) -> std::borrow::Cow<'_, str> {
        match self.frame() {
            Some((head, tail)) => format!("{head}{}{tail}", self.text).into(),
            None => self.text.as_str().into(),
        }
    }

    /// Its text as rendered, taken out of it.
    fn take_rendered(&mut self) -> String {
        match self.frame() {
            Some(_) => self.rendered().into_owned(),
            None => std::mem::take(&mut self.text),
        }
    }

    /// The same candidate with another text, not yet counted.
    pub(crate) fn with_text(&self, text: String) -> Item {
        Item {
            id: self.id.clone(),
            section: self.section,
            role: self.role,
            text,
            origin: self.origin,
            provenance: self.provenance.clone(),
            trust: self.trust,
            score: self.score,
            count: None,
            framed: self.framed,
            hint: None,
            reason: self.reason.clone(),
            redacted: self.redacted,
            compressed: self.compressed,
        }
    }

    /// Its exact tokens; an item is counted exactly before it is included.
    pub(crate) fn tokens(&self) -> u32 {
        self.count.and_then(Count::exact).unwrap_or(0)
    }
}

/// Validates `request`, naming the first offending field.
pub fn validate(request: &AssembleRequest) -> Result<(), Error> {
    if request.context.session_id.as_deref() == Some("") {
        return Err(Error::invalid(
            "request.context.session-id",
            "must not be empty (leave it out when there is no session)",
        ));
    }
    if let Some(w) = &request.workflow {
        if w.status.is_empty() {
            return Err(Error::invalid(
                "request.workflow.status",
                "must not be empty",
            ));
        }
        if w.stage_id.as_deref() == Some("") {
            return Err(Error::invalid(
                "request.workflow.stage-id",
                "must not be empty (leave it out when there is no stage)",
            ));
        }
    }
    let mut calls: HashMap<&str, usize> = HashMap::new();
    for (i, turn) in request.conversation.iter().enumerate() {
        let field = || format!("request.conversation[{i}].tool-call-id");
        match (turn.role, turn.tool_call_id.as_deref()) {
            (_, Some("")) => return Err(Error::invalid(field(), "must not be empty")),
            (Role::Tool, None) => {
                return Err(Error::invalid(
                    field(),
                    "a tool turn must name the call it answers",
                ));
            }
            (Role::User | Role::System, Some(_)) => {
                return Err(Error::invalid(
                    field(),
                    "only assistant and tool turns carry a tool-call id",
                ));
            }
            (Role::Assistant, Some(id)) => {
                if let Some(j) = calls.insert(id, i) {
                    return Err(Error::invalid(
                        field(),
                        format!("call `{id}` is already made by conversation[{j}]"),
                    ));
                }
            }
            _ => {}
        }
    }
    for (i, s) in request.stage_summaries.iter().enumerate() {
        if s.stage_id.is_empty() {
            return Err(Error::invalid(
                format!("request.stage-summaries[{i}].stage-id"),
                "must not be empty",
            ));
        }
    }
    Ok(())
}

/// The request's own candidates, with L0 counted and checked against the
/// budget; the others are counted only when the budgeting needs them.
pub(crate) struct Prepared {
    l0: Vec<Item>,
    l1: Vec<Item>,
    l2: Vec<Item>,
    l0_cost: u64,
    budget: u32,
}

impl Prepared {
    /// The ids the request's candidates take.
    pub fn ids(&self) -> rustc_hash::FxHashSet<&str> {
        self.l0
            .iter()
            .chain(&self.l1)
            .chain(&self.l2)
            .map(|i| i.id.as_str())
            .collect()
    }
}

/// Validates the request, counts its candidates and fails if L0 alone
/// exceeds the budget — before any host is asked for anything.
pub(crate) fn prepare(
    request: &AssembleRequest,
    meter: &Meter,
    budget: u32,
) -> Result<Prepared, Error> {
    validate(request)?;
    let mut l0 = l0_items(request);
    let overhead = u64::from(request.entry_overhead);
    for item in &mut l0 {
        item.count = Some(Count::Exact(meter.count(&item.text)));
    }
    let l0_cost: u64 = l0.iter().map(|i| u64::from(i.tokens()) + overhead).sum();
    if l0_cost > u64::from(budget) {
        return Err(Error::MandatoryOverBudget {
            mandatory_tokens: clamp(l0_cost),
            budget,
        });
    }
    for item in &mut l0 {
        item.reason = Reason::Mandatory;
    }
    Ok(Prepared {
        l0,
        l1: conversation_items(&request.conversation),
        l2: stage_items(request),
        l0_cost,
        budget,
    })
}

/// Assembles the layered pack from the request's candidates and the host
/// candidates `gathered` for it, sharing the budget as `plan` says.
pub(crate) fn assemble(
    request: &AssembleRequest,
    prepared: Prepared,
    profile: Profile,
    gathered: Gathered,
    plan: &Plan,
    meter: &Meter,
    host: &mut dyn Host,
) -> ContextPack {
    let overhead = u64::from(request.entry_overhead);
    let Prepared {
        l0,
        mut l1,
        l2,
        l0_cost,
        budget,
    } = prepared;

    let units = conversation_units(&request.conversation);
    let n = request.conversation.len();
    let first = n - n.min(request.keep_last as usize);
    // The window's start moves in steps of the plan's cut step.
    let step = plan.cut_step.max(1) as usize;
    let stepped = if first == 0 {
        0
    } else {
        first.div_ceil(step) * step
    };
    // Turns that no unit claims are tool results without their call.
    for item in &mut l1 {
        item.reason = Reason::OrphanToolResult;
    }
    let mut in_window: Vec<Group> = Vec::new();
    for unit in units {
        let head = unit.members.first().copied();
        for &m in &unit.members {
            l1[m].reason = if m < first {
                Reason::KeepLast(request.keep_last)
            } else if m < stepped {
                Reason::StepCut(plan.cut_step)
            } else if unit.start < stepped {
                Reason::ToolPair(head.map(|h| l1[h].id.clone()).unwrap_or_default())
            } else {
                Reason::WithinBudget
            };
        }
        if unit.start >= stepped && !unit.members.is_empty() {
            in_window.push(unit.members);
        }
    }

    let conversation: Vec<Group> = in_window.into_iter().rev().collect();
    render_reachable_turns(
        &request.conversation,
        &mut l1,
        &conversation,
        meter,
        u64::from(budget) - l0_cost,
        overhead,
    );

    // One pool: conversation, stage summaries, host candidates.
    let (n1, n2) = (l1.len(), l2.len());
    let mut pool: Vec<Item> = l1;
    pool.extend(l2);
    let hosted_from = pool.len();
    pool.extend(gathered.items);
    let stages: Vec<usize> = (n1..n1 + n2).rev().collect();
    let hosted: Vec<usize> = (hosted_from..pool.len())
        .filter(|&i| pool[i].reason == Reason::WithinBudget)
        .collect();
    let outcome = budget::fill(
        budget::Budgeting {
            plan,
            budget: u64::from(budget),
            overhead,
            meter,
            tokenizer: request.tokenizer,
            host,
        },
        &mut pool,
        conversation,
        stages,
        hosted,
        u64::from(budget) - l0_cost,
    );

    let hosted_items = pool.split_off(hosted_from);
    let stage_items = pool.split_off(n1);
    let l1 = pool;
    // Each summary stands where the first candidate it summarises stood.
    let mut l2 = stage_items;
    let mut summaries = outcome.summaries;
    // Sized up front: ten thousand items grown by doubling were copied
    // twice over, into freshly faulted pages.
    let in_l2 = hosted_items
        .iter()
        .chain(&summaries)
        .filter(|item| item.section.layer() == Layer::L2)
        .count();
    l2.reserve(in_l2);
    let mut l1_hosted = Vec::with_capacity(hosted_items.len() + summaries.len() - in_l2);
    for item in hosted_items {
        if let Reason::Summarized(id) = &item.reason
            && let Some(k) = summaries.iter().position(|s| &s.id == id)
        {
            let summary = summaries.remove(k);
            push_by_layer(summary, &mut l2, &mut l1_hosted);
        }
        push_by_layer(item, &mut l2, &mut l1_hosted);
    }
    let mut calls = gathered.calls;
    calls.extend(outcome.call);
    let status = if gathered.degraded {
        SnapshotStatus::Degraded
    } else if outcome.truncated {
        SnapshotStatus::Truncated
    } else {
        SnapshotStatus::Complete
    };
    let tail = Tail {
        l1_hosted,
        profile,
        source_calls: calls,
        status,
        budget,
    };
    build_pack(request, l0, l1, l2, l0_cost, tail, plan)
}

/// The pack as chat messages: L0, the other context, the conversation.
fn messages(request: &AssembleRequest, entries: &[PackEntry]) -> Vec<Message> {
    let system = |filter: &dyn Fn(&PackEntry) -> bool| {
        let parts: Vec<&str> = entries
            .iter()
            .filter(|e| filter(e))
            .map(|e| e.text.as_str())
            .collect();
        (!parts.is_empty()).then(|| Message {
            role: Role::System,
            content: parts.join("\n\n"),
            tool_call_id: None,
        })
    };
    let is_turn = |e: &PackEntry| {
        e.section == Section::ConversationState && e.provenance.source_kind == "request"
    };
    let mut out: Vec<Message> = Vec::new();
    out.extend(system(&|e| e.layer == Layer::L0));
    out.extend(system(&|e| e.layer != Layer::L0 && !is_turn(e)));
    for e in entries.iter().filter(|e| is_turn(e)) {
        let turn =
            e.id.strip_prefix("turn-")
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| request.conversation.get(i));
        if let Some(t) = turn {
            out.push(Message {
                role: t.role,
                content: t.content.clone(),
                tool_call_id: t.tool_call_id.clone(),
            });
        }
    }
    out
}

fn push_by_layer(item: Item, l2: &mut Vec<Item>, l1: &mut Vec<Item>) {
    if item.section.layer() == Layer::L2 {
        l2.push(item);
    } else {
        l1.push(item);
    }
}

fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// L0 in its fixed render order: what changes least comes first, so the
/// rendered prefix stays byte-stable across turns (workflow status, which
/// moves with every stage, comes last).
fn l0_items(request: &AssembleRequest) -> Vec<Item> {
    let mut items = Vec::new();
    let mut push = |id: String, section, text: String, reference: String| {
        items.push(Item::from_request(
            id,
            section,
            Role::System,
            text,
            reference,
            TrustTier::System,
        ));
    };
    if !request.system_prompt.is_empty() {
        push(
            "system-prompt".into(),
            Section::SystemPrompt,
            request.system_prompt.clone(),
            "system-prompt".into(),
        );
    }
    for (i, text) in request.instructions.iter().enumerate() {
        push(
            format!("instruction-{i}"),
            Section::MandatoryInstructions,
            text.clone(),
            format!("instructions[{i}]"),
        );
    }
    if let Some(task) = &request.current_task {
        push(
            "current-task".into(),
            Section::CurrentTask,
            task.clone(),
            "current-task".into(),
        );
    }
    if let Some(w) = &request.workflow {
        push(
            "workflow-status".into(),
            Section::WorkflowStatus,
            format!(
                "Status: {}, Stage: {}",
                w.status,
                w.stage_id.as_deref().unwrap_or("none")
            ),
            "workflow".into(),
        );
    }
    items
}

/// The conversation's items, their texts not yet rendered: most turns of a
/// long history are never reached (see [`render_reachable_turns`]).
fn conversation_items(turns: &[ConversationTurn]) -> Vec<Item> {
    turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let trust = match t.role {
                Role::System | Role::Assistant => TrustTier::Trusted,
                Role::User => TrustTier::Unverified,
                Role::Tool => TrustTier::Untrusted,
            };
            Item::from_request(
                numbered("turn-", i, ""),
                Section::ConversationState,
                t.role,
                String::new(),
                numbered("conversation[", i, "]"),
                trust,
            )
        })
        .collect()
}

/// `head`, `i` in decimal, `tail`: `format!` without the formatting
/// machinery, which two ids per turn of a long history made show.
fn numbered(head: &str, i: usize, tail: &str) -> String {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = i;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut out = String::with_capacity(head.len() + (digits.len() - at) + tail.len());
    out.push_str(head);
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
    out.push_str(tail);
    out
}

/// A turn as the pack renders it: `[role] content`.
fn render_turn(t: &ConversationTurn) -> String {
    // Built by hand: one of these per turn reached, and histories are long.
    let role = t.role.name();
    let mut text = String::with_capacity(role.len() + 3 + t.content.len());
    text.push('[');
    text.push_str(role);
    text.push_str("] ");
    text.push_str(&t.content);
    text
}

/// Renders the texts of the turns the budgeting may count: the units of
/// `window` (newest first) up to the first whose cumulative lower bound
/// (without encoding) passes `room`, the most the conversation can get.
/// The conversation keeps a contiguous newest run, so a unit past that one
/// can be neither kept nor counted (the budgeting stops at the first unit
/// that does not fit), and nothing else reads its text.
fn render_reachable_turns(
    turns: &[ConversationTurn],
    l1: &mut [Item],
    window: &[Group],
    meter: &Meter,
    room: u64,
    overhead: u64,
) {
    let mut floor = 0u64;
    for unit in window {
        for &m in unit {
            floor += u64::from(meter.at_least(&turns[m].content)) + overhead;
            l1[m].text = render_turn(&turns[m]);
        }
        if floor > room {
            break;
        }
    }
}

fn stage_items(request: &AssembleRequest) -> Vec<Item> {
    request
        .stage_summaries
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Item::from_request(
                format!("stage-summary-{i}"),
                Section::StageSummaries,
                Role::System,
                format!("Stage {} ({}): {}", s.stage_id, s.outcome, s.summary),
                format!("stage-summaries[{i}]"),
                TrustTier::Trusted,
            )
        })
        .collect()
}

/// A run of turns that is kept or dropped whole.
#[derive(Debug, PartialEq, Eq)]
struct Unit {
    /// Index of its first turn.
    start: usize,
    /// Its turns, orphaned tool results left out.
    members: Group,
}

/// Splits a conversation into units: a tool call together with every turn up
/// to its last result is one unit (overlapping calls merge); any other turn
/// is a unit of its own. Tool results whose call is not earlier in the
/// conversation belong to no unit.
fn conversation_units(turns: &[ConversationTurn]) -> Vec<Unit> {
    let mut call_at: HashMap<&str, usize> = HashMap::new();
    let mut span_end: Vec<usize> = (0..turns.len()).collect();
    let mut orphan = vec![false; turns.len()];
    for (i, t) in turns.iter().enumerate() {
        match (t.role, t.tool_call_id.as_deref()) {
            (Role::Assistant, Some(id)) => {
                call_at.insert(id, i);
            }
            (Role::Tool, Some(id)) => match call_at.get(id) {
                Some(&a) => span_end[a] = i,
                None => orphan[i] = true,
            },
            (Role::Tool, None) => orphan[i] = true,
            _ => {}
        }
    }
    let mut units = Vec::new();
    let mut i = 0;
    while i < turns.len() {
        let start = i;
        let mut end = span_end[i];
        let mut j = i;
        while j <= end {
            end = end.max(span_end[j]);
            j += 1;
        }
        let members = match orphan[start] {
            false if end == start => Group::One(start),
            _ => Group::from((start..=end).filter(|&k| !orphan[k]).collect::<Vec<_>>()),
        };
        units.push(Unit { start, members });
        i = end + 1;
    }
    units
}

/// What the pack records besides the layers.
struct Tail {
    l1_hosted: Vec<Item>,
    profile: Profile,
    source_calls: Vec<crate::types::SourceCall>,
    status: SnapshotStatus,
    budget: u32,
}

fn build_pack(
    request: &AssembleRequest,
    l0: Vec<Item>,
    l1: Vec<Item>,
    l2: Vec<Item>,
    l0_cost: u64,
    tail: Tail,
    plan: &Plan,
) -> ContextPack {
    let overhead = u64::from(request.entry_overhead);
    let mut strategies = vec![Strategy::L0Immutable];
    let dropped_by = |items: &[Item], f: fn(&Reason) -> bool| items.iter().any(|i| f(&i.reason));
    if dropped_by(&l1, |r| {
        matches!(r, Reason::KeepLast(_) | Reason::ToolPair(_))
    }) {
        strategies.push(Strategy::KeepLast);
    }
    if dropped_by(&l1, |r| matches!(r, Reason::OverBudget(_))) {
        strategies.push(Strategy::ConversationBudget);
    }
    if dropped_by(&l2, |r| matches!(r, Reason::EvictedOldest)) {
        strategies.push(Strategy::EvictOldest);
    }
    // A host candidate refused for claiming an L0 section is no loss of L0.
    let mut truncated_layers: Vec<Layer> = l1
        .iter()
        .chain(&tail.l1_hosted)
        .chain(&l2)
        .filter(|i| !i.reason.is_inclusion() && i.reason != Reason::SectionNotAllowed)
        .map(|i| i.section.layer())
        .collect();
    truncated_layers.sort();
    truncated_layers.dedup();

    // Render order: L0, then the slow-moving L2, then L1 with the
    // conversation last.
    // (Walked, not collected: each item is moved once, into its entries.)
    let n = l0.len() + l2.len() + tail.l1_hosted.len() + l1.len();
    let ordered = l0.into_iter().chain(l2).chain(tail.l1_hosted).chain(l1);
    let mut entries = Vec::new();
    let mut snapshot_entries = Vec::with_capacity(n);
    let mut used = 0u64;
    let mut dropped = 0u32;
    for mut item in ordered {
        let layer = item.section.layer();
        let included = item.reason.is_inclusion();
        if included {
            used += u64::from(item.tokens()) + overhead;
        } else {
            dropped += 1;
        }
        if included && let Some(provenance) = item.provenance.clone() {
            entries.push(PackEntry {
                id: item.id.clone(),
                layer,
                section: item.section,
                role: item.role,
                tokens: item.tokens(),
                text: item.take_rendered(),
                provenance,
                trust: item.trust,
            });
        }
        snapshot_entries.push(SnapshotEntry {
            id: item.id,
            layer,
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
            included,
            reason: item.reason,
            compressed: item.compressed,
            redacted: item.redacted,
        });
    }
    let text = entries
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    let messages = messages(request, &entries);
    let ctx = &request.context;
    let mut pack = ContextPack {
        id: format!(
            "{}-router-pack",
            ctx.session_id.as_deref().unwrap_or("unknown")
        ),
        session_id: ctx.session_id.clone(),
        trace_id: ctx.trace_id.clone(),
        stage_id: request.workflow.as_ref().and_then(|w| w.stage_id.clone()),
        entries,
        text,
        messages,
        budget_used: clamp(used),
        budget_limit: tail.budget,
        compression: CompressionMetadata {
            applied_strategies: strategies,
            truncated_layers,
            entries_dropped: dropped,
        },
        event: ContextAssembled::default(),
        metrics: Metrics::default(),
        snapshot: Snapshot {
            id: String::new(),
            tenant_id: ctx.tenant_id.clone(),
            project_id: ctx.project_id.clone(),
            run_id: ctx.run_id.clone(),
            attempt_id: ctx.attempt_id.clone(),
            scopes: ctx.scopes.clone(),
            tokenizer: request.tokenizer,
            token_budget: tail.budget,
            tokens_used: clamp(used),
            stable_prefix_tokens: clamp(l0_cost),
            content_hash: String::new(),
            index_revisions: Vec::new(),
            memory_items: Vec::new(),
            status: tail.status,
            profile: tail.profile,
            plan: plan.clone(),
            source_calls: tail.source_calls,
            entries: snapshot_entries,
        },
    };
    crate::report::complete(&mut pack, request.entry_overhead);
    pack
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::{CharsPerToken, Recording};
    use crate::types::{AgentContext, Shortfall, StageSummary, Tokenizer, WorkflowStatus};

    fn turn(role: Role, content: &str, call: Option<&str>) -> ConversationTurn {
        ConversationTurn {
            role,
            content: content.into(),
            tool_call_id: call.map(Into::into),
        }
    }

    fn request(budget: u32) -> AssembleRequest {
        AssembleRequest {
            context: AgentContext {
                session_id: Some("s1".into()),
                trace_id: "t1".into(),
                ..AgentContext::default()
            },
            query: "q".into(),
            tokenizer: Tokenizer::CharsPerToken(1),
            budget: Some(budget),
            entry_overhead: 0,
            system_prompt: "SYS".into(),
            workflow: None,
            instructions: vec![],
            current_task: None,
            conversation: vec![],
            keep_last: 10,
            stage_summaries: vec![],
        }
    }

    /// Assembles `r` with no host, counting with `counter` through `cache`.
    fn run_with(
        r: &AssembleRequest,
        counter: &dyn crate::tokenizer::TokenCounter,
        cache: &mut crate::tokenizer::CountCache,
    ) -> Result<ContextPack, Error> {
        let m = Meter::new(counter, r.tokenizer, cache);
        let prepared = prepare(r, &m, r.budget.unwrap())?;
        Ok(assemble(
            r,
            prepared,
            Profile::Passthrough,
            Gathered::default(),
            &Plan::default(),
            &m,
            &mut crate::NoHost,
        ))
    }

    fn run(r: &AssembleRequest) -> Result<ContextPack, Error> {
        let c = CharsPerToken::new(1).unwrap();
        run_with(r, &c, &mut crate::tokenizer::CountCache::new(0))
    }

    #[test]
    fn a_re_assembly_counts_only_the_new_turn() {
        let counter = Recording::new(CharsPerToken::new(1).unwrap());
        let mut cache = crate::tokenizer::CountCache::new(1000);
        let mut r = request(200);
        r.conversation = (0..6)
            .map(|i| turn(Role::User, &format!("turn {i}"), None))
            .collect();
        let mut assemble_with = |r: &AssembleRequest| run_with(r, &counter, &mut cache).unwrap();
        let first = assemble_with(&r);
        assert_eq!(first.entries.len(), 7);
        assert_eq!(counter.1.borrow().len(), 7, "{:?}", counter.1.borrow());
        counter.1.borrow_mut().clear();
        r.conversation.push(turn(Role::User, "turn 6", None));
        let second = assemble_with(&r);
        assert_eq!(second.entries.len(), 8);
        assert_eq!(*counter.1.borrow(), vec!["[user] turn 6".to_owned()]);
    }

    #[test]
    fn only_turns_the_budget_can_reach_are_rendered() {
        let turns: Vec<ConversationTurn> = (0..1000)
            .map(|i| turn(Role::User, &format!("turn {i} says a few words"), None))
            .collect();
        let mut l1 = conversation_items(&turns);
        assert!(l1.iter().all(|i| i.text.is_empty()));
        let window: Vec<Group> = (0..1000).rev().map(Group::One).collect();
        let counter = crate::tokenizer::Tokenizers
            .counter(Tokenizer::O200kBase)
            .unwrap();
        let mut cache = crate::tokenizer::CountCache::new(0);
        let meter = Meter::new(&*counter, Tokenizer::O200kBase, &mut cache);
        // Each turn's content is six runs, so at least six tokens, plus an
        // overhead of one: the eleventh newest turn passes 70, and is the
        // last the budgeting could count.
        render_reachable_turns(&turns, &mut l1, &window, &meter, 70, 1);
        let rendered: Vec<usize> = (0..1000).filter(|&i| !l1[i].text.is_empty()).collect();
        assert_eq!(rendered, (989..1000).collect::<Vec<_>>());
        assert_eq!(l1[995].text, "[user] turn 995 says a few words");
        // Those it renders are enough: the turns that fit in 70 are fewer.
        let fit = (0..1000)
            .rev()
            .scan(0u32, |used, i| {
                *used += meter.count(&render_turn(&turns[i])) + 1;
                (*used <= 70).then_some(i)
            })
            .count();
        assert!(fit < rendered.len(), "{fit} fit");
    }

    fn reasons(p: &ContextPack) -> Vec<(String, Reason)> {
        p.snapshot
            .entries
            .iter()
            .map(|e| (e.id.clone(), e.reason.clone()))
            .collect()
    }

    #[test]
    fn l0_over_budget_fails_with_both_numbers() {
        let mut r = request(5);
        r.instructions = vec!["four".into()];
        let err = run(&r).unwrap_err();
        assert_eq!(
            err,
            Error::MandatoryOverBudget {
                mandatory_tokens: 7,
                budget: 5
            }
        );
        assert!(err.to_string().contains('7') && err.to_string().contains('5'));
    }

    #[test]
    fn l0_is_kept_even_when_it_uses_the_whole_budget() {
        let mut r = request(3);
        r.conversation = vec![turn(Role::User, "hi", None)];
        r.stage_summaries = vec![StageSummary {
            stage_id: "a".into(),
            outcome: "ok".into(),
            summary: "x".into(),
        }];
        let p = run(&r).unwrap();
        assert_eq!(p.budget_used, 3);
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.entries[0].id, "system-prompt");
        assert_eq!(p.compression.entries_dropped, 2);
    }

    #[test]
    fn workflow_status_uses_seed_format_and_none_for_missing_stage() {
        let mut r = request(100);
        r.workflow = Some(WorkflowStatus {
            status: "running".into(),
            stage_id: None,
        });
        let p = run(&r).unwrap();
        assert_eq!(p.entries[1].text, "Status: running, Stage: none");
        assert_eq!(p.stage_id, None);
    }

    #[test]
    fn keep_last_window_then_budget_newest_first() {
        let mut r = request(3 + 2 * 9);
        // each "[user] tN" is 9 chars
        r.conversation = (0..5)
            .map(|i| turn(Role::User, &format!("t{i}"), None))
            .collect();
        r.keep_last = 3;
        let p = run(&r).unwrap();
        let rs = reasons(&p);
        assert_eq!(rs[1], ("turn-0".into(), Reason::KeepLast(3)));
        assert_eq!(rs[2], ("turn-1".into(), Reason::KeepLast(3)));
        // Nothing is left for turn-2, so it is not counted beyond that:
        // it needs more than 0.
        assert_eq!(
            rs[3],
            (
                "turn-2".into(),
                Reason::OverBudget(Shortfall {
                    needed: 1,
                    remaining: 0
                })
            )
        );
        // Turns outside the window are never counted.
        let counted: Vec<Counted> = p.snapshot.entries.iter().map(|e| e.counted).collect();
        assert_eq!(
            counted[1..],
            [
                Counted::Uncounted,
                Counted::Uncounted,
                Counted::Over,
                Counted::Exact,
                Counted::Exact
            ]
        );
        assert_eq!(rs[4].1, Reason::WithinBudget);
        assert_eq!(rs[5].1, Reason::WithinBudget);
        assert_eq!(
            p.compression.applied_strategies,
            vec![
                Strategy::L0Immutable,
                Strategy::KeepLast,
                Strategy::ConversationBudget
            ]
        );
    }

    #[test]
    fn older_units_after_a_cut_are_dropped_with_cumulative_need() {
        let mut r = request(3 + 9);
        r.conversation = vec![
            turn(Role::User, "t0", None),
            turn(Role::User, "a much longer turn", None),
            turn(Role::User, "t2", None),
        ];
        let p = run(&r).unwrap();
        let rs = reasons(&p);
        // turn-0 would fit alone, but keeping it would need turn-1 too.
        // With nothing left, neither is counted further: what they need is
        // a lower bound.
        assert_eq!(
            rs[2].1,
            Reason::OverBudget(Shortfall {
                needed: 1,
                remaining: 0
            })
        );
        assert_eq!(
            rs[1].1,
            Reason::OverBudget(Shortfall {
                needed: 1,
                remaining: 0
            })
        );
        assert_eq!(p.snapshot.entries[1].counted, Counted::Uncounted);
        assert_eq!(p.snapshot.entries[2].counted, Counted::Over);
        // With room left, the first that does not fit is counted.
        let mut r = request(3 + 9 + 5);
        r.conversation = vec![
            turn(Role::User, "t0", None),
            turn(Role::User, "a much longer turn", None),
            turn(Role::User, "t2", None),
        ];
        let p = run(&r).unwrap();
        assert_eq!(
            reasons(&p)[2].1,
            Reason::OverBudget(Shortfall {
                needed: 25,
                remaining: 5
            })
        );
        assert_eq!(p.snapshot.entries[2].counted, Counted::Exact);
        assert_eq!(rs[3].1, Reason::WithinBudget);
    }

    #[test]
    fn tool_call_and_result_stay_together() {
        let mut r = request(1000);
        r.conversation = vec![
            turn(Role::User, "u", None),
            turn(Role::Assistant, "call", Some("c1")),
            turn(Role::Tool, "result", Some("c1")),
            turn(Role::User, "u2", None),
        ];
        r.keep_last = 2; // the window splits the call from its result
        let p = run(&r).unwrap();
        let rs = reasons(&p);
        assert_eq!(rs[2].1, Reason::KeepLast(2));
        assert_eq!(rs[3].1, Reason::ToolPair("turn-1".into()));
        assert_eq!(rs[4].1, Reason::WithinBudget);
        assert!(p.entries.iter().all(|e| e.role != Role::Tool));
    }

    #[test]
    fn a_unit_that_does_not_fit_goes_whole() {
        let mut r = request(3 + 20);
        r.conversation = vec![
            turn(Role::Assistant, "call", Some("c1")),
            turn(Role::Tool, "a long tool result", Some("c1")),
        ];
        let p = run(&r).unwrap();
        assert_eq!(p.entries.len(), 1);
        let rs = reasons(&p);
        assert!(matches!(rs[1].1, Reason::OverBudget(_)));
        assert_eq!(rs[1].1, rs[2].1);
    }

    #[test]
    fn orphan_tool_results_are_never_kept() {
        let mut r = request(1000);
        r.conversation = vec![
            turn(Role::Tool, "stale", Some("gone")),
            turn(Role::User, "u", None),
        ];
        let p = run(&r).unwrap();
        assert_eq!(reasons(&p)[1].1, Reason::OrphanToolResult);
        assert_eq!(p.entries.last().unwrap().text, "[user] u");
    }

    #[test]
    fn interleaved_calls_merge_into_one_unit() {
        let turns = vec![
            turn(Role::Assistant, "a", Some("x")),
            turn(Role::Assistant, "b", Some("y")),
            turn(Role::Tool, "rx", Some("x")),
            turn(Role::Tool, "ry", Some("y")),
            turn(Role::User, "u", None),
        ];
        let units = conversation_units(&turns);
        assert_eq!(
            units,
            vec![
                Unit {
                    start: 0,
                    members: Group::Many(vec![0, 1, 2, 3])
                },
                Unit {
                    start: 4,
                    members: Group::One(4)
                }
            ]
        );
    }

    #[test]
    fn l2_evicts_oldest_and_keeps_chronological_order() {
        let mut r = request(3 + 2 * 16);
        r.stage_summaries = (0..4)
            .map(|i| StageSummary {
                stage_id: format!("s{i}"),
                outcome: "ok".into(),
                summary: "x".into(),
            })
            .collect();
        let p = run(&r).unwrap();
        let texts: Vec<_> = p.entries.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, ["SYS", "Stage s2 (ok): x", "Stage s3 (ok): x"]);
        let rs = reasons(&p);
        assert_eq!(rs[1].1, Reason::EvictedOldest);
        assert_eq!(rs[2].1, Reason::EvictedOldest);
    }

    #[test]
    fn l1_is_charged_before_l2() {
        let mut r = request(3 + 9);
        r.conversation = vec![turn(Role::User, "t0", None)];
        r.stage_summaries = vec![StageSummary {
            stage_id: "s".into(),
            outcome: "ok".into(),
            summary: "".into(),
        }];
        let p = run(&r).unwrap();
        assert_eq!(p.entries.last().unwrap().text, "[user] t0");
        assert_eq!(reasons(&p)[1].1, Reason::EvictedOldest);
    }

    #[test]
    fn overhead_is_charged_per_entry() {
        let mut r = request(3 + 4 + 9 + 4);
        r.entry_overhead = 4;
        r.conversation = vec![turn(Role::User, "t0", None), turn(Role::User, "t1", None)];
        let p = run(&r).unwrap();
        assert_eq!(p.budget_used, 20);
        assert_eq!(p.snapshot.stable_prefix_tokens, 7);
        assert_eq!(p.entries.len(), 2);
    }

    #[test]
    fn numbered_ids_read_as_format_writes_them() {
        for i in [0, 7, 9, 10, 99, 100, 12_345, 9_999_999, usize::MAX] {
            assert_eq!(numbered("turn-", i, ""), format!("turn-{i}"));
            assert_eq!(
                numbered("conversation[", i, "]"),
                format!("conversation[{i}]")
            );
        }
    }

    #[test]
    fn pack_id_is_deterministic_and_unknown_without_session() {
        let mut r = request(100);
        assert_eq!(run(&r).unwrap().id, "s1-router-pack");
        r.context.session_id = None;
        let a = run(&r).unwrap();
        assert_eq!(a.id, "unknown-router-pack");
        assert_eq!(a, run(&r).unwrap());
        r.query = "other".into();
        assert_eq!(
            a.snapshot.id,
            run(&r).unwrap().snapshot.id,
            "query is not packed"
        );
        r.system_prompt = "SYZ".into();
        assert_ne!(a.snapshot.id, run(&r).unwrap().snapshot.id);
    }

    #[test]
    fn bad_turns_name_the_field() {
        let mut r = request(100);
        r.conversation = vec![
            turn(Role::Assistant, "a", Some("x")),
            turn(Role::Assistant, "b", Some("x")),
        ];
        let e = run(&r).unwrap_err().to_string();
        assert!(e.contains("request.conversation[1].tool-call-id"), "{e}");
        r.conversation = vec![turn(Role::Tool, "a", None)];
        let e = run(&r).unwrap_err().to_string();
        assert!(e.contains("request.conversation[0].tool-call-id"), "{e}");
        r.conversation = vec![turn(Role::User, "a", Some("x"))];
        assert!(run(&r).is_err());
        r.conversation = vec![];
        r.context.session_id = Some(String::new());
        let e = run(&r).unwrap_err().to_string();
        assert!(e.contains("request.context.session-id"), "{e}");
    }
}
