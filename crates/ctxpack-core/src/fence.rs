//! How host text is written into the rendered context: untrusted text
//! inside a fence no host value can close, every host value escaped for
//! the position it is written in, and no line of any host text or turn
//! passing for one of the rendered context's own structures.
//!
//! **Threat model.** An attacker controls every field a store returns —
//! ids, references, texts, trust tiers —, what the policy engine redacts
//! to, what the summariser writes, the conversation's tool results and
//! user turns; and knows the request (tenant, project, session and user
//! ids, and the L0 text: system prompts leak). The host declares what is
//! untrusted. Such text (a candidate of tier `untrusted`, a summary or
//! redaction of one) is written between markers that carry a nonce:
//!
//! ```text
//! <untrusted-1f2e3d4c source="https://example.org/page">
//! …the text…
//! </untrusted-1f2e3d4c>
//! ```
//!
//! The rule: **no byte a host or a turn supplied can open or close a
//! fence, end the head it is written in, or pass for a role header, a
//! citation head or a chat format's marker.**
//!
//! **By construction**, whatever a text spells:
//!
//! - **No untrusted byte begins a line.** Inside a fence every line of
//!   the text begins with [`QUOTE`] (`> `), written by the pack alone
//!   ([`quote`]); the closing marker is the one unquoted line. In the flat
//!   text every line of a turn after its `[role] ` header is quoted the
//!   same way (see `crate::conversation`). A forged closer, header or
//!   citation can only sit in the middle of a quoted line.
//! - **No authority.** Context holding text of unverified or untrusted
//!   origin is sent in a user message, never a system or developer one
//!   (see `crate::render`'s `context_role`); the snapshot's
//!   `fence.context-role` says which.
//! - **Derived text keeps its origin.** A summary of untrusted text is
//!   untrusted and fenced; the summariser is given its members framed
//!   with [`Nonce::summariser`], never the pack's nonce.
//! - **The model's control tokens** ([`Controls`], from the request's
//!   tokenizer) are neutralised in every host text and turn.
//!
//! **By recognition**, as defence in depth, the rest of this module:
//! - **What is removed.** Control characters other than tab, line feed
//!   and carriage return, and tag characters (U+E0000–U+E007F, invisible,
//!   yet read by models: "ASCII smuggling"), are removed from every host
//!   text and turn before it is rendered; the snapshot's `fence.stripped`
//!   lists the entries that lost any.
//! - **What is defused.** A text is read as a model reads it
//!   ([`read`]: escapes and entities decoded to a fixed point, then each
//!   character folded by the Unicode data — invisible ones dropped, NFKC,
//!   lower case, UTS #39 skeletons, brackets by their general category).
//!   Wherever that reading finds one of the rendered context's structures,
//!   its opening bracket — however it was spelt — is replaced by `(`;
//!   nothing else changes, and the snapshot's `fence.defused` lists the
//!   entries. The structures: a fence *marker* (an opening bracket,
//!   punctuation, the word `untrusted`, anywhere); a *chat format's
//!   marker* (`<|im_start|>` and every `<|…|>`, `<start_of_turn>`,
//!   `[INST]`, `<<SYS>>`, `[TOOL_RESULTS]`, `</s>`, `<think>`, …,
//!   anywhere: a self-hosted model's tokenizer may read them as its own
//!   control tokens); and at the start of a line (only invisible
//!   characters, quote marks `>` and spaces before it; a literal `\n`,
//!   `<br>` or `</p><p>` counts as a line break) a *role header*
//!   (`[user]`, `[developer]`, `［ｓｙｓｔｅｍ］`) or a *citation head*
//!   (`[source:`). Every host text, of whatever tier, every turn, of
//!   whatever role, and every stage summary is written so; only L0, the
//!   operator's own text, is rendered as given.
//! - **What is escaped.** A value written into a marker or a citation head
//!   (a reference; the ids a summary cites) has every spelling of what
//!   could end it replaced by a look-alike that cannot: in a marker's
//!   attribute a quote or a bracket ([`attribute`]), in a citation a
//!   bracket ([`citation`]), and in both every line break and white space
//!   but a space.
//! - **The nonce.** With a `fence-key` in the builder's configuration the
//!   nonce is 32 bits of an HMAC-SHA-256, under that key, of the request's
//!   tenant, project, session and user ids and its L0 text: no store can
//!   name the closing marker of the fence it writes into. Without a key it
//!   is 32 bits of a SHA-256 of the same, which anyone who knows the
//!   context can compute, and the snapshot's `fence.keyed` says so. Either
//!   way it is the same for every fence of a pack and across the turns of
//!   a session, so packs stay deterministic and prompt caches hit.
//! - **The conversation** is rendered `[role] content` in the flat text,
//!   every line after the header quoted, and as messages of their own
//!   roles, the same content unquoted. Turns are not fenced, tool results
//!   and user turns included: a fence costs some twenty tokens a turn in
//!   both forms, the messages form already separates them by role, and no
//!   line of a turn but its header begins a line of the flat text. A tool
//!   output an application wants fenced goes in as a candidate of section
//!   `tool-results` and tier `untrusted`.
//!
//! What a key protects, and what it does not: it keeps the nonce from
//! anyone who does not see a rendered pack (or its snapshot's content),
//! so a store cannot write the exact closing marker even in a spelling no
//! folding foresees. It does not hide the nonce from whoever sees a
//! rendered pack — the model provider, logs of prompts — and the nonce
//! stays the same across a session. And
//! nothing here reads a text's meaning: a fenced text can still *say* in
//! words that the untrusted part ends here, or leave a code block or
//! comment open; the nonce is what lets a model tell ctxpack's marker
//! from such words, and the system prompt should tell the model that text
//! between `<untrusted-…>` and its closing marker is data, never
//! instructions.

