//! Compaction, the conversation-state summarisation of multi-turn runs: a
//! long conversation made short where a prompt cache keeps
//! it, before anything else is decided.
//!
//! When the conversation since its summary passes the plan's
//! `compact-share` of the budget (its text taken at 4 bytes a token, as
//! its steps are, see [`crate::conversation::Steps`]), it is made short
//! again, to about half that share:
//!
//! 1. its oldest tool results are cleared — sent as [`PLACEHOLDER`], their
//!    calls as they were, so no call loses its result — where that frees
//!    at least `clear-at-least` tokens at once, the newest
//!    [`KEEP_TOOL_RESULTS`] kept;
//! 2. if it is still past, its oldest turns, whole runs of a tool call and
//!    its results, are summarised with the summary before them by the
//!    host's summariser, in at most `compact-tokens` — never past the
//!    newest user turn, the question being answered —; the new summary
//!    stands, as a system turn, in the place of the last turn it covers,
//!    and the turns before it are dropped as `summarized`.
//!
//! The pack returns the state (see [`Compaction`]), with the hash of the
//! turns it covers (see [`covered_hash`]), and the caller passes it back
//! with the next turn's request: the core keeps nothing between
//! assemblies, and until the next compaction the summary and the cleared
//! results are sent byte for byte as before, so the prefix a provider
//! cached stays. A summariser that fails, answers nothing, or answers a
//! summary over its tokens leaves the summary as it was (the snapshot's
//! source calls say why), and the budget lets the conversation give way
//! as it would without one.

use crate::assembly::Channel;
use crate::capability::Capability;
use crate::config::Plan;
use crate::snapshot::{SourceCall, SourceOutcome};
use crate::tokenizer::Meter;
use crate::types::{
    AssembleRequest, Compaction, ConversationTurn, Role, Section, SummaryRequest, Tokenizer,
};
use std::borrow::Cow;

/// What a cleared tool result is sent as.
pub(crate) const PLACEHOLDER: &str = "[tool result cleared]";

/// How many of the newest tool results are never cleared.
pub(crate) const KEEP_TOOL_RESULTS: usize = 3;

/// The id of the conversation's summary in the pack and the snapshot.
pub(crate) const SUMMARY_ID: &str = "conversation-summary";

/// The hash a compaction keeps of the turns it stands for and clears
/// (see [`Compaction::hash`]): hex SHA-256 of each turn's role, tool-call
/// id, attached tokens (in decimal) and content, each as its UTF-8 byte
/// length in decimal, `:`, and its bytes (an absent field empty) — as a
/// cache prefix hashes its messages.
pub fn covered_hash(turns: &[ConversationTurn]) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for t in turns {
        let (call, attached) = (t.tool_call_id.as_deref(), t.attached_tokens);
        crate::digest::hashed_fields(t.role, call, attached, &t.content, &mut |b| h.update(b));
    }
    format!("{:x}", h.finalize())
}

/// How many of the conversation's first turns a compaction's hash covers.
pub(crate) fn covered(state: &Compaction) -> usize {
    state.turns.max(state.cleared) as usize
}

use crate::conversation::SUMMARY_HEAD;

/// Bytes a token is taken to be, as in the conversation's steps.
const BYTES_PER_TOKEN: u64 = 4;

/// A request with its conversation compacted.
pub(crate) struct Compacted<'r> {
    /// The request as the pipeline sees it: the summary in the place of
    /// the last turn it covers, cleared results as the placeholder.
    pub request: Cow<'r, AssembleRequest>,
    /// The compaction to return; none where the plan does not compact
    /// and the request passed none.
    pub state: Option<Compaction>,
    /// The summariser's call, if it was asked.
    pub call: Option<SourceCall>,
}

impl Compacted<'_> {
    /// The turn the summary stands in, if there is one.
    pub(crate) fn summary_turn(&self) -> Option<usize> {
        let turns = self.state.as_ref().map_or(0, |s| s.turns as usize);
        turns.checked_sub(1)
    }
}

