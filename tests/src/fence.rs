//! An independent reading of the rendered context, as a model reads it,
//! written apart from the core's (`ctxpack_core`'s `fence` module): it
//! shares no code and no table with it. Its Unicode comes from ICU4X
//! (NFKD, case folding, Default_Ignorable_Code_Point, General_Category,
//! White_Space, Bidi_Mirrored), from the `confusables` crate's copy of
//! UTS #39 `confusables.txt` (Unicode 15) for look-alikes, and from
//! character names (`unicode_names2`) for what neither says: the symbols
//! drawn blank (`BRAILLE PATTERN BLANK`, `EGYPTIAN HIEROGLYPH FULL BLANK`,
//! `MUSICAL SYMBOL NULL NOTEHEAD`), the enclosed letters with no
//! decomposition (`NEGATIVE SQUARED LATIN CAPITAL LETTER S`, `REGIONAL
//! INDICATOR SYMBOL LETTER U`) and the pieces of brackets (`LEFT SQUARE
//! BRACKET UPPER CORNER`, `SQUARE IMAGE OF`). HTML entities are decoded
//! by `htmlize`'s full HTML5 table, as HTML does (the legacy ones without
//! a semicolon too). The core reads with unicode-security's confusables
//! (Unicode 18), unicode-normalization and regex-syntax's properties
//! instead.
//!
//! A text is read as:
//!
//! 1. decoded — entities, backslash and percent escapes, again and again
//!    until nothing changes;
//! 2. folded, character by character — removed if invisible (default
//!    ignorable, a control, a format character, a separator, white space,
//!    a mark that takes no space, a blank symbol); a spacing mark as its
//!    prototype where that is ASCII, else as nothing; else NFKD and case
//!    folded, and where that is not ASCII, its confusables prototype, or
//!    the letter its name says; a bracket if it is open punctuation (or a
//!    mirrored initial quote), reads as `<` or `[` (`(` excepted) or its
//!    name says it is a left bracket, likewise for closing ones.
//!
//! [`structures`] finds what in it passes for one of the rendered
//! context's structures: a fence marker (a bracket, punctuation, the word
//! `untrusted`), and at the start of a line a role header (`[user]`,
//! `[developer]`) or a citation head (`[source:`), and a chat format's
//! marker (`<|…|>`, `<start_of_turn>`, `[INST]`, `<s>`, `<think>`, …). A
//! line starts after a line break, or one spelt as `\n`, `\r` or an HTML
//! tag that breaks a line (`<br>`, `<p>`, `</p>`, `<div>`, `<li>`), and
//! after the quote marks of a quoted line (`> `). ctxpack's own have
//! exact forms:
//! `<untrusted-NONCE source="REF">`, `</untrusted-NONCE>`, `[source: REF]`,
//! `[role] `. [`check_pack`] holds a pack to the rule: every structure in
//! the flat text and the messages is ctxpack's own or lies in the
//! application's L0; untrusted host text lies inside a fence with the
//! pack's one nonce; references are escaped for the head they are
//! written in; a written text differs from what was given only by removed
//! control and tag characters and brackets replaced by `(`.

// Test support: a broken rule is a failed test, so it panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use confusables::Confusable;
use ctxpack_core::{ContextPack, Layer, Origin, Role, Section, TrustTier};
use icu_properties::props::{BidiMirrored, DefaultIgnorableCodePoint, GeneralCategory, WhiteSpace};
use icu_properties::{CodePointMapData, CodePointSetData};
use regex::Regex;
use std::sync::LazyLock;

mod pack;
pub use pack::{check_pack, fenced, is_turn_text, nonce, origins, outside, quoted, unquoted};

/// Where this reading's Unicode data and the core's disagree, and the
/// core's cannot know better: U+A7E2 is of Unicode 17, whose case mapping
/// ICU has and Rust's tables have not; U+1051C ELBASAN LETTER SHE is a `C`
/// in Unicode 15's confusables, which Unicode 18's dropped. The generator
/// leaves them out.
pub const DATA_DIFFERS: [char; 2] = ['\u{A7E2}', '\u{1051C}'];

/// Symbols a character folds to besides ASCII text.
pub const OPEN: char = '\u{1}';
pub const CLOSE: char = '\u{2}';

/// ctxpack's own markers, exactly.
static OPEN_MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^<untrusted-([0-9a-f]{8}) source="([^"<>\n]*)">"#).unwrap());
static CLOSE_MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^</untrusted-([0-9a-f]{8})>").unwrap());