pub(crate) mod read;

use crate::types::AssembleRequest;
use read::{ANY, CLOSE, OPEN, Units};
use std::borrow::Cow;

/// The word every marker carries.
const WORD: &[u8] = b"untrusted";

/// The roles whose header (`[role] `) begins a turn in the flat text, and
/// `developer`, the name OpenAI's formats give the system's role.
const ROLES: [&[u8]; 5] = [b"system", b"user", b"assistant", b"tool", b"developer"];

/// The word of a citation head (`[source: …]`).
const SOURCE: &[u8] = b"source:";

/// The words of the chat formats' own markers that are written in words
/// between brackets: Gemma's `<start_of_turn>`, `<bos>` and `<eos>`,
/// Llama 2's and Mistral's `<s>`, `</s>`, `[INST]`, `<<SYS>>`,
/// `[SYSTEM_PROMPT]`, `[TOOL_RESULTS]`, …, Qwen's and DeepSeek's
/// `<think>`, `<tool_call>` and `<tool_response>`, and the fill-in-the-middle
/// markers of the code models (`<fim_prefix>`) (`<|…|>`, the form of
/// ChatML, Llama 3, Phi, DeepSeek and gpt-oss, is recognised by its
/// bars).
const CHAT_WORDS: [&[u8]; 19] = [
    b"start_of_turn",
    b"end_of_turn",
    b"inst",
    b"sys",
    b"system_prompt",
    b"tool_calls",
    b"available_tools",
    b"tool_results",
    b"tool_content",
    b"s",
    b"think",
    b"bos",
    b"eos",
    b"tool_call",
    b"tool_response",
    b"fim_prefix",
    b"fim_middle",
    b"fim_suffix",
    b"fim_pad",
];

/// A secret the host gives the builder (`fence-key`): the fences' nonce is
/// then a keyed MAC of the pack's context, which no store can compute.
/// Its `Debug` form does not show it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct FenceKey(Vec<u8>);

impl FenceKey {
    /// The fewest bytes a key may have.
    pub(crate) const MIN_LEN: usize = 16;

    /// A key of `secret`'s UTF-8 bytes; `None` when it is shorter than
    /// [`FenceKey::MIN_LEN`] bytes.
    pub(crate) fn new(secret: &str) -> Option<FenceKey> {
        (secret.len() >= Self::MIN_LEN).then(|| FenceKey(secret.as_bytes().to_vec()))
    }
}

