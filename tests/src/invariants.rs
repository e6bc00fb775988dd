//! The invariants every assembled pack keeps, checked by the conformance
//! tests on every scenario, by the hostile-input tests and by the fuzz
//! targets' replay.

// Test support: a failed check is a failed test, so it panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ctxpack_core::{
    ContextPack, Failure, Layer, Origin, PackForm, Reason, Role, SnapshotStatus, SourceOutcome,
    Tokenizer, Tokenizers,
};
use sha2::Digest;
use std::collections::{HashMap, HashSet};

/// An entry's text cut where the budget counts it apart: a host text (or a
/// summary) into its citation or fence and its body; the request's own
/// text whole. A head ends at its first line break (the reference in it
/// is escaped and holds none); an untrusted text's closing marker is
/// `\n</untrusted-NONCE>`. (`crate::fence::check_pack` holds the parts to
/// their exact forms.)
pub fn framed_parts(e: &ctxpack_core::PackEntry, origin: Origin) -> Vec<&str> {
    if origin == Origin::Request {
        return vec![e.text.as_str()];
    }
    let head = e
        .text
        .find('\n')
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("{}: host text without its head: {:?}", e.id, e.text));
    let tail = match e.trust {
        ctxpack_core::TrustTier::Untrusted => "\n</untrusted-00000000>".len(),
        _ => 0,
    };
    assert!(
        head + tail <= e.text.len(),
        "{}: host text not in its frame: {:?}",
        e.id,
        e.text
    );
    let (h, rest) = e.text.split_at(head);
    let (body, t) = rest.split_at(rest.len() - tail);
    vec![h, body, t]
}

/// An entry's text cut where the budget counts it apart (see
/// [`framed_parts`]), as it is charged: a turn sent as a message without
/// its `[role] ` header and with its lines unquoted, as the message sends
/// it.
pub fn charged_parts<'e>(
    request: &ctxpack_core::AssembleRequest,
    e: &'e ctxpack_core::PackEntry,
    origin: Origin,
) -> Vec<std::borrow::Cow<'e, str>> {
    let turn = origin == Origin::Request && e.section == ctxpack_core::Section::ConversationState;
    if turn && request.form == Some(PackForm::Messages) {
        let header = format!("[{}] ", e.role.name());
        let content = e.text.strip_prefix(&header);
        let content = content.unwrap_or_else(|| panic!("{}: a turn without its header", e.id));
        let content = crate::fence::unquoted(content, false)
            .unwrap_or_else(|| panic!("{}: a line of a turn is not quoted", e.id));
        return vec![content.into()];
    }
    framed_parts(e, origin)
        .into_iter()
        .map(Into::into)
        .collect()
}

/// Tokens of `text` as a user's model counts them, found apart from
/// ctxpack's own counters: tiktoken-rs's encoder for the exact encodings
/// (special-token markers as ordinary text), characters for the estimator,
/// and for a named tokenizer file the counter [`crate::reference`] read
/// from it.
pub fn recount(tokenizer: &Tokenizer, text: &str) -> u64 {
    match tokenizer {
        Tokenizer::O200kBase => tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(text)
            .len() as u64,
        Tokenizer::Cl100kBase => tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(text)
            .len() as u64,
        Tokenizer::CharsPerToken(n) => (text.chars().count() as u64).div_ceil(u64::from(*n)),
        Tokenizer::Named(name) => crate::reference::registered(name)
            .unwrap_or_else(|| panic!("{name:?}: no reference counter registered"))
            .count(text),
        // The scenario host's counter, a word a token.
        Tokenizer::Host(_) => u64::from(ctxpack_scenario::words(text)),
    }
}

/// The scenario host's counter, as a `TokenCounter`: a word a token.
struct HostWords;

impl ctxpack_core::TokenCounter for HostWords {
    fn count(&self, text: &str) -> u32 {
        ctxpack_scenario::words(text)
    }
}

/// ctxpack's counter for `tokenizer`, or for the host's, the scenario
/// host's.
pub fn counter_for<'t>(
    tokenizers: &'t ctxpack_core::Tokenizers,
    tokenizer: &Tokenizer,
) -> Box<dyn ctxpack_core::TokenCounter + 't> {
    match tokenizer {
        Tokenizer::Host(_) => Box::new(HostWords),
        other => tokenizers.counter(other).unwrap(),
    }
}

/// What a user sends, recounted: the flat text whole, and the messages
/// each whole with the overhead once per message.
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    /// Tokens of the flat text.
    pub text: u64,
    /// Tokens of the messages' contents, without overhead.
    pub contents: u64,
    /// Tokens of the messages, overhead included.
    pub messages: u64,
}

impl Sent {
    /// Tokens of what the caller sends in `form` (see `request.form`):
    /// for either, the larger.
    pub fn of(&self, form: Option<PackForm>) -> u64 {
        match form {
            Some(PackForm::Text) => self.text,
            Some(PackForm::Messages) => self.messages,
            None => self.text.max(self.messages),
        }
    }
}

