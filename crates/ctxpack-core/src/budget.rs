//! Sharing the budget among sections, as the plan says.
//!
//! L0 is charged first and whole (see [`crate::layer`]). What remains is
//! filled in phases over the optional sections in priority order
//! ([`PRIORITY`]); `Builder::run` runs them in this order, with the
//! policy's review ([`crate::policy::reviewed`]) after each phase that
//! took something not yet reviewed:
//!
//! 1. each section fills up to its own share of the budget (capped by what
//!    remains). A section of host candidates left with candidates keeps the
//!    unused part of its share in reserve;
//! 2. what the sections left unused flows to the others in priority order,
//!    each taking whole candidates while they fit;
//! 3. a section still left with candidates is compressed into its reserve
//!    (see [`crate::compress`], which also says when a section is skipped);
//!    reserves not needed, and room a summary did not use, flow once more;
//! 4. where the conversation or the stage summaries were cut, their first
//!    kept entry moves to a multiple of the plan's cut step, and what that
//!    frees flows once more;
//! 5. a cut text or a summary's candidates that the room now left holds
//!    whole go in whole ([`crate::compress::take_whole`]), and room that
//!    frees flows to what was left over;
//! 6. what is left over is dropped with its numbers.
//!
//! Each entry after L0 is charged its tokens, the entry overhead and the
//! blank line that joins it to the one before; what rendering adds beyond
//! that is settled once the pack is in its render order (see
//! [`crate::render`]).
//!
//! Within a section the conversation keeps its newest units as one
//! contiguous run and stage summaries evict the oldest (both stop at the
//! first that does not fit); host candidates go in rank order, and one that
//! does not fit is skipped for a smaller one after it (see [`lane`]).

mod lane;

pub(crate) use lane::{Fill, fits};

use crate::assembly::Channel;
use crate::config::Plan;
use crate::error::Error;
use crate::item::{Decision, Group, Item};
use crate::snapshot::{Reason, SectionCompression, Shortfall, SourceCall};

use crate::tokenizer::Meter;
use crate::types::{AssembleRequest, Layer, PackForm, Section, Tokenizer};
use lane::{Lane, cost, on_step};

/// Sections in the order they are filled and receive unused shares.
pub const PRIORITY: [Section; 9] = [
    Section::ConversationState,
    Section::RepositoryState,
    Section::RelevantKnowledge,
    Section::GraphNeighbours,
    Section::EpisodicMemory,
    Section::CurrentDiff,
    Section::ToolResults,
    Section::SupportingContext,
    Section::StageSummaries,
];

/// What the budget is charged for: the form the caller sends (see
/// `request.form`) and the entry overhead.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sent {
    /// The form, or `None` for either (the budget holds for both).
    pub form: Option<PackForm>,
    /// Tokens of a message's framing, charged once per message.
    pub overhead: u64,
    /// Tokens charged once for the messages (the reply's priming).
    pub reply: u64,
    /// Whether the turns are a chat's sent as messages: each as the
    /// caller gave it, not written as a host text is.
    pub verbatim: bool,
}

impl Sent {
    /// What `request` sends, with the overheads `settled` for it.
    pub fn of(request: &AssembleRequest, settled: &crate::model::Settled) -> Self {
        Sent {
            form: request.form,
            overhead: u64::from(settled.overhead),
            reply: u64::from(settled.reply),
            verbatim: settled.verbatim && request.form == Some(PackForm::Messages),
        }
    }

    /// How a turn's text is written (see
    /// [`crate::conversation::render_into`]): headless, and as given.
    pub fn written(self) -> (bool, bool) {
        (self.headless(), self.verbatim)
    }

    /// Whether a turn is charged its content alone: its `[role] ` header
    /// is not sent.
    pub fn headless(self) -> bool {
        self.form == Some(PackForm::Messages)
    }

    /// What the fill charges an entry of `section` on top of its own
    /// tokens: its overhead (a turn is a message of its own) and, in the
    /// forms that join entries by a blank line, the join's `separator`
    /// tokens. An upper bound where entries share a message: the
    /// rendering settles the exact count (see [`crate::render::settle`]).
    pub fn charge(self, section: Section, separator: u64) -> u64 {
        match (self.form, section) {
            (Some(PackForm::Messages), Section::ConversationState) => self.overhead,
            _ => self.overhead + separator,
        }
    }
}