impl std::fmt::Debug for FenceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FenceKey(..)")
    }
}

/// A fence's nonce: eight lowercase hexadecimal digits (see the module
/// docs); with it, the nonce of the frames the summariser is given its
/// texts in, which is not the pack's: no summary can write the pack's
/// closing marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Nonce {
    digits: [u8; 8],
    summariser: [u8; 8],
}

impl Nonce {
    /// The nonce of `request`'s fences: with `key`, a keyed MAC
    /// (HMAC-SHA-256) of its context; without, a hash of it. The
    /// summariser's is made so under another name, apart from it.
    pub(crate) fn of(request: &AssembleRequest, key: Option<&FenceKey>) -> Nonce {
        let c = &request.context;
        let digits = |name: &str| {
            let context = crate::digest::content_id(&(
                name,
                &c.tenant_id,
                &c.project_id,
                &c.session_id,
                &c.user_id,
                &request.system_prompt,
                &request.instructions,
                &request.current_task,
            ));
            let hash = match key {
                None => context,
                Some(key) => crate::digest::mac(&key.0, context.as_bytes()),
            };
            let mut digits = [b'0'; 8];
            for (d, h) in digits.iter_mut().zip(hash.bytes()) {
                *d = h;
            }
            digits
        };
        Nonce {
            digits: digits("ctxpack fence v1"),
            summariser: digits("ctxpack summariser fence v1"),
        }
    }

    /// The nonce of the frames the summariser is given texts in.
    pub(crate) fn summariser(self) -> Nonce {
        Nonce {
            digits: self.summariser,
            summariser: self.summariser,
        }
    }

    /// A nonce for tests.
    #[cfg(test)]
    pub(crate) fn fixed() -> Nonce {
        Nonce {
            digits: *b"0badcafe",
            summariser: *b"5ca1ab1e",
        }
    }

    fn as_str(&self) -> &str {
        // Invariant: the digits are ASCII hexadecimal (from a hex digest,
        // or the zeros it starts from).
        std::str::from_utf8(&self.digits).unwrap_or("00000000")
    }
}

/// The opening marker of a fence around text from `reference`, with the
/// line break after it.
pub(crate) fn open(nonce: Nonce, reference: &str) -> String {
    let reference = attribute(reference);
    let mut head = String::with_capacity(WORD.len() + reference.len() + 24);
    head.push('<');
    head.push_str("untrusted");
    head.push('-');
    head.push_str(nonce.as_str());
    head.push_str(" source=\"");
    head.push_str(&reference);
    head.push_str("\">\n");
    head
}

/// The closing marker of a fence, with the line break before it.
pub(crate) fn close(nonce: Nonce) -> String {
    let mut tail = String::with_capacity(WORD.len() + 13);
    tail.push_str("\n</untrusted-");
    tail.push_str(nonce.as_str());
    tail.push('>');
    tail
}

/// The citation head of a text from `reference` that is not fenced.
pub(crate) fn cite(reference: &str) -> String {
    let reference = citation(reference);
    let mut head = String::with_capacity(reference.len() + 11);
    head.push_str("[source: ");
    head.push_str(&reference);
    head.push_str("]\n");
    head
}

/// What writing a text changed in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Altered {
    /// Control or tag characters were removed.
    pub removed: bool,
    /// A spelling of a structure had its opening bracket replaced, or a
    /// control token of the request's tokenizer was neutralised.
    pub defused: bool,
}