/// The tokenizer and the entry overhead `pack` was counted in: the
/// request's own, and where it left one out, its model's. The snapshot's
/// record of the model is checked against the request: its name, and
/// exactly the fields the request left out recorded as assumed.
pub fn counting(
    request: &ctxpack_core::AssembleRequest,
    pack: &ContextPack,
) -> (ctxpack_core::Tokenizer, u32) {
    use ctxpack_core::Assumed;
    let snap = &pack.snapshot;
    let Some(name) = &request.model else {
        assert!(snap.model.is_none(), "a model recorded that was not named");
        let tokenizer = request
            .tokenizer
            .clone()
            .expect("no tokenizer and no model");
        return (tokenizer, request.entry_overhead.unwrap_or(0));
    };
    let used = snap
        .model
        .as_ref()
        .expect("the model named is not recorded");
    let profile = &used.profile;
    let plain = |n: &str| n.trim().rsplit('/').next().unwrap_or("").to_lowercase();
    assert!(
        plain(name).starts_with(&plain(&profile.name)),
        "{name:?} recorded as {:?}",
        profile.name
    );
    let left_out = [
        (request.tokenizer.is_none(), Assumed::Tokenizer),
        (request.budget.is_none(), Assumed::Budget),
        // Text sent has no messages: no overhead is taken from the model.
        (
            request.entry_overhead.is_none() && request.form != Some(PackForm::Text),
            Assumed::EntryOverhead,
        ),
    ];
    let mut assumed: Vec<Assumed> = left_out.iter().filter(|l| l.0).map(|l| l.1).collect();
    if request.reply_overhead.is_none()
        && request.form != Some(PackForm::Text)
        && profile.reply_overhead > 0
    {
        assumed.push(Assumed::ReplyOverhead);
    }
    assert_eq!(used.assumed, assumed, "{name:?}: what was assumed");
    let tokenizer = request
        .tokenizer
        .clone()
        .unwrap_or(profile.tokenizer.clone());
    assert_eq!(snap.tokenizer, tokenizer, "{name:?}: the tokenizer used");
    let overhead = match request.form {
        Some(PackForm::Text) => 0,
        _ => request.entry_overhead.unwrap_or(profile.message_overhead),
    };
    if request.budget.is_none() {
        let reserved = profile.context_window - profile.output_reserve;
        assert!(
            snap.token_budget <= reserved,
            "{name:?}: the budget passes the reserve"
        );
    }
    (tokenizer, overhead)
}

/// Tokens a kept turn sends beside its text (its images), as its request
/// turn gives them: charged where the pack is sent as messages.
pub fn attached(
    request: &ctxpack_core::AssembleRequest,
    e: &ctxpack_core::PackEntry,
    origin: Origin,
) -> u64 {
    if request.form == Some(PackForm::Text)
        || origin != Origin::Request
        || e.section != ctxpack_core::Section::ConversationState
    {
        return 0;
    }
    e.id.strip_prefix("turn-")
        .and_then(|i| i.parse::<usize>().ok())
        .and_then(|i| request.conversation.get(i))
        .and_then(|t| t.attached_tokens)
        .map_or(0, u64::from)
}

/// The tokens that prime the reply of `pack` sent as messages: the
/// request's, else its model's; none for the flat text.
pub fn reply(request: &ctxpack_core::AssembleRequest, pack: &ContextPack) -> u64 {
    if request.form == Some(PackForm::Text) {
        return 0;
    }
    let model = pack
        .snapshot
        .model
        .as_ref()
        .map(|m| m.profile.reply_overhead);
    u64::from(request.reply_overhead.or(model).unwrap_or(0))
}

/// Recounts `pack` as it is sent (see [`recount`]), a kept turn's images
/// at the tokens its request turn gives them, and the reply's priming.
pub fn sent(request: &ctxpack_core::AssembleRequest, pack: &ContextPack) -> Sent {
    let (tokenizer, overhead) = counting(request, pack);
    let origins = crate::fence::origins(pack);
    let contents: u64 = pack
        .messages
        .iter()
        .map(|m| recount(&tokenizer, &m.content))
        .sum::<u64>()
        + pack
            .entries
            .iter()
            .zip(&origins)
            .map(|(e, &o)| attached(request, e, o))
            .sum::<u64>();
    Sent {
        text: recount(&tokenizer, &pack.text),
        contents,
        messages: contents
            + u64::from(overhead) * pack.messages.len() as u64
            + reply(request, pack),
    }
}

/// The cache prefixes: for a pack sent as messages, the stable system
/// message, the turns leading after it, and the whole pack, in that
/// order, each recounted from its messages and hashed apart from the
/// core; none for a pack sent as text.
fn check_cache_prefixes(
    name: &str,
    request: &ctxpack_core::AssembleRequest,
    pack: &ContextPack,
    tokenizer: &Tokenizer,
    overhead: u32,
) {
    use ctxpack_core::{CacheBoundary, Role};
    let prefixes = &pack.snapshot.cache_prefixes;
    if request.form == Some(PackForm::Text) || pack.messages.is_empty() {
        assert!(prefixes.is_empty(), "{name}: {prefixes:?}");
        return;
    }
    let least = match &pack.snapshot.model {
        Some(m) => m.profile.cache_min_tokens,
        None => Some(1_024),
    };
    let mut last = None;
    for p in prefixes {
        assert!(last < Some(p.boundary), "{name}: {prefixes:?}");
        last = Some(p.boundary);
        let n = p.messages as usize;
        assert!(n >= 1 && n <= pack.messages.len(), "{name}: {p:?}");
        let messages = &pack.messages[..n];
        let tokens: u64 = messages
            .iter()
            .map(|m| {
                recount(tokenizer, &m.content)
                    + u64::from(m.attached_tokens.unwrap_or(0))
                    + u64::from(overhead)
            })
            .sum();
        assert_eq!(u64::from(p.tokens), tokens, "{name}: {p:?}");
        let mut hash = sha2::Sha256::new();
        for m in messages {
            let role = format!("{:?}", m.role).to_lowercase();
            let attached = m.attached_tokens.map(|a| a.to_string()).unwrap_or_default();
            let id = m.tool_call_id.clone().unwrap_or_default();
            for field in [&role, &id, &attached, &m.content] {
                hash.update(format!("{}:{field}", field.len()));
            }
        }
        assert_eq!(p.hash, format!("{:x}", hash.finalize()), "{name}: {p:?}");
        assert_eq!(
            p.cacheable,
            least.is_some_and(|l| p.tokens >= l),
            "{name}: {p:?}"
        );
        match p.boundary {
            CacheBoundary::Stable => {
                assert_eq!(n, 1, "{name}");
                assert_eq!(messages[0].role, Role::System, "{name}");
            }
            // It holds a turn more than the stable prefix.
            CacheBoundary::History => assert!(
                n > usize::from(prefixes[0].boundary == CacheBoundary::Stable),
                "{name}"
            ),
            CacheBoundary::Turn => assert_eq!(n, pack.messages.len(), "{name}"),
        }
    }
    assert_eq!(last, Some(CacheBoundary::Turn), "{name}: {prefixes:?}");
}

