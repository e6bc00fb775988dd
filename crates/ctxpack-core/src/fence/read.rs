//! How a model reads a host text, for finding what in it would pass for
//! one of the rendered context's own structures (see [`crate::fence`]).
//!
//! A text is read in two steps:
//!
//! 1. **Decoded**: HTML entities (`&lt;`, `&#0000060;`, `&#x3C`),
//!    backslash escapes (`\u003c`, `\u{3c}`, `\U0000003C`, `\x3c`, `\074`,
//!    `\<`) and percent escapes (`%3C`, `%EF%BC%9C`) are decoded, and what
//!    they decode to is decoded again, to a fixed point: `&amp;lt;`,
//!    `%26lt;` and `&&#108;t;` all read as `<`. A named entity this
//!    reading does not know (HTML has some two thousand) reads as any
//!    character at all.
//! 2. **Folded**, one decoded character at a time, from the Unicode data
//!    (`build.rs` writes the table from regex-syntax's, unicode-normalization's
//!    and unicode-security's): what a model does not see — default-ignorable
//!    code points, controls, format and tag characters, spaces and
//!    separators, combining marks, and symbols whose UTS #39 prototype is a
//!    space (U+2800 BRAILLE PATTERN BLANK) — reads as nothing; open and
//!    close punctuation (and the mirrored quotation marks `«`, `‹`), and
//!    whatever reads as `<`, `[`, `>` or `]`, as an opening or closing
//!    bracket; anything else as its NFKC form in lower case, and where that
//!    is not ASCII, as its UTS #39 skeleton (`ꭇ` reads as `r`, `℮` as `e`).
//!    ASCII reads as itself in lower case. A character that reads as
//!    nothing ASCII reads as something other than every structure's
//!    letters.
//!
//! ASCII `(` and `)` are no brackets in this reading: they are what a
//! defused bracket is replaced with.
//!
//! A character may read in more than one way (`Ι` as `i` or `l`, `¸` as
//! `,` or nothing): its reading lists each, apart by [`OR`], and a
//! structure is found if any choice of them spells it.

include!(concat!(env!("OUT_DIR"), "/fold.rs"));

/// A symbol a unit reads as: a lowercase ASCII byte, or one of these.
pub(crate) const OPEN: u8 = 1;
/// A closing bracket.
pub(crate) const CLOSE: u8 = 2;
/// Something that is no letter or bracket of any structure.
pub(crate) const OTHER: u8 = 3;
/// Any one symbol: an entity this reading does not know.
pub(crate) const ANY: u8 = 4;
/// What stands between the alternative readings of one character (`Ι`
/// reads as `i` or `l`; `¸` as `,` or nothing).
pub(crate) const OR: u8 = 5;

/// The alternative readings of a reading: each a run of symbols, the
/// empty run for nothing.
pub(crate) fn alternatives(reading: &[u8]) -> impl Iterator<Item = &[u8]> {
    reading.split(|&b| b == OR)
}

/// Whether a unit may read as nothing.
pub(crate) fn may_vanish(reading: &[u8]) -> bool {
    alternatives(reading).any(<[u8]>::is_empty)
}

/// The character an unknown named entity decodes to (a noncharacter, which
/// no text holds as itself: a lone one reads as [`OTHER`]).
const UNKNOWN_ENTITY: char = '\u{FDD0}';

/// One unit of a text: a character, or an escape or entity that decodes to
/// one, with the bytes of the text it spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub c: char,
    pub start: usize,
    pub end: usize,
}

/// A text as its units: the characters themselves, or (when it holds
/// anything that may begin an escape) its decoded units.
pub(crate) enum Units<'t> {
    Raw(&'t str),
    Decoded(Vec<Unit>),
}

impl<'t> Units<'t> {
    pub(crate) fn of(text: &'t str) -> Self {
        if memchr::memchr3(b'&', b'\\', b'%', text.as_bytes()).is_none() {
            Units::Raw(text)
        } else {
            Units::Decoded(decode(text))
        }
    }