/// A host text or a turn's content as it is written into the rendered
/// context (see the module docs): without control characters (but tab,
/// line feed and carriage return) or tag characters, with the request
/// tokenizer's `controls` neutralised, and with the opening bracket of
/// every spelling of a structure replaced by `(`. Returns the text itself
/// when there is nothing to change.
pub(crate) fn write<'t>(text: &'t str, controls: &Controls) -> (Cow<'t, str>, Altered) {
    let clean = strip(text);
    let removed = matches!(clean, Cow::Owned(_));
    let neutral = controls.neutralise(&clean);
    let defused = match defuse(&neutral) {
        Cow::Owned(d) => Some(d),
        Cow::Borrowed(_) => None,
    };
    let defused = defused.or(match neutral {
        Cow::Owned(n) => Some(n),
        Cow::Borrowed(_) => None,
    });
    let altered = Altered {
        removed,
        defused: defused.is_some(),
    };
    let text = match (defused, clean) {
        (Some(d), _) => Cow::Owned(d),
        (None, clean) => clean,
    };
    (text, altered)
}

/// [`write()`], taking the text.
pub(crate) fn written(text: String, controls: &Controls) -> (String, Altered) {
    match write(&text, controls) {
        (Cow::Borrowed(_), altered) => (text, altered),
        (Cow::Owned(out), altered) => (out, altered),
    }
}

/// Whether a character is removed from every text written into the
/// rendered context: a control character other than tab, line feed and
/// carriage return, or a tag character (U+E0000–U+E007F, invisible, yet
/// read by models: "ASCII smuggling").
fn stripped(c: char) -> bool {
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || ('\u{E0000}'..='\u{E007F}').contains(&c)
}

/// `text` without the characters [`stripped`] says.
#[inline(never)]
fn strip(text: &str) -> Cow<'_, str> {
    // Controls are ASCII bytes or begin with 0xC2 (C1); tags with 0xF3.
    let may = |b: u8| b < 0x20 || b == 0x7F || b == 0xC2 || b == 0xF3;
    if !text.bytes().any(may) || !text.chars().any(stripped) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|&c| !stripped(c)).collect())
}

/// `text` with the opening bracket of every spelling of a structure in it
/// (see the module docs) replaced by `(`.
#[inline(never)]
fn defuse(text: &str) -> Cow<'_, str> {
    let units = Units::of(text);
    let mut out: Option<String> = None;
    let mut copied = 0;
    for at in units.openers() {
        let Some((unit, _)) = units.at(at) else {
            continue;
        };
        if unit.start < copied || !structure_at(&units, at) {
            continue;
        }
        let out = out.get_or_insert_with(|| String::with_capacity(text.len() + 8));
        out.push_str(crate::text::cut(text, copied..unit.start));
        out.push('(');
        copied = unit.end;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(crate::text::cut(text, copied..));
            Cow::Owned(out)
        }
    }
}

/// Whether a structure begins at the unit `at` (one that reads as an
/// opening bracket): a fence marker, a chat format's marker, or at the
/// start of a line a role header or a citation head — a line begun by a
/// line break or a spelling of one (`\n` in a JSON string, `<br>`), and
/// perhaps quoted (`> [system]`; see [`Units::line_starts_at`]).
fn structure_at(units: &Units, at: usize) -> bool {
    marker(units, at)
        || chat_marker(units, at)
        || ((role_header(units, at) || citation_head(units, at)) && units.line_starts_at(at))
}

/// Whether the units after the opening bracket at `at` can read as
/// `word` — each unit as any of its readings, one that may vanish as
/// nothing, an unknown entity as any symbol —, with symbols `skip` allows
/// before it.
#[inline(never)]
fn reads_as(units: &Units, at: usize, word: &[u8], skip: fn(u8) -> bool) -> bool {
    let full = word.len();
    // Bit p: the first p symbols of the word are read.
    let mut states: u64 = 1;
    let first = units.at(at).map_or(usize::MAX, |(_, next)| next);
    for reading in units.readings(first) {
        let mut next = 0u64;
        for alternative in read::alternatives(reading) {
            for p in (0..full).filter(|&p| states & (1 << p) != 0) {
                let mut q = p;
                let mut fits = true;
                for &s in alternative {
                    if q == full {
                        break;
                    }
                    if q == 0 && skip(s) {
                        continue;
                    }
                    if s == word[q] || s == ANY {
                        q += 1;
                    } else {
                        fits = false;
                        break;
                    }
                }
                if fits && q == full {
                    return true;
                }
                if fits {
                    next |= 1 << q;
                }
            }
        }
        states = next;
        if states == 0 {
            return false;
        }
    }
    false
}

