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
//!    flow left), if that is at least `min-summary-tokens`: summarised, or
//!    cut if the summariser cannot (see [`crate::compress`]). Reserves not
//!    needed, and room a summary did not use, flow once more;
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

use crate::compress::{self, Over};
use crate::config::Plan;
use crate::host::Host;
use crate::item::{Group, Item};
use crate::pack::{Reason, Shortfall, SourceCall};
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
    fn fill(&mut self, pool: &mut [Item], meter: &Meter, avail: u64, overhead: u64) -> u64 {
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
    pub host: &'a mut dyn Host,
}

/// What the budgeting did besides setting reasons.
pub(crate) struct Outcome {
    /// Summaries made, to be rendered with their sections.
    pub summaries: Vec<Item>,
    /// The summariser's call, if it was made.
    pub call: Option<SourceCall>,
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
    /// The summariser's call, if it was made.
    pub call: Option<SourceCall>,
}

/// Shares `remaining` tokens among the conversation `l1` (its window's
/// units `conversation`, newest first), the stage summaries `l2` and the
/// host's candidates `hosted` (in rank order), and decides every one of
/// them still pending.
pub(crate) fn share(
    b: Budgeting<'_, '_>,
    l1: Vec<Item>,
    l2: Vec<Item>,
    hosted: Vec<Item>,
    conversation: Vec<Group>,
    remaining: u64,
) -> Shared {
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
    let outcome = fill(b, &mut pool, conversation, stages, hosted, remaining);

    let hosted_items = pool.split_off(hosted_from);
    let mut l2 = pool.split_off(n1);
    let l1 = pool;
    // Each summary stands where the first candidate it summarises stood.
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
    Shared {
        l2,
        l1_hosted,
        l1,
        call: outcome.call,
    }
}

/// Fills the sections from `remaining` tokens. `conversation` is the
/// conversation's units in the window, newest first; `stages` the stage
/// summaries, newest first; `hosted` the host candidates still pending, in
/// rank order. Every item queued is decided.
fn fill(
    b: Budgeting<'_, '_>,
    pool: &mut [Item],
    conversation: Vec<Group>,
    stages: Vec<usize>,
    hosted: Vec<usize>,
    mut remaining: u64,
) -> Outcome {
    // The conversation's lane is the only one to take it.
    let mut conversation = Some(conversation);
    let mut lanes: Vec<Lane> = PRIORITY
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

    // Pass 1: shares. A compressible section left with candidates keeps
    // its unused share in reserve, so the flow cannot give it away.
    let mut reserved: Vec<(usize, u64)> = Vec::new();
    for (l, lane) in lanes.iter_mut().enumerate() {
        let share = (b.plan.share(lane.section) * b.budget as f64).floor() as u64;
        let cap = share.min(remaining);
        let used = lane.fill(pool, b.meter, cap, b.overhead);
        remaining -= used;
        let room = cap - used;
        if b.plan.compress && lane.fill == Fill::Greedy && !lane.queue.is_empty() && room > 0 {
            remaining -= room;
            reserved.push((l, room));
        }
    }

    // Pass 2: what is unused flows in priority order; a section with a
    // reserve may still take whole candidates from the flow.
    for lane in &mut lanes {
        let used = lane.fill(pool, b.meter, remaining, b.overhead);
        remaining -= used;
    }

    // Compression: a section still over is summarised into its reserve
    // (the first in priority order also gets what the flow left); the rest
    // give their reserve back.
    let mut compressing: Vec<(usize, u64)> = Vec::new();
    for (l, room) in reserved {
        let target = if compressing.is_empty() {
            room + remaining
        } else {
            room
        };
        if lanes[l].queue.is_empty() || target < u64::from(b.plan.min_summary_tokens) + b.overhead {
            remaining += room;
            continue;
        }
        if compressing.is_empty() {
            remaining = 0;
        }
        compressing.push((l, target));
    }
    let mut over: Vec<Over> = Vec::with_capacity(compressing.len());
    let mut wanted = compressing.iter().peekable();
    for (l, lane) in lanes.iter_mut().enumerate() {
        if let Some(&(_, room)) = wanted.next_if(|&&(p, _)| p == l) {
            over.push(Over {
                section: lane.section,
                queue: &mut lane.queue,
                room,
            });
        }
    }
    let compressed = compress::compress(&mut over, pool, b.meter, b.overhead, b.tokenizer, b.host);
    drop(over);
    for (&(_, room), used) in compressing.iter().zip(&compressed.used) {
        // Give back what the summary did not use.
        remaining += room - (*used).min(room);
    }
    let out = Outcome {
        summaries: compressed.summaries,
        call: compressed.call,
    };
    // Pass 3: reserves not needed, and room a summary did not use, flow
    // once more.
    for lane in &mut lanes {
        let used = lane.fill(pool, b.meter, remaining, b.overhead);
        remaining -= used;
    }

    // Steps: where a contiguous lane was cut, its first kept item moves to
    // a multiple of the cut step; what that frees flows once more.
    let step = u64::from(b.plan.cut_step.max(1));
    let mut stepped_cost = vec![0u64; lanes.len()];
    // Each lane's groups let go, newest first.
    let mut let_go: Vec<Vec<Group>> = vec![Vec::new(); lanes.len()];
    if step > 1 {
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
                remaining += c;
                let_go[l].extend(lane.taken.pop());
            }
            let_go[l].reverse();
        }
        // A lane that stepped must not refill: its next candidate is older
        // than the ones it just let go, and would leave a gap.
        for (lane, _) in lanes
            .iter_mut()
            .zip(&stepped_cost)
            .filter(|(_, c)| **c == 0)
        {
            let used = lane.fill(pool, b.meter, remaining, b.overhead);
            remaining -= used;
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
                match fits(pool, group, b.meter, remaining - used, b.overhead) {
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
            remaining -= used;
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

    // What is left over is dropped, with the numbers.
    for (l, lane) in lanes.iter().enumerate() {
        // Keeping an older unit needs every newer one left out too.
        let mut needed = stepped_cost[l];
        for group in &lane.queue {
            let c = cost(pool, group, b.overhead);
            let reason = match (lane.section, lane.fill) {
                (Section::StageSummaries, _) => Reason::EvictedOldest,
                (_, Fill::Contiguous) => {
                    needed += c;
                    if needed > remaining {
                        Reason::OverBudget(Shortfall { needed, remaining })
                    } else {
                        // It and every newer one fit, but the lane could
                        // not start there: not on a step.
                        Reason::StepCut(b.plan.cut_step)
                    }
                }
                (_, Fill::Greedy) => Reason::OverBudget(Shortfall {
                    needed: c,
                    remaining,
                }),
            };
            for &i in group {
                pool[i].decide(reason.clone());
            }
        }
    }
    out
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
            crate::item::body(trust, body.to_owned()),
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
        item.framed = true;
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
        let frame = "<untrusted source=\"doc:1\">\n".len() + "\n</untrusted>".len();
        assert_eq!(item.measure(&meter, 1000), Count::Exact(12 + frame as u32));
        assert_eq!(counter.1.borrow().len(), 3, "{:?}", counter.1.borrow());
        // Counted once: a smaller limit asks nothing more.
        assert_eq!(item.measure(&meter, 5), Count::Exact(12 + frame as u32));
        assert_eq!(counter.1.borrow().len(), 3);
    }
}