/// The status list is well formed: `complete` alone, or conditions in
/// their order, each once.
pub fn check_status(name: &str, status: &[SnapshotStatus]) {
    assert!(!status.is_empty(), "{name}: empty status");
    if status.contains(&SnapshotStatus::Complete) {
        assert_eq!(status, [SnapshotStatus::Complete], "{name}");
    }
    assert!(status.windows(2).all(|w| w[0] < w[1]), "{name}: {status:?}");
}

/// A failed assembly: an invalid request has no snapshot; one that had
/// begun has a `failed` snapshot with every request candidate, nothing
/// included, and its id the content hash of the rest.
/// A word a token, as the scenario host's counter counts.
struct Words;

impl ctxpack_core::TokenCounter for Words {
    fn count(&self, text: &str) -> u32 {
        ctxpack_scenario::words(text)
    }
}

/// `request` as the core reads it: a chat's messages read into its
/// conversation (`Builder::read_chat`), counted with `tokenizer`, the one
/// the assembly settled on (the scenario host's counter, a word a token,
/// where it is the host's).
pub fn as_read<'r>(
    name: &str,
    request: &'r ctxpack_core::AssembleRequest,
    config: &ctxpack_core::BuilderConfig,
    tokenizer: &Tokenizer,
) -> std::borrow::Cow<'r, ctxpack_core::AssembleRequest> {
    if request.chat.is_none() {
        return std::borrow::Cow::Borrowed(request);
    }
    let mut asked = request.clone();
    let mut counters: Vec<(String, Box<dyn ctxpack_core::TokenCounter + Send + Sync>)> = Vec::new();
    if let Tokenizer::Host(host) = tokenizer {
        counters.push((host.clone(), Box::new(Words)));
        asked.tokenizer = Some(Tokenizer::Named(host.clone()));
    }
    let mut read = ctxpack_core::Builder::with_counters(config.clone(), counters)
        .and_then(|b| b.read_chat(&asked))
        .unwrap_or_else(|e| panic!("{name}: its chat is not read: {e}"));
    read.tokenizer = request.tokenizer.clone();
    std::borrow::Cow::Owned(read)
}

pub fn check_failure(
    name: &str,
    request: &ctxpack_core::AssembleRequest,
    config: &ctxpack_core::BuilderConfig,
    failure: &Failure,
) {
    assert!(!failure.error.to_string().is_empty(), "{name}");
    let read = match &failure.snapshot {
        // A chat the assembly read is checked as the turns it was read as.
        Some(snap) => as_read(name, request, config, &snap.tokenizer),
        None => std::borrow::Cow::Borrowed(request),
    };
    let request = &*read;
    let Some(snap) = &failure.snapshot else {
        return;
    };
    check_status(name, &snap.status);
    assert!(snap.status.contains(&SnapshotStatus::Failed), "{name}");
    assert_eq!(
        snap.failure.as_deref(),
        Some(failure.error.to_string().as_str()),
        "{name}"
    );
    assert_eq!(snap.tokens_used, 0, "{name}");
    for e in &snap.entries {
        assert!(!e.included && !e.reason.is_inclusion(), "{name}: {}", e.id);
    }
    check_runs(name, request, &snap.entries);
    let mut blank = (**snap).clone();
    blank.id = String::new();
    assert_eq!(snap.id, ctxpack_core::content_id(&blank), "{name}");
}

/// Every candidate of the request's own is accounted for exactly once,
/// each run entry (see `ctxpack_core::Run`) standing for its members: a
/// run is at least two consecutive turns or stage summaries of the
/// request, none counted, none included, and over-budget only where its
/// first member is past the keep-last window's start.
fn check_runs(
    name: &str,
    request: &ctxpack_core::AssembleRequest,
    entries: &[ctxpack_core::SnapshotEntry],
) {
    let mut ids = HashSet::new();
    for e in entries.iter().filter(|e| e.origin == Origin::Request) {
        for id in e.ids() {
            assert!(ids.insert(id.clone()), "{name}: {id} recorded twice");
        }
        let Some(run) = &e.run else { continue };
        assert!(run.count >= 2, "{name}: a run of {}", run.count);
        assert!(!e.included && e.tokens == 0, "{name}: run {}", e.id);
        assert_eq!(e.counted, ctxpack_core::Counted::Uncounted, "{name}");
        let (stem, limit) = match e.section {
            ctxpack_core::Section::ConversationState => ("turn-", request.conversation.len()),
            ctxpack_core::Section::StageSummaries => {
                ("stage-summary-", request.stage_summaries.len())
            }
            other => panic!("{name}: a run in {other:?}"),
        };
        let members = e.ids();
        assert_eq!(members.len(), run.count as usize, "{name}");
        assert_eq!(members.last(), Some(&run.last_id), "{name}");
        for id in &members {
            let i: usize = id
                .strip_prefix(stem)
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{name}: run member {id}"));
            assert!(i < limit, "{name}: run member {id} past the request");
            if let Reason::KeepLast(n) = e.reason {
                assert!(
                    i + (n as usize) < limit,
                    "{name}: {id} is within keep-last {n}"
                );
            }
        }
    }
    assert_eq!(ids.len(), request_candidates(request), "{name}: candidates");
}

fn request_candidates(request: &ctxpack_core::AssembleRequest) -> usize {
    usize::from(!request.system_prompt.is_empty())
        + request.instructions.len()
        + usize::from(request.current_task.is_some())
        + usize::from(request.workflow.is_some())
        + request.conversation.len()
        + request.stage_summaries.len()
}