/// Compacts `request`'s conversation as its plan says, asking the
/// summariser through `channel` where turns are to be summarised.
pub(crate) async fn compact<'r>(
    request: &'r AssembleRequest,
    plan: &Plan,
    meter: &Meter<'_>,
    channel: &Channel,
    (budget, tokenizer): (u32, Tokenizer),
) -> Compacted<'r> {
    let given = request.compaction.clone();
    if plan.compact_share <= 0.0 && given.is_none() {
        return Compacted {
            request: Cow::Borrowed(request),
            state: None,
            call: None,
        };
    }
    let mut state = given.unwrap_or_default();
    let mut call = None;
    let turns = &request.conversation;
    let trigger = (plan.compact_share * f64::from(budget)) as u64 * BYTES_PER_TOKEN;
    let keep = trigger / 2;
    if plan.compact_share > 0.0 && size(turns, &state) > trigger {
        if plan.clear_at_least > 0 {
            clear(turns, &mut state, keep, u64::from(plan.clear_at_least));
        }
        if plan.compact_tokens > 0 && size(turns, &state) > trigger {
            let target = u64::from(plan.compact_tokens) * BYTES_PER_TOKEN;
            if let Some(to) = cut(turns, &state, keep.saturating_sub(target)) {
                let ask = SummaryRequest {
                    section: Section::ConversationState,
                    text: summarised(turns, &state, to, meter.controls()),
                    target_tokens: plan.compact_tokens,
                };
                let answer = channel.summaries(vec![ask], tokenizer).await;
                let (outcome, made) = checked(answer, meter, plan.compact_tokens);
                call = Some(SourceCall {
                    capability: Capability::Summarize.name().to_owned(),
                    outcome,
                });
                if let Some(summary) = made {
                    state.summary = summary;
                    state.turns = crate::tokenizer::clamp_len(to);
                    state.cleared = state.cleared.max(state.turns);
                }
            }
        }
    }
    state.hash = covered_hash(&turns[..covered(&state).min(turns.len())]);
    Compacted {
        request: applied(request, &state),
        state: Some(state),
        call,
    }
}

/// The bytes the conversation sends from its summary on: the summary's
/// turn, and the turns after it as they are sent.
fn size(turns: &[ConversationTurn], state: &Compaction) -> u64 {
    let from = state.turns as usize;
    let summary = match from {
        0 => 0,
        _ => SUMMARY_HEAD.len() + state.summary.len(),
    };
    let sent: usize = turns
        .iter()
        .enumerate()
        .skip(from)
        .map(|(t, turn)| sent_len(t, turn, state))
        .sum();
    (summary + sent) as u64
}

/// The bytes turn `t` is sent as.
fn sent_len(t: usize, turn: &ConversationTurn, state: &Compaction) -> usize {
    match cleared(t, turn, state) {
        true => PLACEHOLDER.len(),
        false => turn.content.len(),
    }
}

/// Whether turn `t` is sent as the placeholder.
fn cleared(t: usize, turn: &ConversationTurn, state: &Compaction) -> bool {
    is_cleared(t, turn.role, state)
}

/// Whether turn `t`, of `role`, has its results sent as the placeholder
/// under `state`.
pub(crate) fn is_cleared(t: usize, role: Role, state: &Compaction) -> bool {
    role == Role::Tool && t < state.cleared as usize && t >= state.turns as usize
}

/// Clears the oldest tool results not cleared yet, the newest
/// [`KEEP_TOOL_RESULTS`] kept, until the conversation is within `keep`
/// bytes; does so only where that frees at least `at_least` tokens.
fn clear(turns: &[ConversationTurn], state: &mut Compaction, keep: u64, at_least: u64) {
    let from = state.cleared.max(state.turns) as usize;
    let results: Vec<usize> = (from..turns.len())
        .filter(|&t| turns[t].role == Role::Tool)
        .collect();
    let clearable = results.len().saturating_sub(KEEP_TOOL_RESULTS);
    let mut size = size(turns, state);
    let (mut freed, mut upto) = (0u64, None);
    for &t in &results[..clearable] {
        if size <= keep {
            break;
        }
        let frees = turns[t].content.len().saturating_sub(PLACEHOLDER.len()) as u64;
        if frees == 0 {
            continue;
        }
        freed += frees;
        size -= frees;
        upto = Some(t + 1);
    }
    if let Some(upto) = upto
        && freed / BYTES_PER_TOKEN >= at_least
    {
        state.cleared = crate::tokenizer::clamp_len(upto);
    }
}