/// One escape or entity of a text being decoded.
static ESCAPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"&(?:#[xX][0-9a-fA-F]+|#[0-9]+|[A-Za-z][A-Za-z0-9]*);?",
        r"|\\u\{[0-9a-fA-F]{1,8}\}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\x[0-9a-fA-F]{2}",
        r"|\\[0-7]{3}|\\[[:punct:]]|(?:%[0-9a-fA-F]{2})+"
    ))
    .unwrap()
});

/// What `e`, an escape or entity, stands for; `None` if nothing.
fn unescape(e: &str) -> Option<String> {
    let hex = |s: &str| u32::from_str_radix(s, 16).ok().and_then(char::from_u32);
    if e.starts_with('&') {
        let out = htmlize::unescape(e).into_owned();
        return (out != e).then_some(out);
    }
    if let Some(h) = e.strip_prefix("\\u{") {
        return hex(h.trim_end_matches('}')).map(String::from);
    }
    if let Some(h) = e
        .strip_prefix("\\u")
        .or_else(|| e.strip_prefix("\\U"))
        .or_else(|| e.strip_prefix("\\x"))
    {
        return hex(h).map(String::from);
    }
    if let Some(o) = e.strip_prefix('\\') {
        if o.len() == 3 && o.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            return u32::from_str_radix(o, 8)
                .ok()
                .and_then(char::from_u32)
                .map(String::from);
        }
        return Some(o.to_owned());
    }
    let bytes: Vec<u8> = e
        .split('%')
        .filter(|s| !s.is_empty())
        .map(|h| u8::from_str_radix(h, 16).unwrap())
        .collect();
    match String::from_utf8(bytes) {
        Ok(s) => Some(s),
        // Not UTF-8: its ASCII escapes alone.
        Err(_) => {
            let first = u8::from_str_radix(&e[1..3], 16).unwrap();
            first
                .is_ascii()
                .then(|| format!("{}{}", char::from(first), &e[3..]))
        }
    }
}

/// A character of a text as decoded, with the bytes of the text it stands
/// for.
type Spanned = (char, (usize, usize));

/// `text` decoded to a fixed point.
pub fn decoded(text: &str) -> Vec<Spanned> {
    let mut chars: Vec<Spanned> = text
        .char_indices()
        .map(|(i, c)| (c, (i, i + c.len_utf8())))
        .collect();
    loop {
        let s: String = chars.iter().map(|&(c, _)| c).collect();
        // The index in `chars` of each byte offset of `s`.
        let mut index = vec![0; s.len() + 1];
        for (k, (i, _)) in s.char_indices().enumerate() {
            index[i] = k;
        }
        index[s.len()] = chars.len();
        let mut out = Vec::with_capacity(chars.len());
        let mut copied = 0;
        let mut changed = false;
        for m in ESCAPE.find_iter(&s) {
            let Some(d) = unescape(m.as_str()) else {
                continue;
            };
            let (from, to) = (index[m.start()], index[m.end()]);
            out.extend_from_slice(&chars[copied..from]);
            let span = (chars[from].1.0, chars[to - 1].1.1);
            out.extend(d.chars().map(|c| (c, span)));
            copied = to;
            changed = true;
        }
        out.extend_from_slice(&chars[copied..]);
        chars = out;
        if !changed {
            return chars;
        }
    }
}

struct Unicode {
    nfkd: icu_normalizer::DecomposingNormalizerBorrowed<'static>,
    case: icu_casemap::CaseMapperBorrowed<'static>,
    ignorable: icu_properties::CodePointSetDataBorrowed<'static>,
    mirrored: icu_properties::CodePointSetDataBorrowed<'static>,
    white: icu_properties::CodePointSetDataBorrowed<'static>,
    category: icu_properties::CodePointMapDataBorrowed<'static, GeneralCategory>,
}

static UNICODE: LazyLock<Unicode> = LazyLock::new(|| Unicode {
    nfkd: icu_normalizer::DecomposingNormalizerBorrowed::new_nfkd(),
    case: icu_casemap::CaseMapperBorrowed::new(),
    ignorable: CodePointSetData::new::<DefaultIgnorableCodePoint>(),
    mirrored: CodePointSetData::new::<BidiMirrored>(),
    white: CodePointSetData::new::<WhiteSpace>(),
    category: CodePointMapData::<GeneralCategory>::new(),
});