/// The conversation as a pack that compacted it sends it, made from the
/// pack's `compaction` as the WIT says, apart from the core: the summary
/// as a system turn in the place of the last turn it covers, each tool
/// result from there to `cleared` as the placeholder. Checks that the
/// compaction is the request's, or a later one: never a shorter summary
/// or fewer results cleared, and that a new summary was the summariser's
/// answer.
pub fn compacted(
    name: &str,
    request: &ctxpack_core::AssembleRequest,
    pack: &ContextPack,
) -> ctxpack_core::AssembleRequest {
    let mut sent = request.clone();
    let Some(c) = &pack.compaction else {
        assert!(
            request.compaction.is_none(),
            "{name}: a compaction given is not returned"
        );
        return sent;
    };
    let given = request.compaction.clone().unwrap_or_default();
    assert!(
        c.turns >= given.turns && c.cleared >= given.cleared,
        "{name}: {c:?} after {given:?}"
    );
    if c.turns == given.turns {
        assert_eq!(
            c.summary, given.summary,
            "{name}: a summary changed without compacting"
        );
    } else {
        assert!(
            pack.snapshot
                .source_calls
                .first()
                .is_some_and(|call| call.capability == "summarizer.summarize"
                    && matches!(call.outcome, ctxpack_core::SourceOutcome::Answered(1))),
            "{name}: a new summary without the summariser's answer"
        );
    }
    // Its hash is of the turns it stands for and clears, as the WIT
    // writes them, recomputed here.
    let covered = c.turns.max(c.cleared) as usize;
    let mut h = sha2::Sha256::new();
    for t in &request.conversation[..covered] {
        let attached = t.attached_tokens.map(|n| n.to_string()).unwrap_or_default();
        let role = serde_json::to_value(t.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned));
        for field in [
            role.unwrap_or_default().as_str(),
            t.tool_call_id.as_deref().unwrap_or(""),
            &attached,
            &t.content,
        ] {
            h.update(format!("{}:", field.len()).as_bytes());
            h.update(field.as_bytes());
        }
    }
    assert_eq!(
        c.hash,
        format!("{:x}", h.finalize()),
        "{name}: the compaction's hash"
    );
    let (from, upto) = (c.turns as usize, c.cleared as usize);
    for turn in sent.conversation.iter_mut().take(upto).skip(from) {
        if turn.role == Role::Tool {
            turn.content = "[tool result cleared]".to_owned();
            turn.attached_tokens = None;
        }
    }
    if let Some(last) = from.checked_sub(1) {
        // A system turn only where it covers nothing a user or a tool
        // wrote: text of that origin never carries system authority.
        let operators = request.conversation[..=last]
            .iter()
            .all(|t| matches!(t.role, Role::System | Role::Assistant));
        let turn = &mut sent.conversation[last];
        turn.role = if operators { Role::System } else { Role::User };
        turn.content = format!("Summary of the earlier conversation:\n{}", c.summary);
        turn.tool_call_id = None;
        turn.attached_tokens = None;
        // The turns before it are dropped into it.
        for (k, e) in pack.snapshot.turns().take(last).enumerate() {
            assert_eq!(
                e.reason,
                ctxpack_core::Reason::Summarized("conversation-summary".to_owned()),
                "{name}: turn-{k} before the summary"
            );
        }
    }
    sent.compaction = None;
    sent
}

/// OpenAI's count of a Chat Completions request, as its cookbook writes
/// it: 3 a message and its role's token (`overhead`, 4 for OpenAI's
/// models: a request's own `entry-overhead` in its place), every other
/// field's value (a value that is not text as its JSON; text parts joined
/// by line breaks), one more for a `name`, and 3 that prime the reply
/// (`reply`); an image by OpenAI's tiles (see [`tiles`]). None for
/// another shape, or an image whose price is not recounted here.
fn cookbook(
    chat: &ctxpack_core::ChatRequest,
    tokenizer: &Tokenizer,
    (overhead, reply): (u32, u64),
    images: Option<&ctxpack_core::ImageRule>,
) -> Option<u64> {
    use serde_json::Value;
    if chat.shape != ctxpack_core::ChatShape::OpenaiChat {
        return None;
    }
    let body: Value = serde_json::from_str(&chat.body).ok()?;
    let mut n = reply;
    for m in body.get("messages")?.as_array()? {
        n += u64::from(overhead);
        for (k, v) in m.as_object()? {
            n += match (k.as_str(), v) {
                ("role", _) => 0,
                (_, Value::Null) => 0,
                (_, Value::String(s)) => recount(tokenizer, s),
                ("content", Value::Array(parts)) => {
                    let mut texts = Vec::new();
                    for part in parts {
                        match part.get("type").and_then(Value::as_str) {
                            Some("text") => texts.push(part.get("text")?.as_str()?),
                            Some("image_url") => n += tiles(&part["image_url"], images?)?,
                            _ => return None,
                        }
                    }
                    recount(tokenizer, &texts.join("\n"))
                }
                (_, other) => recount(tokenizer, &other.to_string()),
            };
            n += u64::from(k == "name");
        }
    }
    Some(n)
}

/// What OpenAI bills an image part (`image_url`) by its published tile
/// rule, recomputed here: `detail: low` the base; otherwise the image
/// (its size read from an inline PNG's header) fitted within 2048×2048,
/// its short side brought down to 768, and the base plus the tile price
/// for each 512-pixel tile. None for another rule or an image by URL.
fn tiles(image: &serde_json::Value, rule: &ctxpack_core::ImageRule) -> Option<u64> {
    let ctxpack_core::ImageRule::Tiles(t) = rule else {
        return None;
    };
    if image["detail"] == "low" {
        return Some(u64::from(t.base));
    }
    let data = image["url"]
        .as_str()?
        .strip_prefix("data:image/png;base64,")?;
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bytes = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in data.bytes().take(32) {
        let v = A.iter().position(|&a| a == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((acc >> bits) as u8);
        }
    }
    let be = |at: usize| -> Option<f64> {
        Some(f64::from(u32::from_be_bytes(
            bytes.get(at..at + 4)?.try_into().ok()?,
        )))
    };
    let (mut w, mut h) = (be(16)?, be(20)?);
    let fit = (2048.0 / w.max(h)).min(1.0);
    (w, h) = (w * fit, h * fit);
    let short = (768.0 / w.min(h)).min(1.0);
    (w, h) = (w * short, h * short);
    let n = ((w / 512.0).ceil() * (h / 512.0).ceil()) as u64;
    Some(u64::from(t.base) + u64::from(t.tile) * n)
}