    /// The unit at `at` (a byte offset of a raw text, an index of a
    /// decoded one) and where the next begins.
    pub(crate) fn at(&self, at: usize) -> Option<(Unit, usize)> {
        match self {
            Units::Raw(text) => {
                let c = text.get(at..)?.chars().next()?;
                let end = at + c.len_utf8();
                Some((Unit { c, start: at, end }, end))
            }
            Units::Decoded(units) => units.get(at).map(|&u| (u, at + 1)),
        }
    }

    /// The unit before `at`, and where it begins.
    fn before(&self, at: usize) -> Option<(Unit, usize)> {
        match self {
            Units::Raw(text) => {
                let c = text.get(..at)?.chars().next_back()?;
                let start = at - c.len_utf8();
                Some((Unit { c, start, end: at }, start))
            }
            Units::Decoded(units) => {
                let i = at.checked_sub(1)?;
                units.get(i).map(|&u| (u, i))
            }
        }
    }

    /// Where each unit that may read as an opening bracket is, in order.
    pub(crate) fn openers(&self) -> Vec<usize> {
        match self {
            Units::Raw(text) => text
                .bytes()
                .enumerate()
                .filter(|&(i, b)| OPEN_LEAD[usize::from(b)] && text.is_char_boundary(i))
                .map(|(i, _)| i)
                .filter(|&i| self.at(i).is_some_and(|(u, _)| opens(u.c)))
                .collect(),
            Units::Decoded(units) => (0..units.len()).filter(|&i| opens(units[i].c)).collect(),
        }
    }

    /// Whether the unit at `at` begins a line: only units that read as
    /// nothing stand between it and a line break (decoded or not) or the
    /// start of the text.
    pub(crate) fn line_starts_at(&self, mut at: usize) -> bool {
        while let Some((u, before)) = self.before(at) {
            if line_break(u.c) {
                return true;
            }
            if !may_vanish(reading(u.c)) {
                return false;
            }
            at = before;
        }
        true
    }

    /// The readings of the units from `at` on.
    pub(crate) fn readings(&self, mut at: usize) -> impl Iterator<Item = &'static [u8]> + '_ {
        std::iter::from_fn(move || {
            let (u, next) = self.at(at)?;
            at = next;
            Some(reading(u.c))
        })
    }
}

/// Whether `c` may read as an opening bracket.
fn opens(c: char) -> bool {
    alternatives(reading(c)).any(|a| matches!(a.first(), Some(&(OPEN | ANY))))
}

/// Whether `c` breaks a line.
pub(crate) fn line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// What `c` reads as: its symbols (see the module docs), none for what a
/// model does not see.
pub(crate) fn reading(c: char) -> &'static [u8] {
    if c.is_ascii() {
        let b = c as u8;
        return &ASCII[usize::from(b)..usize::from(b) + 1]
            [..usize::from(ASCII_LEN[usize::from(b)])];
    }
    if c == UNKNOWN_ENTITY {
        return &[ANY];
    }
    let cp = u32::from(c);
    if unicode_normalization::char::is_combining_mark(c) || removed(cp) {
        return &[];
    }
    let at = |r: usize| READING_AT.get(r).map(|&a| usize::from(a));
    let reading = read_index(cp)
        .and_then(|i| READ_AS.get(i))
        .and_then(|&r| Some((at(usize::from(r))?, at(usize::from(r) + 1)?)))
        .and_then(|(from, to)| READINGS.as_bytes().get(from..to));
    reading.unwrap_or(&[OTHER])
}

/// Where `cp` is among the code points the table reads (see `build.rs`).
fn read_index(cp: u32) -> Option<usize> {
    let block = READ_INDEX
        .partition_point(|&(first, _)| first <= cp)
        .checked_sub(1)?;
    let (mut at_cp, offset) = READ_INDEX[block];
    let mut offset = usize::from(offset);
    let mut k = block * 64;
    // The block's first entry is where the index says; step past it.
    offset += if READ_DELTAS.get(offset) == Some(&0) {
        4
    } else {
        1
    };
    loop {
        if at_cp == cp {
            return Some(k);
        }
        if at_cp > cp || k + 1 >= READ_AS.len() {
            return None;
        }
        k += 1;
        match *READ_DELTAS.get(offset)? {
            0 => {
                let b = READ_DELTAS.get(offset + 1..offset + 4)?;
                at_cp = u32::from_le_bytes([b[0], b[1], b[2], 0]);
                offset += 4;
            }
            d => {
                at_cp += u32::from(d);
                offset += 1;
            }
        }
    }
}