/// Whether a model does not see `c`: a default ignorable, a control, a
/// format character, a separator, white space, a mark that takes no
/// space, or a symbol whose name says it is drawn blank (`BRAILLE PATTERN
/// BLANK`, `EGYPTIAN HIEROGLYPH FULL BLANK`, `MUSICAL SYMBOL NULL
/// NOTEHEAD`). (A spacing mark is drawn: see [`read`].)
pub fn invisible(c: char) -> bool {
    use GeneralCategory as G;
    let u = &*UNICODE;
    if u.ignorable.contains(c) || u.white.contains(c) {
        return true;
    }
    match u.category.get(c) {
        G::Control
        | G::Format
        | G::SpaceSeparator
        | G::LineSeparator
        | G::ParagraphSeparator
        | G::NonspacingMark
        | G::EnclosingMark => true,
        _ if c.is_ascii() => false,
        _ => name(c).is_some_and(|n| n.ends_with(" BLANK") || n.ends_with(" NULL NOTEHEAD")),
    }
}

/// `c`'s Unicode name.
fn name(c: char) -> Option<String> {
    unicode_names2::name(c).map(|n| n.to_string())
}

/// The letter an enclosed letter's name says it shows, for one with no
/// decomposition nor prototype: `NEGATIVE CIRCLED LATIN CAPITAL LETTER
/// S`, `NEGATIVE SQUARED …`, `REGIONAL INDICATOR SYMBOL LETTER U`.
fn named_letter(c: char) -> Option<char> {
    let n = name(c)?;
    let (head, letter) = n.rsplit_once(" LETTER ")?;
    let mut letters = letter.chars();
    let letter = letters.next().filter(char::is_ascii_uppercase)?;
    (letters.next().is_none() && (head.contains("LATIN") || head == "REGIONAL INDICATOR SYMBOL"))
        .then(|| letter.to_ascii_lowercase())
}

/// Whether `c`'s name says it is (a piece of) an opening bracket (`true`)
/// or a closing one (`false`): a left or right bracket or parenthesis
/// (`LEFT SQUARE BRACKET UPPER CORNER`, `RIGHT CURLY BRACKET MIDDLE
/// PIECE`, `LEFT SUBSTITUTION BRACKET`), whichever side it names first,
/// and the square image symbols `⊏` and `⊐`.
fn named_bracket(c: char) -> Option<bool> {
    let n = name(c)?;
    match n.as_str() {
        "SQUARE IMAGE OF" => return Some(true),
        "SQUARE ORIGINAL OF" => return Some(false),
        _ => {}
    }
    if !n.contains("BRACKET") && !n.contains("PARENTHESIS") {
        return None;
    }
    n.split([' ', '-']).find_map(|w| match w {
        "LEFT" => Some(true),
        "RIGHT" => Some(false),
        _ => None,
    })
}

/// Whether `c` breaks a line.
fn line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// What `c` reads as (see the module docs): nothing, a bracket, or text.
pub fn read(c: char) -> String {
    use GeneralCategory as G;
    if invisible(c) {
        return String::new();
    }
    let u = &*UNICODE;
    let category = u.category.get(c);
    let plain = |s: &str| -> String {
        let d = u.nfkd.normalize(s);
        let f = u.case.fold_string(&d);
        u.nfkd
            .normalize(&f)
            .chars()
            .filter(|&c| !invisible(c) && u.category.get(c) != G::SpacingMark)
            .collect()
    };
    if category == G::SpacingMark {
        // A spacing mark reads as its prototype, where that is ASCII
        // (`ം` as `o`, `ः` as `:`); else as nothing.
        let prototype = plain(&c.to_string().replace_confusable());
        return if prototype.is_ascii() {
            prototype
        } else {
            String::new()
        };
    }
    let mut text = plain(c.encode_utf8(&mut [0; 4]));
    if !text.is_ascii() {
        text = plain(&text.replace_confusable());
    }
    if !text.is_ascii()
        && let Some(letter) = named_letter(c)
    {
        return letter.to_string();
    }
    let mirrored = u.mirrored.contains(c);
    let named = if text == "(" || text == ")" {
        None
    } else {
        named_bracket(c)
    };
    if text != "("
        && (category == G::OpenPunctuation
            || (category == G::InitialPunctuation && mirrored)
            || text.starts_with(['<', '['])
            || (named == Some(true) && category != G::ClosePunctuation))
    {
        return OPEN.to_string();
    }
    if text != ")"
        && (category == G::ClosePunctuation
            || (category == G::FinalPunctuation && mirrored)
            || text.starts_with(['>', ']'])
            || named == Some(false))
    {
        return CLOSE.to_string();
    }
    text
}

