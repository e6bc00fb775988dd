//! Sharing the budget among sections, as the plan says.
//!
//! L0 is charged first and whole (see [`crate::layer`]). What remains is
//! filled in two passes over the optional sections in priority order
//! ([`PRIORITY`]):
//!
//! 1. each section fills up to its own share of the budget (capped by what
//!    remains). A section of host candidates left with candidates keeps the
//!    unused part of its share in reserve;
//! 2. what the sections left unused flows to the others in priority order,
//!    each taking whole candidates while they fit;
//! 3. a section still left with candidates is compressed into its reserve
//!    (the first such section in priority order also gets whatever the
//!    flow left), if what a summary could have of it — the reserve less the
//!    entry overhead and the summary's citation — is at least
//!    `min-summary-tokens` (32 by default; the snapshot records a section
//!    skipped so, and why): summarised, or cut if the summariser cannot
//!    (see [`crate::compress`]). Reserves not needed, and room a summary
//!    did not use, flow once more; then a cut text or a summary's
//!    candidates that the room now left holds whole go in whole;
//! 4. where the conversation or the stage summaries were cut, their first
//!    kept entry moves to a multiple of the plan's cut step, and what that
//!    frees flows once more.
//!
//! Each entry after L0 is charged its tokens, the entry overhead and the
//! blank line that joins it to the one before; what rendering adds beyond
//! that is settled once the pack is in its render order (see
//! [`crate::render`]). What is left over is dropped with its numbers.
//!
//! Within a section the conversation keeps its newest units as one
//! contiguous run and stage summaries evict the oldest (both stop at the
//! first that does not fit); host candidates go in rank order, and one that
//! does not fit is skipped for a smaller one after it.

use crate::assembly::Channel;
use crate::compress::{self, Over};
use crate::config::Plan;
use crate::error::Error;
use crate::host::Verdict;
use crate::item::{Decision, Group, Item};
use crate::pack::{CompressionOutcome, Reason, SectionCompression, Shortfall, SourceCall};
use crate::policy::{self, Husks};
use crate::tokenizer::{Count, Meter, clamp};
use crate::types::{Layer, Section, Tokenizer};

/// How many groups ahead of the one being counted their texts are asked
/// for (see [`crate::prefetch`]).
const AHEAD: usize = 4;

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

/// How a section takes its candidates.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// In order, stopping at the first group that does not fit.
    Contiguous,
    /// In order, skipping what does not fit.
    Greedy,
}

/// One section's queue: groups of pool indices, kept or dropped whole, in
/// the order the section prefers them.
#[derive(Clone)]
struct Lane {
    section: Section,
    fill: Fill,
    queue: Vec<Group>,
    /// Groups taken, in the order taken (for a contiguous lane, newest
    /// first, so the last is the oldest kept).
    taken: Vec<Group>,
    /// Pool index of the lane's first item in chronological order, for
    /// contiguous lanes (their position is `index - base`).
    base: usize,
}

impl Lane {
    /// Takes groups while they fit in `avail`; returns the tokens taken.
    /// With `strict`, a group with a candidate not reviewed is not taken
    /// even if it fits: it is `unreviewed`, and its room stays empty (host
    /// candidates are groups of one).
    fn fill(
        &mut self,
        pool: &mut [Item],
        meter: &Meter,
        avail: u64,
        overhead: u64,
        strict: bool,
    ) -> u64 {
        let mut used = 0u64;
        let mut left = Vec::new();
        let mut queue = std::mem::take(&mut self.queue).into_iter();
        while let Some(group) = queue.next() {
            // Items are in rank order, their texts and references wherever
            // the host put them: ask for those of a group a few ahead.
            crate::prefetch::ahead(queue.as_slice(), 0, AHEAD, |ahead| {
                for &i in ahead.iter() {
                    pool[i].prefetch();
                }
            });
            if let Some(c) = fits(pool, &group, meter, avail - used, overhead) {
                used += c;
                if strict && group.iter().any(|&i| pool[i].unreviewed) {
                    // What another round would have reviewed: it keeps
                    // the room it would have taken, so what comes after
                    // it is decided as if it were allowed.
                    for &i in &group {
                        pool[i].decide(Reason::Unreviewed);
                    }
                    continue;
                }
                for &i in &group {
                    pool[i].decide(Reason::WithinBudget);
                }
                self.taken.push(group);
            } else {
                left.push(group);
                if self.fill == Fill::Contiguous {
                    break;
                }
            }
        }
        left.extend(queue);
        self.queue = left;
        used
    }
}