/// What the budgeting needs besides the candidates.
pub(crate) struct Budgeting<'a, 'm> {
    pub plan: &'a Plan,
    pub budget: u64,
    /// What a host text or summary is charged beside its tokens (see
    /// [`Sent::charge`]).
    pub overhead: u64,
    /// What a conversation turn is charged beside its tokens.
    pub turn_overhead: u64,
    /// Where the conversation's kept run may begin.
    pub steps: &'a crate::conversation::Steps,
    pub meter: &'a Meter<'m>,
    pub tokenizer: Tokenizer,
    pub channel: &'a Channel,
    /// How many of the conversation's units, newest first, are sent
    /// whatever happens (see [`crate::conversation::mandatory`]): taken
    /// before any share, never let go for a step.
    pub mandatory: usize,
}

impl Budgeting<'_, '_> {
    /// What an entry of `section` is charged beside its tokens.
    pub fn charge(&self, section: Section) -> u64 {
        match section {
            Section::ConversationState => self.turn_overhead,
            _ => self.overhead,
        }
    }
}

impl<'a, 'm> Budgeting<'a, 'm> {
    /// Sharing `budget` tokens by `plan`, each entry after L0 charged as
    /// the form `sent` is (with `separator`, the tokens of a join),
    /// counting with `meter`, asking `channel`.
    pub fn new(
        (plan, steps): (&'a Plan, &'a crate::conversation::Steps),
        budget: u32,
        (sent, separator): (Sent, u64),
        meter: &'a Meter<'m>,
        tokenizer: Tokenizer,
        channel: &'a Channel,
    ) -> Self {
        Budgeting {
            plan,
            budget: u64::from(budget),
            overhead: sent.charge(Section::RelevantKnowledge, separator),
            turn_overhead: sent.charge(Section::ConversationState, separator),
            steps,
            meter,
            tokenizer,
            channel,
            mandatory: 0,
        }
    }
}

/// The items after the budget was shared, by layer (L0 aside).
pub(crate) struct Shared {
    /// The stage summaries, the host's L2 candidates, and each summary
    /// where the first candidate it summarises stood.
    pub l2: Vec<Item>,
    /// The host's L1 candidates, and their summaries likewise.
    pub l1_hosted: Vec<Item>,
    /// The conversation.
    pub l1: Vec<Item>,
    /// The policy's and the summariser's calls, in the order made.
    pub calls: Vec<SourceCall>,
    /// What compression did to each section over its share, in priority
    /// order.
    pub compressions: Vec<SectionCompression>,
}

/// A budgeting the policy failed: nothing unreviewed goes on. The items
/// are as far as they were decided.
pub(crate) struct Stopped {
    pub error: Error,
    pub l1: Vec<Item>,
    pub l2: Vec<Item>,
    pub hosted: Vec<Item>,
    pub calls: Vec<SourceCall>,
}

/// Every candidate the budget decides, in one pool: the conversation, the
/// stage summaries, then the host's candidates in rank order.
pub(crate) struct Pool {
    pub items: Vec<Item>,
    /// How many of them are the conversation's.
    conversation: usize,
    /// Where the host's begin.
    pub hosted_from: usize,
}

impl Pool {
    /// The pool of the conversation `l1` (its window's units
    /// `conversation`, newest first), the stage summaries `l2` and the
    /// host's candidates `hosted` (in rank order, not yet reviewed), and
    /// the lanes that fill `remaining` tokens with them.
    pub fn new(
        l1: Vec<Item>,
        l2: Vec<Item>,
        hosted: Vec<Item>,
        conversation: Vec<Group>,
        remaining: u64,
    ) -> (Pool, Filling) {
        let (n1, n2) = (l1.len(), l2.len());
        let mut items: Vec<Item> = l1;
        items.extend(l2);
        let hosted_from = items.len();
        items.extend(hosted);
        let stages: Vec<usize> = (n1..n1 + n2).rev().collect();
        let hosted: Vec<usize> = (hosted_from..items.len())
            .filter(|&i| items[i].is_pending())
            .collect();
        let filling = Filling::new(&mut items, conversation, &stages, &hosted, remaining);
        let pool = Pool {
            items,
            conversation: n1,
            hosted_from,
        };
        (pool, filling)
    }

    /// The pool by layer once the fill stopped: the conversation, the
    /// stage summaries and the host's candidates.
    pub fn stopped(mut self) -> (Vec<Item>, Vec<Item>, Vec<Item>) {
        let hosted = self.items.split_off(self.hosted_from);
        let l2 = self.items.split_off(self.conversation);
        (self.items, l2, hosted)
    }

