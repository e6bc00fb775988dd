//! What a user sends, counted whole: the pack's flat text and its
//! messages, and the drops that keep both within the budget.
//!
//! Entries are charged their own tokens and the entry overhead while the
//! budget is shared (see [`crate::budget`]), plus an allowance per entry
//! for the blank line that joins it to the one before. What the rendering
//! really adds is known only once the entries are in their render order:
//! the separators, and pieces of the encodings' patterns that merge or
//! split across a join (a text ending in `!` takes the newlines after it;
//! a citation's head meets its body). [`settle`] counts both forms exactly
//! — the flat text joined by blank lines, and each message — and while the
//! pack is over, drops the entry the budget would give up first and
//! counts again.
//!
//! Counting is exact without encoding the whole text again: each entry's
//! count is known, and the encodings split for certain at a space between
//! two non-whitespace characters, so only the text around each join (from
//! the last such split of one part to the first of the next) is counted
//! (see [`crate::tokenizer::Tally`]).

use crate::budget::PRIORITY;
use crate::item::Item;
use crate::pack::{Message, PackEntry};
use crate::snapshot::{Origin, Reason, Shortfall};

use crate::tokenizer::{Count, Meter, Tally};
use crate::types::{AssembleRequest, Layer, Role, Section};

/// What joins two entries in the flat text and in a system message.
pub(crate) const SEPARATOR: &str = "\n\n";

/// The pack's two forms, counted exactly.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rendered {
    /// Tokens of the flat text.
    pub text: u64,
    /// Tokens of the messages, the entry overhead once per message.
    pub messages: u64,
    /// What the pack is charged: every included entry's tokens and
    /// overhead, plus what rendering adds in the form that adds more.
    pub used: u64,
}

/// The items of a pack in render order, by layer: L0, L2 (each summary
/// where the first candidate it summarises stood), the hosts' L1, the
/// conversation.
#[derive(Default)]
pub(crate) struct Layers {
    pub l0: Vec<Item>,
    pub l2: Vec<Item>,
    pub l1_hosted: Vec<Item>,
    pub l1: Vec<Item>,
}

impl Layers {
    /// The layers in render order.
    pub fn of(l0: Vec<Item>, l2: Vec<Item>, l1_hosted: Vec<Item>, l1: Vec<Item>) -> Self {
        Layers {
            l0,
            l2,
            l1_hosted,
            l1,
        }
    }

    /// Whether a host text or stage summary that stays in the pack was
    /// cut (a summary is not a cut).
    pub fn truncated(&self) -> bool {
        self.l2
            .iter()
            .chain(&self.l1_hosted)
            .any(|i| i.compressed && i.included() && i.origin != Origin::Summary)
    }

    fn items(&self) -> impl Iterator<Item = &Item> {
        self.l0
            .iter()
            .chain(self.l2.iter())
            .chain(self.l1_hosted.iter())
            .chain(self.l1.iter())
    }

    fn items_mut(&mut self) -> impl Iterator<Item = &mut Item> {
        self.l0
            .iter_mut()
            .chain(self.l2.iter_mut())
            .chain(self.l1_hosted.iter_mut())
            .chain(self.l1.iter_mut())
    }
}

/// The parts an included item renders as, each with its exact count: a
/// host text's citation or fence and its body, counted apart as the
/// budget charged them; any other text whole.
fn parts<'i>(item: &'i Item, meter: &Meter) -> Vec<(std::borrow::Cow<'i, str>, Option<u32>)> {
    let tokens = item.tokens();
    match item.frame() {
        None => vec![(item.text.as_str().into(), Some(tokens))],
        Some((head, tail)) => {
            let (h, t) = (meter.count(&head), meter.count(&tail));
            let body = tokens.saturating_sub(h).saturating_sub(t);
            vec![
                (head.into(), Some(h)),
                (item.text.as_str().into(), Some(body)),
                (tail.into(), Some(t)),
            ]
        }
    }
}