/// What `group` costs if it fits in `room`, counting its items only as
/// far as that decides.
fn fits(
    pool: &mut [Item],
    group: &[usize],
    meter: &Meter,
    room: u64,
    overhead: u64,
) -> Option<u64> {
    let mut total = 0u64;
    for &i in group {
        let base = total + overhead;
        if base > room {
            return None;
        }
        let n = pool[i]
            .measure(meter, clamp(room - base))
            .within(clamp(room - base))?;
        total = base + u64::from(n);
    }
    Some(total)
}

/// Whether `group` starts a lane (whose first item is at `base`) at a
/// multiple of `step`.
fn on_step(group: &[usize], base: usize, step: u64) -> bool {
    let start = group.iter().min().copied().unwrap_or(0) - base;
    (start as u64).is_multiple_of(step)
}

/// What `group` costs as far as its items were counted (exact once they
/// were taken; a lower bound otherwise).
fn cost(pool: &[Item], group: &[usize], overhead: u64) -> u64 {
    group
        .iter()
        .map(|&i| pool[i].count.map_or(0, Count::at_least) + overhead)
        .sum()
}

/// What the budgeting needs besides the candidates.
pub(crate) struct Budgeting<'a, 'm> {
    pub plan: &'a Plan,
    pub budget: u64,
    pub overhead: u64,
    pub meter: &'a Meter<'m>,
    pub tokenizer: Tokenizer,
    pub channel: &'a Channel,
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

/// Shares `remaining` tokens among the conversation `l1` (its window's
/// units `conversation`, newest first), the stage summaries `l2` and the
/// host's candidates `hosted` (in rank order, not yet reviewed; `husks` is
/// what the review needs besides), and decides every one of them still
/// pending.
pub(crate) async fn share(
    b: Budgeting<'_, '_>,
    l1: Vec<Item>,
    l2: Vec<Item>,
    (hosted, husks): (Vec<Item>, Husks),
    conversation: Vec<Group>,
    remaining: u64,
) -> Result<Shared, Stopped> {
    // One pool: conversation, stage summaries, host candidates.
    let (n1, n2) = (l1.len(), l2.len());
    let mut pool: Vec<Item> = l1;
    pool.extend(l2);
    let hosted_from = pool.len();
    pool.extend(hosted);
    let stages: Vec<usize> = (n1..n1 + n2).rev().collect();
    let hosted: Vec<usize> = (hosted_from..pool.len())
        .filter(|&i| pool[i].is_pending())
        .collect();
    let mut reviewer = Reviewer {
        husks,
        hosted_from,
        rounds: 0,
        calls: Vec::new(),
    };
    let filled = fill(
        &b,
        &mut pool,
        conversation,
        stages,
        hosted,
        remaining,
        &mut reviewer,
    )
    .await;

    let hosted_items = pool.split_off(hosted_from);
    let mut l2 = pool.split_off(n1);
    let l1 = pool;
    let (mut summaries, compressions) = match filled {
        Ok(made) => made,
        Err(error) => {
            return Err(Stopped {
                error,
                l1,
                l2,
                hosted: hosted_items,
                calls: reviewer.calls,
            });
        }
    };
    // Each summary stands where the first candidate it summarises stood.
    // Sized up front: ten thousand items grown by doubling were copied
    // twice over, into freshly faulted pages.
    let in_l2 = hosted_items
        .iter()
        .chain(&summaries)
        .filter(|item| item.section.layer() == Layer::L2)
        .count();
    l2.reserve(in_l2);
    let mut l1_hosted = Vec::with_capacity(hosted_items.len() + summaries.len() - in_l2);
    let mut push = |item: Item| {
        if item.section.layer() == Layer::L2 {
            l2.push(item);
        } else {
            l1_hosted.push(item);
        }
    };
    for item in hosted_items {
        if let Some(Reason::Summarized(id)) = item.reason()
            && let Some(k) = summaries.iter().position(|s| &s.id == id)
        {
            push(summaries.remove(k));
        }
        push(item);
    }
    Ok(Shared {
        l2,
        l1_hosted,
        l1,
        calls: reviewer.calls,
        compressions,
    })
}

/// The most review rounds an assembly asks for. Each round is a round
/// trip to the policy engine; a round after the first reviews only what
/// the denials and redactions of the one before made room for, so with
/// one denial in ten the fourth round reviews about one in a thousand of
/// what fills the budget. After the last round a candidate the fill would
/// take unreviewed is left out as `unreviewed`.
pub const REVIEW_ROUNDS: u32 = 4;

/// What a review round needs and what the rounds made.
struct Reviewer {
    husks: Husks,
    hosted_from: usize,
    rounds: u32,
    /// The policy's and the summariser's calls, in the order made.
    calls: Vec<SourceCall>,
}

impl Reviewer {
    /// Whether the rounds are spent: the fill may then take only what was
    /// reviewed.
    fn spent(&self) -> bool {
        self.rounds >= REVIEW_ROUNDS
    }