    /// The pool by layer once every item is decided, with the
    /// `summaries` compression made, each where the first candidate it
    /// summarises stood.
    pub fn shared(
        self,
        mut summaries: Vec<Item>,
        calls: Vec<SourceCall>,
        compressions: Vec<SectionCompression>,
    ) -> Shared {
        let (l1, mut l2, hosted) = self.stopped();
        // Sized up front: ten thousand items grown by doubling were copied
        // twice over, into freshly faulted pages.
        let in_l2 = hosted
            .iter()
            .chain(&summaries)
            .filter(|item| item.section.layer() == Layer::L2)
            .count();
        l2.reserve(in_l2);
        let mut l1_hosted = Vec::with_capacity(hosted.len() + summaries.len() - in_l2);
        let mut push = |item: Item| {
            if item.section.layer() == Layer::L2 {
                l2.push(item);
            } else {
                l1_hosted.push(item);
            }
        };
        for item in hosted {
            if let Some(Reason::Summarized(id)) = item.reason()
                && let Some(k) = summaries.iter().position(|s| &s.id == id)
            {
                push(summaries.remove(k));
            }
            push(item);
        }
        Shared {
            l2,
            l1_hosted,
            l1,
            calls,
            compressions,
        }
    }
}

/// `lane` takes what it can of `remaining`, which it leaves less.
fn flow(lane: &mut Lane, pool: &mut [Item], b: &Budgeting, remaining: &mut u64, strict: bool) {
    *remaining -= lane.fill(pool, b.meter, *remaining, b.charge(lane.section), strict);
}

/// The lanes as the fill leaves them between its phases; a phase whose
/// outcome a review changes is run again from a copy made before it.
#[derive(Clone)]
pub(crate) struct Filling {
    pub lanes: Vec<Lane>,
    pub remaining: u64,
    /// For each lane, what its step cut let go, counted (see the steps in
    /// [`Filling::steps`]).
    stepped: Vec<u64>,
}

impl Filling {
    /// The lanes, in priority order, over `pool`: the conversation's
    /// units `conversation`, the stage summaries `stages` (newest first)
    /// and the host candidates still pending `hosted`, in rank order.
    fn new(
        pool: &mut [Item],
        conversation: Vec<Group>,
        stages: &[usize],
        hosted: &[usize],
        remaining: u64,
    ) -> Filling {
        // The conversation's lane is the only one to take it.
        let mut conversation = Some(conversation);
        let lanes: Vec<Lane> = PRIORITY
            .iter()
            .map(|&section| {
                let (fill, queue) = match section {
                    Section::ConversationState => {
                        (Fill::Contiguous, conversation.take().unwrap_or_default())
                    }
                    Section::StageSummaries => (
                        Fill::Contiguous,
                        stages.iter().map(|&i| Group::One(i)).collect(),
                    ),
                    s => (
                        Fill::Greedy,
                        hosted
                            .iter()
                            .filter(|&&i| pool[i].section == s)
                            .map(|&i| Group::One(i))
                            .collect(),
                    ),
                };
                let base = match section {
                    Section::StageSummaries => stages.iter().min().copied().unwrap_or(0),
                    _ => 0,
                };
                Lane {
                    section,
                    fill,
                    queue,
                    taken: Vec::new(),
                    base,
                }
            })
            .collect();
        // A host candidate no lane takes (a section hosts may not fill, which
        // the gathering refuses first) is never included unless charged: it
        // is refused here too rather than left as it came.
        for &i in hosted {
            let queued = lanes
                .iter()
                .any(|lane| lane.fill == Fill::Greedy && lane.section == pool[i].section);
            if !queued {
                pool[i].decide(Reason::SectionNotAllowed);
            }
        }
        Filling {
            stepped: vec![0; lanes.len()],
            lanes,
            remaining,
        }
    }

    /// Phases 1 (shares) and 2 (the flow); returns the sections that kept
    /// a reserve for compression, by lane, with the room each kept. With
    /// `strict`, only reviewed candidates are taken.
    pub fn share_and_flow(
        &mut self,
        pool: &mut [Item],
        b: &Budgeting,
        strict: bool,
    ) -> Vec<(usize, u64)> {
        // Pass 1: shares. A compressible section left with candidates
        // keeps its unused share in reserve, so the flow cannot give it
        // away.
        let mut reserved: Vec<(usize, u64)> = Vec::new();
        for (l, lane) in self.lanes.iter_mut().enumerate() {
            let share = (b.plan.share(lane.section) * b.budget as f64).floor() as u64;
            // The conversation's mandatory units first, whatever its
            // share: they were checked to fit with L0.
            let mut first = 0;
            if lane.section == Section::ConversationState && b.mandatory > 0 {
                let rest = lane.queue.split_off(b.mandatory.min(lane.queue.len()));
                first = lane.fill(
                    pool,
                    b.meter,
                    self.remaining,
                    b.charge(lane.section),
                    strict,
                );
                lane.queue.extend(rest);
                self.remaining -= first;
            }
            let cap = share.saturating_sub(first).min(self.remaining);
            let used = lane.fill(pool, b.meter, cap, b.charge(lane.section), strict);
            self.remaining -= used;
            let room = cap - used;
            if b.plan.compress && lane.fill == Fill::Greedy && !lane.queue.is_empty() && room > 0 {
                self.remaining -= room;
                reserved.push((l, room));
            }
        }

        // Pass 2: what is unused flows in priority order; a section with
        // a reserve may still take whole candidates from the flow.
        self.flow_again(pool, b, strict);
        reserved
    }