/// Whether `text` is the conversation's summary `t` (of untrusted turns)
/// as the flat text must write it: `[role] `, its head, and the summary
/// in a fence of the pack's, written as a host text is, every line after
/// the header quoted and the summary's lines quoted again in the fence.
fn is_fenced_summary(t: &ctxpack_core::ConversationTurn, text: &str) -> bool {
    let head = "Summary of the earlier conversation:\n";
    let (Some(summary), Some(content)) = (
        t.content.strip_prefix(head),
        text.strip_prefix(&format!("[{}] ", t.role.name())),
    ) else {
        return false;
    };
    let Some(content) = crate::fence::unquoted(content, false) else {
        return false;
    };
    let fenced = content.strip_prefix(head).and_then(|rest| {
        let (open, rest) = rest.split_once('\n')?;
        let (body, close) = rest.rsplit_once('\n')?;
        let nonce = open
            .strip_prefix("<untrusted-")?
            .strip_suffix(" source=\"compaction.summary\">")?;
        (close == format!("</untrusted-{nonce}>")).then_some(body)
    });
    fenced
        .and_then(|body| crate::fence::unquoted(body, true))
        .is_some_and(|body| crate::fence::only_escaped(summary, &body, "("))
}

/// No system message holds a byte of unverified or untrusted origin: the
/// text of every such entry that is not L0 or a turn lies in no system
/// message, the snapshot's `fence.context-role` is `user` when there is
/// one, and the conversation's summary of a user's or a tool's turn is
/// not a system message.
pub fn untrusted_text_never_carries_system_authority(name: &str, pack: &ContextPack) {
    use ctxpack_core::{Section, TrustTier};
    let low = |t: TrustTier| matches!(t, TrustTier::Unverified | TrustTier::Untrusted);
    let mut context = None;
    for e in &pack.entries {
        if e.layer == Layer::L0 || e.section == Section::ConversationState {
            continue;
        }
        context = Some(context.unwrap_or(Role::System));
        if !low(e.trust) {
            continue;
        }
        context = Some(Role::User);
        for m in pack.messages.iter().filter(|m| m.role == Role::System) {
            assert!(
                !m.content.contains(e.text.as_str()),
                "{name}: {} ({:?}) is sent in a system message",
                e.id,
                e.trust
            );
        }
    }
    assert_eq!(pack.snapshot.fence.context_role, context, "{name}");
    for e in pack
        .entries
        .iter()
        .filter(|e| e.id == "conversation-summary")
    {
        if low(e.trust) {
            for m in pack.messages.iter().filter(|m| m.role == Role::System) {
                assert!(
                    !m.content
                        .starts_with("Summary of the earlier conversation:"),
                    "{name}: the summary of untrusted turns is a system message"
                );
            }
        }
    }
}