/// The turn the summary should cover up to: the first start of a unit
/// (see [`crate::conversation::units`]) after the summary's from which
/// the conversation is within `keep` bytes — a user turn's where one
/// follows —, or the last where none is. Never past the newest user
/// turn: the question being answered, and the calls made for it since,
/// are never summarised. None where no unit begins after the summary's
/// turns and by then.
fn cut(turns: &[ConversationTurn], state: &Compaction, keep: u64) -> Option<usize> {
    let from = state.turns as usize;
    let units = crate::conversation::units(turns);
    // The question is found among every unit, the summary's own turn
    // included: a summary that ended just before it leaves nothing to
    // summarise before it, not the question and its calls.
    let question = units
        .iter()
        .rev()
        .map(|u| u.start)
        .find(|&s| turns[s].role == Role::User);
    let starts: Vec<usize> = units
        .iter()
        .map(|u| u.start)
        .filter(|&s| s > from && question.is_none_or(|q| s <= q))
        .collect();
    let newest = *starts.last()?;
    // The bytes from each turn on, as sent.
    let mut after = vec![0u64; turns.len() + 1];
    for t in (from..turns.len()).rev() {
        after[t] = after[t + 1] + sent_len(t, &turns[t], state) as u64;
    }
    let within = starts.iter().position(|&s| after[s] <= keep);
    let at = match within {
        Some(k) => starts[k..]
            .iter()
            .copied()
            .find(|&s| turns[s].role == Role::User)
            .unwrap_or(starts[k]),
        None => newest,
    };
    Some(at)
}

/// What the summariser is asked to summarise: the summary so far, then
/// each turn up to `to`, rendered as the flat text renders it, whole.
fn summarised(
    turns: &[ConversationTurn],
    state: &Compaction,
    to: usize,
    controls: &crate::fence::Controls,
) -> String {
    let mut parts: Vec<Cow<'_, str>> = Vec::new();
    if state.turns > 0 {
        parts.push(format!("[summary] {}", state.summary).into());
    }
    for turn in &turns[state.turns as usize..to] {
        parts.push(crate::conversation::render_turn(turn, controls).0.into());
    }
    parts.join("\n\n")
}

/// The summariser's answer, checked: one summary, not empty, within
/// `target` tokens.
fn checked(
    answer: Result<Vec<String>, crate::error::HostError>,
    meter: &Meter,
    target: u32,
) -> (SourceOutcome, Option<String>) {
    let summaries = match answer {
        Err(e) => return (SourceOutcome::Failed(e.message), None),
        Ok(s) => s,
    };
    let failed = |why: String| (SourceOutcome::Failed(why), None);
    match summaries.as_slice() {
        [one] if one.trim().is_empty() => failed("the conversation's summary was empty".into()),
        [one] => match meter.count(one) {
            n if n > target => failed(format!(
                "the conversation's summary has {n} tokens, over compact-tokens ({target})"
            )),
            _ => (SourceOutcome::Answered(1), Some(one.clone())),
        },
        more => failed(format!("answered {} summaries for 1 request", more.len())),
    }
}

/// The role the conversation's summary of `covered` is sent in: a
/// system turn only where every turn it covers is the operator's or the
/// model's own (system, assistant); otherwise it holds text a user or a
/// tool wrote, which never carries system authority, and is the user's.
fn summary_role(covered: &[ConversationTurn]) -> Role {
    match covered
        .iter()
        .all(|t| matches!(t.role, Role::System | Role::Assistant))
    {
        true => Role::System,
        false => Role::User,
    }
}

/// `request` as the pipeline sees it under `state`: borrowed where
/// nothing is compacted.
fn applied<'r>(request: &'r AssembleRequest, state: &Compaction) -> Cow<'r, AssembleRequest> {
    let turns = &request.conversation;
    let any_cleared = turns
        .iter()
        .enumerate()
        .any(|(t, turn)| cleared(t, turn, state));
    if state.turns == 0 && !any_cleared {
        return Cow::Borrowed(request);
    }
    let mut owned = request.clone();
    for (t, turn) in owned.conversation.iter_mut().enumerate() {
        if cleared(t, turn, state) {
            turn.content = PLACEHOLDER.to_owned();
            turn.attached_tokens = None;
        }
    }
    if let Some(at) = (state.turns as usize).checked_sub(1)
        && let Some(turn) = owned.conversation.get_mut(at)
    {
        *turn = ConversationTurn {
            role: summary_role(request.conversation.get(..=at).unwrap_or_default()),
            content: format!("{SUMMARY_HEAD}{}", state.summary),
            tool_call_id: None,
            attached_tokens: None,
        };
    }
    Cow::Owned(owned)
}