    /// Phase 3's end: reserves not needed, and room a summary did not
    /// use, flow once more.
    pub fn flow_again(&mut self, pool: &mut [Item], b: &Budgeting, strict: bool) {
        for lane in &mut self.lanes {
            flow(lane, pool, b, &mut self.remaining, strict);
        }
    }

    /// Phase 4, the steps: where a contiguous lane was cut, its first kept
    /// item moves to where the lane may begin — a stage summary's to a
    /// multiple of the cut step, a turn's to a step of the conversation
    /// (see [`crate::conversation::Steps`]) — and what that frees flows
    /// once more. A conversation giving way in steps of tokens gives way in
    /// the largest size of step one of its older kept turns begins, and
    /// stays as it was where none does: a step larger than its room would
    /// keep one unit.
    pub fn steps(&mut self, pool: &mut [Item], b: &Budgeting, strict: bool) {
        let step = u64::from(b.plan.cut_step.max(1));
        if !b.steps.stepped() {
            return;
        }
        // The size of step each lane gives way in: a conversation in
        // steps of tokens, the largest size one of whose steps begins at
        // an older kept turn; none where no size does.
        let start = |group: &[usize]| group.iter().min().copied().unwrap_or(0);
        let sizes: Vec<Option<u8>> = self
            .lanes
            .iter()
            .map(|lane| match lane.section {
                Section::ConversationState if b.steps.by_tokens() => {
                    (0..crate::conversation::STEP_SIZES).find(|&size| {
                        lane.taken
                            .iter()
                            .skip(1)
                            .any(|g| b.steps.starts_at(start(g), size))
                    })
                }
                _ => Some(0),
            })
            .collect();
        let on_step = |l: usize, lane: &Lane, group: &[usize]| match lane.section {
            Section::ConversationState => {
                sizes[l].is_some_and(|size| b.steps.starts_at(start(group), size))
            }
            _ => on_step(group, lane.base, step),
        };
        let lanes = &mut self.lanes;
        let stepped_cost = &mut self.stepped;
        // Each lane's groups let go, newest first.
        let mut let_go: Vec<Vec<Group>> = vec![Vec::new(); lanes.len()];
        for (l, lane) in lanes.iter_mut().enumerate() {
            if lane.fill != Fill::Contiguous || lane.queue.is_empty() || sizes[l].is_none() {
                continue;
            }
            // The newest kept group always stays, and the mandatory ones.
            let stays = match lane.section {
                Section::ConversationState => b.mandatory.max(1),
                _ => 1,
            };
            while lane.taken.len() > stays {
                let Some(oldest) = lane.taken.last() else {
                    break;
                };
                if on_step(l, lane, oldest) {
                    break;
                }
                let c = cost(pool, oldest, b.charge(lane.section));
                for &i in oldest {
                    pool[i].decide(Reason::StepCut(b.plan.cut_step));
                }
                stepped_cost[l] += c;
                self.remaining += c;
                let_go[l].extend(lane.taken.pop());
            }
            let_go[l].reverse();
        }
        // A lane that stepped must not refill: its next candidate is older
        // than the ones it just let go, and would leave a gap.
        for (lane, _) in lanes
            .iter_mut()
            .zip(stepped_cost.iter())
            .filter(|(_, c)| **c == 0)
        {
            flow(lane, pool, b, &mut self.remaining, strict);
        }
        // What the others left may now take a stepped lane back further,
        // to an earlier step: what it let go and older groups, as far as
        // the oldest step they all fit to.
        for (l, lane) in lanes.iter_mut().enumerate() {
            if stepped_cost[l] == 0 {
                continue;
            }
            let back: Vec<Group> = let_go[l].iter().chain(&lane.queue).cloned().collect();
            let mut used = 0u64;
            let mut reach = None;
            for (k, group) in back.iter().enumerate() {
                match fits(
                    pool,
                    group,
                    b.meter,
                    self.remaining - used,
                    b.charge(lane.section),
                ) {
                    Some(c) => used += c,
                    None => break,
                }
                if on_step(l, lane, group) {
                    reach = Some((k, used));
                }
            }
            let Some((k, used)) = reach else {
                continue;
            };
            self.remaining -= used;
            for group in &back[..=k] {
                for &i in group {
                    pool[i].decide(Reason::WithinBudget);
                }
            }
            lane.taken.extend(back[..=k].iter().cloned());
            let from_queue = (k + 1).saturating_sub(let_go[l].len());
            lane.queue.drain(..from_queue);
            stepped_cost[l] = back[k + 1..let_go[l].len().max(k + 1)]
                .iter()
                .map(|g| cost(pool, g, b.charge(lane.section)))
                .sum();
        }
    }

