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

use crate::budget::{PRIORITY, Sent};
use crate::item::{Decision, Item};
use crate::pack::{Message, PackEntry};
use crate::snapshot::{Origin, Reason, Shortfall};

use crate::tokenizer::{Count, Meter, Tally};
use crate::types::{
    AssembleRequest, ConversationStart, ConversationTurn, Layer, Layout, PackForm, Role, Section,
    TrustTier,
};

/// What joins two entries in the flat text and in a system message.
pub(crate) const SEPARATOR: &str = "\n\n";

/// The pack's two forms, counted exactly.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rendered {
    /// Tokens of the flat text.
    pub text: u64,
    /// Tokens of the messages, the entry overhead once per message.
    pub messages: u64,
    /// What the pack is charged: the tokens of the form it is sent in;
    /// for either, every included entry's tokens and overhead, plus what
    /// rendering adds in the form that adds more.
    pub used: u64,
    /// The messages that lead the pack and a next turn can repeat: the
    /// first system message (L0's stable part) and the turns after it,
    /// before what changes every turn (see [`crate::CacheBoundary`]).
    pub lead: Lead,
}

/// The messages leading a pack: their tokens as the messages are counted.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Lead {
    /// The first system message's tokens, overhead included, when L0
    /// begins the pack.
    pub stable: Option<u64>,
    /// How many turns follow it before other context, and their tokens,
    /// overhead included.
    pub turns: u32,
    pub turn_tokens: u64,
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
    /// Whether they render cache-first (see [`Layout::CacheFirst`]), and
    /// the request's newest turn if it is a user turn: last then.
    pub cache_first: Option<Option<usize>>,
    /// The first turn of those sent whatever happens: the question being
    /// answered and what follows it (see
    /// [`crate::conversation::mandatory`]), never given up to settle.
    pub mandatory_from: Option<usize>,
}

impl Layers {
    /// The layers in render order.
    pub fn of(l0: Vec<Item>, l2: Vec<Item>, l1_hosted: Vec<Item>, l1: Vec<Item>) -> Self {
        Layers {
            l0,
            l2,
            l1_hosted,
            l1,
            cache_first: None,
            mandatory_from: None,
        }
    }

    /// The layers laid out as `request` asks (see [`Layout::of`]).
    pub fn laid_out(mut self, request: &AssembleRequest) -> Self {
        let turns = &request.conversation;
        let newest = turns.len().checked_sub(1);
        let newest = newest.filter(|&t| turns[t].role == Role::User);
        self.cache_first = (Layout::of(request) == Layout::CacheFirst).then_some(newest);
        self
    }