fn removed(cp: u32) -> bool {
    let i = REMOVED.partition_point(|&(_, end)| end < cp);
    REMOVED.get(i).is_some_and(|&(start, _)| start <= cp)
}

/// Each ASCII character's reading: lower case; brackets; nothing for
/// controls and spaces.
static ASCII: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = match b as u8 {
            b'<' | b'[' | b'{' => OPEN,
            b'>' | b']' | b'}' => CLOSE,
            c => c.to_ascii_lowercase(),
        };
        b += 1;
    }
    t
};

/// How many symbols each ASCII character reads as: none for controls and
/// spaces.
static ASCII_LEN: [u8; 128] = {
    let mut t = [1u8; 128];
    let mut b = 0;
    while b < 128 {
        if b < 0x21 || b == 0x7F {
            t[b] = 0;
        }
        b += 1;
    }
    t
};

/// `text`'s units, decoded to a fixed point (see the module docs). One
/// pass: a unit whose escape is still open waits on the stack, and what an
/// escape decodes to is read again as the next character of the escape
/// around it, or as the start of a new one.
pub(crate) fn decode(text: &str) -> Vec<Unit> {
    let mut d = Decoder {
        out: Vec::with_capacity(text.len()),
        frames: Vec::new(),
    };
    for (start, c) in text.char_indices() {
        d.feed(Unit {
            c,
            start,
            end: start + c.len_utf8(),
        });
    }
    d.finish();
    d.out
}

/// An escape being read: where in the output its first unit is.
struct Frame {
    at: usize,
    state: Escape,
}

struct Decoder {
    out: Vec<Unit>,
    frames: Vec<Frame>,
}

impl Decoder {
    fn feed(&mut self, unit: Unit) {
        // What is still to be fed, the next last.
        let mut queue = vec![unit];
        while let Some(u) = queue.pop() {
            let Some(frame) = self.frames.last_mut() else {
                self.push(u);
                continue;
            };
            let name = &self.out[frame.at + 1..];
            match frame.state.step(u.c, name) {
                Step::More(state) => {
                    frame.state = state;
                    self.out.push(u);
                }
                Step::Done(c) => {
                    let at = frame.at;
                    self.frames.pop();
                    queue.push(self.reduce(at, c, u.end));
                }
                Step::DoneBefore(c, name) => {
                    // The escape is its first character and `name` more;
                    // what it read after them is read again.
                    let at = frame.at;
                    self.frames.pop();
                    let rest = self.out.split_off((at + 1 + name).min(self.out.len()));
                    let end = self.out.last().map_or(u.start, |l| l.end);
                    let reduced = self.reduce(at, c, end);
                    queue.push(u);
                    queue.extend(rest.into_iter().rev());
                    queue.push(reduced);
                }
                Step::Fail if special(u.c) => self.push(u),
                Step::Fail => {
                    // Every escape open below waited on this one.
                    self.frames.clear();
                    self.out.push(u);
                }
            }
        }
    }

    /// Appends `u`, opening an escape if it may begin one.
    fn push(&mut self, u: Unit) {
        self.out.push(u);
        if let Some(state) = Escape::start(u.c) {
            self.frames.push(Frame {
                at: self.out.len() - 1,
                state,
            });
        }
    }

    /// Replaces the units from `at` on by `c`, spanning to `end`.
    fn reduce(&mut self, at: usize, c: char, end: usize) -> Unit {
        let start = self.out.get(at).map_or(end, |u| u.start);
        self.out.truncate(at);
        Unit { c, start, end }
    }

