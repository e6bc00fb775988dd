//! Sharing the budget among sections (seed 004's plan).
//!
//! L0 is charged first and whole (see [`crate::layered`]). What remains is
//! filled in two passes over the optional sections in priority order
//! ([`PRIORITY`]):
//!
//! 1. each section fills up to its own share of the budget (capped by what
//!    remains). A section of host candidates left with candidates keeps the
//!    unused part of its share in reserve;
//! 2. what the sections left unused flows to the others in priority order,
//!    each taking whole candidates while they fit;
//! 3. a section still left with candidates has them summarised into its
//!    reserve (the first such section in priority order also gets whatever
//!    the flow left), if that is at least `min-summary-tokens` — every such
//!    section in one `summarizer.summarize` call. If the summariser fails
//!    (or is absent, or answers a different number of summaries) the
//!    section's best remaining candidate is truncated at a token boundary
//!    into the room instead and the snapshot is `truncated`. Reserves not
//!    needed, and room a summary did not use, flow once more.
//!
//! Within a section the conversation keeps its newest units as one
//! contiguous run and stage summaries evict the oldest (both stop at the
//! first that does not fit); host candidates go in rank order, and one that
//! does not fit is skipped for a smaller one after it.

use crate::host::Host;
use crate::layered::Item;
use crate::tokenizer::{Count, Meter};
use crate::types::{
    Origin, Plan, Reason, Role, Section, Shortfall, SourceCall, SourceOutcome, SummaryRequest,
    Tokenizer, TrustTier,
};

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

/// Pool indices kept or dropped whole. Most groups are one item, held
/// without an allocation: a history or a retrieval has thousands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Group {
    One(usize),
    Many(Vec<usize>),
}

impl From<Vec<usize>> for Group {
    fn from(members: Vec<usize>) -> Self {
        match members[..] {
            [one] => Group::One(one),
            _ => Group::Many(members),
        }
    }
}

impl std::ops::Deref for Group {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        match self {
            Group::One(i) => std::slice::from_ref(i),
            Group::Many(members) => members,
        }
    }
}