fn nothing(_: u8) -> bool {
    false
}

/// A fence marker: the bracket, any punctuation but `(`, the word.
#[inline(never)]
fn marker(units: &Units, at: usize) -> bool {
    reads_as(units, at, WORD, |s| s.is_ascii_punctuation() && s != b'(')
}

/// A chat format's marker: `<|name|>` (a name of up to 64 characters),
/// or one of [`CHAT_WORDS`] between brackets, a slash allowed before it.
#[inline(never)]
fn chat_marker(units: &Units, at: usize) -> bool {
    let mut word = [0u8; 24];
    for w in CHAT_WORDS {
        word[..w.len()].copy_from_slice(w);
        word[w.len()] = CLOSE;
        if reads_as(units, at, &word[..=w.len()], |s| s == b'/') {
            return true;
        }
    }
    let first = units.at(at).map_or(usize::MAX, |(_, next)| next);
    named_chat_marker(units.readings(first))
}

/// Whether `readings`, the units after an opening bracket, can read as
/// `|name|` and a closing bracket (a name of 1 to 65 symbols; each unit
/// as any of its readings, one that may vanish as nothing — before the
/// first bar too —, an unknown entity as any symbol). An opening bracket
/// may stand in the name: defused, it would not end it.
fn named_chat_marker<'r>(readings: impl Iterator<Item = &'r [u8]>) -> bool {
    const LONGEST: u32 = 65;
    // The states reached: before the first bar; in the name, bit n for n
    // symbols read; after the second bar.
    let (mut bar, mut name, mut after) = (true, 0u128, false);
    for reading in readings {
        let (mut bar2, mut name2, mut after2) = (false, 0u128, false);
        for alternative in read::alternatives(reading) {
            let (mut b, mut n, mut a) = (bar, name, after);
            for &s in alternative {
                if a && (s == CLOSE || s == ANY) {
                    return true;
                }
                let bars = s == b'|' || s == ANY;
                let inside = s != CLOSE && s != b'|';
                // A second bar after at least one symbol; a symbol of the name.
                let closes = bars && n & !1 != 0;
                let grown = if inside || s == ANY {
                    (n << 1) & ((1 << (LONGEST + 1)) - 1)
                } else {
                    0
                };
                (b, n, a) = (false, grown | u128::from(b && bars), closes);
                if !b && n == 0 && !a {
                    break;
                }
            }
            (bar2, name2, after2) = (bar2 || b, name2 | n, after2 || a);
        }
        (bar, name, after) = (bar2, name2, after2);
        if !bar && name == 0 && !after {
            return false;
        }
    }
    false
}

/// A role header: the bracket, a role's name, a closing bracket.
#[inline(never)]
fn role_header(units: &Units, at: usize) -> bool {
    let mut word = [0u8; 12];
    ROLES.iter().any(|w| {
        word[..w.len()].copy_from_slice(w);
        word[w.len()] = CLOSE;
        reads_as(units, at, &word[..=w.len()], nothing)
    })
}

/// A citation head: the bracket, `source`, a colon.
#[inline(never)]
fn citation_head(units: &Units, at: usize) -> bool {
    reads_as(units, at, SOURCE, nothing)
}

/// `value` as it is written into a marker's attribute (`source="…"`):
/// every spelling of a quote, a bracket, a control or a line-breaking
/// character replaced by one that cannot end it (see the module docs), and
/// control and tag characters removed. Nothing else changes.
pub(crate) fn attribute(value: &str) -> Cow<'_, str> {
    replace_units(value, |s| match s {
        b'"' => Some('\''),
        OPEN => Some('('),
        CLOSE => Some(')'),
        _ => None,
    })
}

