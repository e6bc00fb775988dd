//! The rule a pack is held to, read with this module's reading: where its
//! fences are, what lies outside them, and [`check_pack`].

use super::*;

/// The byte ranges of `text` that ctxpack's fences span, markers
/// included: from each opening marker to the closing marker with its
/// nonce.
pub fn fenced(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut open: Option<(String, usize)> = None;
    for m in markers(text) {
        let s = &text[m.start..];
        match (&open, OPEN_MARKER.captures(s), CLOSE_MARKER.captures(s)) {
            (None, Some(c), _) => open = Some((c[1].to_owned(), m.start)),
            (Some((nonce, from)), _, Some(c)) if &c[1] == nonce => {
                spans.push((*from, m.start + c[0].len()));
                open = None;
            }
            _ => {}
        }
    }
    spans
}

/// The byte offsets of `needle` in `text` that lie outside every fence.
pub fn outside(text: &str, needle: &str) -> Vec<usize> {
    let inside = fenced(text);
    text.match_indices(needle)
        .map(|(at, _)| at)
        .filter(|&at| {
            !inside
                .iter()
                .any(|&(from, to)| from <= at && at + needle.len() <= to)
        })
        .collect()
}

/// The nonce of the pack's fences, if it has one.
pub fn nonce(pack: &ContextPack) -> Option<String> {
    markers(&pack.text).iter().find_map(|m| {
        OPEN_MARKER
            .captures(&pack.text[m.start..])
            .map(|c| c[1].to_owned())
    })
}

/// What produced each of `pack`'s entries, from its snapshot (which lists
/// the included candidates in the pack's order).
pub fn origins(pack: &ContextPack) -> Vec<Origin> {
    let included: Vec<&ctxpack_core::SnapshotEntry> = pack
        .snapshot
        .entries
        .iter()
        .filter(|e| e.included)
        .collect();
    assert_eq!(included.len(), pack.entries.len(), "included entries");
    for (s, e) in included.iter().zip(&pack.entries) {
        assert_eq!(s.id, e.id, "the pack is not in the snapshot's order");
    }
    included.iter().map(|e| e.origin).collect()
}

/// The structures ctxpack writes at the start (and end) of an entry: the
/// opening and closing marker of a fence, a citation head, a turn's
/// header. Returns their starts in `text`, or says what is wrong.
fn own_structures(name: &str, e: &ctxpack_core::PackEntry, origin: Origin) -> Vec<usize> {
    let found = structures(&e.text);
    let shown = || {
        found
            .iter()
            .map(|m| &e.text[m.start..m.end])
            .collect::<Vec<_>>()
    };
    if origin == Origin::Request && e.section == Section::ConversationState {
        // `[role] ` and content with no structure.
        let header = format!("[{}] ", e.role.name());
        assert!(e.text.starts_with(&header), "{name}: {} header", e.id);
        if e.id == "conversation-summary" && e.trust == TrustTier::Untrusted {
            // The summary of untrusted turns: its head, then the summary
            // in a fence of the pack's (its lines quoted as the turn's).
            let starts: Vec<usize> = found.iter().map(|s| s.start).collect();
            assert_eq!(starts.len(), 3, "{name}: {}: {:?}", e.id, shown());
            let open = OPEN_MARKER.captures(&e.text[starts[1]..]);
            let close = CLOSE_MARKER.captures(&e.text[starts[2]..]);
            let (Some(open), Some(close)) = (open, close) else {
                panic!("{name}: {} is not fenced: {:?}", e.id, shown());
            };
            assert_eq!(&open[1], &close[1], "{name}: {}'s markers differ", e.id);
            assert_eq!(&open[2], "compaction.summary", "{name}: {}", e.id);
            return starts;
        }
        assert_eq!(
            found.iter().map(|s| s.start).collect::<Vec<_>>(),
            vec![0],
            "{name}: {} holds a structure besides its header: {:?}",
            e.id,
            shown()
        );
        return vec![0];
    }
    if origin == Origin::Request {
        // A stage summary: no structure at all.
        assert!(
            found.is_empty(),
            "{name}: {} holds a structure: {:?}",
            e.id,
            shown()
        );
        return Vec::new();
    }
    if e.trust != TrustTier::Untrusted {
        // A citation head, and nothing else.
        let head = e
            .text
            .strip_prefix("[source: ")
            .and_then(|rest| rest.split_once("]\n"))
            .map(|(reference, _)| reference);
        let head = head.unwrap_or_else(|| panic!("{name}: {} has no citation", e.id));
        assert_eq!(
            unescaped(Head::Citation, head),
            None,
            "{name}: {} cites {head:?}",
            e.id
        );
        assert_eq!(
            found.iter().map(|s| s.start).collect::<Vec<_>>(),
            vec![0],
            "{name}: {} holds a structure besides its citation: {:?}",
            e.id,
            shown()
        );
        return vec![0];
    }
    assert!(
        found.len() == 2,
        "{name}: {} holds {} structures, not its fence's two: {:?}",
        e.id,
        found.len(),
        shown()
    );
    let (first, last) = (found[0], found[1]);
    let open = OPEN_MARKER.captures(&e.text[first.start..]);
    let close = CLOSE_MARKER.captures(&e.text[last.start..]);
    let (Some(open), Some(close)) = (open, close) else {
        panic!(
            "{name}: {} is not fenced by ctxpack's markers: {:?}",
            e.id,
            shown()
        );
    };
    assert_eq!(first.start, 0, "{name}: {}'s fence does not open it", e.id);
    assert_eq!(
        last.start + close[0].len(),
        e.text.len(),
        "{name}: {}'s fence does not close it",
        e.id
    );
    assert_eq!(&open[1], &close[1], "{name}: {}'s markers differ", e.id);
    assert_eq!(
        unescaped(Head::Attribute, &open[2]),
        None,
        "{name}: {}",
        e.id
    );
    assert_eq!(
        e.text.as_bytes().get(open[0].len()),
        Some(&b'\n'),
        "{name}: {}",
        e.id
    );
    assert_eq!(
        e.text.as_bytes().get(last.start - 1),
        Some(&b'\n'),
        "{name}: {}",
        e.id
    );
    vec![first.start, last.start]
}