    fn finish(&mut self) {
        while let Some(frame) = self.frames.pop() {
            let name = &self.out[frame.at + 1..];
            if let Some((c, len)) = frame.state.at_end(name) {
                let rest = self.out.split_off((frame.at + 1 + len).min(self.out.len()));
                let end = self.out.last().map_or(0, |l| l.end);
                let reduced = self.reduce(frame.at, c, end);
                self.feed(reduced);
                for u in rest {
                    self.feed(u);
                }
            }
        }
    }
}

/// Whether `c` may begin an escape.
fn special(c: char) -> bool {
    matches!(c, '&' | '\\' | '%')
}

/// How far an escape has been read.
#[derive(Clone, Copy, Debug)]
enum Escape {
    /// `&`.
    Amp,
    /// `&` and a name of this many characters.
    Name(u8),
    /// `&#`.
    Hash,
    /// `&#` and decimal digits (their value, capped).
    Decimal(u32),
    /// `&#x`.
    HexStart,
    /// `&#x` and hexadecimal digits.
    Hex(u32),
    /// `\`.
    Back,
    /// `\u`, `\U` or `\x` and this many of `need` hexadecimal digits.
    Fixed { value: u32, got: u8, need: u8 },
    /// `\u{` and hexadecimal digits.
    Braced { value: u32, got: u8 },
    /// `\` and octal digits.
    Octal { value: u32, got: u8 },
    /// `%`, a percent escape's digits, and the UTF-8 bytes read so far.
    Percent(Percent),
}

#[derive(Clone, Copy, Debug)]
struct Percent {
    bytes: [u8; 4],
    len: u8,
    /// Hexadecimal digits of the current byte read (0 to 2); 3 when the
    /// next character must be the `%` of the next byte.
    digits: u8,
}

enum Step {
    /// The escape goes on with this character.
    More(Escape),
    /// The escape ends with this character and decodes to this.
    Done(char),
    /// The escape ended before this character, with this many characters
    /// after its first (the rest are read again), and decodes to this.
    DoneBefore(char, usize),
    /// Not an escape after all.
    Fail,
}

/// The most a code point can be (larger values read as U+FFFD).
const MAX: u32 = 0x10_FFFF;

impl Escape {
    fn start(c: char) -> Option<Escape> {
        Some(match c {
            '&' => Escape::Amp,
            '\\' => Escape::Back,
            '%' => Escape::Percent(Percent {
                bytes: [0; 4],
                len: 0,
                digits: 0,
            }),
            _ => return None,
        })
    }

    /// The step after `c`; `read` is what the escape has read after its
    /// first character.
    fn step(self, c: char, read: &[Unit]) -> Step {
        match self {
            Escape::Amp
            | Escape::Name(_)
            | Escape::Hash
            | Escape::Decimal(_)
            | Escape::HexStart
            | Escape::Hex(_) => self.entity(c, read),
            Escape::Back | Escape::Fixed { .. } | Escape::Braced { .. } | Escape::Octal { .. } => {
                self.backslash(c)
            }
            Escape::Percent(p) => percent(p, c),
        }
    }

    /// An HTML entity's step: `&name;`, a legacy name without `;`, `&#N;`,
    /// `&#xN;` (the `;` optional for numbers).
    fn entity(self, c: char, read: &[Unit]) -> Step {
        let hex = c.to_digit(16);
        match self {
            Escape::Amp => match c {
                '#' => Step::More(Escape::Hash),
                c if c.is_ascii_alphabetic() => Step::More(Escape::Name(1)),
                _ => Step::Fail,
            },
            Escape::Name(n) => match c {
                ';' => Step::Done(named(read).unwrap_or(UNKNOWN_ENTITY)),
                c if c.is_ascii_alphanumeric() && n < 32 => Step::More(Escape::Name(n + 1)),
                _ => match legacy(read) {
                    Some((d, len)) => Step::DoneBefore(d, len),
                    None => Step::Fail,
                },
            },
            Escape::Hash => match c {
                'x' | 'X' => Step::More(Escape::HexStart),
                c => match c.to_digit(10) {
                    Some(d) => Step::More(Escape::Decimal(d)),
                    None => Step::Fail,
                },
            },
            Escape::Decimal(v) => match (c, c.to_digit(10)) {
                (';', _) => Step::Done(code_point(v)),
                (_, Some(d)) => Step::More(Escape::Decimal(grow(v, 10, d))),
                _ => Step::DoneBefore(code_point(v), read.len()),
            },
            Escape::HexStart => match hex {
                Some(d) => Step::More(Escape::Hex(d)),
                None => Step::Fail,
            },
            Escape::Hex(v) => match (c, hex) {
                (';', _) => Step::Done(code_point(v)),
                (_, Some(d)) => Step::More(Escape::Hex(grow(v, 16, d))),
                _ => Step::DoneBefore(code_point(v), read.len()),
            },
            _ => Step::Fail,
        }
    }