/// A text as a model reads it: each symbol with the bytes it comes from,
/// and whether a line break comes before it (nothing visible between).
pub struct Reading {
    pub symbols: Vec<(char, (usize, usize), bool)>,
}

pub fn reading(text: &str) -> Reading {
    let mut symbols = Vec::new();
    let mut line_start = true;
    for (c, span) in decoded(text) {
        if line_break(c) {
            line_start = true;
            continue;
        }
        for s in read(c).chars() {
            symbols.push((s, span, line_start));
            // A quoted line (`> `) begins after its quote marks, and a
            // line break spelt out begins one.
            line_start = (line_start && s == CLOSE) || spelt_break(&symbols);
        }
    }
    Reading { symbols }
}

/// Whether `symbols` end with a line break spelt out: `\n` or `\r` (a JSON
/// string's escapes, read as text), or an HTML tag that breaks a line
/// (`<br>`, `<br/>`, `<p>`, `</p>`, `<div class="x">`, `<li>`; an opening
/// bracket may stand within it, as a defused one would).
fn spelt_break(symbols: &[(char, (usize, usize), bool)]) -> bool {
    let s = |k: usize| symbols[k].0;
    let n = symbols.len();
    if n >= 2 && matches!(s(n - 1), 'n' | 'r') && s(n - 2) == '\\' {
        return true;
    }
    if n < 3 || s(n - 1) != CLOSE {
        return false;
    }
    // The tag: from an opening bracket after the closing bracket before.
    for open in (0..n - 1).rev() {
        if s(open) == CLOSE {
            return false;
        }
        if s(open) == OPEN {
            let tag: String = (open + 1..n - 1).map(s).take(4).collect();
            let tag = tag.strip_prefix('/').unwrap_or(&tag);
            if ["br", "p", "div", "li"]
                .iter()
                .any(|name| tag.starts_with(name))
            {
                return true;
            }
        }
    }
    false
}

/// One structure found: the bytes from its opening bracket to the end of
/// what was matched, and what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Structure {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Marker,
    Role,
    Citation,
    Chat,
}

const ROLES: [&str; 5] = ["system", "user", "assistant", "tool", "developer"];
const CHAT_WORDS: [&str; 19] = [
    "start_of_turn",
    "end_of_turn",
    "inst",
    "sys",
    "system_prompt",
    "tool_calls",
    "available_tools",
    "tool_results",
    "tool_content",
    "s",
    "think",
    "bos",
    "eos",
    "tool_call",
    "tool_response",
    "fim_prefix",
    "fim_middle",
    "fim_suffix",
    "fim_pad",
];

/// Every structure in `text` (see the module docs).
pub fn structures(text: &str) -> Vec<Structure> {
    let r = reading(text);
    let s: Vec<char> = r.symbols.iter().map(|x| x.0).collect();
    let mut found = Vec::new();
    for i in 0..s.len() {
        if s[i] != OPEN || (i > 0 && r.symbols[i - 1].1 == r.symbols[i].1) {
            continue;
        }
        let at = |k: usize| r.symbols[k.min(s.len() - 1)].1.1;
        let starts = |from: usize, w: &str| {
            w.chars()
                .enumerate()
                .all(|(k, c)| s.get(from + k) == Some(&c))
        };
        let mut kind = None;
        let mut end = i;
        // A marker: punctuation, then the word.
        let mut j = i + 1;
        while j < s.len() && s[j].is_ascii_punctuation() && s[j] != '(' {
            j += 1;
        }
        if starts(j, "untrusted") {
            kind = Some(Kind::Marker);
            end = j + 9;
        }
        // A chat format's marker.
        if kind.is_none()
            && s.get(i + 1) == Some(&'|')
            && let Some(k) =
                (i + 2..s.len().min(i + 68)).find(|&k| matches!(s[k], '|' | OPEN | CLOSE))
            && s[k] == '|'
            && k > i + 2
            && s.get(k + 1) == Some(&CLOSE)
        {
            kind = Some(Kind::Chat);
            end = k + 1;
        }
        let slash = usize::from(s.get(i + 1) == Some(&'/'));
        for w in CHAT_WORDS {
            if kind.is_none()
                && starts(i + 1 + slash, w)
                && s.get(i + 1 + slash + w.len()) == Some(&CLOSE)
            {
                kind = Some(Kind::Chat);
                end = i + 1 + slash + w.len();
            }
        }
        if kind.is_none() && r.symbols[i].2 {
            for w in ROLES {
                if starts(i + 1, w) && s.get(i + 1 + w.len()) == Some(&CLOSE) {
                    kind = Some(Kind::Role);
                    end = i + 1 + w.len();
                }
            }
            if starts(i + 1, "source") && s.get(i + 7) == Some(&':') {
                kind = Some(Kind::Citation);
                end = i + 7;
            }
        }
        if let Some(kind) = kind {
            found.push(Structure {
                start: r.symbols[i].1.0,
                end: at(end),
                kind,
            });
        }
    }
    found
}