    /// Reviews `wanted` (pool indices, in rank order): one round.
    async fn review(
        &mut self,
        pool: &mut [Item],
        channel: &Channel,
        wanted: &[usize],
    ) -> Result<Vec<Verdict>, Error> {
        self.rounds += 1;
        let lent = policy::lend(pool, &mut self.husks, self.hosted_from, wanted);
        let (lent, answer) = channel.review(lent).await;
        policy::take_back(
            pool,
            &mut self.husks,
            self.hosted_from,
            wanted,
            lent,
            answer,
            &mut self.calls,
        )
    }
}

/// The lanes as the fill leaves them between its phases; a phase whose
/// outcome a review changes is run again from a copy made before it.
#[derive(Clone)]
struct Filling {
    lanes: Vec<Lane>,
    remaining: u64,
    /// For each lane, what its step cut let go, counted (see the steps in
    /// [`Filling::after_compression`]).
    stepped: Vec<u64>,
}

impl Filling {
    /// Pass 1 (shares) and pass 2 (the flow); returns the sections to
    /// compress, by lane, with their room, and the record of each section
    /// not compressed for want of room. With `strict`, only reviewed
    /// candidates are taken or summarised.
    fn share_and_flow(
        &mut self,
        pool: &mut [Item],
        b: &Budgeting,
        strict: bool,
    ) -> (Vec<(usize, u64)>, Vec<SectionCompression>) {
        // Pass 1: shares. A compressible section left with candidates
        // keeps its unused share in reserve, so the flow cannot give it
        // away.
        let mut reserved: Vec<(usize, u64)> = Vec::new();
        for (l, lane) in self.lanes.iter_mut().enumerate() {
            let share = (b.plan.share(lane.section) * b.budget as f64).floor() as u64;
            let cap = share.min(self.remaining);
            let used = lane.fill(pool, b.meter, cap, b.overhead, strict);
            self.remaining -= used;
            let room = cap - used;
            if b.plan.compress && lane.fill == Fill::Greedy && !lane.queue.is_empty() && room > 0 {
                self.remaining -= room;
                reserved.push((l, room));
            }
        }

        // Pass 2: what is unused flows in priority order; a section with
        // a reserve may still take whole candidates from the flow.
        for lane in &mut self.lanes {
            let used = lane.fill(pool, b.meter, self.remaining, b.overhead, strict);
            self.remaining -= used;
        }

        // Compression: a section still over is summarised into its
        // reserve (the first in priority order also gets what the flow
        // left); the rest give their reserve back.
        let mut compressing: Vec<(usize, u64)> = Vec::new();
        let mut skipped = Vec::new();
        for (l, room) in reserved {
            if strict {
                let queue = &mut self.lanes[l].queue;
                queue.retain(|group| {
                    let unreviewed = group.iter().any(|&i| pool[i].unreviewed);
                    if unreviewed {
                        for &i in group {
                            pool[i].decide(Reason::Unreviewed);
                        }
                    }
                    !unreviewed
                });
            }
            let target = if compressing.is_empty() {
                room + self.remaining
            } else {
                room
            };
            if self.lanes[l].queue.is_empty() {
                self.remaining += room;
                continue;
            }
            // What a summary could have: the room less the entry overhead
            // and the summary's own citation.
            let frame = compress::frame(&self.lanes[l].queue, pool, b.meter);
            let body = target.saturating_sub(b.overhead).saturating_sub(frame);
            let min = u64::from(b.plan.min_summary_tokens);
            if body == 0 || body < min {
                skipped.push(SectionCompression {
                    section: self.lanes[l].section,
                    target_tokens: clamp(body),
                    outcome: CompressionOutcome::Skipped(format!(
                        "a summary could have {body} tokens (its room, {target}, less the \
                         entry's overhead and join, {}, and the summary's citation, {frame}){}",
                        b.overhead,
                        if body == 0 {
                            String::new()
                        } else {
                            format!(", under the plan's min-summary-tokens, {min}")
                        }
                    )),
                });
                self.remaining += room;
                continue;
            }
            if compressing.is_empty() {
                self.remaining = 0;
            }
            compressing.push((l, target));
        }
        (compressing, skipped)
    }