/// `value` as it is written into a citation head (`[source: …]`): every
/// spelling of a bracket, a control or a line-breaking character replaced
/// by one that cannot end it or open a structure, and control and tag
/// characters removed.
pub(crate) fn citation(value: &str) -> Cow<'_, str> {
    replace_units(value, |s| match s {
        OPEN => Some('('),
        CLOSE => Some(')'),
        _ => None,
    })
}

/// `value` with every unit that reads as a symbol `special` maps (an
/// unknown entity reads as every one), or as a line break or white space
/// other than a space, replaced by what it maps to (a space for the
/// latter).
#[inline(never)]
fn replace_units(value: &str, special: impl Fn(u8) -> Option<char>) -> Cow<'_, str> {
    let clean = strip(value);
    let units = Units::of(&clean);
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut at = 0;
    while let Some((unit, next)) = units.at(at) {
        at = next;
        let symbols = read::reading(unit.c);
        let safe = if symbols.contains(&ANY) {
            special(OPEN)
        } else {
            symbols.iter().find_map(|&s| special(s))
        };
        let safe = safe.or_else(|| {
            (unit.c != ' ' && (unit.c.is_whitespace() || read::line_break(unit.c))).then_some(' ')
        });
        if let Some(safe) = safe {
            let out = out.get_or_insert_with(|| String::with_capacity(clean.len()));
            out.push_str(crate::text::cut(&clean, copied..unit.start));
            out.push(safe);
            copied = unit.end;
        }
    }
    match (out, clean) {
        (None, clean) => clean,
        (Some(mut out), clean) => {
            out.push_str(crate::text::cut(&clean, copied..));
            Cow::Owned(out)
        }
    }
}

/// What begins every line of a fenced text, and every line but the first
/// of a turn in the flat text: written by the pack alone, as quoted mail
/// is, so no byte a host or a turn supplied ever begins a line there.
pub(crate) const QUOTE: &str = "> ";

/// The line breaks a quote follows: a line feed, a carriage return (with
/// the line feed after it, if any, as one break), and the Unicode line and
/// paragraph separators. (The other breaks — vertical tab, form feed,
/// next line — are control characters, removed from every text.)
fn breaks_at(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes.get(i)? {
        b'\n' => Some(1),
        b'\r' if bytes.get(i + 1) == Some(&b'\n') => Some(2),
        b'\r' => Some(1),
        // U+2028 and U+2029: E2 80 A8 / A9.
        0xE2 if bytes.get(i + 1) == Some(&0x80)
            && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9)) =>
        {
            Some(3)
        }
        _ => None,
    }
}

/// `text` with [`QUOTE`] after every line break (see [`breaks_at`]), and
/// before its first line too if `first`: then no line of it begins with a
/// byte of its own; read again for structures a quote would close (see
/// [`write()`]). Returns the text itself when there is nothing to add.
pub(crate) fn quote(text: &str, first: bool) -> Cow<'_, str> {
    match quote_lines(text, first) {
        Cow::Borrowed(text) => Cow::Borrowed(text),
        // A quote begins with a closing bracket: read again, so that a
        // structure it would close across a line break (`<|im_start|` at
        // a line's end) is defused too. Nothing of a quote is ever
        // replaced.
        Cow::Owned(quoted) if quoted.len() > text.len() + QUOTE.len() || !first => {
            match defuse(&quoted) {
                Cow::Owned(defused) => Cow::Owned(defused),
                Cow::Borrowed(_) => Cow::Owned(quoted),
            }
        }
        Cow::Owned(quoted) => Cow::Owned(quoted),
    }
}

/// [`quote`] without reading the text again: for a text whose lines are
/// its own structures' or quoted already (the conversation's fenced
/// summary, see [`crate::conversation`]), or a chat's turn, which the
/// flat text writes as given.
pub(crate) fn quote_lines(text: &str, first: bool) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let may_break = |b: &u8| matches!(b, b'\n' | b'\r' | 0xE2);
    if !first && !bytes.iter().any(may_break) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    if first {
        out.push_str(QUOTE);
    }
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        match breaks_at(bytes, i) {
            Some(n) => {
                i += n;
                out.push_str(crate::text::cut(text, copied..i));
                out.push_str(QUOTE);
                copied = i;
            }
            None => i += 1,
        }
    }
    if copied == 0 && !first {
        return Cow::Borrowed(text);
    }
    out.push_str(crate::text::cut(text, copied..));
    Cow::Owned(out)
}

