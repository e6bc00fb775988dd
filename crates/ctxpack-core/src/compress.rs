//! Compression: what a section over its share does with the room it kept.
//!
//! Every such section is summarised in one `summarizer.summarize` call: it
//! asks for each section's leftover candidates, rendered, in at most the
//! section's room (entry overhead taken off). A summary stands where the
//! first candidate it summarises stood, cites them all, takes the lowest
//! trust among them (untrusted text stays fenced) and is truncated if the
//! summariser overshot. The candidates it summarises are `summarized`.
//!
//! If the summariser fails, is absent, answers a different number of
//! summaries, or answers an empty one, the section is cut instead: its
//! leftovers go in whole while they fit, and the first that does not is
//! cut at a token boundary into what is left (the snapshot is then
//! `truncated`).

use crate::error::HostError;
use crate::item::{Group, Item};
use crate::pack::{Origin, Reason, SourceCall, SourceOutcome};
use crate::tokenizer::{Count, Meter, clamp, clamp_len};
use crate::types::{Role, Section, SummaryRequest, TrustTier};

/// A section left with candidates, and the room it has for them, entry
/// overhead included.
pub(crate) struct Over<'a> {
    pub section: Section,
    pub queue: &'a mut Vec<Group>,
    pub room: u64,
}

/// What compression made besides deciding items.
#[derive(Default)]
pub(crate) struct Compressed {
    /// Summaries made, to be rendered with their sections.
    pub summaries: Vec<Item>,
    /// The tokens each section used, in the order given.
    pub used: Vec<u64>,
}

/// What the summariser is asked: each section's leftovers, rendered, in
/// at most its room (entry overhead taken off).
pub(crate) fn requests(over: &[Over], pool: &[Item], overhead: u64) -> Vec<SummaryRequest> {
    over.iter()
        .map(|o| SummaryRequest {
            section: o.section,
            text: o
                .queue
                .iter()
                .flatten()
                .map(|&i| pool[i].rendered())
                .collect::<Vec<_>>()
                .join("\n\n"),
            target_tokens: clamp(o.room - overhead),
        })
        .collect()
}

/// Summarises each section of `over` into its room with the summariser's
/// `answer` to the `asked` requests, or cuts it there; returns what it
/// made and the record of the call.
pub(crate) fn apply(
    over: &mut [Over],
    pool: &mut [Item],
    meter: &Meter,
    overhead: u64,
    answer: Result<Vec<String>, HostError>,
    asked: usize,
) -> (Compressed, SourceCall) {
    let mut out = Compressed::default();
    let (outcome, summaries) = match answer {
        Ok(s) if s.len() == asked => (SourceOutcome::Answered(clamp_len(s.len())), Some(s)),
        Ok(s) => (
            SourceOutcome::Failed(format!(
                "answered {} summaries for {} requests",
                s.len(),
                asked
            )),
            None,
        ),
        Err(e) => (SourceOutcome::Failed(e.message), None),
    };
    let call = SourceCall {
        capability: "summarizer.summarize".to_owned(),
        outcome,
    };
    for (k, o) in over.iter_mut().enumerate() {
        let target = clamp(o.room - overhead);
        // An empty answer summarises nothing: the section is cut instead,
        // as when the summariser fails.
        let summary = summaries
            .as_ref()
            .and_then(|texts| texts.get(k))
            .filter(|text| !text.trim().is_empty())
            .and_then(|text| {
                let members: Vec<usize> = o.queue.iter().flatten().copied().collect();
                let item = summary(o.section, text, &members, pool, meter, target)?;
                Some((item, members))
            });
        let used = match summary {
            Some((item, members)) => {
                o.queue.clear();
                for &i in &members {
                    pool[i].decide(Reason::Summarized(item.id.clone()));
                    pool[i].compressed = true;
                }
                let used = u64::from(item.tokens()) + overhead;
                out.summaries.push(item);
                used
            }
            None => cut_into(o.queue, pool, meter, o.room, overhead),
        };
        out.used.push(used);
    }
    (out, call)
}

/// Takes `queue`'s leftovers into `room` (entry overhead included) in rank
/// order: whole while they fit, and the first that does not is cut at a
/// token boundary into what is left (a cut that leaves nothing of its text
/// is no use: the next is tried). Returns the tokens taken; an item is
/// marked compressed only if its text changed.
fn cut_into(
    queue: &mut Vec<Group>,
    pool: &mut [Item],
    meter: &Meter,
    room: u64,
    overhead: u64,
) -> u64 {
    let mut used = 0u64;
    let mut k = 0;
    while k < queue.len() && room - used > overhead {
        let target = clamp(room - used - overhead);
        let i = queue[k][0];
        if let Some(tokens) = pool[i].measure(meter, target).within(target) {
            queue.remove(k);
            pool[i].decide(Reason::WithinBudget);
            used += u64::from(tokens) + overhead;
            continue;
        }
        let text = pool[i].truncated_text(meter, target);
        if text.is_empty() || text.len() >= pool[i].text.len() {
            k += 1;
            continue;
        }
        let mut cut = pool[i].with_text(text);
        match cut.measure(meter, target).within(target) {
            Some(tokens) => {
                queue.remove(k);
                let item = &mut pool[i];
                item.text = cut.text;
                item.count = Some(Count::Exact(tokens));
                item.hint = None;
                item.compressed = true;
                item.decide(Reason::WithinBudget);
                return used + u64::from(tokens) + overhead;
            }
            None => k += 1,
        }
    }
    used
}

/// The summary of `members`, counted and, if the summariser overshot,
/// truncated to `target` tokens (`None` if not even its frame fits). It
/// takes the lowest trust of what it summarises, and untrusted text stays
/// fenced. It is included.
fn summary(
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
    let mut item = Item::made(
        format!("summary:{name}"),
        section,
        Role::System,
        crate::item::body(text.to_owned()),
        Origin::Summary,
        "summary",
        ids.join(","),
        trust,
    );
    // Its members are host texts, each framed with the pack's nonce.
    item.framed = members.iter().find_map(|&i| pool[i].framed);
    item.compressed = true;
    if item.measure(meter, target).within(target).is_none() {
        item = item.with_text(item.truncated_text(meter, target));
        item.measure(meter, target).within(target)?;
    }
    item.decide(Reason::WithinBudget);
    Some(item)
}
