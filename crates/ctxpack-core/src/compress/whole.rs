//! What compression made smaller goes in whole where the room the other
//! sections left, once they were done, holds it.

use super::Compressed;
use crate::budget::{Budgeting, Fill, Filling, fits};
use crate::item::Item;
use crate::snapshot::{CompressionOutcome, Reason, SectionCompression};

use crate::tokenizer::{Count, clamp};
use crate::types::Section;

/// Once compression and what flowed after it are done, takes whole
/// what compression made smaller where the room left holds it: in
/// priority order, each cut text whole instead of cut, then each
/// summary's candidates whole instead of the summary — and again while
/// a summary gave way to candidates that cost less than it did. A
/// section left with nothing compressed records why (see
/// [`CompressionOutcome::Whole`]). Whether room was freed that way,
/// for what was left over.
pub(crate) fn take_whole(
    state: &mut Filling,
    pool: &mut [Item],
    compressed: &mut Compressed,
    b: &Budgeting,
) -> bool {
    let why = "the room the other sections left once they were done holds it whole";
    // Sections where a cut text or a summary's candidates went in whole.
    let mut restored: Vec<Section> = Vec::new();
    let mut freed = false;
    loop {
        uncut_whole(state, pool, b, &mut restored);
        if !unsummarised_whole(state, pool, compressed, b, &mut restored) {
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

/// The record of each section of `restored`, where a cut text went in
/// whole once the pack was settled (see [`crate::render::refill`]), if
/// nothing of it is compressed any more.
pub(crate) fn restored(
    records: &mut [SectionCompression],
    layers: &crate::render::Layers,
    restored: &[Section],
) {
    let why = "the room the pack left once it was settled holds it whole";
    for r in records.iter_mut().filter(|r| restored.contains(&r.section)) {
        if !layers.compressed_in(r.section) {
            r.outcome = CompressionOutcome::Whole(why.to_owned());
        }
    }
}

/// Each cut text whole where the room left holds it, in rank order.
fn uncut_whole(state: &mut Filling, pool: &mut [Item], b: &Budgeting, restored: &mut Vec<Section>) {
    for lane in state.lanes.iter().filter(|lane| lane.fill == Fill::Greedy) {
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
            let room = clamp(cut + state.remaining);
            let mut item = pool[i].with_text(whole);
            let Some(n) = item.measure(b.meter, room).within(room) else {
                continue;
            };
            state.remaining -= u64::from(n) - cut;
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
    state: &mut Filling,
    pool: &mut [Item],
    compressed: &mut Compressed,
    b: &Budgeting,
    restored: &mut Vec<Section>,
) -> bool {
    let mut freed = false;
    let mut k = 0;
    while k < compressed.summaries.len() {
        let summary = &compressed.summaries[k];
        let cost = u64::from(summary.tokens()) + b.overhead;
        let members: Vec<usize> = (0..pool.len())
            .filter(
                |&i| matches!(pool[i].reason(), Some(Reason::Summarized(id)) if *id == summary.id),
            )
            .collect();
        let room = cost + state.remaining;
        match fits(pool, &members, b.meter, room, b.overhead) {
            Some(whole) => {
                for &i in &members {
                    pool[i].decide(Reason::WithinBudget);
                    pool[i].compressed = false;
                }
                freed |= whole < cost;
                state.remaining = room - whole;
                restored.push(summary.section);
                compressed.summaries.remove(k);
            }
            None => k += 1,
        }
    }
    freed
}

/// The sections whose summariser was not asked (their room was too small
/// for a summary), where the plan compresses.
pub(crate) fn skipped(records: &[SectionCompression], plan: &crate::config::Plan) -> Vec<Section> {
    records
        .iter()
        .filter(|r| plan.compress && matches!(r.outcome, CompressionOutcome::Skipped(_)))
        .map(|r| r.section)
        .collect()
}

/// The record of each section of `cut`, whose summariser was not asked
/// and whose first text too long for the room left was cut into it.
pub(crate) fn cut_instead(records: &mut [SectionCompression], cut: &[Section]) {
    for r in records.iter_mut().filter(|r| cut.contains(&r.section)) {
        if let CompressionOutcome::Skipped(why) = &r.outcome {
            r.outcome = CompressionOutcome::Cut(format!(
                "not summarised ({why}): cut into the room the pack left instead"
            ));
        }
    }
}
