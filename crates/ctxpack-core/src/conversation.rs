//! The conversation (L1): its window and its units.
//!
//! The conversation keeps the newest of the last `keep-last` turns that
//! fit, as one contiguous run ending at the newest turn. A tool call and
//! its results are kept or dropped as one unit; a tool result whose call is
//! not in the conversation is never kept. The window's first turn moves in
//! steps (see [`Steps`]), so the rendered text stays byte-stable across the
//! turns of a growing conversation.

use crate::fence::{self, Altered, Controls};
use crate::item::{Group, Item};
use crate::snapshot::Reason;

use crate::config::Plan;
use crate::tokenizer::Meter;
use crate::types::{AssembleRequest, ConversationStart, ConversationTurn, Layout, Role};
use std::collections::HashMap;

/// Bytes a token is taken to be where the conversation gives way in steps
/// of tokens: its turns are measured, not counted, so that a turn's step
/// is known without counting the turns before it.
const BYTES_PER_TOKEN: f64 = 4.0;

/// How many sizes of step of tokens the conversation may give way in:
/// the plan's share of the budget, then its half and its quarter, for a
/// conversation whose room a larger step would not fit.
pub(crate) const STEP_SIZES: u8 = 3;

/// Where the conversation's window may begin: on a multiple of the plan's
/// cut step, and, in a cache-first layout, on the first turn the kept
/// conversation may begin with (a unit's first; the user's, where it must
/// begin with the user) after the turns before it filled a whole number
/// of steps of the plan's cut share of the budget — or of its half or its
/// quarter, where no step of the larger size fits. A turn's steps depend on the turns before it alone,
/// so they stay as the conversation grows, and the window's start with
/// them.
pub(crate) struct Steps {
    every: usize,
    /// Per turn, the largest size of step that begins at it (0 the plan's
    /// share, 1 its half, 2 its quarter, [`STEP_SIZES`] none); empty: the
    /// conversation does not give way in steps of tokens.
    sizes: Vec<u8>,
}

impl Steps {
    pub(crate) fn of(request: &AssembleRequest, plan: &Plan, budget: u64) -> Steps {
        let every = plan.cut_step.max(1) as usize;
        let size = (plan.cut_share * budget as f64 * BYTES_PER_TOKEN) as u64;
        if Layout::of(request) != Layout::CacheFirst || size >> (STEP_SIZES - 1) == 0 {
            return Steps {
                every,
                sizes: Vec::new(),
            };
        }
        // A step begins at the first turn, at or after each multiple of
        // the step's bytes, that the kept conversation may begin with: a
        // unit's first turn, and the user's where it must begin with the
        // user. A step that began on a turn left out for where it stands
        // would be charged for a turn never sent, and give way a turn
        // early.
        let turns = &request.conversation;
        let any = request.conversation_start.unwrap_or_default() == ConversationStart::AnyTurn;
        let mut may_begin = vec![false; turns.len()];
        for unit in units(turns) {
            may_begin[unit.start] = any || turns[unit.start].role == Role::User;
        }
        let (mut before, mut last) = (0u64, None);
        // The largest size of step reached since the last turn that began
        // one.
        let mut pending = STEP_SIZES;
        let sizes = turns
            .iter()
            .zip(may_begin)
            .map(|(t, may_begin)| {
                let now: [u64; STEP_SIZES as usize] = std::array::from_fn(|k| before / (size >> k));
                before += t.content.len() as u64;
                let was = last.replace(now);
                let reached = (0..STEP_SIZES)
                    .find(|&k| was.is_none_or(|w| w[usize::from(k)] != now[usize::from(k)]))
                    .unwrap_or(STEP_SIZES);
                pending = pending.min(reached);
                match may_begin {
                    true => std::mem::replace(&mut pending, STEP_SIZES),
                    false => STEP_SIZES,
                }
            })
            .collect();
        Steps { every, sizes }
    }

    /// Whether the window may begin at `turn`, in steps of any size.
    pub(crate) fn starts(&self, turn: usize) -> bool {
        self.starts_at(turn, STEP_SIZES - 1)
    }

    /// Whether the window may begin at `turn` in steps of `size` or
    /// larger (see [`Steps::sizes`]).
    pub(crate) fn starts_at(&self, turn: usize, size: u8) -> bool {
        turn.is_multiple_of(self.every) && self.sizes.get(turn).is_none_or(|&s| s <= size)
    }