    /// Where each item is, in render order: L0, L2, the hosts' L1, the
    /// conversation; cache-first, L0 but the current task and the
    /// workflow's status, the conversation but its newest user turn, L2,
    /// the hosts' L1, the current task and the workflow's status, the
    /// newest user turn.
    pub fn order(&self) -> impl Iterator<Item = At> + '_ {
        let cache_first = self.cache_first.is_some();
        let newest = self.cache_first.flatten();
        let moves = move |i: &Item| cache_first && Layout::moves(i.section);
        let last = move |i: &Item| !cache_first || (newest.is_some() && i.turn == newest);
        let all = |layer: usize, n: usize| (0..n).map(move |k| (layer, k));
        let (n0, n1) = (self.l0.len(), self.l1.len());
        all(0, n0)
            .filter(move |&at| !moves(self.at(at)))
            .chain(all(3, n1).filter(move |&at| cache_first && !last(self.at(at))))
            .chain(all(1, self.l2.len()))
            .chain(all(2, self.l1_hosted.len()))
            .chain(all(0, n0).filter(move |&at| moves(self.at(at))))
            .chain(all(3, n1).filter(move |&at| last(self.at(at))))
    }

    /// Whether a host text or stage summary that stays in the pack was
    /// cut (a summary is not a cut).
    pub fn truncated(&self) -> bool {
        self.l2
            .iter()
            .chain(&self.l1_hosted)
            .any(|i| i.compressed && i.included() && i.origin != Origin::Summary)
    }

    /// Whether an included text of `section` is compressed.
    pub fn compressed_in(&self, section: Section) -> bool {
        self.items()
            .any(|i| i.section == section && i.included() && i.compressed)
    }

    /// The items in render order.
    pub(crate) fn items(&self) -> impl Iterator<Item = &Item> {
        self.order().map(|at| self.at(at))
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
fn parts<'i>(
    item: &'i Item,
    meter: &Meter,
    sent: Sent,
) -> Vec<(std::borrow::Cow<'i, str>, Option<u32>)> {
    // Its text's tokens: its count less what it sends beside the text.
    let tokens = item.tokens().saturating_sub(item.attached);
    match item.frame() {
        // A turn charged headless renders with its header all the same.
        None if item.turn.is_some() && sent.headless() => {
            let as_given = item.framed.is_some() || sent.written().1;
            let flat = crate::conversation::flat(&item.text, as_given);
            let known = matches!(flat, std::borrow::Cow::Borrowed(_)).then_some(tokens);
            vec![
                (crate::conversation::header(item.role).into(), None),
                (flat, known),
            ]
        }
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
/// content as a message of its own), and charges the form `sent`.
pub(crate) fn account(layers: &Layers, meter: &Meter, sent: Sent) -> Rendered {
    let overhead = sent.overhead;
    let separator = meter.count(SEPARATOR);
    let mut flat = Tally::new(meter);
    // The messages of L0 and the other context (see [`Block`]); turns are
    // counted from their content.
    let mut system = [Tally::new(meter), Tally::new(meter), Tally::new(meter)];
    let mut opened = [false, false, false];
    let to_user = context_role(layers.items()) == Some(Role::User);
    let (mut entries, mut own, mut turns, mut turn_tokens) = (0u64, 0u64, 0u64, 0u64);
    // An entry that is not a turn joins the first system message until
    // a turn or other context than L0 came before it (see [`messages`]).
    let mut past_l0 = false;
    // Whether the messages so far lead the pack: L0's, then turns.
    let (mut leading, mut lead) = (true, Lead::default());
    for item in layers.items().filter(|i| i.included()) {
        let block = block(item, past_l0, to_user);
        past_l0 |= block != Some(0);
        leading &= block.is_none_or(|b| b == 0);
        if entries > 0 {
            flat.push(SEPARATOR, Some(separator));
        }
        if let Some(b) = block {
            if opened[b] {
                system[b].push(SEPARATOR, Some(separator));
            }
            opened[b] = true;
        }
        for (text, known) in parts(item, meter, sent) {
            let splits = meter.splits(&text, known);
            flat.push_split(&text, splits.as_ref());
            if let Some(b) = block {
                system[b].push_split(&text, splits.as_ref());
            }
        }
        if item.turn.is_some() {
            turns += 1;
            let tokens = match sent.headless() {
                true => u64::from(item.tokens()),
                false => u64::from(
                    meter
                        .count(&crate::conversation::turn_content(item.role, &item.text))
                        .saturating_add(item.attached),
                ),
            };
            turn_tokens += tokens;
            if leading {
                lead.turns += 1;
                lead.turn_tokens += tokens + overhead;
            }
        }
        entries += 1;
        own += u64::from(item.tokens());
    }
    let text = flat.finish();
    let [first, second, third] = system;
    let first = first.finish();
    // The first system message, when there is one, begins the pack: an
    // entry joins it only before any turn or other context.
    if opened[0] {
        lead.stable = Some(first + overhead);
    }
    let contents = first + second.finish() + third.finish() + turn_tokens;
    let messages = opened.iter().filter(|&&o| o).count() as u64 + turns;
    let added = text.max(contents).saturating_sub(own);
    let messages = contents + overhead * messages + sent.reply;
    Rendered {
        text,
        messages,
        lead,
        used: match sent.form {
            Some(PackForm::Text) => text,
            Some(PackForm::Messages) => messages,
            None => own + overhead * entries + added + sent.reply,
        },
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
pub(crate) type At = (usize, usize);

impl Layers {
    pub(crate) fn at(&self, at: At) -> &Item {
        match at.0 {
            0 => &self.l0[at.1],
            1 => &self.l2[at.1],
            2 => &self.l1_hosted[at.1],
            _ => &self.l1[at.1],
        }
    }

    pub(crate) fn at_mut(&mut self, at: At) -> &mut Item {
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
                // The question being answered is never given up.
                let oldest = oldest.filter(|&t| layers.mandatory_from.is_none_or(|m| t < m));
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
    sent: Sent,
    budget: u64,
) -> Rendered {
    check_host_counts(layers, meter);
    let mut rendered = account(layers, meter, sent);
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
        let after = account(layers, meter, sent);
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

/// Offers the room `rendered` leaves under `budget` to what was left
/// out, until nothing more fits, in the order the sections are filled
/// ([`PRIORITY`]): the conversation's older units (the kept run grows
/// back, to a start the request allows: a user turn if it says so, a
/// multiple of the cut step), each host section's texts in rank order (a
/// cut text whole, a dropped one whole), and the stage summaries evicted,
/// newest first. What is offered is counted in with the rest of the pack
/// and stays only if the pack then fits. Room is left where the settling
/// or the conversation's start freed it (turns before the first user
/// turn, a summary given up, joins and headers the fill charged at most).
/// Only reviewed texts are offered: nothing unreviewed is included, and
/// a text the policy never saw keeps the shortfall the fill recorded.
/// Every drop over the budget of a reviewed text then records the room
/// finally left. A section of `uncompressed` (its summariser was not
/// asked: its room was too small for a summary) has the first of its
/// texts that does not fit whole cut into the room left instead.
/// Returns the sections where a cut text went in whole, and those where
/// a text was cut.
pub(crate) fn refill(
    layers: &mut Layers,
    request: &AssembleRequest,
    meter: &Meter,
    sent: Sent,
    (budget, plan, uncompressed): (u64, &crate::config::Plan, &[Section]),
    mut rendered: Rendered,
) -> (Rendered, Vec<Section>, Vec<Section>) {
    let (mut restored, mut cut) = (Vec::new(), Vec::new());
    let steps = crate::conversation::Steps::of(request, plan, budget);
    let offer = Offer {
        meter,
        sent,
        budget,
        separator: u64::from(meter.count(SEPARATOR)),
    };
    for &section in PRIORITY.iter() {
        if rendered.used >= budget {
            break;
        }
        rendered = match section {
            Section::ConversationState => {
                offer.conversation(layers, request, (&steps, plan.cut_step), rendered)
            }
            Section::StageSummaries => offer.stages(layers, plan.cut_step, rendered),
            _ => {
                let may_cut = uncompressed.contains(&section);
                let (after, offered) = offer.hosted(layers, section, rendered, may_cut);
                if offered.whole {
                    restored.push(section);
                }
                if offered.cut {
                    cut.push(section);
                }
                after
            }
        };
    }
    let remaining = budget.saturating_sub(rendered.used);
    for item in layers.items_mut().filter(|i| !i.unreviewed) {
        if let Some(Reason::OverBudget(s)) = item.reason() {
            let needed = s.needed;
            item.decide(Reason::OverBudget(Shortfall { needed, remaining }));
        }
    }
    (rendered, restored, cut)
}

/// The host texts the fill left out before the policy saw them that the
/// room left would hold, in the order [`refill`] offers them (by section
/// in priority order, then by rank): each that fits whole with those
/// before it, and in a section that may be cut into the room, the first
/// that does not. They are to be reviewed and offered again.
pub(crate) fn unseen(
    layers: &mut Layers,
    meter: &Meter,
    sent: Sent,
    (budget, uncompressed): (u64, &[Section]),
    rendered: &Rendered,
) -> Vec<At> {
    let separator = u64::from(meter.count(SEPARATOR));
    let mut room = budget.saturating_sub(rendered.used);
    let mut wanted = Vec::new();
    for &section in PRIORITY.iter() {
        for at in host_texts(layers, section) {
            let i = layers.at(at);
            if !i.unreviewed || !matches!(i.reason(), Some(Reason::OverBudget(_))) {
                continue;
            }
            let charge = sent.charge(section, separator);
            let item = layers.at_mut(at);
            // A join may merge a token away: one more than the room.
            let limit = crate::tokenizer::clamp(room.saturating_sub(charge) + 1);
            let needed = item.measure(meter, limit).at_least() + charge;
            if needed <= room + 1 {
                room = room.saturating_sub(needed);
                wanted.push(at);
            } else if uncompressed.contains(&section) && !layers.compressed_in(section) {
                // Cut into what is left, which it then takes, if a token
                // of its text fits there with its frame.
                let item = layers.at(at);
                let frame = item.frame().map_or(0, |(head, tail)| {
                    u64::from(meter.count(&head)) + u64::from(meter.count(&tail))
                });
                if room > charge + frame {
                    wanted.push(at);
                    return wanted;
                }
            }
        }
    }
    wanted
}

/// Each host text still left out unreviewed over the budget, once the
/// late reviews are done, in the order [`refill`] offers room: one the
/// room `rendered` leaves would still hold (with those before it) is left
/// out as `unreviewed`, the review rounds spent; any other needs more
/// than what is left then.
pub(crate) fn unreviewed_left(
    layers: &mut Layers,
    meter: &Meter,
    sent: Sent,
    budget: u64,
    rendered: &Rendered,
) {
    let mut remaining = budget.saturating_sub(rendered.used);
    let separator = u64::from(meter.count(SEPARATOR));
    for &section in PRIORITY.iter() {
        for at in host_texts(layers, section) {
            let item = layers.at_mut(at);
            let limit = crate::tokenizer::clamp(remaining + 1);
            let charge = sent.charge(section, separator);
            let mut needed = match item.reason().filter(|_| item.unreviewed) {
                Some(Reason::OverBudget(s)) => s.needed,
                // The fill would take it: it takes that room.
                Some(Reason::Unreviewed) => {
                    let needed = item.measure(meter, limit).at_least() + charge;
                    remaining = remaining.saturating_sub(needed);
                    continue;
                }
                _ => continue,
            };
            if needed <= remaining {
                // Counted in the fill only as far as its room then.
                needed = needed.max(item.measure(meter, limit).at_least() + charge);
            }
            item.decide(match needed > remaining {
                true => Reason::OverBudget(Shortfall { needed, remaining }),
                false => {
                    remaining -= needed;
                    Reason::Unreviewed
                }
            });
        }
    }
}

/// The host texts of `section` (and the summaries of them) in `layers`,
/// in rank order.
fn host_texts(layers: &Layers, section: Section) -> Vec<At> {
    (0..layers.l2.len())
        .map(|k| (1, k))
        .chain((0..layers.l1_hosted.len()).map(|k| (2, k)))
        .filter(|&at| {
            let i = layers.at(at);
            i.section == section && i.origin != Origin::Request
        })
        .collect()
}

/// What offering room to a host section did: a cut text went in whole, a
/// text too long for the room was cut into it.
#[derive(Default)]
struct Offered {
    whole: bool,
    cut: bool,
}

/// How [`refill`] offers room: counting with `meter`, charging as `sent`,
/// within `budget`.
struct Offer<'a, 'm> {
    meter: &'a Meter<'m>,
    sent: Sent,
    budget: u64,
    /// Tokens of [`SEPARATOR`].
    separator: u64,
}

/// Whether an item left out for `reason` may come back when room frees.
fn reopens(reason: Option<&Reason>) -> bool {
    matches!(
        reason,
        Some(
            Reason::OverBudget(_)
                | Reason::StepCut(_)
                | Reason::BeforeUserTurn
                | Reason::EvictedOldest
        )
    )
}

impl Offer<'_, '_> {
    /// Includes the items at `ats` together if the pack then fits: each
    /// is counted (no further than the room left, plus a token a join
    /// may merge away) and charged as the fill charges it, the pack is
    /// counted with them, and they stay
    /// only if it is within the budget. On a refusal the items are put
    /// back as they were, those dropped over the budget with the
    /// shortfall, which is returned.
    fn take(
        &self,
        layers: &mut Layers,
        ats: &[At],
        rendered: Rendered,
    ) -> Result<Rendered, Shortfall> {
        self.take_over(layers, ats, rendered, 0)
    }

    /// [`Offer::take`], for items whose texts replace ones of `credit`
    /// tokens already in the pack.
    fn take_over(
        &self,
        layers: &mut Layers,
        ats: &[At],
        rendered: Rendered,
        credit: u64,
    ) -> Result<Rendered, Shortfall> {
        let room = self.budget.saturating_sub(rendered.used);
        let credited = room + credit;
        // Their tokens alone, and as charged in the fill (an upper bound
        // of what a join or a message adds).
        let (mut least, mut charged) = (0u64, 0u64);
        let mut needed = None;
        for (k, &at) in ats.iter().enumerate() {
            let item = layers.at_mut(at);
            if item.hint.take().is_some() {
                // The host's count of its body was not checked, as the
                // settling checks what it keeps: counted here instead.
                item.count = None;
            }
            let limit = crate::tokenizer::clamp(credited.saturating_sub(least) + 1);
            let tokens = item.measure(self.meter, limit).at_least();
            least += tokens;
            charged += tokens + self.sent.charge(item.section, self.separator);
            if least > credited + 1 {
                // The rest need at least what they were counted at.
                let rest: u64 = ats[k + 1..]
                    .iter()
                    .map(|&at| {
                        let i = layers.at(at);
                        i.count.map_or(0, Count::at_least)
                            + self.sent.charge(i.section, self.separator)
                    })
                    .sum();
                needed = Some(charged + rest);
                break;
            }
        }
        let needed = match needed {
            Some(least) => least,
            None => {
                let was: Vec<Decision> = ats
                    .iter()
                    .map(|&at| layers.at(at).decision.clone())
                    .collect();
                for &at in ats {
                    layers.at_mut(at).decide(Reason::WithinBudget);
                }
                let after = account(layers, self.meter, self.sent);
                if after.used <= self.budget {
                    return Ok(after);
                }
                for (&at, was) in ats.iter().zip(was) {
                    layers.at_mut(at).decision = was;
                }
                after.used - rendered.used
            }
        };
        // It did not fit: it needed more than remained.
        let shortfall = Shortfall {
            needed: needed.max(room + 1),
            remaining: room,
        };
        for &at in ats {
            let item = layers.at_mut(at);
            if matches!(item.reason(), Some(Reason::OverBudget(_))) {
                item.decide(Reason::OverBudget(shortfall));
            }
        }
        Err(shortfall)
    }

    /// Renders turn `m` where it was not yet.
    fn render_turn(&self, layers: &mut Layers, turns: &[ConversationTurn], m: usize) {
        if layers.l1[m].count.is_none() {
            let controls = self.meter.controls();
            crate::conversation::render_into(
                turns,
                &mut layers.l1,
                m,
                self.sent.written(),
                controls,
            );
        }
    }

    /// The conversation's kept run grows back by its older units, each
    /// run offered at a unit it may begin with, until one does not fit.
    fn conversation(
        &self,
        layers: &mut Layers,
        request: &AssembleRequest,
        (steps, cut_step): (&crate::conversation::Steps, u32),
        mut rendered: Rendered,
    ) -> Rendered {
        let turns = &request.conversation;
        let n = turns.len();
        // The window's first turn (see `conversation::window`).
        let first = n - n.min(request.keep_last as usize);
        let stepped = if first == 0 { 0 } else { steps.from(first, n) };
        let oldest = layers
            .l1
            .iter()
            .filter(|i| i.included())
            .filter_map(|i| i.turn)
            .min()
            .unwrap_or(n);
        let user_turn =
            request.conversation_start.unwrap_or_default() == ConversationStart::UserTurn;
        let units = crate::conversation::units(turns);
        let mut run: Vec<At> = Vec::new();
        // Whether the run holds a turn that is not a system turn: the
        // kept conversation's first such turn must be the user's.
        let mut spoken = false;
        // Where each unit of the run begins in it.
        let mut units_in_run: Vec<usize> = Vec::new();
        // Whether a unit may come back: within the window's step, each
        // of its turns left out for room.
        let open = |layers: &Layers, unit: &crate::conversation::Unit| {
            unit.start >= stepped && unit.members.iter().all(|&m| reopens(layers.l1[m].reason()))
        };
        // It grows back in steps of the largest size that begins at its
        // oldest kept turn or at an older one the room reaches (see
        // `Budget::steps`); by any turn where none does.
        let size = match steps.by_tokens() {
            false => 0,
            true => {
                let room = self.budget.saturating_sub(rendered.used);
                let (mut size, mut needed) = (steps.size_at(oldest), 0u64);
                for unit in units.iter().rev().filter(|u| u.start < oldest) {
                    if !open(layers, unit) {
                        break;
                    }
                    for &m in &unit.members {
                        self.render_turn(layers, turns, m);
                        let limit = crate::tokenizer::clamp(room.saturating_sub(needed) + 1);
                        needed += layers.l1[m].measure(self.meter, limit).at_least();
                        needed += self.sent.charge(Section::ConversationState, self.separator);
                    }
                    if needed > room {
                        break;
                    }
                    size = size.min(steps.size_at(unit.start));
                }
                size
            }
        };
        for unit in units.iter().rev().filter(|u| u.start < oldest) {
            if !open(layers, unit) {
                break;
            }
            units_in_run.push(run.len());
            for &m in &unit.members {
                self.render_turn(layers, turns, m);
                run.push((3, m));
            }
            let role = turns[unit.start].role;
            let begins = unit.members.first() == Some(&unit.start)
                && (!user_turn || role == Role::User || (role == Role::System && !spoken))
                && steps.starts_at(unit.start, size);
            spoken |= role != Role::System;
            if !begins {
                continue;
            }
            match self.take(layers, &run, rendered) {
                Ok(after) => {
                    rendered = after;
                    run.clear();
                    units_in_run.clear();
                }
                Err(shortfall) => {
                    // An older turn needs this run kept too.
                    let first = unit.start;
                    for item in &mut layers.l1[..first] {
                        if let Some(Reason::OverBudget(s)) = item.reason() {
                            let needed = s.needed.max(shortfall.needed);
                            item.decide(Reason::OverBudget(Shortfall {
                                needed,
                                ..shortfall
                            }));
                        }
                    }
                    return rendered;
                }
            }
        }
        // What is left of the run reached no turn the conversation may
        // begin with: a turn that fits with every newer one left out is
        // dropped for where it stands, the rest with what it needs.
        let room = self.budget.saturating_sub(rendered.used);
        let mut needed = 0u64;
        units_in_run.push(run.len());
        for unit in units_in_run.windows(2) {
            let members = &run[unit[0]..unit[1]];
            for &at in members {
                let item = layers.at_mut(at);
                // Counted as far as it takes to tell whether it fits.
                let limit = crate::tokenizer::clamp(room.saturating_sub(needed) + 1);
                needed += item.measure(self.meter, limit).at_least();
                needed += self.sent.charge(item.section, self.separator);
            }
            let reason = match needed <= room {
                true if user_turn => Reason::BeforeUserTurn,
                true => Reason::StepCut(cut_step),
                false => Reason::OverBudget(Shortfall {
                    needed,
                    remaining: room,
                }),
            };
            for &at in members {
                let item = layers.at_mut(at);
                if matches!(item.reason(), Some(Reason::OverBudget(_))) {
                    item.decide(reason.clone());
                }
            }
        }
        rendered
    }

    /// The stage summaries' kept run grows back by the older ones
    /// evicted, each offered where the run may begin (a multiple of the
    /// cut step), until one does not fit.
    fn stages(&self, layers: &mut Layers, cut_step: u32, mut rendered: Rendered) -> Rendered {
        let stages: Vec<usize> = (0..layers.l2.len())
            .filter(|&k| {
                let i = &layers.l2[k];
                i.section == Section::StageSummaries && i.origin == Origin::Request
            })
            .collect();
        let oldest = stages
            .iter()
            .position(|&k| layers.l2[k].included())
            .unwrap_or(stages.len());
        let step = cut_step.max(1) as usize;
        let mut run: Vec<At> = Vec::new();
        for ordinal in (0..oldest).rev() {
            let k = stages[ordinal];
            if !reopens(layers.l2[k].reason()) {
                break;
            }
            run.push((1, k));
            if !ordinal.is_multiple_of(step) {
                continue;
            }
            match self.take(layers, &run, rendered) {
                Ok(after) => {
                    rendered = after;
                    run.clear();
                }
                Err(_) => break,
            }
        }
        rendered
    }

    /// The host texts of `section`, in rank order: a cut one whole, a
    /// dropped one whole (or, if it was cut before it was dropped, cut).
    /// Says whether a cut text went in whole.
    fn hosted(
        &self,
        layers: &mut Layers,
        section: Section,
        mut rendered: Rendered,
        mut may_cut: bool,
    ) -> (Rendered, Offered) {
        let mut offered = Offered::default();
        for at in host_texts(layers, section) {
            if rendered.used >= self.budget {
                break;
            }
            let item = layers.at(at);
            let summary = item.origin == Origin::Summary;
            if item.unreviewed {
                continue;
            } else if item.included() && item.uncut.is_some() && !summary {
                rendered = self.whole(layers, at, rendered);
                offered.whole |= layers.at(at).uncut.is_none();
            } else if matches!(item.reason(), Some(Reason::OverBudget(_))) {
                if item.uncut.is_some() {
                    rendered = self.whole(layers, at, rendered);
                    if layers.at(at).uncut.is_none() {
                        continue;
                    }
                }
                match self.take(layers, &[at], rendered) {
                    Ok(after) => rendered = after,
                    Err(_) if may_cut && !summary => {
                        if let Some(after) = self.cut(layers, at, rendered) {
                            (rendered, offered.cut, may_cut) = (after, true, false);
                        }
                    }
                    Err(_) => {}
                }
            }
        }
        (rendered, offered)
    }

    /// A text at `at` too long for the room left, cut at a token boundary
    /// to fit it, if anything of it is left (a host text's frame stays
    /// whole); its whole text is kept beside it.
    fn cut(&self, layers: &mut Layers, at: At, rendered: Rendered) -> Option<Rendered> {
        let room = self.budget.saturating_sub(rendered.used);
        let item = layers.at_mut(at);
        let target = room.checked_sub(self.sent.charge(item.section, self.separator))?;
        let text = item.truncated_text(self.meter, crate::tokenizer::clamp(target));
        if text.is_empty() || text.len() >= item.text.len() {
            return None;
        }
        let was = (item.decision.clone(), item.count, item.hint);
        item.uncut = Some(std::mem::replace(&mut item.text, text));
        (item.count, item.hint, item.compressed) = (None, None, true);
        if let Ok(after) = self.take(layers, &[at], rendered) {
            return Some(after);
        }
        let item = layers.at_mut(at);
        item.text = item.uncut.take().unwrap_or_default();
        (item.decision, item.count, item.hint) = was;
        item.compressed = false;
        None
    }

    /// A cut text at `at` with its whole text instead, if the pack then
    /// fits (it is offered whole, as an item left out is).
    fn whole(&self, layers: &mut Layers, at: At, rendered: Rendered) -> Rendered {
        let item = layers.at_mut(at);
        let Some(whole) = item.uncut.take() else {
            return rendered;
        };
        let cut = std::mem::replace(&mut item.text, whole);
        let (count, compressed) = (item.count.take(), item.compressed);
        item.compressed = false;
        let was = item.decision.clone();
        let credit = match item.included() {
            true => count.map_or(0, Count::at_least),
            false => 0,
        };
        if let Ok(after) = self.take_over(layers, &[at], rendered, credit) {
            return after;
        }
        let item = layers.at_mut(at);
        item.uncut = Some(std::mem::replace(&mut item.text, cut));
        (item.count, item.compressed) = (count, compressed);
        if !matches!(item.decision, Decision::Made(Reason::OverBudget(_))) {
            item.decision = was;
        }
        rendered
    }
}

/// The included items of `layers` as the pack's entries, in render order,
/// each with the conversation turn it is, if it is one. Their texts are
/// taken out of the items.
pub(crate) fn entries(layers: &mut Layers, sent: Sent) -> (Vec<PackEntry>, Vec<Option<usize>>) {
    let mut entries = Vec::new();
    let mut turns = Vec::new();
    // The other context carries the role of the message it is sent in.
    let context = context_role(layers.items()).unwrap_or(Role::System);
    let order: Vec<At> = layers.order().collect();
    for at in order {
        let item = layers.at_mut(at);
        if !item.included() {
            continue;
        }
        item.name();
        let Some(provenance) = item.provenance.clone() else {
            continue;
        };
        if item.turn.is_some() && sent.headless() {
            // The flat text heads it and quotes its lines all the same.
            let as_given = item.framed.is_some() || sent.written().1;
            let flat = crate::conversation::flat(&item.text, as_given);
            item.text = [crate::conversation::header(item.role).as_str(), &flat].concat();
        }
        turns.push(item.turn);
        let role = match (item.turn, item.section.layer()) {
            (None, Layer::L0) | (Some(_), _) => item.role,
            (None, _) => context,
        };
        entries.push(PackEntry {
            id: item.id.clone(),
            layer: item.section.layer(),
            section: item.section,
            role,
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

/// The pack as chat messages, in render order (`turns` says which entry
/// is which turn): each kept turn a message of its own; the other entries
/// joined into messages by [`Block`] — L0 a system message, the other
/// context one of the role [`context_role`] says, a cache-first layout's
/// current task and workflow status with it once a turn or other context
/// came before them, or a system message of their own where the context
/// is the user's —, as [`account`] counts them; and for each message, the
/// turn it is.
pub(crate) fn messages(
    request: &AssembleRequest,
    entries: &[PackEntry],
    turns: &[Option<usize>],
) -> (Vec<Message>, Vec<Option<usize>>) {
    let mut out: Vec<Message> = Vec::new();
    let mut which: Vec<Option<usize>> = Vec::new();
    // The block of the message last written, while it is the last
    // message; and whether entries now go past the first.
    let (mut open, mut past_l0) = (None, false);
    let context = context_role(
        entries
            .iter()
            .zip(turns)
            .filter(|(_, t)| t.is_none())
            .map(|(e, _)| (e.layer, e.trust)),
    );
    for (e, turn) in entries.iter().zip(turns) {
        if let Some(t) = turn.and_then(|t| request.conversation.get(t)) {
            out.push(Message {
                role: t.role,
                content: crate::conversation::turn_content(t.role, &e.text).into_owned(),
                tool_call_id: t.tool_call_id.clone(),
                // Charged only where the pack may be sent as messages.
                attached_tokens: t
                    .attached_tokens
                    .filter(|_| request.form != Some(crate::types::PackForm::Text)),
            });
            which.push(*turn);
            (open, past_l0) = (None, true);
            continue;
        }
        let block = Block::of(e.layer, past_l0, context == Some(Role::User));
        past_l0 |= block != Block::L0;
        match out.last_mut() {
            Some(m) if open == Some(block) => {
                m.content.push_str(SEPARATOR);
                m.content.push_str(&e.text);
            }
            _ => {
                out.push(Message {
                    role: match block {
                        Block::Context => context.unwrap_or(Role::System),
                        _ => Role::System,
                    },
                    content: e.text.clone(),
                    tool_call_id: None,
                    attached_tokens: None,
                });
                which.push(None);
                open = Some(block);
            }
        }
    }
    (out, which)
}

/// Which message an entry that is not a turn joins (see [`messages`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Block {
    /// L0 before any turn or other context: the first system message.
    L0,
    /// The other context, with L0 after it where that is a system message.
    Context,
    /// L0 after other context that is the user's: a system message of its
    /// own.
    LateL0,
}

impl Block {
    /// The block of an entry of `layer`, `past_l0` if a turn or other
    /// context came before it, where the context is the user's if
    /// `to_user`.
    pub(crate) fn of(layer: Layer, past_l0: bool, to_user: bool) -> Block {
        match layer {
            Layer::L0 if !past_l0 => Block::L0,
            Layer::L0 if to_user => Block::LateL0,
            _ => Block::Context,
        }
    }
}

/// The block an included item joins, as an index of [`account`]'s
/// messages; none for a turn.
fn block(item: &Item, past_l0: bool, to_user: bool) -> Option<usize> {
    item.turn
        .is_none()
        .then(|| Block::of(item.section.layer(), past_l0, to_user) as usize)
}

/// The role of the message the other context (what is neither L0 nor a
/// turn: retrieved text, memory, summaries, stage summaries) is sent in,
/// given the layer and trust of every entry that is not a turn: the
/// user's where any of it is of unverified or untrusted origin — text an
/// attacker may have written never carries system authority —, else the
/// system's; none where there is none.
pub(crate) fn context_role<I: Trusted>(entries: impl IntoIterator<Item = I>) -> Option<Role> {
    let mut role = None;
    for e in entries {
        let (layer, trust) = e.layer_and_trust();
        if layer == Layer::L0 {
            continue;
        }
        if matches!(trust, TrustTier::Unverified | TrustTier::Untrusted) {
            return Some(Role::User);
        }
        role = Some(Role::System);
    }
    role
}

/// What [`context_role`] reads of an entry.
pub(crate) trait Trusted {
    fn layer_and_trust(&self) -> (Layer, TrustTier);
}

impl Trusted for (Layer, TrustTier) {
    fn layer_and_trust(&self) -> (Layer, TrustTier) {
        *self
    }
}

impl Trusted for &Item {
    fn layer_and_trust(&self) -> (Layer, TrustTier) {
        match (self.included(), self.turn) {
            // Neither counts: an L0 entry is passed over.
            (true, None) => (self.section.layer(), self.trust),
            _ => (Layer::L0, TrustTier::System),
        }
    }
}