impl<'a> IntoIterator for &'a Group {
    type Item = &'a usize;
    type IntoIter = std::slice::Iter<'a, usize>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
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
            if let Some(ahead) = queue.as_slice().get(AHEAD) {
                for &i in ahead.iter() {
                    pool[i].prefetch();
                }
            }
            if let Some(c) = fits(pool, &group, meter, avail - used, overhead) {
                used += c;
                for &i in &group {
                    pool[i].reason = Reason::WithinBudget;
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
        let n = measure(meter, &mut pool[i], clamp(room - base)).within(clamp(room - base))?;
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

/// `item`'s tokens, counted until it is clear whether they are more than
/// `limit` (see [`crate::TokenCounter::count_up_to`]) and remembered. A
/// host text is counted as its frame plus its body, and a count the host
/// supplied for the body stands for it.
pub(crate) fn measure(meter: &Meter, item: &mut Item, limit: u32) -> Count {
    match item.count {
        Some(Count::Over(n)) if n < limit => {}
        Some(c) => return c,
        None => {}
    }
    if limit == 0 && (item.framed || !item.text.is_empty()) {
        // Every counter gives a non-empty text at least one token.
        item.count = Some(Count::Over(0));
        return Count::Over(0);
    }
    let count = match item.frame() {
        None => meter.count_up_to(&item.text, limit),
        Some((head, tail)) => {
            let frame = meter.count(&head).saturating_add(meter.count(tail));
            match item.hint {
                Some(h) => Count::Exact(h.saturating_add(frame)),
                None => meter
                    .count_up_to(&item.text, limit.saturating_sub(frame))
                    .plus(frame),
            }
        }
    };
    item.count = Some(count);
    count
}

fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
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

/// Fills the sections from `remaining` tokens. `conversation` is the
/// conversation's units in the window, newest first; `stages` the stage
/// summaries, newest first; every other pool item still carrying
/// `WithinBudget` is a host candidate, in rank order.
pub(crate) fn fill(
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
            pool[i].reason = Reason::SectionNotAllowed;
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
    let mut pending: Vec<(usize, u64)> = Vec::new();
    for (l, room) in reserved {
        let target = if pending.is_empty() {
            room + remaining
        } else {
            room
        };
        if lanes[l].queue.is_empty() || target < u64::from(b.plan.min_summary_tokens) + b.overhead {
            remaining += room;
            continue;
        }
        if pending.is_empty() {
            remaining = 0;
        }
        pending.push((l, target));
    }
    let mut out = Outcome {
        summaries: Vec::new(),
        call: None,
    };
    if !pending.is_empty() {
        let requests: Vec<SummaryRequest> = pending
            .iter()
            .map(|&(l, room)| SummaryRequest {
                section: lanes[l].section,
                text: lanes[l]
                    .queue
                    .iter()
                    .flatten()
                    .map(|&i| pool[i].rendered())
                    .collect::<Vec<_>>()
                    .join("\n\n"),
                target_tokens: clamp(room - b.overhead),
            })
            .collect();
        let capability = "summarizer.summarize".to_owned();
        let summaries = match b.host.summarize(&requests, b.tokenizer) {
            Ok(s) if s.len() == requests.len() => {
                out.call = Some(SourceCall {
                    capability,
                    outcome: SourceOutcome::Answered(clamp(s.len() as u64)),
                });
                Some(s)
            }
            Ok(s) => {
                out.call = Some(SourceCall {
                    capability,
                    outcome: SourceOutcome::Failed(format!(
                        "answered {} summaries for {} requests",
                        s.len(),
                        requests.len()
                    )),
                });
                None
            }
            Err(e) => {
                out.call = Some(SourceCall {
                    capability,
                    outcome: SourceOutcome::Failed(e.message),
                });
                None
            }
        };
        for (k, &(l, room)) in pending.iter().enumerate() {
            let lane = &mut lanes[l];
            let target = clamp(room - b.overhead);
            // An empty answer summarises nothing: the section is cut
            // instead, as when the summariser fails.
            let summary = summaries
                .as_ref()
                .and_then(|texts| texts.get(k))
                .filter(|text| !text.trim().is_empty())
                .and_then(|text| {
                    let members: Vec<usize> = lane.queue.iter().flatten().copied().collect();
                    let item = summary_item(lane.section, text, &members, pool, b.meter, target)?;
                    Some((item, members))
                });
            let used = match summary {
                Some((item, members)) => {
                    lane.queue.clear();
                    for &i in &members {
                        pool[i].reason = Reason::Summarized(item.id.clone());
                        pool[i].compressed = true;
                    }
                    let used = u64::from(item.tokens()) + b.overhead;
                    out.summaries.push(item);
                    used
                }
                None => cut_into(lane, pool, b.meter, room, b.overhead),
            };
            // Give back what the summary did not use.
            remaining += room - used.min(room);
        }
    }
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
                    pool[i].reason = Reason::StepCut(b.plan.cut_step);
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
                    pool[i].reason = Reason::WithinBudget;
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
                pool[i].reason = reason.clone();
            }
        }
    }
    out
}