    /// The largest size of step that begins at `turn` (every size, 0, for
    /// a conversation that does not give way in steps of tokens); past the
    /// conversation, none.
    pub(crate) fn size_at(&self, turn: usize) -> u8 {
        match self.by_tokens() {
            true => self.sizes.get(turn).copied().unwrap_or(STEP_SIZES),
            false => 0,
        }
    }

    /// Whether the window begins only at some turns.
    pub(crate) fn stepped(&self) -> bool {
        self.every > 1 || self.by_tokens()
    }

    /// Whether the conversation gives way in steps of tokens: where no
    /// turn it may begin at fits, it begins at the oldest that does.
    pub(crate) fn by_tokens(&self) -> bool {
        !self.sizes.is_empty()
    }

    /// The first turn from `first` the window may begin at, among `n`
    /// turns. Where none may: in steps of tokens, `first`; in steps of
    /// turns, the next multiple of the step (past the conversation).
    pub(crate) fn from(&self, first: usize, n: usize) -> usize {
        match (first..n).find(|&t| self.starts(t)) {
            Some(t) => t,
            None if self.by_tokens() => first,
            None => first.div_ceil(self.every) * self.every,
        }
    }
}

/// Decides the turns outside the window — from `start`, where a compacted
/// conversation's summary stands (the turns before it are decided), older
/// than `keep-last`
/// (`keep-last`), before the window's step (`step-cut`), a turn of a unit
/// that starts before it (`tool-pair`), a result without its call
/// (`orphan-tool-result`) — and returns the window's units, newest first.
/// Its turns stay pending, for the budget to decide.
pub(crate) fn window(
    request: &AssembleRequest,
    l1: &mut [Item],
    (steps, cut_step, start): (&Steps, u32, usize),
) -> Vec<Group> {
    let n = request.conversation.len();
    let first = (n - n.min(request.keep_last as usize)).max(start);
    let all = units(&request.conversation);
    // A step never moves the window's start past the question being
    // answered (see [`mandatory`]), nor past the newest unit.
    let turns = &request.conversation;
    let question = all
        .iter()
        .rev()
        .take_while(|u| u.start >= first)
        .find(|u| turns[u.start].role == Role::User)
        .map(|u| u.start);
    let newest = all.last().map(|u| u.start).filter(|&s| s >= first);
    let any_turn = request.conversation_start == Some(ConversationStart::AnyTurn);
    let latest = question.or(newest.filter(|_| any_turn)).unwrap_or(n);
    let stepped = if first == start {
        start
    } else {
        steps.from(first, n).min(latest)
    };
    let mut claimed = vec![false; l1.len()];
    let mut in_window: Vec<Group> = Vec::new();
    for unit in all {
        let head = unit.members.first().copied();
        for &m in &unit.members {
            claimed[m] = true;
            let reason = if m < start {
                // Summarised already (see `layer::summarised`).
                continue;
            } else if m < first {
                Reason::KeepLast(request.keep_last)
            } else if m < stepped {
                Reason::StepCut(cut_step)
            } else if unit.start < stepped {
                Reason::ToolPair(head.map(crate::item::turn_id).unwrap_or_default())
            } else {
                continue;
            };
            l1[m].decide(reason);
        }
        if unit.start >= stepped && !unit.members.is_empty() {
            in_window.push(unit.members);
        }
    }
    // Turns that no unit claims are tool results without their call.
    for (item, claimed) in l1.iter_mut().zip(claimed).skip(start) {
        if !claimed {
            item.decide(Reason::OrphanToolResult);
        }
    }
    in_window.reverse();
    in_window
}

/// How many of the window's units, newest first, are sent whatever
/// happens: up to the newest that begins with a user turn — the question
/// being answered, and the calls made for it since. Where no unit of the
/// window begins with a user turn, the newest unit, if the conversation
/// may begin with any turn; none otherwise (a conversation that must
/// begin with the user has nothing to send). Its cost with L0's is what
/// must fit (see `Builder::run`).
pub(crate) fn mandatory(request: &AssembleRequest, window: &[Group]) -> usize {
    let turns = &request.conversation;
    let by_user = |g: &Group| {
        g.iter()
            .min()
            .is_some_and(|&s| turns.get(s).is_some_and(|t| t.role == Role::User))
    };
    match window.iter().position(by_user) {
        Some(k) => k + 1,
        None if request.conversation_start == Some(ConversationStart::AnyTurn) => {
            usize::from(!window.is_empty())
        }
        None => 0,
    }
}