pub fn check(
    name: &str,
    request: &ctxpack_core::AssembleRequest,
    config: &ctxpack_core::BuilderConfig,
    pack: &ContextPack,
    tokenizers: &Tokenizers,
) {
    // A chat is checked as the conversation it was read as (its turns'
    // roles, texts and call ids; each turn's charge is recounted below
    // from the request actually sent, its body).
    let read = as_read(name, request, config, &pack.snapshot.tokenizer);
    let request = &*read;
    let compacted = compacted(name, request, pack);
    let request = &compacted;
    let snap = &pack.snapshot;
    let (tokenizer, overhead) = counting(request, pack);
    if let Some(b) = request.budget {
        assert_eq!(pack.budget_limit, b, "{name}");
    }
    // What a user sends — the flat text, or the messages with their
    // overhead — recounted whole, apart from ctxpack's counters and its
    // records, is within the budget.
    let budget = u64::from(pack.budget_limit);
    let recounted = sent(request, pack);
    if request.form != Some(PackForm::Messages) {
        assert!(
            recounted.text <= budget,
            "{name}: the text counts {} tokens, over the budget {budget}",
            recounted.text
        );
    }
    if request.form != Some(PackForm::Text) {
        assert!(
            recounted.messages <= budget,
            "{name}: the messages count {} tokens, over the budget {budget}",
            recounted.messages
        );
    }
    assert_eq!(u64::from(snap.text_tokens), recounted.text, "{name}: text");
    match &pack.chat {
        // A chat is sent as its body, not as the pack's flat messages:
        // recounted as OpenAI's cookbook counts a Chat Completions
        // request, where the provider's rule is public and the images'
        // price is known apart (low detail); the other shapes' charges are
        // the core's rule (their Rust tests), held to the budget here.
        Some(chat) => {
            let images = snap.model.as_ref().and_then(|m| m.profile.images.as_ref());
            if let Some(n) = cookbook(chat, &tokenizer, (overhead, reply(request, pack)), images) {
                assert_eq!(
                    u64::from(snap.message_tokens),
                    n,
                    "{name}: the request sent"
                );
            }
            assert!(
                u64::from(snap.message_tokens) <= budget,
                "{name}: the request sent is over budget"
            );
        }
        None => assert_eq!(
            u64::from(snap.message_tokens),
            recounted.messages,
            "{name}: messages"
        ),
    }
    // The accounting adds up: for a form sent, its tokens; for either,
    // each entry and its overhead, plus what the rendering adds in the
    // form that adds more.
    assert!(pack.budget_used <= pack.budget_limit, "{name}: over budget");
    let own: u64 = pack.entries.iter().map(|e| u64::from(e.tokens)).sum();
    let charged = own + u64::from(overhead) * pack.entries.len() as u64;
    let added = recounted.text.max(recounted.contents).saturating_sub(own);
    let used = match request.form {
        Some(_) => recounted.of(request.form),
        None => charged + added + reply(request, pack),
    };
    assert_eq!(
        used,
        u64::from(pack.budget_used),
        "{name}: budget-used is not what is sent"
    );
    assert_eq!(snap.tokens_used, pack.budget_used, "{name}");
    check_status(name, &snap.status);
    assert!(!snap.status.contains(&SnapshotStatus::Failed), "{name}");
    assert!(snap.failure.is_none(), "{name}");
    // Truncated exactly when a text that stays was cut.
    let cut = snap
        .entries
        .iter()
        .any(|e| e.included && e.compressed && e.origin != Origin::Summary);
    assert_eq!(
        snap.status.contains(&SnapshotStatus::Truncated),
        cut,
        "{name}: truncated status"
    );
    // Counts are exact: recount every included text (a host text's frame
    // and body apart, as the budget charges them).
    let counter = counter_for(tokenizers, &tokenizer);
    let origins = crate::fence::origins(pack);
    for (e, &origin) in pack.entries.iter().zip(&origins) {
        // A chat's turn is charged as its message is sent (its calls and
        // results as JSON, its images), recounted whole above.
        if pack.chat.is_some()
            && origin == Origin::Request
            && e.section == ctxpack_core::Section::ConversationState
        {
            continue;
        }
        let recount: u64 = charged_parts(request, e, origin)
            .iter()
            .map(|p| u64::from(counter.count(p)))
            .sum::<u64>()
            + attached(request, e, origin);
        assert_eq!(recount, u64::from(e.tokens), "{name}: {} miscounted", e.id);
    }
    // Every candidate appears exactly once (counted by origin below); a
    // host may repeat an id, but only one candidate per id is included; the
    // pack holds exactly the included ones, in the same order.
    let included_ids: HashSet<&str> = snap
        .entries
        .iter()
        .filter(|e| e.included)
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(
        included_ids.len(),
        pack.entries.len(),
        "{name}: an id is included twice"
    );
    let included: Vec<&str> = snap
        .entries
        .iter()
        .filter(|e| e.included)
        .map(|e| e.id.as_str())
        .collect();
    let packed: Vec<&str> = pack.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(included, packed, "{name}");
    check_runs(name, request, &snap.entries);
    let from = |origin: Origin| {
        snap.entries
            .iter()
            .filter(|e| e.origin == origin)
            .map(|e| e.candidates() as usize)
            .sum::<usize>()
    };
    for call in &snap.source_calls {
        let origin = match call.capability.as_str() {
            "sources.retrieve" => Origin::Retrieval,
            "sources.recall-memory" => Origin::Memory,
            "sources.expand-graph" => Origin::Graph,
            "sources.repository-state" => Origin::Repository,
            "summarizer.summarize" | "policy.review" => continue,
            other => panic!("{name}: unexpected source {other}"),
        };
        let answered = match call.outcome {
            SourceOutcome::Answered(n) => n as usize,
            _ => 0,
        };
        assert_eq!(
            from(origin),
            answered,
            "{name}: {} candidates lost",
            call.capability
        );
    }
    // Nothing unreviewed is included: the policy gave a verdict for at
    // least every host candidate included or summarised, and an item is
    // left out unreviewed only once the review rounds were spent.
    let reviews: Vec<usize> = snap
        .source_calls
        .iter()
        .filter(|c| c.capability == "policy.review")
        .map(|c| match c.outcome {
            SourceOutcome::Answered(n) => n as usize,
            _ => 0,
        })
        .collect();
    let needing_review = snap
        .entries
        .iter()
        .filter(|e| !matches!(e.origin, Origin::Request | Origin::Summary))
        .filter(|e| e.included || matches!(e.reason, Reason::Summarized(_)))
        .count();
    assert!(
        reviews.iter().sum::<usize>() >= needing_review,
        "{name}: {needing_review} host candidates included or summarised, {} verdicts",
        reviews.iter().sum::<usize>()
    );
    assert!(
        reviews.len() <= ctxpack_core::REVIEW_ROUNDS as usize,
        "{name}: {} review rounds",
        reviews.len()
    );
    if snap.entries.iter().any(|e| e.reason == Reason::Unreviewed) {
        assert_eq!(
            reviews.len(),
            ctxpack_core::REVIEW_ROUNDS as usize,
            "{name}: left out unreviewed before the rounds were spent"
        );
    }
    // No host text in L0; every included item has provenance.
    for e in &snap.entries {
        if e.origin != Origin::Request && e.included {
            assert_ne!(e.layer, Layer::L0, "{name}: host item {} in L0", e.id);
        }
        if e.included {
            assert!(
                e.provenance.is_some(),
                "{name}: {} without provenance",
                e.id
            );
        }
    }
    // Dropped candidates, a run's members each.
    assert_eq!(
        pack.compression.entries_dropped as usize,
        snap.entries
            .iter()
            .filter(|e| !e.included)
            .map(|e| e.candidates() as usize)
            .sum::<usize>(),
        "{name}"
    );
    // Laid out cache-first (asked, or by default for the messages form),
    // the current task and the workflow's status come after the
    // conversation (joining the first message only when nothing else came
    // before them); nothing else of L0 does.
    let cache_first = match request.layout {
        Some(layout) => layout == ctxpack_core::Layout::CacheFirst,
        None => request.form == Some(PackForm::Messages),
    };
    let moves = |e: &&ctxpack_core::PackEntry| {
        cache_first
            && matches!(
                e.section,
                ctxpack_core::Section::CurrentTask | ctxpack_core::Section::WorkflowStatus
            )
    };
    // The messages hold the same context: the L0 entries rendered first
    // (the stable ones) lead the first, then the other context and
    // exactly the kept turns; every host item is cited.
    let l0: Vec<_> = pack
        .entries
        .iter()
        .take_while(|e| e.layer == Layer::L0 && !moves(e))
        .collect();
    let l0_text = l0
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    if !l0.is_empty() {
        let first = &pack.messages[0].content;
        match cache_first {
            true => assert!(first.starts_with(&l0_text), "{name}"),
            false => assert_eq!(first, &l0_text, "{name}"),
        }
    }
    let turns_kept = pack
        .entries
        .iter()
        .filter(|e| e.section == ctxpack_core::Section::ConversationState)
        .count();
    let non_system = pack
        .messages
        .iter()
        .filter(|m| m.role != Role::System || m.tool_call_id.is_some())
        .count();
    // Besides the turns, the other context is a message of the user's
    // when any of it is of unverified or untrusted origin.
    let context_role = pack.snapshot.fence.context_role;
    let context_user = usize::from(context_role == Some(Role::User));
    assert!(non_system <= turns_kept + context_user, "{name}");
    untrusted_text_never_carries_system_authority(name, pack);
    for (e, &origin) in pack.entries.iter().zip(&origins) {
        if origin != Origin::Request {
            // Cited by its reference, escaped for the head it is in.
            // (Only what could end the head is replaced; nothing else of
            // the reference is lost.)
            let head = framed_parts(e, origin)[0];
            let cited = match e.trust {
                ctxpack_core::TrustTier::Untrusted => head
                    .split_once(" source=\"")
                    .and_then(|(_, r)| r.strip_suffix("\">\n")),
                _ => head
                    .strip_prefix("[source: ")
                    .and_then(|r| r.strip_suffix("]\n")),
            };
            let cited = cited.unwrap_or_else(|| panic!("{name}: {} has no head", e.id));
            assert!(
                crate::fence::only_escaped(&e.provenance.reference, cited, "()' "),
                "{name}: {} cites {cited:?} for {:?}",
                e.id,
                e.provenance.reference
            );
        }
    }
    // Untrusted text stays inside its fence (see `crate::fence`).
    crate::fence::check_pack(name, pack);
    // The event, the metrics and the content reference agree with the pack.
    assert_eq!(pack.event.context_snapshot_id, snap.id, "{name}");
    assert_eq!(pack.event.tokens_used, pack.budget_used, "{name}");
    // The content hash is the SHA-256 of the rendered text's bytes.
    let digest = format!("{:x}", sha2::Sha256::digest(pack.text.as_bytes()));
    assert_eq!(snap.content_hash, digest, "{name}");
    let section_sum: u64 = pack
        .metrics
        .tokens_per_section
        .iter()
        .map(|s| u64::from(s.tokens))
        .sum();
    // What rendering adds to the entries and their overhead: for a form
    // sent, its joins (and pieces that merge across them).
    let added = match request.form {
        None => i128::from(added),
        Some(PackForm::Text) => i128::from(recounted.text) - i128::from(own),
        Some(PackForm::Messages) => i128::from(recounted.contents) - i128::from(own),
    };
    // The reply's priming is no section's.
    let reply = i128::from(reply(request, pack));
    assert_eq!(
        i128::from(section_sum) + added + reply,
        i128::from(pack.budget_used),
        "{name}: metrics per section"
    );
    let dropped_sum: u32 = pack.metrics.dropped_by_reason.iter().map(|r| r.count).sum();
    assert_eq!(
        dropped_sum, pack.compression.entries_dropped,
        "{name}: metrics per reason"
    );
    // An over-budget drop is true: it needed more than remained.
    for e in &snap.entries {
        if let ctxpack_core::Reason::OverBudget(s) = &e.reason {
            assert!(
                s.needed > s.remaining,
                "{name}: {} dropped though it fit",
                e.id
            );
        }
    }
    // Mandatory sections are never compressed; a summarised candidate
    // points at an included summary that cites it.
    for e in &snap.entries {
        if e.layer == Layer::L0 {
            assert!(!e.compressed, "{name}: L0 entry {} compressed", e.id);
        }
        if let ctxpack_core::Reason::Summarized(id) = &e.reason {
            if id == "conversation-summary" {
                // A compacted conversation's summary stands for the turns
                // before it (see `compacted`): the budget may let it go
                // as the oldest turn it is, saying so.
                let summary = snap.entries.iter().find(|s| &s.id == id);
                let summary = summary.unwrap_or_else(|| panic!("{name}: {id} missing"));
                let cites = summary.provenance.as_ref().map(|p| p.reference.as_str());
                assert_eq!(cites, Some("compaction.summary"), "{name}");
                assert!(e.compressed && !summary.compressed, "{name}");
                assert!(
                    summary.trust >= e.trust,
                    "{name}: the conversation's summary is too trusted"
                );
                continue;
            }
            let summary = snap.entries.iter().find(|s| &s.id == id && s.included);
            let summary = summary.unwrap_or_else(|| panic!("{name}: {id} missing"));
            let cites = summary
                .provenance
                .as_ref()
                .map(|p| p.reference.as_str())
                .unwrap_or("");
            assert!(
                cites.split(',').any(|c| c == e.id),
                "{name}: {id} does not cite {}",
                e.id
            );
            assert!(e.compressed && summary.compressed, "{name}");
            assert!(
                summary.trust >= e.trust,
                "{name}: a summary is as trusted as its least source"
            );
        }
    }
    // The request's L0 is never dropped, and leads the pack.
    for e in &snap.entries {
        if e.layer == Layer::L0 && e.origin == Origin::Request {
            assert!(e.included, "{name}: L0 entry {} dropped", e.id);
        }
        assert!(e.included == e.reason.is_inclusion(), "{name}: {}", e.id);
        assert!(e.reason != Reason::AssemblyFailed, "{name}: {}", e.id);
    }
    assert!(
        pack.entries[l0.len()..]
            .iter()
            .all(|e| e.layer != Layer::L0 || moves(&e)),
        "{name}"
    );
    // The stable prefix: L0 as it renders, recounted, with an overhead
    // per entry; for a form sent, as that form charges it (text: its
    // tokens; messages: one system message).
    let l0_own: u64 = l0.iter().map(|e| u64::from(e.tokens)).sum();
    let l0_tokens = recount(&tokenizer, &l0_text);
    let l0_cost = match request.form {
        None => l0_own.max(l0_tokens) + u64::from(overhead) * l0.len() as u64,
        Some(PackForm::Text) => l0_tokens,
        Some(PackForm::Messages) => l0_tokens + u64::from(overhead) * u64::from(!l0.is_empty()),
    };
    assert_eq!(u64::from(snap.stable_prefix_tokens), l0_cost, "{name}");
    check_cache_prefixes(name, request, pack, &tokenizer, overhead);
    // The kept conversation is valid: no tool result without its call, no
    // call without its results.
    // The snapshot has one entry per turn (a run's once per member, as
    // `turns` reads it), in turn order; the pack's
    // conversation entries are the kept ones, in the same order.
    let turn_entries: Vec<&ctxpack_core::SnapshotEntry> = snap.turns().collect();
    assert_eq!(turn_entries.len(), request.conversation.len(), "{name}");
    let kept_indices: Vec<usize> = (0..turn_entries.len())
        .filter(|&k| turn_entries[k].included)
        .collect();
    let kept_texts: Vec<&str> = pack
        .entries
        .iter()
        .zip(&origins)
        .filter(|&(e, &o)| {
            o == Origin::Request && e.section == ctxpack_core::Section::ConversationState
        })
        .map(|(e, _)| e.text.as_str())
        .collect();
    assert_eq!(kept_indices.len(), kept_texts.len(), "{name}");
    let kept: Vec<(usize, &str)> = kept_indices.into_iter().zip(kept_texts).collect();
    let kept_turns: Vec<usize> = kept.iter().map(|&(i, _)| i).collect();
    // A kept turn is rendered whole from its request turn, and counted.
    for &(i, text) in &kept {
        let t = &request.conversation[i];
        // A chat's turn, sent as given: its header and its content as is.
        if pack.chat.is_some() {
            assert_eq!(
                text,
                format!(
                    "[{}] {}",
                    t.role.name(),
                    crate::fence::quoted(&t.content, false)
                ),
                "{name}: turn-{i}"
            );
            continue;
        }
        assert!(
            crate::fence::is_turn_text(t, text) || is_fenced_summary(t, text),
            "{name}: turn-{i} is {text:?} for {:?}",
            t.content
        );
    }
    // Kept calls by id, with where they are: a result answers a call made
    // before it (one that comes first answers nothing and is an orphan).
    let mut calls: HashMap<&str, usize> = HashMap::new();
    for &i in &kept_turns {
        let t = &request.conversation[i];
        match (t.role, t.tool_call_id.as_deref()) {
            (Role::Assistant, Some(id)) => {
                calls.insert(id, i);
            }
            (Role::Tool, Some(id)) => {
                assert!(
                    calls.contains_key(id),
                    "{name}: turn-{i} kept without its call"
                );
            }
            _ => {}
        }
    }
    for (j, t) in request.conversation.iter().enumerate() {
        if let (Role::Tool, Some(id)) = (t.role, t.tool_call_id.as_deref())
            && calls.get(id).is_some_and(|&call| call < j)
        {
            assert!(
                kept_turns.contains(&j),
                "{name}: result turn-{j} split from its call"
            );
        }
    }
    // The conversation begins where the request says: with `user-turn`
    // (the default), the first kept turn that is not a system turn is a
    // user turn, and a turn left out `before-user-turn` is no system turn
    // and comes before it; with `any-turn`, none is left out so.
    let before_user = |k: usize| turn_entries[k].reason == ctxpack_core::Reason::BeforeUserTurn;
    let first_spoken = kept_turns
        .iter()
        .copied()
        .find(|&k| request.conversation[k].role != Role::System);
    match request.conversation_start.unwrap_or_default() {
        ctxpack_core::ConversationStart::UserTurn => {
            if let Some(k) = first_spoken {
                assert_eq!(
                    request.conversation[k].role,
                    Role::User,
                    "{name}: the kept conversation begins on turn-{k}"
                );
            }
            for k in (0..turn_entries.len()).filter(|&k| before_user(k)) {
                // A system turn stays where it could be kept: it is left
                // out only behind a spoken turn that is left out too.
                if request.conversation[k].role == Role::System {
                    let end = first_spoken.unwrap_or(turn_entries.len());
                    assert!(
                        (k + 1..end).any(|j| request.conversation[j].role != Role::System
                            && !turn_entries[j].included),
                        "{name}: turn-{k}"
                    );
                }
                assert!(first_spoken.is_none_or(|f| k < f), "{name}: turn-{k}");
            }
        }
        ctxpack_core::ConversationStart::AnyTurn => {
            assert!(!(0..turn_entries.len()).any(before_user), "{name}");
        }
    }
    // The kept turns are one contiguous run ending at the newest turn that
    // can be kept (orphaned results, never kept, excepted), but for the
    // turns left out before the first user turn (system turns among them
    // stay).
    let orphaned = |k: usize| turn_entries[k].reason == ctxpack_core::Reason::OrphanToolResult;
    if let (Some(&first), Some(&last)) = (kept_turns.first(), kept_turns.last()) {
        let newest = (0..request.conversation.len())
            .rev()
            .find(|&k| !orphaned(k))
            .unwrap_or(0);
        assert!(
            last == newest
                || (last < newest && (last + 1..=newest).all(|k| before_user(k) || orphaned(k))),
            "{name}: newest turn not kept"
        );
        for k in first..=last {
            assert!(
                kept_turns.contains(&k) || orphaned(k) || before_user(k),
                "{name}: gap at turn-{k}"
            );
        }
    }
}
