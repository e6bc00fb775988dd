//! Compression: what a section over its share does with the room it kept.
//!
//! Every such section is summarised in one `summarizer.summarize` call: it
//! asks for each section's leftover candidates, rendered, in at most the
//! tokens its summary can have — the section's room less the entry
//! overhead and the summary's own citation or fence, so that a summary
//! within its target fits. A summary stands where the first candidate it
//! summarises stood, cites them all, takes the lowest trust among them
//! (untrusted text stays fenced) and is truncated if the summariser
//! overshot. The candidates it summarises are `summarized`.
//!
//! If the summariser fails, is absent, answers a different number of
//! summaries, answers an empty one, or one that cannot fit even cut, the
//! section is cut instead: its leftovers go in whole while they fit, and
//! the first that does not is cut at a token boundary into what is left.
//! Each section's outcome, and why, is recorded
//! ([`crate::snapshot::SectionCompression`]).

mod whole;

pub(crate) use whole::{cut_instead, restored, skipped, take_whole};

use crate::budget::{Budgeting, Filling};
use crate::capability::Capability;
use crate::error::HostError;
use crate::item::{Group, Item};
use crate::snapshot::{
    CompressionOutcome, Origin, Reason, SectionCompression, SourceCall, SourceOutcome,
};

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
    /// What came of each section, in the order given.
    pub records: Vec<SectionCompression>,
}

