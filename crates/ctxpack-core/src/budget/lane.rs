//! A section's lane: its queue of candidates, taken in the order the
//! section prefers them while they fit, and what taking one costs.

use crate::item::{Group, Item};
use crate::snapshot::Reason;

use crate::tokenizer::{Count, Meter, clamp};
use crate::types::Section;

/// How many groups ahead of the one being counted their texts are asked
/// for (see [`crate::prefetch`]).
const AHEAD: usize = 4;

/// How a section takes its candidates.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    /// In order, stopping at the first group that does not fit.
    Contiguous,
    /// In order, skipping what does not fit.
    Greedy,
}

/// One section's queue: groups of pool indices, kept or dropped whole, in
/// the order the section prefers them.
#[derive(Clone)]
pub(crate) struct Lane {
    pub section: Section,
    pub fill: Fill,
    pub queue: Vec<Group>,
    /// Groups taken, in the order taken (for a contiguous lane, newest
    /// first, so the last is the oldest kept).
    pub taken: Vec<Group>,
    /// Pool index of the lane's first item in chronological order, for
    /// contiguous lanes (their position is `index - base`).
    pub base: usize,
}

impl Lane {
    /// Takes groups while they fit in `avail`; returns the tokens taken.
    /// With `strict`, a group with a candidate not reviewed is not taken
    /// even if it fits: it is `unreviewed`, and its room stays empty (host
    /// candidates are groups of one).
    pub fn fill(
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
pub(crate) fn fits(
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
pub(crate) fn on_step(group: &[usize], base: usize, step: u64) -> bool {
    let start = group.iter().min().copied().unwrap_or(0) - base;
    (start as u64).is_multiple_of(step)
}

/// What `group` costs as far as its items were counted (exact once they
/// were taken; a lower bound otherwise).
pub(crate) fn cost(pool: &[Item], group: &[usize], overhead: u64) -> u64 {
    group
        .iter()
        .map(|&i| pool[i].count.map_or(0, Count::at_least) + overhead)
        .sum()
}