/// Holds `pack` to the rule (see the module docs); `name` names the case
/// in a failure.
pub fn check_pack(name: &str, pack: &ContextPack) {
    let origins = origins(pack);
    // The flat text is the entries joined by a blank line: where each
    // entry's text lies in it.
    let mut at = 0;
    let mut spans = Vec::with_capacity(pack.entries.len());
    for e in &pack.entries {
        assert_eq!(
            pack.text.get(at..at + e.text.len()),
            Some(e.text.as_str()),
            "{name}: {} is not where the flat text has it",
            e.id
        );
        spans.push((at, at + e.text.len()));
        at += e.text.len() + 2;
    }
    // The application's L0 may hold anything, and so may a chat's turns:
    // each is the caller's own message, sent as given in a message of its
    // own (the flat text is not what a chat's pack sends); every other
    // structure is one of ctxpack's own.
    let chat_turn = |k: usize| {
        pack.chat.is_some()
            && origins[k] == Origin::Request
            && pack.entries[k].section == ctxpack_core::Section::ConversationState
    };
    let own = |k: usize| {
        (pack.entries[k].layer == Layer::L0 && origins[k] == Origin::Request) || chat_turn(k)
    };
    let mut nonces = std::collections::BTreeSet::new();
    let mut ours = std::collections::BTreeSet::new();
    for (k, e) in pack.entries.iter().enumerate() {
        if own(k) {
            continue;
        }
        for start in own_structures(name, e, origins[k]) {
            ours.insert(spans[k].0 + start);
        }
        if let Some(open) = OPEN_MARKER.captures(&e.text) {
            nonces.insert(open[1].to_owned());
        }
    }
    assert!(nonces.len() <= 1, "{name}: fences with nonces {nonces:?}");
    no_untrusted_byte_begins_a_line(name, pack, &origins);
    // Read across the whole flat text, as a model reads it: every
    // structure is one of ctxpack's found above, or lies in L0.
    for m in structures(&pack.text) {
        if ours.contains(&m.start) {
            continue;
        }
        let k = spans
            .iter()
            .position(|&(from, to)| from <= m.start && m.start < to);
        assert!(
            k.is_some_and(own),
            "{name}: a structure no entry accounts for: {:?}",
            &pack.text[m.start..m.end]
        );
    }
    // The messages: a turn's content holds no structure; the context's
    // system message is the entries it joins, checked above. (A chat's
    // turns are the caller's own messages, sent as given.)
    // The other context sent as a user's message, and a fenced summary,
    // are the entries checked above.
    let context = |m: &ctxpack_core::Message| {
        m.tool_call_id.is_none()
            && (m
                .content
                .starts_with("Summary of the earlier conversation:\n<untrusted-")
                || pack.entries.iter().zip(&origins).any(|(e, &o)| {
                    !(o == Origin::Request && e.section == Section::ConversationState)
                        && e.layer != Layer::L0
                        && m.content.contains(e.text.as_str())
                }))
    };
    for m in &pack.messages {
        if (m.role == Role::System && m.tool_call_id.is_none()) || pack.chat.is_some() || context(m)
        {
            continue;
        }
        let found = structures(&m.content);
        assert!(
            found.is_empty(),
            "{name}: a {} message holds {:?}",
            m.role.name(),
            found
                .iter()
                .map(|s| &m.content[s.start..s.end])
                .collect::<Vec<_>>()
        );
    }
}

