//! The request's own candidates, by layer.
//!
//! - **L0** — system prompt, mandatory instructions, current task, workflow
//!   status — is charged first and never dropped. If it alone exceeds the
//!   budget the assembly fails with both numbers, before any host is asked
//!   for anything; nothing is truncated.
//! - **L1** — the conversation (see [`crate::conversation`]).
//! - **L2** — the workflow's stage summaries, evicted oldest first.
//!
//! The host's candidates join them in L1 or L2 by their section (see
//! [`crate::gather`]).

use crate::error::Error;
use crate::item::Item;
use crate::snapshot::{Origin, Reason};

use crate::render::{self, Layers};
use crate::tokenizer::{Count, Meter};
use crate::types::{AssembleRequest, ConversationTurn, Layout, Role, Section, TrustTier};

/// The request's own candidates, with L0 counted; the others are counted
/// only when the budgeting needs them.
pub(crate) struct Own {
    pub l0: Vec<Item>,
    pub l1: Vec<Item>,
    pub l2: Vec<Item>,
    /// What L0 costs rendered together, entry overhead included, and the
    /// reply's priming where the pack is sent as messages (laid out
    /// cache-first, at most: its current task and workflow status may
    /// render apart).
    pub l0_cost: u64,
    /// What the L0 entries rendered first cost: the stable prefix.
    pub stable: u64,
}

impl Own {
    /// The error when L0 alone is over `budget`.
    pub fn over(&self, budget: u32) -> Option<Error> {
        (self.l0_cost > u64::from(budget)).then_some(Error::MandatoryOverBudget {
            mandatory_tokens: self.l0_cost,
            budget,
        })
    }

    /// Gives every turn its id and provenance (see [`Item::name`]).
    pub fn name_all(&mut self) {
        self.l1.iter_mut().for_each(Item::name);
    }

    /// The ids the request's candidates take, once named.
    pub fn ids(&self) -> rustc_hash::FxHashSet<&str> {
        self.l0
            .iter()
            .chain(&self.l1)
            .chain(&self.l2)
            .map(|i| i.id.as_str())
            .collect()
    }
}

/// The request's own candidates, L0 included and counted as it renders
/// (its entries joined, overhead included).
pub(crate) fn own(request: &AssembleRequest, meter: &Meter, sent: crate::budget::Sent) -> Own {
    let mut l0 = l0_items(request);
    for item in &mut l0 {
        item.count = Some(Count::Exact(meter.count(&item.text)));
        item.decide(Reason::Mandatory);
    }
    let mut alone = Layers {
        l0,
        ..Layers::default()
    };
    let l0_cost = render::account(&alone, meter, sent).used;
    let (l0_cost, stable) = match Layout::of(request) {
        Layout::ContextFirst => (l0_cost, l0_cost),
        // The current task and workflow status render after the
        // conversation: the stable prefix is L0 without them.
        Layout::CacheFirst => {
            let moves = |i: &Item| Layout::moves(i.section);
            let k = alone.l0.iter().position(moves).unwrap_or(alone.l0.len());
            let moved = Layers {
                l0: alone.l0.split_off(k),
                ..Layers::default()
            };
            let stable = render::account(&alone, meter, sent).used;
            let apart = stable + render::account(&moved, meter, sent).used;
            alone.l0.extend(moved.l0);
            (l0_cost.max(apart), stable)
        }
    };
    Own {
        l0: alone.l0,
        l1: conversation_items(&request.conversation, sent),
        l2: stage_items(request, meter.controls()),
        l0_cost,
        // The reply's priming is charged with L0, and in no prefix.
        stable: stable.saturating_sub(sent.reply),
    }
}

/// What L0 and the conversation's turns of `tail` (counted already)
/// cost rendered together, as `request` lays them out: what must fit the
/// budget whatever else is given up.
pub(crate) fn with_tail(
    own: &Own,
    tail: &[crate::item::Group],
    request: &AssembleRequest,
    meter: &Meter,
    sent: crate::budget::Sent,
) -> u64 {
    let l1 = tail
        .iter()
        .flat_map(|g| g.iter())
        .map(|&m| {
            let mut item = own.l1[m].copied();
            item.decide(Reason::WithinBudget);
            item
        })
        .collect();
    let layers = Layers {
        l0: own.l0.iter().map(Item::copied).collect(),
        l1,
        ..Layers::default()
    }
    .laid_out(request);
    render::account(&layers, meter, sent).used
}

fn from_request(
    id: String,
    section: Section,
    role: Role,
    text: String,
    reference: String,
    trust: TrustTier,
) -> Item {
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

/// L0 in its fixed render order: what changes least comes first, so the
/// rendered prefix stays byte-stable across turns (workflow status, which
/// moves with every stage, comes last).
fn l0_items(request: &AssembleRequest) -> Vec<Item> {
    let mut items = Vec::new();
    let mut push = |id: String, section, text: String, reference: String| {
        items.push(from_request(
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

/// The conversation's items, their texts not yet rendered and their ids
/// and provenance not yet made: most turns of a long history are never
/// reached (see [`crate::conversation::render_reachable`]), and a run of
/// them is recorded as one entry (see [`Item::name`]).
/// The turns, each charged what it sends beside its text unless the flat
/// text alone is sent.
pub(crate) fn conversation_items(
    turns: &[ConversationTurn],
    sent: crate::budget::Sent,
) -> Vec<Item> {
    let text_only = sent.form == Some(crate::types::PackForm::Text);
    turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let trust = match t.role {
                Role::System | Role::Assistant => TrustTier::Trusted,
                Role::User => TrustTier::Unverified,
                Role::Tool => TrustTier::Untrusted,
            };
            Item {
                attached: if text_only {
                    0
                } else {
                    t.attached_tokens.unwrap_or(0)
                },
                ..Item::turn(i, t.role, trust)
            }
        })
        .collect()
}

/// Makes turn `at` the conversation's summary (see [`crate::compact`]):
/// its id and provenance say so, and the turns before it are dropped as
/// summarised in it.
pub(crate) fn summarised(l1: &mut [Item], at: usize, nonce: crate::fence::Nonce) {
    // The summary is trusted as its least trusted turn.
    let mut trust = TrustTier::System;
    for item in l1.iter_mut().take(at) {
        item.decide(Reason::Summarized(crate::compact::SUMMARY_ID.to_owned()));
        item.compressed = true;
        trust = trust.max(item.trust);
    }
    if let Some(item) = l1.get_mut(at) {
        item.trust = item.trust.max(trust);
        // A summary of untrusted text is untrusted, and fenced as such
        // (see [`crate::conversation::render_into`]).
        item.framed = (item.trust == TrustTier::Untrusted).then_some(nonce);
        item.id = crate::compact::SUMMARY_ID.to_owned();
        item.provenance = Some(crate::types::Provenance {
            source_kind: "request".to_owned(),
            reference: "compaction.summary".to_owned(),
            source_version: None,
            index_revision: None,
        });
    }
}

fn stage_items(request: &AssembleRequest, controls: &crate::fence::Controls) -> Vec<Item> {
    request
        .stage_summaries
        .iter()
        .enumerate()
        .map(|(i, s)| {
            // The workflow's record, which may quote what its stages read:
            // written as every host text is.
            let (text, altered) = crate::fence::written(
                format!("Stage {} ({}): {}", s.stage_id, s.outcome, s.summary),
                controls,
            );
            let mut item = from_request(
                format!("stage-summary-{i}"),
                Section::StageSummaries,
                Role::System,
                text,
                format!("stage-summaries[{i}]"),
                TrustTier::Trusted,
            );
            item.altered = altered;
            item
        })
        .collect()
}