/// Leaves out the kept turns before the first kept unit that begins with a
/// user turn (`before-user-turn`), or every kept turn when none does: a
/// request's `conversation-start` of `user-turn`. A system turn stays
/// (it is an instruction, not a reply; Anthropic's API takes it apart).
/// A unit is never split: a user turn inside a tool call's unit does not
/// begin one. Returns whether a turn was left out.
pub(crate) fn start_on_user(turns: &[ConversationTurn], l1: &mut [Item]) -> bool {
    let starts: std::collections::HashSet<usize> = units(turns).iter().map(|u| u.start).collect();
    let first_user = l1
        .iter()
        .filter(|i| i.included())
        .filter_map(|i| i.turn)
        .filter(|&t| starts.contains(&t) && turns.get(t).is_some_and(|t| t.role == Role::User))
        .min();
    let mut left_out = false;
    for item in l1.iter_mut().filter(|i| i.included()) {
        let before = item.turn.is_some_and(|t| {
            first_user.is_none_or(|first| t < first)
                && turns.get(t).is_some_and(|t| t.role != Role::System)
        });
        if before {
            item.decide(Reason::BeforeUserTurn);
            left_out = true;
        }
    }
    left_out
}

/// A run of turns that is kept or dropped whole.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    /// Index of its first turn.
    pub start: usize,
    /// Its turns, orphaned tool results left out.
    pub members: Group,
}

/// Splits a conversation into units: a tool call together with every turn up
/// to its last result is one unit (overlapping calls merge); any other turn
/// is a unit of its own. Tool results whose call is not earlier in the
/// conversation belong to no unit.
pub(crate) fn units(turns: &[ConversationTurn]) -> Vec<Unit> {
    let mut call_at: HashMap<&str, usize> = HashMap::new();
    let mut span_end: Vec<usize> = (0..turns.len()).collect();
    let mut orphan = vec![false; turns.len()];
    for (i, t) in turns.iter().enumerate() {
        match (t.role, t.tool_call_id.as_deref()) {
            (Role::Assistant, Some(id)) => {
                call_at.insert(id, i);
            }
            (Role::Tool, Some(id)) => match call_at.get(id) {
                Some(&a) => span_end[a] = i,
                None => orphan[i] = true,
            },
            (Role::Tool, None) => orphan[i] = true,
            _ => {}
        }
    }
    let mut units = Vec::new();
    let mut i = 0;
    while i < turns.len() {
        let start = i;
        let mut end = span_end[i];
        let mut j = i;
        while j <= end {
            end = end.max(span_end[j]);
            j += 1;
        }
        let members = match orphan[start] {
            false if end == start => Group::One(start),
            _ => Group::from((start..=end).filter(|&k| !orphan[k]).collect::<Vec<_>>()),
        };
        units.push(Unit { start, members });
        i = end + 1;
    }
    units
}

/// A turn as the flat text renders it: `[role] content`, its content
/// written as every host text is (see [`crate::fence::write()`]), so no
/// structure of it can be read, and every line of it but the first quoted
/// (see [`flat`]), so none of its bytes begins a line; and what writing
/// it changed. The messages send the same content unquoted (see
/// [`turn_content`]).
pub(crate) fn render_turn(t: &ConversationTurn, controls: &Controls) -> (String, Altered) {
    let (content, altered) = fence::write(&t.content, controls);
    (headed(t.role, &content, false), altered)
}

/// A turn's `content` (as a message sends it) as the flat text renders
/// it: headed by `[role] `, every line after the first quoted (`as_given`
/// where its lines are not read again, see [`flat`]).
fn headed(role: Role, content: &str, as_given: bool) -> String {
    // Built by hand: one of these per turn reached, and histories are long.
    let role = role.name();
    let content = flat(content, as_given);
    let mut text = String::with_capacity(role.len() + 3 + content.len());
    text.push('[');
    text.push_str(role);
    text.push_str("] ");
    text.push_str(&content);
    text
}