/// Counts the included items of `layers` as they render: the flat text
/// (entries joined by [`SEPARATOR`]) and the messages (L0 joined as the
/// first system message, the other context as a second, each kept turn's
/// content as a message of its own).
pub(crate) fn account(layers: &Layers, meter: &Meter, overhead: u64) -> Rendered {
    let separator = meter.count(SEPARATOR);
    let mut flat = Tally::new(meter);
    // The two system messages; turns are counted from their content.
    let mut system = [Tally::new(meter), Tally::new(meter)];
    let mut opened = [false, false];
    let (mut entries, mut own, mut turns, mut turn_tokens) = (0u64, 0u64, 0u64, 0u64);
    for item in layers.items().filter(|i| i.included()) {
        let block = match (item.section.layer(), item.turn) {
            (Layer::L0, _) => Some(0),
            (_, Some(_)) => None,
            _ => Some(1),
        };
        if entries > 0 {
            flat.push(SEPARATOR, Some(separator));
        }
        if let Some(b) = block {
            if opened[b] {
                system[b].push(SEPARATOR, Some(separator));
            }
            opened[b] = true;
        }
        for (text, known) in parts(item, meter) {
            let splits = meter.splits(&text, known);
            flat.push_split(&text, splits.as_ref());
            if let Some(b) = block {
                system[b].push_split(&text, splits.as_ref());
            }
        }
        if item.turn.is_some() {
            turns += 1;
            let content = crate::conversation::turn_content(item.role, &item.text);
            turn_tokens += u64::from(meter.count(content));
        }
        entries += 1;
        own += u64::from(item.tokens());
    }
    let text = flat.finish();
    let [first, second] = system;
    let contents = first.finish() + second.finish() + turn_tokens;
    let messages = opened.iter().filter(|&&o| o).count() as u64 + turns;
    let added = text.max(contents).saturating_sub(own);
    Rendered {
        text,
        messages: contents + overhead * messages,
        used: own + overhead * entries + added,
    }
}

/// Makes an included host count stand only if it is right: each included
/// body whose count the host supplied is counted, and its count replaced
/// if the host's was wrong (the budget is then settled on the true one).
fn check_host_counts(layers: &mut Layers, meter: &Meter) {
    for item in layers.items_mut() {
        if !item.included() {
            continue;
        }
        let Some(hint) = item.hint.take() else {
            continue;
        };
        let body = meter.count(&item.text);
        if body != hint
            && let Some((head, tail)) = item.frame()
        {
            let frame = meter.count(&head).saturating_add(meter.count(&tail));
            item.count = Some(Count::Exact(body.saturating_add(frame)));
        }
    }
}

/// Which of `layers` an item is in, and where.
type At = (usize, usize);

impl Layers {
    fn at(&self, at: At) -> &Item {
        match at.0 {
            0 => &self.l0[at.1],
            1 => &self.l2[at.1],
            2 => &self.l1_hosted[at.1],
            _ => &self.l1[at.1],
        }
    }

    fn at_mut(&mut self, at: At) -> &mut Item {
        match at.0 {
            0 => &mut self.l0[at.1],
            1 => &mut self.l2[at.1],
            2 => &mut self.l1_hosted[at.1],
            _ => &mut self.l1[at.1],
        }
    }
}

/// The entries the budget gives up first, together: the stage summaries'
/// oldest kept; then the host sections in reverse priority order, each its
/// lowest-ranked kept candidate (a summary last, as it stands for the
/// rest); last the conversation's oldest kept unit (a tool call with its
/// results). Never L0.
fn victims(layers: &Layers, request: &AssembleRequest) -> Vec<At> {
    let kept = |items: &[Item], layer: usize| -> Vec<At> {
        items
            .iter()
            .enumerate()
            .filter(|(_, i)| i.included())
            .map(|(k, _)| (layer, k))
            .collect()
    };
    let hosted: Vec<At> = kept(&layers.l2, 1)
        .into_iter()
        .chain(kept(&layers.l1_hosted, 2))
        .collect();
    for &section in PRIORITY.iter().rev() {
        match section {
            Section::ConversationState => {
                let oldest = layers
                    .l1
                    .iter()
                    .filter(|i| i.included())
                    .filter_map(|i| i.turn)
                    .min();
                if let Some(oldest) = oldest {
                    let units = crate::conversation::units(&request.conversation);
                    if let Some(unit) = units.iter().find(|u| u.members.contains(&oldest)) {
                        return unit
                            .members
                            .iter()
                            .filter(|&&m| layers.l1[m].included())
                            .map(|&m| (3, m))
                            .collect();
                    }
                }
            }
            Section::StageSummaries => {
                let oldest = hosted.iter().find(|&&at| {
                    let i = layers.at(at);
                    i.section == section && i.origin == Origin::Request
                });
                if let Some(&at) = oldest {
                    return vec![at];
                }
            }
            _ => {
                let of_section: Vec<At> = hosted
                    .iter()
                    .copied()
                    .filter(|&at| layers.at(at).section == section)
                    .collect();
                let is_summary = |at: At| layers.at(at).origin == Origin::Summary;
                let pick = of_section
                    .iter()
                    .rev()
                    .find(|&&at| !is_summary(at))
                    .or_else(|| of_section.last());
                if let Some(&at) = pick {
                    return vec![at];
                }
            }
        }
    }
    Vec::new()
}