/// Whether `text` is the conversation turn `t` as the flat text must write
/// it: `[role] ` and its content with only what the rule may change
/// changed (see [`only_escaped`]), and no structure in it.
pub fn is_turn_text(t: &ctxpack_core::ConversationTurn, text: &str) -> bool {
    let header = format!("[{}] ", t.role.name());
    text.strip_prefix(&header).is_some_and(|content| {
        unquoted(content, false).is_some_and(|c| only_escaped(&t.content, &c, "("))
            && structures(content).is_empty()
    })
}

/// The line breaks a quote must follow: line feed, carriage return (with
/// a line feed after it, one break), line and paragraph separators.
static BREAK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("\r\n|\r|\n|\u{2028}|\u{2029}").unwrap());

/// What begins every quoted line.
pub const QUOTE: &str = "> ";

/// `text` with `QUOTE` after every line break (and before its first
/// line if `first`): a turn's content as the flat text writes it, or a
/// fenced body.
pub fn quoted(text: &str, first: bool) -> String {
    let rest = BREAK.replace_all(text, |c: &regex::Captures| format!("{}{QUOTE}", &c[0]));
    match first {
        true => format!("{QUOTE}{rest}"),
        false => rest.into_owned(),
    }
}

/// `text` without the quote after each of its line breaks (and before its
/// first line if `first`); none where a line does not begin with one. A
/// text cut at a token boundary may end within a quote.
pub fn unquoted(text: &str, first: bool) -> Option<String> {
    let text = match first {
        true => text
            .strip_prefix(QUOTE)
            .or_else(|| QUOTE.starts_with(text).then_some(""))?,
        false => text,
    };
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for b in BREAK.find_iter(text) {
        if b.start() < from {
            return None;
        }
        out.push_str(&text[from..b.end()]);
        let after = &text[b.end()..];
        if after.starts_with(QUOTE) {
            from = b.end() + QUOTE.len();
        } else if QUOTE.starts_with(after) {
            return Some(out);
        } else {
            return None;
        }
    }
    out.push_str(&text[from..]);
    Some(out)
}

/// The rule by construction, read without any reading of spellings: in
/// the flat text, every line of a turn after its header, and every line
/// of a fenced text between its markers, begins with [`QUOTE`]; so no
/// byte of untrusted origin begins a line, whatever it spells.
fn no_untrusted_byte_begins_a_line(name: &str, pack: &ContextPack, origins: &[Origin]) {
    for (e, &origin) in pack.entries.iter().zip(origins) {
        let turn = origin == Origin::Request && e.section == Section::ConversationState;
        let fenced = origin != Origin::Request && e.trust == TrustTier::Untrusted;
        if turn {
            let Some((_, content)) = e.text.split_once("] ") else {
                panic!("{name}: {} has no header", e.id);
            };
            assert!(
                unquoted(content, false).is_some(),
                "{name}: a line of {} is not quoted: {:?}",
                e.id,
                e.text
            );
        }
        if fenced {
            let body = e
                .text
                .split_once('\n')
                .and_then(|(_, rest)| rest.rsplit_once("\n</untrusted-"))
                .map(|(body, _)| body);
            let body = body.unwrap_or_else(|| panic!("{name}: {} is not fenced", e.id));
            assert!(
                unquoted(body, true).is_some(),
                "{name}: a line of {} is not quoted: {:?}",
                e.id,
                e.text
            );
        }
    }
}