/// A turn's content as the flat text writes it after its header: every
/// line after the first begins with [`fence::QUOTE`], so only the pack's
/// own headers begin lines there. `as_given` where the content is not to
/// be read again for structures a quote would close: a chat's turn (the
/// caller's own message, sent as given), or the fenced summary (its lines
/// quoted already, see [`fenced_summary`]).
pub(crate) fn flat(content: &str, as_given: bool) -> std::borrow::Cow<'_, str> {
    match as_given {
        true => fence::quote_lines(content, false),
        false => fence::quote(content, false),
    }
}

/// What heads a turn in the flat text: `[role] `.
pub(crate) fn header(role: Role) -> String {
    format!("[{}] ", role.name())
}

/// A turn's content as a message sends it, from its rendered `text` (see
/// [`render_turn`]): the header taken off and the lines after the first
/// unquoted.
pub(crate) fn turn_content(role: Role, text: &str) -> std::borrow::Cow<'_, str> {
    fence::unquote(text.get(role.name().len() + 3..).unwrap_or_default(), false)
}

/// What heads the conversation's summary's turn (see [`crate::compact`]).
pub(crate) const SUMMARY_HEAD: &str = "Summary of the earlier conversation:\n";

/// The content the conversation's summary sends where it summarises text
/// of untrusted origin: its head, then the summary fenced with the pack's
/// `nonce`, every line of it quoted (see [`crate::item::body`]).
fn fenced_summary(content: &str, nonce: fence::Nonce, controls: &Controls) -> (String, Altered) {
    let head = SUMMARY_HEAD;
    let summary = content.strip_prefix(head).unwrap_or(content);
    let (body, altered) = crate::item::body(
        summary.to_owned(),
        crate::types::TrustTier::Untrusted,
        controls,
    );
    let (open, close) = (
        fence::open(nonce, "compaction.summary"),
        fence::close(nonce),
    );
    ([head, open.as_str(), &body, &close].concat(), altered)
}

/// Gives turn `m` of `turns` its text as charged: rendered (see
/// [`render_turn`]), or where the form is `sent` headless its content
/// alone, as a message sends it (the header is put back for the flat
/// text, see [`crate::render::entries`]): written as a host text is, or
/// a chat's turn as the caller gave it (its message is sent as given).
/// The conversation's summary of untrusted text (an item framed with the
/// pack's nonce, see [`crate::layer::summarised`]) is fenced.
pub(crate) fn render_into(
    turns: &[ConversationTurn],
    l1: &mut [Item],
    m: usize,
    (headless, verbatim): (bool, bool),
    controls: &Controls,
) {
    let turn = &turns[m];
    let (content, altered) = match (l1[m].framed, headless && verbatim) {
        (Some(nonce), _) => {
            let (c, a) = fenced_summary(&turn.content, nonce, controls);
            (std::borrow::Cow::Owned(c), a)
        }
        (None, true) => (turn.content.as_str().into(), Altered::default()),
        (None, false) => fence::write(&turn.content, controls),
    };
    l1[m].altered = altered;
    let as_given = l1[m].framed.is_some() || (headless && verbatim);
    l1[m].text = match headless {
        true => content.into_owned(),
        false => headed(turn.role, &content, as_given),
    };
}

/// Renders the texts of the turns the budgeting may count: the units of
/// `window` (newest first) up to the first whose cumulative lower bound
/// (without encoding) passes `room`, the most the conversation can get.
/// The conversation keeps a contiguous newest run, so a unit past that one
/// can be neither kept nor counted (the budgeting stops at the first unit
/// that does not fit), and nothing else reads its text until room freed
/// later is offered to it (see [`crate::render::refill`]).
pub(crate) fn render_reachable(
    turns: &[ConversationTurn],
    l1: &mut [Item],
    window: &[Group],
    meter: &Meter,
    room: u64,
    (charge, written): (u64, (bool, bool)),
) {
    let mut floor = 0u64;
    for unit in window {
        for &m in unit {
            floor += u64::from(meter.at_least(&turns[m].content)) + charge;
            render_into(turns, l1, m, written, meter.controls());
        }
        if floor > room {
            break;
        }
    }
}