    /// A backslash escape's step: `\uXXXX`, `\u{…}`, `\UXXXXXXXX`, `\xXX`,
    /// three octal digits, `\` before punctuation.
    fn backslash(self, c: char) -> Step {
        let hex = c.to_digit(16);
        match self {
            Escape::Back => match c {
                'u' => Step::More(Escape::Fixed {
                    value: 0,
                    got: 0,
                    need: 4,
                }),
                'U' => Step::More(Escape::Fixed {
                    value: 0,
                    got: 0,
                    need: 8,
                }),
                'x' => Step::More(Escape::Fixed {
                    value: 0,
                    got: 0,
                    need: 2,
                }),
                '0'..='7' => Step::More(Escape::Octal {
                    value: c as u32 - u32::from(b'0'),
                    got: 1,
                }),
                c if c.is_ascii_punctuation() => Step::Done(c),
                _ => Step::Fail,
            },
            Escape::Fixed { value, got, need } => match hex {
                Some(d) if got + 1 == need => Step::Done(code_point(grow(value, 16, d))),
                Some(d) => Step::More(Escape::Fixed {
                    value: grow(value, 16, d),
                    got: got + 1,
                    need,
                }),
                None if c == '{' && got == 0 && need == 4 => {
                    Step::More(Escape::Braced { value: 0, got: 0 })
                }
                None => Step::Fail,
            },
            Escape::Braced { value, got } => match (c, hex) {
                ('}', _) if got > 0 => Step::Done(code_point(value)),
                (_, Some(d)) if got < 8 => Step::More(Escape::Braced {
                    value: grow(value, 16, d),
                    got: got + 1,
                }),
                _ => Step::Fail,
            },
            Escape::Octal { value, got } => match c {
                '0'..='7' if got == 2 => {
                    Step::Done(code_point(value * 8 + (c as u32 - u32::from(b'0'))))
                }
                '0'..='7' => Step::More(Escape::Octal {
                    value: value * 8 + (c as u32 - u32::from(b'0')),
                    got: got + 1,
                }),
                _ => Step::Fail,
            },
            _ => Step::Fail,
        }
    }

    /// What the escape decodes to if the text ends here, and how many of
    /// the characters it read after its first it takes.
    fn at_end(self, read: &[Unit]) -> Option<(char, usize)> {
        match self {
            Escape::Decimal(v) | Escape::Hex(v) => Some((code_point(v), read.len())),
            Escape::Name(_) => legacy(read),
            _ => None,
        }
    }
}

/// A percent escape's step: `%XX`, and the runs of them that make one
/// UTF-8 character.
fn percent(mut p: Percent, c: char) -> Step {
    let hex = c.to_digit(16);
    match (p.digits, hex) {
        (3, _) if c == '%' => {
            p.digits = 0;
            Step::More(Escape::Percent(p))
        }
        (3, _) => Step::Fail,
        (0, Some(d)) => {
            p.digits = 1;
            p.bytes[usize::from(p.len)] = d as u8;
            Step::More(Escape::Percent(p))
        }
        (1, Some(d)) => {
            let i = usize::from(p.len);
            p.bytes[i] = p.bytes[i] * 16 + d as u8;
            p.len += 1;
            p.digits = 3;
            let bytes = &p.bytes[..usize::from(p.len)];
            match std::str::from_utf8(bytes) {
                Ok(s) => s.chars().next().map_or(Step::Fail, Step::Done),
                Err(e) if e.error_len().is_none() && p.len < 4 => Step::More(Escape::Percent(p)),
                Err(_) => Step::Fail,
            }
        }
        _ => Step::Fail,
    }
}