    /// Whether a phase from here may take, or hand to the summariser,
    /// something not reviewed: something unreviewed is queued and the
    /// rounds are not spent.
    pub fn may_review(&self, pool: &[Item], spent: bool) -> bool {
        !spent
            && self
                .lanes
                .iter()
                .filter(|lane| lane.fill == Fill::Greedy)
                .flat_map(|lane| lane.queue.iter().flatten())
                .any(|&i| pool[i].unreviewed)
    }

    /// The candidates taken since `before` that are not reviewed yet, in
    /// rank order.
    pub fn unreviewed_since(&self, before: &Filling, pool: &[Item]) -> Vec<usize> {
        let mut wanted: Vec<usize> = self
            .lanes
            .iter()
            .zip(&before.lanes)
            .flat_map(|(lane, was)| lane.taken.iter().skip(was.taken.len()))
            .flatten()
            .copied()
            .filter(|&i| pool[i].unreviewed)
            .collect();
        wanted.sort_unstable();
        wanted
    }

    /// Puts every candidate back as this filling had it: queued ones
    /// pending, taken ones within the budget.
    pub fn restore(&self, pool: &mut [Item]) {
        for lane in &self.lanes {
            for &i in lane.queue.iter().flatten() {
                pool[i].decision = Decision::Pending;
            }
            for &i in lane.taken.iter().flatten() {
                pool[i].decide(Reason::WithinBudget);
            }
        }
    }

    /// Takes out of the queues what a review decided (denied).
    pub fn drop_decided(&mut self, pool: &[Item]) {
        for lane in &mut self.lanes {
            lane.queue
                .retain(|group| group.iter().all(|&i| pool[i].is_pending()));
        }
    }

    /// Room [`crate::compress::take_whole`] freed flows to what the host sections
    /// left over, in rank order, as it did after compression.
    pub fn fill_freed(&mut self, pool: &mut [Item], b: &Budgeting, strict: bool) {
        for lane in self
            .lanes
            .iter_mut()
            .filter(|lane| lane.fill == Fill::Greedy)
        {
            flow(lane, pool, b, &mut self.remaining, strict);
        }
    }

    /// What is left over is dropped, with the numbers.
    pub fn leftovers(&self, pool: &mut [Item], b: &Budgeting) {
        for (l, lane) in self.lanes.iter().enumerate() {
            // Keeping an older unit needs every newer one left out too.
            let mut needed = self.stepped[l];
            // Past the first unit never counted, what each needs is known
            // only as at least that one's shortfall: they share it (and
            // the snapshot records them as one run).
            let mut uncounted: Option<Reason> = None;
            for group in &lane.queue {
                let c = cost(pool, group, b.charge(lane.section));
                let never_counted = group.iter().all(|&i| pool[i].count.is_none());
                let shared = uncounted.as_ref().filter(|_| never_counted);
                let reason = match (lane.section, lane.fill, shared) {
                    (Section::StageSummaries, _, _) => Reason::EvictedOldest,
                    (_, Fill::Contiguous, Some(reason)) => reason.clone(),
                    (_, Fill::Contiguous, None) => {
                        needed += c;
                        if needed > self.remaining {
                            let reason = Reason::OverBudget(Shortfall {
                                needed,
                                remaining: self.remaining,
                            });
                            if never_counted {
                                uncounted = Some(reason.clone());
                            }
                            reason
                        } else {
                            // It and every newer one fit, but the lane
                            // could not start there: not on a step.
                            Reason::StepCut(b.plan.cut_step)
                        }
                    }
                    (_, Fill::Greedy, _) => Reason::OverBudget(Shortfall {
                        needed: c,
                        remaining: self.remaining,
                    }),
                };
                for &i in group {
                    pool[i].decide(reason.clone());
                }
            }
        }
    }
}