/// The fence markers in `text`.
pub fn markers(text: &str) -> Vec<Structure> {
    structures(text)
        .into_iter()
        .filter(|s| s.kind == Kind::Marker)
        .collect()
}

/// `text` with the opening bracket of every structure in it replaced by
/// `(`, and its control and tag characters removed: what the rule makes
/// of a host text, found by this reading. (The core may replace more: it
/// reads an entity it does not know as any character.)
pub fn defused(text: &str) -> String {
    let clean = stripped(text);
    let r = reading(&clean);
    let mut spans: Vec<(usize, usize)> = structures(&clean)
        .iter()
        .map(|m| r.symbols.iter().find(|s| s.1.0 == m.start).unwrap().1)
        .collect();
    spans.dedup();
    let mut out = String::with_capacity(clean.len());
    let mut copied = 0;
    for (from, to) in spans {
        out.push_str(&clean[copied..from]);
        out.push('(');
        copied = to;
    }
    out.push_str(&clean[copied..]);
    out
}

/// Whether the rule removes `c` from every text it writes: a control
/// character but tab, line feed and carriage return; a tag character.
fn removed(c: char) -> bool {
    (UNICODE.category.get(c) == GeneralCategory::Control && !matches!(c, '\t' | '\n' | '\r'))
        || ('\u{E0000}'..='\u{E007F}').contains(&c)
}

/// `text` without what `removed` says.
pub fn stripped(text: &str) -> String {
    text.chars().filter(|&c| !removed(c)).collect()
}

/// Whether `written` is `given` with only what the rule may change
/// changed: control and tag characters removed, and units — a character,
/// or an escape or entity (from a `&`, `\` or `%`) of at most 96 bytes —
/// replaced by one of
/// `replacements`. Nothing else of the text is lost.
pub fn only_escaped(given: &str, written: &str, replacements: &str) -> bool {
    let given = stripped(given);
    let g = given.as_bytes();
    let w = written.as_bytes();
    // Positions (in `given`, in `written`) reachable, explored in order.
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![(0usize, 0usize)];
    while let Some((i, j)) = stack.pop() {
        if !seen.insert((i, j)) {
            continue;
        }
        if i == g.len() && j == w.len() {
            return true;
        }
        if i < g.len() && j < w.len() && g[i] == w[j] {
            stack.push((i + 1, j + 1));
        }
        if let Some(r) = written.get(j..).and_then(|w| w.chars().next())
            && replacements.contains(r)
            && given.is_char_boundary(i)
        {
            // One character, or an escape (which begins with one of
            // these).
            let longest = match g.get(i) {
                Some(b'&' | b'\\' | b'%') => 96,
                _ => given[i..].chars().next().map_or(0, char::len_utf8),
            };
            for k in (i + 1..=g.len().min(i + longest)).filter(|&k| given.is_char_boundary(k)) {
                stack.push((k, j + r.len_utf8()));
            }
        }
    }
    false
}

/// Where a value is written: a marker's attribute, or a citation head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Head {
    Attribute,
    Citation,
}

/// What the `value` written in `head` holds that would end it (a bracket,
/// a line break, a control, and in an attribute a quote), if anything.
pub fn unescaped(head: Head, value: &str) -> Option<char> {
    decoded(value).into_iter().map(|(c, _)| c).find(|&c| {
        let r = read(c);
        r.contains([OPEN, CLOSE])
            || line_break(c)
            || UNICODE.category.get(c) == GeneralCategory::Control
            || (head == Head::Attribute && (r.contains('"') || r == "''"))
    })
}

#[cfg(test)]
mod tests;