/// `v * radix + d`, capped just past the largest code point.
fn grow(v: u32, radix: u32, d: u32) -> u32 {
    v.saturating_mul(radix).saturating_add(d).min(MAX + 1)
}

/// The character a numeric escape names: U+FFFD for none.
fn code_point(v: u32) -> char {
    char::from_u32(v).unwrap_or('\u{FFFD}')
}

/// The named entities this reading decodes (the others read as any
/// character): those that decode to what begins an escape, and to the
/// brackets, slashes, bars, colons and spaces the rendered context's
/// structures are made of.
fn named(name: &[Unit]) -> Option<char> {
    if name.len() > 16 {
        return None;
    }
    let mut buf = [0u8; 16];
    for (b, u) in buf.iter_mut().zip(name) {
        *b = u8::try_from(u32::from(u.c)).unwrap_or(0);
    }
    let name = &buf[..name.len()];
    NAMED
        .binary_search_by(|&(n, _)| n.as_bytes().cmp(name))
        .ok()
        .map(|i| NAMED[i].1)
}

/// The named entities [`named`] decodes, sorted by name.
static NAMED: [(&str, char); 49] = [
    ("AMP", '&'),
    ("GT", '>'),
    ("LT", '<'),
    ("LeftAngleBracket", '\u{27e8}'),
    ("NewLine", '\n'),
    ("NoBreak", '\u{2060}'),
    ("NonBreakingSpace", '\u{a0}'),
    ("QUOT", '"'),
    ("RightAngleBracket", '\u{27e9}'),
    ("Tab", '\t'),
    ("UnderBar", '_'),
    ("VerticalLine", '|'),
    ("ZeroWidthSpace", '\u{200b}'),
    ("amp", '&'),
    ("apos", '\''),
    ("bsol", '\\'),
    ("colon", ':'),
    ("frasl", '\u{2044}'),
    ("gt", '>'),
    ("lang", '\u{27e8}'),
    ("langle", '\u{27e8}'),
    ("laquo", '\u{ab}'),
    ("lbrace", '{'),
    ("lbrack", '['),
    ("lcub", '{'),
    ("lowbar", '_'),
    ("lsaquo", '\u{2039}'),
    ("lsqb", '['),
    ("lt", '<'),
    ("nbsp", '\u{a0}'),
    ("num", '#'),
    ("percnt", '%'),
    ("quot", '"'),
    ("rang", '\u{27e9}'),
    ("rangle", '\u{27e9}'),
    ("raquo", '\u{bb}'),
    ("rbrace", '}'),
    ("rbrack", ']'),
    ("rcub", '}'),
    ("rsaquo", '\u{203a}'),
    ("rsqb", ']'),
    ("semi", ';'),
    ("shy", '\u{ad}'),
    ("sol", '/'),
    ("verbar", '|'),
    ("vert", '|'),
    ("zwj", '\u{200d}'),
    ("zwnj", '\u{200c}'),
    ("zwsp", '\u{200b}'),
];

/// A named entity HTML reads without its semicolon, at the start of
/// `name` (`&ltu` is `<` and `u`): what it decodes to and its length.
fn legacy(name: &[Unit]) -> Option<(char, usize)> {
    (2..=name.len().min(4)).rev().find_map(|len| {
        let c = named(&name[..len])?;
        matches!(c, '&' | '<' | '>' | '"' | '\u{a0}').then_some((c, len))
    })
}