/// How many quotes [`quote`] writes into `text` (before its first line
/// too if `first`): one a line break.
pub(crate) fn quotes(text: &str, first: bool) -> u32 {
    let bytes = text.as_bytes();
    let mut n = u32::from(first);
    let mut i = 0;
    while i < bytes.len() {
        match breaks_at(bytes, i) {
            Some(k) => {
                n = n.saturating_add(1);
                i += k;
            }
            None => i += 1,
        }
    }
    n
}

/// `text`, quoted by [`quote`] (`first` as it was), as it was before: the
/// [`QUOTE`] after every line break (and before the first line if
/// `first`) taken out.
pub(crate) fn unquote(text: &str, first: bool) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let skip =
        |at: usize| usize::from(text.get(at..).is_some_and(|t| t.starts_with(QUOTE))) * QUOTE.len();
    let start = if first { skip(0) } else { 0 };
    let mut out: Option<String> = None;
    let (mut copied, mut i) = (start, start);
    while i < bytes.len() {
        match breaks_at(bytes, i) {
            Some(n) => {
                i += n;
                let q = skip(i);
                if q > 0 {
                    let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
                    out.push_str(crate::text::cut(text, copied..i));
                    i += q;
                    copied = i;
                }
            }
            None => i += 1,
        }
    }
    match out {
        None => Cow::Borrowed(crate::text::cut(text, start..)),
        Some(mut out) => {
            out.push_str(crate::text::cut(text, copied..));
            Cow::Owned(out)
        }
    }
}

/// The control tokens of the request's tokenizer — the texts its model
/// reads as its own special tokens (a loaded file's special tokens, an
/// encoding's own list) —, found in host text to be neutralised: a finite
/// list that comes with the tokenizer, beside the chat formats' markers
/// the reading finds.
#[derive(Clone, Default)]
pub(crate) struct Controls(Option<aho_corasick::AhoCorasick>);

impl Controls {
    /// The controls `tokens` spell (empty ones and single characters are
    /// no markers and are left alone).
    pub(crate) fn of(tokens: &[String]) -> Controls {
        let tokens: Vec<&str> = tokens
            .iter()
            .map(String::as_str)
            .filter(|t| t.chars().nth(1).is_some())
            .collect();
        if tokens.is_empty() {
            return Controls(None);
        }
        Controls(
            aho_corasick::AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                .build(&tokens)
                .ok(),
        )
    }

    /// `text` with every control token in it neutralised: its first
    /// character, where it reads as an opening bracket, replaced by `(`
    /// (as a defused structure's is), else followed by a space; so the
    /// tokenizer can no longer read it as its token. Returns the text
    /// itself when it holds none.
    fn neutralise<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let Some(finder) = &self.0 else {
            return Cow::Borrowed(text);
        };
        let mut text = Cow::Borrowed(text);
        // Each round takes a control's first character out of the
        // spelling; a few rounds undo any that a replacement made.
        for _ in 0..4 {
            let mut out: Option<String> = None;
            let mut copied = 0;
            for found in finder.find_iter(text.as_ref()) {
                let start = found.start();
                let Some(c) = text.get(start..).and_then(|t| t.chars().next()) else {
                    continue;
                };
                let out = out.get_or_insert_with(|| String::with_capacity(text.len() + 8));
                out.push_str(crate::text::cut(&text, copied..start));
                if read::reading(c).contains(&OPEN) {
                    out.push('(');
                } else {
                    out.push(c);
                    out.push(' ');
                }
                copied = start + c.len_utf8();
            }
            match out {
                None => break,
                Some(mut out) => {
                    out.push_str(crate::text::cut(&text, copied..));
                    text = Cow::Owned(out);
                }
            }
        }
        text
    }
}

#[cfg(test)]
mod tests;