    /// Pass 3 and the steps, once compression is done: reserves not
    /// needed, and room a summary did not use, flow once more; then where
    /// a contiguous lane was cut, its first kept item moves to a multiple
    /// of the cut step, and what that frees flows once more.
    fn after_compression(&mut self, pool: &mut [Item], b: &Budgeting, strict: bool) {
        for lane in &mut self.lanes {
            let used = lane.fill(pool, b.meter, self.remaining, b.overhead, strict);
            self.remaining -= used;
        }

        let step = u64::from(b.plan.cut_step.max(1));
        if step <= 1 {
            return;
        }
        let lanes = &mut self.lanes;
        let stepped_cost = &mut self.stepped;
        // Each lane's groups let go, newest first.
        let mut let_go: Vec<Vec<Group>> = vec![Vec::new(); lanes.len()];
        for (l, lane) in lanes.iter_mut().enumerate() {
            if lane.fill != Fill::Contiguous || lane.queue.is_empty() {
                continue;
            }
            // The newest kept group always stays.
            while lane.taken.len() > 1 {
                let Some(oldest) = lane.taken.last() else {
                    break;
                };
                if on_step(oldest, lane.base, step) {
                    break;
                }
                let c = cost(pool, oldest, b.overhead);
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
            let used = lane.fill(pool, b.meter, self.remaining, b.overhead, strict);
            self.remaining -= used;
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
                match fits(pool, group, b.meter, self.remaining - used, b.overhead) {
                    Some(c) => used += c,
                    None => break,
                }
                if on_step(group, lane.base, step) {
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
                .map(|g| cost(pool, g, b.overhead))
                .sum();
        }
    }

    /// Whether a phase from here may take, or hand to the summariser,
    /// something not reviewed: something unreviewed is queued and the
    /// rounds are not spent.
    fn may_review(&self, pool: &[Item], reviewer: &Reviewer) -> bool {
        !reviewer.spent()
            && self
                .lanes
                .iter()
                .filter(|lane| lane.fill == Fill::Greedy)
                .flat_map(|lane| lane.queue.iter().flatten())
                .any(|&i| pool[i].unreviewed)
    }

    /// The candidates taken since `before` that are not reviewed yet, in
    /// rank order.
    fn unreviewed_since(&self, before: &Filling, pool: &[Item]) -> Vec<usize> {
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
    fn restore(&self, pool: &mut [Item]) {
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
    fn drop_decided(&mut self, pool: &[Item]) {
        for lane in &mut self.lanes {
            lane.queue
                .retain(|group| group.iter().all(|&i| pool[i].is_pending()));
        }
    }

    /// Once compression and what flowed after it are done, takes whole
    /// what compression made smaller where the room left holds it: in
    /// priority order, each cut text whole instead of cut, then each
    /// summary's candidates whole instead of the summary — and again while
    /// a summary gave way to candidates that cost less than it did. A
    /// section left with nothing compressed records why (see
    /// [`CompressionOutcome::Whole`]). Whether room was freed that way,
    /// for what was left over.
    fn take_whole(
        &mut self,
        pool: &mut [Item],
        compressed: &mut compress::Compressed,
        b: &Budgeting,
    ) -> bool {
        let why = "the room the other sections left once they were done holds it whole";
        // Sections where a cut text or a summary's candidates went in whole.
        let mut restored: Vec<Section> = Vec::new();
        let mut freed = false;
        loop {
            self.uncut_whole(pool, b, &mut restored);
            if !self.unsummarised_whole(pool, compressed, b, &mut restored) {
                break;
            }
            freed = true;
        }
        // A section left with nothing compressed says why.
        for r in &mut compressed.records {
            let compressed_still = pool
                .iter()
                .any(|i| i.section == r.section && i.included() && i.compressed);
            if restored.contains(&r.section) && !compressed_still {
                r.outcome = CompressionOutcome::Whole(why.to_owned());
            }
        }
        freed
    }

    /// Each cut text whole where the room left holds it, in rank order.
    fn uncut_whole(&mut self, pool: &mut [Item], b: &Budgeting, restored: &mut Vec<Section>) {
        for lane in self.lanes.iter().filter(|lane| lane.fill == Fill::Greedy) {
            // Host candidates are in the pool in rank order.
            let cut: Vec<usize> = (0..pool.len())
                .filter(|&i| pool[i].section == lane.section && pool[i].included())
                .filter(|&i| pool[i].uncut.is_some())
                .collect();
            for i in cut {
                let Some(whole) = pool[i].uncut.clone() else {
                    continue;
                };
                let cut = u64::from(pool[i].tokens());
                let room = clamp(cut + self.remaining);
                let mut item = pool[i].with_text(whole);
                let Some(n) = item.measure(b.meter, room).within(room) else {
                    continue;
                };
                self.remaining -= u64::from(n) - cut;
                let item = &mut pool[i];
                item.text = item.uncut.take().unwrap_or_default();
                item.count = Some(Count::Exact(n));
                item.compressed = false;
                restored.push(lane.section);
            }
        }
    }

    /// Each summary's candidates whole instead of it where the room left
    /// holds them; whether any cost less than their summary.
    fn unsummarised_whole(
        &mut self,
        pool: &mut [Item],
        compressed: &mut compress::Compressed,
        b: &Budgeting,
        restored: &mut Vec<Section>,
    ) -> bool {
        let mut freed = false;
        let mut k = 0;
        while k < compressed.summaries.len() {
            let summary = &compressed.summaries[k];
            let cost = u64::from(summary.tokens()) + b.overhead;
            let members: Vec<usize> = (0..pool.len())
                .filter(|&i| matches!(pool[i].reason(), Some(Reason::Summarized(id)) if *id == summary.id))
                .collect();
            let room = cost + self.remaining;
            match fits(pool, &members, b.meter, room, b.overhead) {
                Some(whole) => {
                    for &i in &members {
                        pool[i].decide(Reason::WithinBudget);
                        pool[i].compressed = false;
                    }
                    freed |= whole < cost;
                    self.remaining = room - whole;
                    restored.push(summary.section);
                    compressed.summaries.remove(k);
                }
                None => k += 1,
            }
        }
        freed
    }

    /// Room [`Filling::take_whole`] freed flows to what the host sections
    /// left over, in rank order, as it did after compression.
    fn fill_freed(&mut self, pool: &mut [Item], b: &Budgeting, strict: bool) {
        for lane in self
            .lanes
            .iter_mut()
            .filter(|lane| lane.fill == Fill::Greedy)
        {
            let used = lane.fill(pool, b.meter, self.remaining, b.overhead, strict);
            self.remaining -= used;
        }
    }

    /// What is left over is dropped, with the numbers.
    fn leftovers(&self, pool: &mut [Item], b: &Budgeting) {
        for (l, lane) in self.lanes.iter().enumerate() {
            // Keeping an older unit needs every newer one left out too.
            let mut needed = self.stepped[l];
            // Past the first unit never counted, what each needs is known
            // only as at least that one's shortfall: they share it (and
            // the snapshot records them as one run).
            let mut uncounted: Option<Reason> = None;
            for group in &lane.queue {
                let c = cost(pool, group, b.overhead);
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

/// Runs `phase` on `state` (with `strict` once the review rounds are
/// spent) and reviews, in one round, what it took that is not reviewed
/// yet, with the candidates it names besides (what it would summarise).
/// All allowed, the phase stands; a denial or a redaction reruns it from
/// where it began, with the verdicts.
async fn reviewed<R>(
    state: &mut Filling,
    pool: &mut [Item],
    b: &Budgeting<'_, '_>,
    reviewer: &mut Reviewer,
    mut phase: impl FnMut(&mut Filling, &mut [Item], bool) -> (R, Vec<usize>),
) -> Result<R, Error> {
    loop {
        // A phase that cannot take anything unreviewed needs no copy to
        // rerun from.
        let before = state.may_review(pool, reviewer).then(|| state.clone());
        let (out, besides) = phase(state, pool, reviewer.spent());
        let Some(before) = before else {
            return Ok(out);
        };
        let mut wanted = state.unreviewed_since(&before, pool);
        wanted.extend(besides);
        wanted.sort_unstable();
        if wanted.is_empty() {
            return Ok(out);
        }
        let verdicts = reviewer.review(pool, b.channel, &wanted).await?;
        if verdicts.iter().all(|v| *v == Verdict::Allow) {
            policy::apply(pool, &wanted, verdicts);
            return Ok(out);
        }
        *state = before;
        state.restore(pool);
        policy::apply(pool, &wanted, verdicts);
        state.drop_decided(pool);
    }
}

/// Fills the sections from `remaining` tokens. `conversation` is the
/// conversation's units in the window, newest first; `stages` the stage
/// summaries, newest first; `hosted` the host candidates still pending, in
/// rank order. Every item queued is decided; the summaries made are
/// returned.
///
/// The host candidates compete unreviewed. After each phase — the shares
/// and the flow (with what compression will summarise), then what flows
/// once compression is done — the candidates the phase took, and those it
/// would summarise, that are not reviewed yet are reviewed in one round;
/// if a verdict changed anything (a denial, a redaction) the phase runs
/// again from where it began, with the verdicts. After [`REVIEW_ROUNDS`]
/// rounds a phase takes only what was reviewed.
async fn fill(
    b: &Budgeting<'_, '_>,
    pool: &mut [Item],
    conversation: Vec<Group>,
    stages: Vec<usize>,
    hosted: Vec<usize>,
    remaining: u64,
    reviewer: &mut Reviewer,
) -> Result<(Vec<Item>, Vec<SectionCompression>), Error> {
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
    for &i in &hosted {
        let queued = lanes
            .iter()
            .any(|lane| lane.fill == Fill::Greedy && lane.section == pool[i].section);
        if !queued {
            pool[i].decide(Reason::SectionNotAllowed);
        }
    }
    let mut state = Filling {
        stepped: vec![0; lanes.len()],
        lanes,
        remaining,
    };

    // The shares and the flow, reviewed with what they would summarise.
    let (compressing, skipped) = reviewed(&mut state, pool, b, reviewer, |state, pool, strict| {
        let (compressing, skipped) = state.share_and_flow(pool, b, strict);
        let summarised = compressing
            .iter()
            .flat_map(|&(l, _)| state.lanes[l].queue.iter().flatten())
            .copied()
            .filter(|&i| pool[i].unreviewed)
            .collect();
        ((compressing, skipped), summarised)
    })
    .await?;

    // Compression: every section over is summarised in one call.
    let mut over: Vec<Over> = Vec::with_capacity(compressing.len());
    let mut wanted = compressing.iter().peekable();
    for (l, lane) in state.lanes.iter_mut().enumerate() {
        if let Some(&(_, room)) = wanted.next_if(|&&(p, _)| p == l) {
            over.push(Over {
                section: lane.section,
                queue: &mut lane.queue,
                room,
            });
        }
    }
    let mut compressed = if over.is_empty() {
        compress::Compressed::default()
    } else {
        let requests = compress::requests(&over, pool, b.meter, b.overhead);
        let asked = requests.len();
        let answer = b.channel.summaries(requests, b.tokenizer).await;
        let (compressed, call) =
            compress::apply(&mut over, pool, b.meter, b.overhead, answer, asked);
        reviewer.calls.push(call);
        compressed
    };
    drop(over);
    for (&(_, room), used) in compressing.iter().zip(&compressed.used) {
        // Give back what the summary did not use.
        state.remaining += room - (*used).min(room);
    }

    // What flows once more, and the steps, reviewed.
    reviewed(&mut state, pool, b, reviewer, |state, pool, strict| {
        state.after_compression(pool, b, strict);
        ((), Vec::new())
    })
    .await?;

    // What compression cut or summarised goes in whole where the room now
    // left holds it (all of it reviewed already). A summary that cost more
    // than what it summarised leaves room for what was left over (the
    // summariser chooses its summaries' length), which flows to it,
    // reviewed: nothing that fits is dropped.
    if state.take_whole(pool, &mut compressed, b) {
        reviewed(&mut state, pool, b, reviewer, |state, pool, strict| {
            state.fill_freed(pool, b, strict);
            ((), Vec::new())
        })
        .await?;
    }
    state.leftovers(pool, b);
    let mut records = skipped;
    records.append(&mut compressed.records);
    records.sort_by_key(|r| PRIORITY.iter().position(|&s| s == r.section));
    Ok((compressed.summaries, records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::Origin;
    use crate::tokenizer::{CharsPerToken, CountCache, Recording};
    use crate::types::{Provenance, Role, TrustTier};

    fn host_item(body: &str, trust: TrustTier, hint: Option<u32>) -> Item {
        let mut item = Item::made(
            "d1".into(),
            Section::RelevantKnowledge,
            Role::System,
            crate::item::body(body.to_owned()).0,
            Origin::Retrieval,
            "kb",
            "doc:1".into(),
            trust,
        );
        item.provenance = Some(Provenance {
            source_kind: "kb".into(),
            reference: "doc:1".into(),
            source_version: None,
            index_revision: None,
        });
        item.framed = Some(crate::fence::Nonce::fixed());
        item.hint = hint;
        item
    }

    #[test]
    fn a_host_count_stands_for_the_body_and_the_frame_is_counted() {
        let counter = Recording::new(CharsPerToken::new(1).unwrap());
        let mut cache = CountCache::new(0);
        let meter = Meter::new(&counter, Tokenizer::CharsPerToken(1), &mut cache);
        let head = "[source: doc:1]\n";
        let mut item = host_item("twelve chars", TrustTier::Trusted, Some(40));
        assert_eq!(
            item.measure(&meter, 1000),
            Count::Exact(40 + head.len() as u32)
        );
        assert_eq!(*counter.1.borrow(), vec![head.to_owned()]);
        // Without one, the body is counted, and only as far as the limit
        // needs.
        counter.1.borrow_mut().clear();
        let mut item = host_item("twelve chars", TrustTier::Untrusted, None);
        let frame =
            "<untrusted-0badcafe source=\"doc:1\">\n".len() + "\n</untrusted-0badcafe>".len();
        assert_eq!(item.measure(&meter, 1000), Count::Exact(12 + frame as u32));
        assert_eq!(counter.1.borrow().len(), 3, "{:?}", counter.1.borrow());
        // Counted once: a smaller limit asks nothing more.
        assert_eq!(item.measure(&meter, 5), Count::Exact(12 + frame as u32));
        assert_eq!(counter.1.borrow().len(), 3);
    }
}