/// Whether a byte may begin a character that reads as an opening bracket.
static OPEN_LEAD: [bool; 256] = {
    let mut t = [false; 256];
    t[b'<' as usize] = true;
    t[b'[' as usize] = true;
    t[b'{' as usize] = true;
    let mut i = 0;
    while i < OPEN_LEADS.len() {
        t[OPEN_LEADS[i] as usize] = true;
        i += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(text: &str) -> String {
        decode(text).iter().map(|u| u.c).collect()
    }

    #[test]
    fn the_entity_names_are_sorted_for_the_search() {
        assert!(NAMED.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn escapes_are_decoded_to_a_fixed_point() {
        for (text, want) in [
            ("&lt;", "<"),
            ("&LT", "<"),
            ("&lt b", "< b"),
            ("&#60;", "<"),
            ("&#000000060;", "<"),
            ("&#x3C", "<"),
            ("&#x0003c;x", "<x"),
            ("&amp;lt;", "<"),
            ("&amp;amp;amp;lt;", "<"),
            ("&&#108;t;", "<"),
            ("&#38;lt;", "<"),
            ("%26lt;", "<"),
            ("%253C", "<"),
            ("%EF%BC%9C", "\u{ff1c}"),
            ("\\u003c", "<"),
            ("\\u{3c}", "<"),
            ("\\U0000003C", "<"),
            ("\\x3c", "<"),
            ("\\074", "<"),
            ("\\<", "<"),
            ("\\\\u003c", "<"),
            ("&lt;&frasl;", "<\u{2044}"),
            ("&copy;", "\u{FDD0}"),
            ("AT&T and 100% of \\n", "AT&T and 100% of \\n"),
            ("&#xZZ;", "&#xZZ;"),
            ("&#99999999999;", "\u{FFFD}"),
            ("&", "&"),
            ("&&&&", "&&&&"),
        ] {
            assert_eq!(decoded(text), want, "{text:?}");
        }
        // Each decoded unit spans the bytes it came from.
        let units = decode("a&amp;lt;b");
        assert_eq!(
            units
                .iter()
                .map(|u| (u.c, u.start, u.end))
                .collect::<Vec<_>>(),
            vec![('a', 0, 1), ('<', 1, 9), ('b', 9, 10)]
        );
    }

    #[test]
    fn characters_read_as_the_unicode_data_says() {
        let has = |c: char, want: &[u8]| alternatives(reading(c)).any(|a| a == want);
        for c in [
            '\u{2800}',
            '\u{3164}',
            '\u{115f}',
            '\u{200b}',
            '\u{e0041}',
            '\u{3000}',
            '\0',
            '\u{7}',
            '\u{85}',
            '\u{301}',
        ] {
            assert_eq!(reading(c), b"", "U+{:04X}", c as u32);
        }
        for c in [
            '<', '[', '{', '❰', '⟪', '«', '《', '‹', '⟨', '〈', '＜', '˂', 'ᐸ', '⟦', '【',
        ] {
            assert!(has(c, &[OPEN]), "{c}");
        }
        for c in ['>', ']', '}', '❱', '⟫', '»', '》', '›', '＞'] {
            assert!(has(c, &[CLOSE]), "{c}");
        }
        for (c, as_) in [
            ('ᑯ', "d"),
            ('ꭇ', "r"),
            ('℮', "e"),
            ('ƽ', "s"),
            ('е', "e"),
            ('Ｕ', "u"),
            ('𝐮', "u"),
            ('ü', "u"),
            ('⁄', "/"),
            ('｜', "|"),
            ('ɴ', "n"),
            ('Ι', "i"),
            ('Ι', "l"),
            ('Ꮥ', "s"),
        ] {
            assert!(has(c, as_.as_bytes()), "{c}: {:?}", reading(c));
        }
        assert_eq!(reading('('), b"(");
        // What reads as `(` outside ASCII is a bracket too; only ASCII `(`
        // — what a defused bracket becomes — is none.
        assert!(has('（', &[OPEN]));
        assert_eq!(reading('東'), [OTHER]);
        assert_eq!(reading('\u{FDD0}'), [ANY]);
    }
}