/// Takes `lane`'s leftovers into `room` (entry overhead included) in rank
/// order: whole while they fit, and the first that does not is cut at a
/// token boundary into what is left (a cut that leaves nothing of its text
/// is no use: the next is tried). Returns the tokens taken; an item is
/// marked compressed only if its text changed.
fn cut_into(lane: &mut Lane, pool: &mut [Item], meter: &Meter, room: u64, overhead: u64) -> u64 {
    let mut used = 0u64;
    let mut k = 0;
    while k < lane.queue.len() && room - used > overhead {
        let target = clamp(room - used - overhead);
        let i = lane.queue[k][0];
        if let Some(tokens) = measure(meter, &mut pool[i], target).within(target) {
            lane.queue.remove(k);
            pool[i].reason = Reason::WithinBudget;
            used += u64::from(tokens) + overhead;
            continue;
        }
        let text = truncate_text(&pool[i], meter, target);
        if text.is_empty() || text.len() >= pool[i].text.len() {
            k += 1;
            continue;
        }
        let mut cut = pool[i].with_text(text);
        match measure(meter, &mut cut, target).within(target) {
            Some(tokens) => {
                lane.queue.remove(k);
                pool[i].text = cut.text;
                pool[i].count = Some(Count::Exact(tokens));
                pool[i].hint = None;
                pool[i].compressed = true;
                pool[i].reason = Reason::WithinBudget;
                return used + u64::from(tokens) + overhead;
            }
            None => k += 1,
        }
    }
    used
}

/// `item`'s text cut to at most `target` tokens at a token boundary; a
/// host text's body is cut so that it fits with its fence or citation,
/// which stay whole.
fn truncate_text(item: &Item, meter: &Meter, target: u32) -> String {
    match item.frame() {
        None => meter.truncate(&item.text, target),
        Some((head, tail)) => {
            let frame = meter.count(&head).saturating_add(meter.count(tail));
            meter.truncate(&item.text, target.saturating_sub(frame))
        }
    }
}

/// The summary of `members`, counted and, if the summariser overshot,
/// truncated to `target` tokens (`None` if not even its frame fits). It
/// takes the lowest trust of what it summarises, and untrusted text stays
/// fenced.
fn summary_item(
    section: Section,
    text: &str,
    members: &[usize],
    pool: &[Item],
    meter: &Meter,
    target: u32,
) -> Option<Item> {
    let trust = members
        .iter()
        .map(|&i| pool[i].trust)
        .max()
        .unwrap_or(TrustTier::Untrusted);
    let ids: Vec<&str> = members.iter().map(|&i| pool[i].id.as_str()).collect();
    let name = match serde_json::to_value(section) {
        Ok(serde_json::Value::String(s)) => s,
        _ => format!("{section:?}"),
    };
    let id = format!("summary:{name}");
    let cites = ids.join(",");
    let mut item = Item::made(
        id,
        section,
        Role::System,
        crate::gather::body(trust, text.to_owned()),
        Origin::Summary,
        "summary",
        cites,
        trust,
    );
    item.framed = true;
    item.compressed = true;
    if measure(meter, &mut item, target).within(target).is_none() {
        item = item.with_text(truncate_text(&item, meter, target));
        measure(meter, &mut item, target).within(target)?;
    }
    Some(item)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::{CharsPerToken, CountCache, Recording};
    use crate::types::Provenance;

    fn host_item(body: &str, trust: TrustTier, hint: Option<u32>) -> Item {
        let mut item = Item::made(
            "d1".into(),
            Section::RelevantKnowledge,
            Role::System,
            crate::gather::body(trust, body.to_owned()),
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
            measure(&meter, &mut item, 1000),
            Count::Exact(40 + head.len() as u32)
        );
        assert_eq!(*counter.1.borrow(), vec![head.to_owned()]);
        // Without one, the body is counted, and only as far as the limit
        // needs.
        counter.1.borrow_mut().clear();
        let mut item = host_item("twelve chars", TrustTier::Untrusted, None);
        let frame = "<untrusted source=\"doc:1\">\n".len() + "\n</untrusted>".len();
        assert_eq!(
            measure(&meter, &mut item, 1000),
            Count::Exact(12 + frame as u32)
        );
        assert_eq!(counter.1.borrow().len(), 3, "{:?}", counter.1.borrow());
        // Counted once: a smaller limit asks nothing more.
        assert_eq!(
            measure(&meter, &mut item, 5),
            Count::Exact(12 + frame as u32)
        );
        assert_eq!(counter.1.borrow().len(), 3);
    }
}