/// Which sections still left with candidates are compressed, once the
/// shares and the flow are done: each section of `reserved` (lane and the
/// room it kept, in priority order) with room for a summary of at least
/// the plan's `min-summary-tokens`; the first such also gets what the
/// flow left. The rest give their reserve back, with the record of why.
/// With `strict` (the review rounds spent), what is not reviewed is left
/// out as `unreviewed` rather than summarised.
pub(crate) fn choose(
    state: &mut Filling,
    reserved: Vec<(usize, u64)>,
    pool: &mut [Item],
    b: &Budgeting,
    strict: bool,
) -> (Vec<(usize, u64)>, Vec<SectionCompression>) {
    let mut compressing: Vec<(usize, u64)> = Vec::new();
    let mut skipped = Vec::new();
    for (l, room) in reserved {
        if strict {
            let queue = &mut state.lanes[l].queue;
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
            room + state.remaining
        } else {
            room
        };
        if state.lanes[l].queue.is_empty() {
            state.remaining += room;
            continue;
        }
        // What a summary could have: the room less the entry overhead
        // and the summary's own citation.
        let frame = frame(&state.lanes[l].queue, pool, b.meter);
        let body = target.saturating_sub(b.overhead).saturating_sub(frame);
        let min = u64::from(b.plan.min_summary_tokens);
        if body == 0 || body < min {
            skipped.push(SectionCompression {
                section: state.lanes[l].section,
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
            state.remaining += room;
            continue;
        }
        if compressing.is_empty() {
            state.remaining = 0;
        }
        compressing.push((l, target));
    }
    (compressing, skipped)
}

/// The first candidate left over in each section of `skipped` (not
/// summarised: its room was too small for a summary), where the plan
/// compresses and it is not reviewed yet: the review sees it with the
/// phase's, so that room left once the pack is settled can take it cut
/// (see [`crate::render::refill`]).
pub(crate) fn heads(
    state: &Filling,
    skipped: &[SectionCompression],
    pool: &[Item],
    b: &Budgeting,
) -> Vec<usize> {
    if !b.plan.compress {
        return Vec::new();
    }
    state
        .lanes
        .iter()
        .filter(|lane| skipped.iter().any(|r| r.section == lane.section))
        .filter_map(|lane| lane.queue.first())
        .flatten()
        .copied()
        .filter(|&i| pool[i].unreviewed)
        .collect()
}

/// The candidates the sections `compressing` would hand to the
/// summariser that are not reviewed yet: the review sees them first.
pub(crate) fn unreviewed(
    state: &Filling,
    compressing: &[(usize, u64)],
    pool: &[Item],
) -> Vec<usize> {
    compressing
        .iter()
        .flat_map(|&(l, _)| state.lanes[l].queue.iter().flatten())
        .copied()
        .filter(|&i| pool[i].unreviewed)
        .collect()
}

/// Every section of `compressing` summarised into its room in one
/// `summarizer.summarize` call (recorded in `calls`), or cut there; what
/// a summary did not use goes back to the room left.
pub(crate) async fn summarise(
    state: &mut Filling,
    compressing: &[(usize, u64)],
    pool: &mut [Item],
    b: &Budgeting<'_, '_>,
    calls: &mut Vec<SourceCall>,
) -> Compressed {
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
    let compressed = if over.is_empty() {
        Compressed::default()
    } else {
        let requests = requests(&over, pool, b.meter, b.overhead);
        let asked = requests.len();
        let answer = b.channel.summaries(requests, b.tokenizer.clone()).await;
        let (compressed, call) = apply(&mut over, pool, b.meter, b.overhead, answer, asked);
        calls.push(call);
        compressed
    };
    drop(over);
    for (&(_, room), used) in compressing.iter().zip(&compressed.used) {
        // Give back what the summary did not use.
        state.remaining += room - (*used).min(room);
    }
    compressed
}

/// The tokens a summary of the candidates `queue` holds takes besides its
/// text: its citation, or its fence if one of them is untrusted (see
/// [`summary`]).
pub(crate) fn frame(queue: &[Group], pool: &[Item], meter: &Meter) -> u64 {
    let members: Vec<usize> = queue.iter().flatten().copied().collect();
    let controls = crate::fence::Controls::default();
    let item = summary_item(
        Section::SupportingContext,
        String::new(),
        &members,
        pool,
        &controls,
    );
    // A fenced summary's first line is quoted besides (its others are
    // charged as the summariser writes them: a cut makes them fit).
    let quote = match item.trust {
        crate::types::TrustTier::Untrusted => u64::from(meter.count(crate::fence::QUOTE)),
        _ => 0,
    };
    item.frame().map_or(0, |(head, tail)| {
        u64::from(meter.count(&head)) + u64::from(meter.count(&tail)) + quote
    })
}

/// The tokens a summary of `queue`'s leftovers can have in `room` (entry
/// overhead included): the room less the overhead and the summary's
/// citation or fence.
pub(crate) fn target(
    queue: &[Group],
    room: u64,
    pool: &[Item],
    meter: &Meter,
    overhead: u64,
) -> u64 {
    room.saturating_sub(overhead)
        .saturating_sub(frame(queue, pool, meter))
}

/// What the summariser is asked: each section's leftovers, rendered, in
/// at most the tokens its summary can have (see [`target`]).
pub(crate) fn requests(
    over: &[Over],
    pool: &[Item],
    meter: &Meter,
    overhead: u64,
) -> Vec<SummaryRequest> {
    over.iter()
        .map(|o| SummaryRequest {
            section: o.section,
            text: o
                .queue
                .iter()
                .flatten()
                .map(|&i| pool[i].for_summariser())
                .collect::<Vec<_>>()
                .join("\n\n"),
            target_tokens: clamp(target(o.queue, o.room, pool, meter, overhead)),
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
        Ok(s) if s.len() == asked => (SourceOutcome::Answered(clamp_len(s.len())), Ok(s)),
        Ok(s) => {
            let why = format!("answered {} summaries for {} requests", s.len(), asked);
            (
                SourceOutcome::Failed(why.clone()),
                Err(format!("the summariser {why}")),
            )
        }
        Err(e) => (
            SourceOutcome::Failed(e.message.clone()),
            Err(format!("the summariser failed: {}", e.message)),
        ),
    };
    let call = SourceCall {
        capability: Capability::Summarize.name().to_owned(),
        outcome,
    };
    for (k, o) in over.iter_mut().enumerate() {
        let body_target = target(o.queue, o.room, pool, meter, overhead);
        let members: Vec<usize> = o.queue.iter().flatten().copied().collect();
        let made = summaries.as_ref().map_err(Clone::clone).and_then(|texts| {
            let text = texts.get(k).map(String::as_str).unwrap_or_default();
            // An empty answer summarises nothing: the section is cut
            // instead, as when the summariser fails.
            if text.trim().is_empty() {
                return Err("the summary was empty".to_owned());
            }
            summary(
                o.section,
                text,
                &members,
                pool,
                meter,
                clamp(o.room - overhead),
            )
        });
        let (used, outcome) = match made {
            Ok(item) => {
                o.queue.clear();
                for &i in &members {
                    pool[i].decide(Reason::Summarized(item.id.clone()));
                    pool[i].compressed = true;
                }
                let tokens = item.tokens();
                out.summaries.push(item);
                (
                    u64::from(tokens) + overhead,
                    CompressionOutcome::Summarized(tokens),
                )
            }
            Err(why) => (
                cut_into(o.queue, pool, meter, o.room, overhead),
                CompressionOutcome::Cut(why),
            ),
        };
        out.used.push(used);
        out.records.push(SectionCompression {
            section: o.section,
            target_tokens: clamp(body_target),
            outcome,
        });
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
                // The whole text is kept: the room other sections leave
                // may take it whole yet (see `crate::budget`).
                item.uncut = Some(std::mem::replace(&mut item.text, cut.text));
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

/// The summary of `members` with `text` (not yet decided or counted): it
/// cites them all by id, takes the lowest trust among them, and is framed
/// as they are.
fn summary_item(
    section: Section,
    text: String,
    members: &[usize],
    pool: &[Item],
    controls: &crate::fence::Controls,
) -> Item {
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
    let (text, altered) = crate::item::body(text, trust, controls);
    let mut item = Item::made(
        format!("summary:{name}"),
        section,
        Role::System,
        text,
        Origin::Summary,
        "summary",
        ids.join(","),
        trust,
    );
    item.altered = altered;
    // Its members are host texts, each framed with the pack's nonce.
    item.framed = members.iter().find_map(|&i| pool[i].framed);
    item
}

/// The summary of `members` with the summariser's `text`, counted and, if
/// the summariser overshot, truncated to `target` tokens with its frame;
/// or why it cannot be used (not even a token of it fits). It takes the
/// lowest trust of what it summarises, and untrusted text stays fenced.
/// It is included.
fn summary(
    section: Section,
    text: &str,
    members: &[usize],
    pool: &[Item],
    meter: &Meter,
    target: u32,
) -> Result<Item, String> {
    let mut item = summary_item(section, text.to_owned(), members, pool, meter.controls());
    item.compressed = true;
    if let Count::Exact(n) = item.measure(meter, target)
        && n <= target
    {
        item.decide(Reason::WithinBudget);
        return Ok(item);
    }
    let cut = item.truncated_text(meter, target);
    if cut.trim().is_empty() {
        let needs = match item.measure(meter, u32::MAX) {
            Count::Exact(n) => n,
            Count::Over(n) => n,
        };
        return Err(format!(
            "the summary needs {needs} tokens with its citation, over the room of {target}, and nothing of it fits"
        ));
    }
    item = item.with_text(cut);
    match item.measure(meter, target).within(target) {
        Some(_) => {
            item.decide(Reason::WithinBudget);
            Ok(item)
        }
        None => Err(format!(
            "the summary does not fit the room of {target} tokens even cut"
        )),
    }
}