/// Counts what the pack renders to and, while it is over `budget`, drops
/// what the budget gives up first (see [`victims`]), recording what it
/// needed and what remained without it. L0 alone was checked to fit, so
/// this ends with a pack within the budget.
pub(crate) fn settle(
    layers: &mut Layers,
    request: &AssembleRequest,
    meter: &Meter,
    overhead: u64,
    budget: u64,
) -> Rendered {
    check_host_counts(layers, meter);
    let mut rendered = account(layers, meter, overhead);
    while rendered.used > budget {
        let dropped = victims(layers, request);
        if dropped.is_empty() {
            break;
        }
        let ids: Vec<String> = dropped
            .iter()
            .map(|&at| {
                let item = layers.at_mut(at);
                item.decide(Reason::OverBudget(Shortfall {
                    needed: 0,
                    remaining: 0,
                }));
                item.name();
                item.id.clone()
            })
            .collect();
        let after = account(layers, meter, overhead);
        // It was over with them and is not without them by as much: they
        // needed more than remained.
        let shortfall = Shortfall {
            needed: rendered.used.saturating_sub(after.used).max(1),
            remaining: budget.saturating_sub(after.used),
        };
        for &at in &dropped {
            let item = layers.at_mut(at);
            item.decide(match (item.section, item.origin) {
                (Section::StageSummaries, Origin::Request) => Reason::EvictedOldest,
                _ => Reason::OverBudget(shortfall),
            });
        }
        // A summary that goes takes what it summarised with it.
        for item in layers.items_mut() {
            if matches!(item.reason(), Some(Reason::Summarized(id)) if ids.contains(id)) {
                item.decide(Reason::OverBudget(shortfall));
                item.compressed = false;
            }
        }
        rendered = after;
    }
    rendered
}

/// The included items of `layers` as the pack's entries, in render order,
/// each with the conversation turn it is, if it is one. Their texts are
/// taken out of the items.
pub(crate) fn entries(layers: &mut Layers) -> (Vec<PackEntry>, Vec<Option<usize>>) {
    let mut entries = Vec::new();
    let mut turns = Vec::new();
    for item in layers.items_mut().filter(|i| i.included()) {
        item.name();
        let Some(provenance) = item.provenance.clone() else {
            continue;
        };
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
    (entries, turns)
}

/// The pack's flat text: its entries joined by [`SEPARATOR`].
pub(crate) fn text(entries: &[PackEntry]) -> String {
    entries
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join(SEPARATOR)
}

/// The pack as chat messages: L0, the other context, the conversation
/// (`turns` says which entry is which turn).
pub(crate) fn messages(
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
            content: parts.join(SEPARATOR),
            tool_call_id: None,
        })
    };
    let mut out: Vec<Message> = Vec::new();
    out.extend(system(&|e, _| e.layer == Layer::L0));
    out.extend(system(&|e, t| e.layer != Layer::L0 && t.is_none()));
    for (e, turn) in entries.iter().zip(turns) {
        if let Some(t) = turn.and_then(|t| request.conversation.get(t)) {
            out.push(Message {
                role: t.role,
                content: crate::conversation::turn_content(t.role, &e.text).to_owned(),
                tool_call_id: t.tool_call_id.clone(),
            });
        }
    }
    out
}
