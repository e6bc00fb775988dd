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
    /// The conversation turn it is, by index.
    pub turn: Option<usize>,
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
            turn: None,
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
            turn: self.turn,
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

/// The request's own candidates, with L0 counted; the others are counted
/// only when the budgeting needs them.
pub(crate) struct Prepared {
    l0: Vec<Item>,
    l1: Vec<Item>,
    l2: Vec<Item>,
    /// What L0 costs rendered together, entry overhead included.
    pub l0_cost: u64,
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

/// Validates the request and counts L0 as it renders (its entries joined,
/// overhead included), so that the caller can fail if L0 alone exceeds
/// the budget — before any host is asked for anything.
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
        item.reason = Reason::Mandatory;
    }
    let l0_cost = crate::render::account(
        &crate::render::Layers {
            l0: &mut l0,
            l2: &mut [],
            l1_hosted: &mut [],
            l1: &mut [],
        },
        request,
        meter,
        overhead,
    )
    .used;
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
    // Each entry after L0 is charged the blank line that joins it to the
    // one before, besides its overhead: what rendering adds beyond that is
    // settled once the pack is in its render order.
    let charge = overhead + u64::from(meter.count(crate::render::SEPARATOR));
    let Prepared {
        mut l0,
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
        charge,
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
            overhead: charge,
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
    let mut l1 = pool;
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
    let rendered = crate::render::settle(
        crate::render::Layers {
            l0: &mut l0,
            l2: &mut l2,
            l1_hosted: &mut l1_hosted,
            l1: &mut l1,
        },
        request,
        meter,
        overhead,
        u64::from(budget),
    );
    // Truncated only where a text that stays in the pack was cut.
    let truncated = l2
        .iter()
        .chain(&l1_hosted)
        .any(|i| i.compressed && i.reason.is_inclusion() && i.origin != Origin::Summary);
    let tail = Tail {
        l1_hosted,
        profile,
        source_calls: calls,
        status: SnapshotStatus::of(gathered.degraded, truncated, false),
        budget,
        rendered,
    };
    build_pack(request, l0, l1, l2, l0_cost, tail, plan)
}

/// The pack as chat messages: L0, the other context, the conversation
/// (`turns` says which entry is which turn).
fn messages(
    request: &AssembleRequest,
    entries: &[PackEntry],
    turns: &[Option<usize>],
) -> Vec<Message> {
    let system = |in_block: &dyn Fn(&PackEntry, Option<usize>) -> bool| {
        let parts: Vec<&str> = entries
            .iter()
            .zip(turns)
            .filter(|&(e, &t)| in_block(e, t))
            .map(|(e, _)| e.text.as_str())
            .collect();
        (!parts.is_empty()).then(|| Message {
            role: Role::System,
            content: parts.join(crate::render::SEPARATOR),
            tool_call_id: None,
        })
    };
    let mut out: Vec<Message> = Vec::new();
    out.extend(system(&|e, _| e.layer == Layer::L0));
    out.extend(system(&|e, t| e.layer != Layer::L0 && t.is_none()));
    for turn in turns.iter().flatten() {
        if let Some(t) = request.conversation.get(*turn) {
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
            let mut item = Item::from_request(
                numbered("turn-", i, ""),
                Section::ConversationState,
                t.role,
                String::new(),
                numbered("conversation[", i, "]"),
                trust,
            );
            item.turn = Some(i);
            item
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
pub(crate) struct Unit {
    /// Index of its first turn.
    pub start: usize,
    /// Its turns, orphaned tool results left out.
    pub members: Group,
}

/// Splits a conversation into units: a tool call together with every turn up
/// to its last result is one unit (overlapping calls merge); any other turn
/// is a unit of its own. Tool results whose call is not earlier in the
/// conversation belong to no unit.
pub(crate) fn conversation_units(turns: &[ConversationTurn]) -> Vec<Unit> {
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
    status: Vec<SnapshotStatus>,
    budget: u32,
    rendered: crate::render::Rendered,
}

/// A snapshot of `request` with nothing in it yet: the agent context, the
/// tokenizer, the budget, the profile and the plan; no entries, calls or
/// tokens, status `complete`.
fn blank_snapshot(
    request: &AssembleRequest,
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
        tokenizer: request.tokenizer,
        token_budget: budget,
        tokens_used: 0,
        text_tokens: 0,
        message_tokens: 0,
        stable_prefix_tokens: 0,
        content_hash: String::new(),
        index_revisions: Vec::new(),
        memory_items: Vec::new(),
        status: vec![SnapshotStatus::Complete],
        failure: None,
        profile,
        plan: plan.clone(),
        source_calls: Vec::new(),
        entries: Vec::new(),
    }
}

/// `item`'s record in the snapshot.
fn snapshot_entry(item: Item) -> SnapshotEntry {
    SnapshotEntry {
        layer: item.section.layer(),
        included: item.reason.is_inclusion(),
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
        reason: item.reason,
        compressed: item.compressed,
        redacted: item.redacted,
    }
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
    let mut turns = Vec::new();
    let mut snapshot_entries = Vec::with_capacity(n);
    let mut dropped = 0u32;
    for mut item in ordered {
        let included = item.reason.is_inclusion();
        if !included {
            dropped += 1;
        }
        if included && let Some(provenance) = item.provenance.clone() {
            turns.push(item.turn);
            entries.push(PackEntry {
                id: item.id.clone(),
                layer: item.section.layer(),
                section: item.section,
                role: item.role,
                tokens: item.tokens(),
                text: item.take_rendered(),
                provenance,
                trust: item.trust,
            });
        }
        snapshot_entries.push(snapshot_entry(item));
    }
    let text = entries
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join(crate::render::SEPARATOR);
    let messages = messages(request, &entries, &turns);
    let ctx = &request.context;
    let used = clamp(tail.rendered.used);
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
        budget_used: used,
        budget_limit: tail.budget,
        compression: CompressionMetadata {
            applied_strategies: strategies,
            truncated_layers,
            entries_dropped: dropped,
        },
        event: ContextAssembled::default(),
        metrics: Metrics::default(),
        snapshot: Snapshot {
            tokens_used: used,
            text_tokens: clamp(tail.rendered.text),
            message_tokens: clamp(tail.rendered.messages),
            stable_prefix_tokens: clamp(l0_cost),
            status: tail.status,
            source_calls: tail.source_calls,
            entries: snapshot_entries,
            ..blank_snapshot(request, tail.budget, tail.profile, plan)
        },
    };
    crate::report::complete(&mut pack, request.entry_overhead);
    pack
}

/// The failure of an assembly that had begun: `error`, with the `failed`
/// snapshot of every candidate known by then — the request's own, counted
/// as far as they were (L0 exactly), and the host's that `gathered` holds
/// with the reasons the filters gave them. What was not decided is
/// `assembly-failed`; nothing is included.
#[allow(clippy::too_many_arguments)]
pub(crate) fn failed(
    request: &AssembleRequest,
    prepared: Prepared,
    gathered: Gathered,
    error: Error,
    plan: &Plan,
    profile: Profile,
    budget: u32,
) -> crate::error::Failure {
    let Prepared { l0, l1, l2, .. } = prepared;
    // Render order, as a pack's: L0, L2, the hosts' L1, the conversation.
    let (hosted_l2, hosted_l1): (Vec<Item>, Vec<Item>) = gathered
        .items
        .into_iter()
        .partition(|i| i.section.layer() == Layer::L2);
    let entries: Vec<SnapshotEntry> = l0
        .into_iter()
        .chain(l2)
        .chain(hosted_l2)
        .chain(hosted_l1)
        .chain(l1)
        .map(|mut item| {
            if item.reason.is_inclusion() {
                item.reason = Reason::AssemblyFailed;
            }
            snapshot_entry(item)
        })
        .collect();
    let mut snapshot = Snapshot {
        content_hash: crate::digest::text_hash(""),
        status: SnapshotStatus::of(gathered.degraded, false, true),
        failure: Some(error.to_string()),
        source_calls: gathered.calls,
        entries,
        ..blank_snapshot(request, budget, profile, plan)
    };
    snapshot.id = crate::digest::content_id(&snapshot);
    crate::error::Failure {
        error,
        snapshot: Some(Box::new(snapshot)),
    }
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
        let budget = r.budget.unwrap();
        let prepared = prepare(r, &m, budget)?;
        if prepared.l0_cost > u64::from(budget) {
            return Err(Error::MandatoryOverBudget {
                mandatory_tokens: prepared.l0_cost,
                budget,
            });
        }
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
        // Each turn is counted as an entry and as a message's content;
        // the rendered whole is counted too (this estimator does not add
        // up at splits, so the tally counts the joined text).
        let turns_counted = |counted: &[String]| -> Vec<String> {
            counted
                .iter()
                .filter(|t| t.contains("turn") && !t.contains("\n"))
                .cloned()
                .collect()
        };
        let first = assemble_with(&r);
        assert_eq!(first.entries.len(), 7);
        assert_eq!(turns_counted(&counter.1.borrow()).len(), 12);
        counter.1.borrow_mut().clear();
        r.conversation.push(turn(Role::User, "turn 6", None));
        let second = assemble_with(&r);
        assert_eq!(second.entries.len(), 8);
        // The new turn, as an entry and as a message. Turn 5 first meets
        // the conversation's share (20 of 200 tokens) with too little
        // room: a known count over the limit asked is made again, only as
        // far as the limit, so that a warm builder records what a cold one
        // would. No other turn is counted again.
        assert_eq!(
            turns_counted(&counter.1.borrow()),
            ["[user] turn 6", "[user] turn 5", "turn 6"]
        );
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
                mandatory_tokens: 9,
                budget: 5
            }
        );
        // L0 as it renders: "SYS", a blank line, "four".
        assert!(err.to_string().contains('9') && err.to_string().contains('5'));
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
        let mut r = request(3 + 2 * (9 + 2));
        // each "[user] tN" is 9 chars, and the blank line before it 2
        r.conversation = (0..5)
            .map(|i| turn(Role::User, &format!("t{i}"), None))
            .collect();
        r.keep_last = 3;
        let p = run(&r).unwrap();
        let rs = reasons(&p);
        assert_eq!(rs[1], ("turn-0".into(), Reason::KeepLast(3)));
        assert_eq!(rs[2], ("turn-1".into(), Reason::KeepLast(3)));
        // Nothing is left for turn-2, not even for the blank line before
        // it, so it is not counted: it needs at least that line.
        assert_eq!(
            rs[3],
            (
                "turn-2".into(),
                Reason::OverBudget(Shortfall {
                    needed: 2,
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
                Counted::Uncounted,
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
        let mut r = request(3 + 9 + 2);
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
                needed: 2,
                remaining: 0
            })
        );
        assert_eq!(
            rs[1].1,
            Reason::OverBudget(Shortfall {
                needed: 4,
                remaining: 0
            })
        );
        assert_eq!(p.snapshot.entries[1].counted, Counted::Uncounted);
        assert_eq!(p.snapshot.entries[2].counted, Counted::Uncounted);
        // With room left, the first that does not fit is counted.
        let mut r = request(3 + 9 + 2 + 5);
        r.conversation = vec![
            turn(Role::User, "t0", None),
            turn(Role::User, "a much longer turn", None),
            turn(Role::User, "t2", None),
        ];
        let p = run(&r).unwrap();
        assert_eq!(
            reasons(&p)[2].1,
            Reason::OverBudget(Shortfall {
                needed: 25 + 2,
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
        let mut r = request(3 + 2 * (16 + 2));
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
        let mut r = request(3 + 9 + 2);
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
        let mut r = request(3 + 4 + 9 + 4 + 2);
        r.entry_overhead = 4;
        r.conversation = vec![turn(Role::User, "t0", None), turn(Role::User, "t1", None)];
        let p = run(&r).unwrap();
        // "SYS\n\n[user] t1": 14 tokens, and an overhead per entry.
        assert_eq!(p.budget_used, 22);
        assert_eq!(p.snapshot.text_tokens, 14);
        // Two messages: "SYS" and "t1".
        assert_eq!(p.snapshot.message_tokens, 3 + 2 + 2 * 4);
        assert_eq!(p.snapshot.stable_prefix_tokens, 7);
        assert_eq!(p.entries.len(), 2);
    }

    /// A counter whose joins cost more than the separator alone: a `!`
    /// that takes the blank line after it costs three tokens more, as an
    /// encoding's punctuation piece can.
    struct Merging;

    impl crate::tokenizer::TokenCounter for Merging {
        fn count(&self, text: &str) -> u32 {
            (text.chars().count() + 3 * text.matches("!\n\n").count()) as u32
        }
        fn truncate(&self, text: &str, max: u32) -> String {
            text.chars().take(max as usize).collect()
        }
    }

    #[test]
    fn what_the_joins_add_is_counted_and_the_pack_settled_within_the_budget() {
        let mut r = request(25);
        r.system_prompt = "SYS!".into();
        r.conversation = vec![turn(Role::User, "a!", None), turn(Role::User, "b", None)];
        // The fill charges each turn its text and a blank line: 4 + (8 +
        // 2) + (9 + 2) = 25 fits. Rendered, "!" takes two blank lines
        // after it: 31 tokens, over. The oldest turn goes.
        let p = run_with(&r, &Merging, &mut crate::tokenizer::CountCache::new(0)).unwrap();
        assert_eq!(p.text, "SYS!\n\n[user] b");
        assert_eq!(p.snapshot.text_tokens, 14 + 3);
        assert_eq!(p.budget_used, 17);
        assert_eq!(
            reasons(&p)[1].1,
            Reason::OverBudget(Shortfall {
                needed: 31 - 17,
                remaining: 25 - 17
            })
        );
        // The messages are "SYS!" and "b".
        assert_eq!(p.snapshot.message_tokens, 5);
    }

    #[test]
    fn an_enormous_overhead_is_refused_with_the_true_sum() {
        let mut r = request(u32::MAX);
        r.entry_overhead = u32::MAX;
        r.instructions = vec!["four".into()];
        let err = run(&r).unwrap_err();
        // "SYS", a blank line and "four", and two overheads.
        let needed = 3 + 2 + 4 + 2 * u64::from(u32::MAX);
        assert_eq!(
            err,
            Error::MandatoryOverBudget {
                mandatory_tokens: needed,
                budget: u32::MAX
            }
        );
        assert!(err.to_string().contains(&needed.to_string()), "{err}");
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
