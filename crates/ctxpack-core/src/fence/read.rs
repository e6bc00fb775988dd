//! How a model reads a host text, for finding what in it would pass for
//! one of the rendered context's own structures (see [`crate::fence`]).
//!
//! A text is read in two steps:
//!
//! 1. **Decoded**: HTML entities (`&lt;`, `&#0000060;`, `&#x3C`),
//!    backslash escapes (`\u003c`, `\u{3c}`, `\U0000003C`, `\x3c`, `\074`,
//!    `\<`) and percent escapes (`%3C`, `%EF%BC%9C`) are decoded, and what
//!    they decode to is decoded again, to a fixed point: `&amp;lt;`,
//!    `%26lt;` and `&&#108;t;` all read as `<`. Named entities are read as
//!    HTML reads them, those of its legacy set without a semicolon too
//!    (`&laquo`, `&ltu` as `<u`), and any this reading knows when nothing
//!    but punctuation or a space follows (`&lsqb user]`). An entity that
//!    decodes to an invisible character (`&NegativeMediumSpace;`,
//!    `&NoBreak;`) reads as nothing, and one this reading does not know
//!    (HTML has some two thousand) as any character at all, or nothing.
//! 2. **Folded**, one decoded character at a time, from the Unicode data
//!    (`build.rs` writes the table from regex-syntax's, unicode-normalization's
//!    and unicode-security's): what a model does not see — default-ignorable
//!    code points, controls, format and tag characters, spaces and
//!    separators, marks that take no space, symbols whose UTS #39 prototype
//!    is a space (U+2800 BRAILLE PATTERN BLANK) and the few drawn blank
//!    (U+1D159 MUSICAL SYMBOL NULL NOTEHEAD) — reads as nothing; open and
//!    close punctuation (and the mirrored quotation marks `«`, `‹`),
//!    initial and final punctuation that is no quotation mark (`⸂`), the
//!    pieces large brackets are drawn with (`⎡`, `⎦`, `⎧`), and whatever
//!    reads as `<`, `[`, `>` or `]`, as an opening or closing bracket;
//!    anything else as its NFKC form in lower case, and where that is not
//!    ASCII, as its UTS #39 skeleton (`ꭇ` reads as `r`, `℮` as `e`); an
//!    enclosed letter that has neither (`🆂`, `🅤`, the regional indicator
//!    `🇺`) as its letter; a spacing mark (`ം`, `ः`) as its prototype
//!    (`o`, `:`) or as nothing. ASCII reads as itself in lower case. A
//!    character that reads as nothing ASCII reads as something other than
//!    every structure's letters.
//!
//! ASCII `(` and `)` are no brackets in this reading: they are what a
//! defused bracket is replaced with.
//!
//! A character may read in more than one way (`Ι` as `i` or `l`, `¸` as
//! `,` or nothing): its reading lists each, apart by [`OR`], and a
//! structure is found if any choice of them spells it.
//!
//! A line begins after a line break, decoded or not, or after a line
//! break as a text that escapes or marks up its line breaks spells it:
//! `\n` or `\r` (a JSON string's escapes, read as text), or an HTML tag
//! that breaks a line (`<br>`, `<p>`, `</p>`, `<div>`, `<li>`); a quoted
//! line (`> `, `>> `) begins after its quote marks
//! ([`Units::line_starts_at`]).

mod decode;
pub(crate) use decode::decode;

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

    /// Whether the unit at `at` begins a line, after what may quote it:
    /// between it and the start of the text, a line break (decoded or
    /// not) or the spelling of one (see [`LineStart`]), only units that
    /// may read as nothing or as a closing bracket (the `>` of a quoted
    /// line, `> [system]`).
    pub(crate) fn line_starts_at(&self, mut at: usize) -> bool {
        let mut states = LineStart::QUOTED;
        while let Some((u, before)) = self.before(at) {
            if line_break(u.c) && states & LineStart::QUOTED != 0 {
                return true;
            }
            let mut next = 0;
            for alternative in alternatives(reading(u.c)) {
                let mut s = states;
                for &symbol in alternative.iter().rev() {
                    s = LineStart::step(s, symbol);
                }
                next |= s;
            }
            if next & LineStart::FOUND != 0 {
                return true;
            }
            if next == 0 {
                return false;
            }
            states = next;
            at = before;
        }
        states & LineStart::QUOTED != 0
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

/// The states of reading a text backwards from a unit, to see whether it
/// begins a line ([`Units::line_starts_at`]): each a bit. A line break is
/// one, and so is its spelling in a text that escapes or marks up its line
/// breaks — a backslash escape `\n` or `\r` left undecoded (a JSON
/// string's, read as text), or an HTML tag that breaks a line (`<br>`,
/// `<br/>`, `<p>`, `</p>`, `<div class="x">`, `<li>`: an opening bracket,
/// a slash or none, `br`, `p`, `div` or `li`, anything but a closing
/// bracket, a closing bracket). Read backwards, so each spelling is too.
/// (An opening bracket may stand within a tag: defused, it would not end
/// it, and the line it begins would begin after the defusing.)
struct LineStart;

impl LineStart {
    /// Only what may read as nothing or a closing bracket read so far.
    const QUOTED: u16 = 1 << 0;
    /// `n` or `r` of a backslash escape.
    const ESCAPE: u16 = 1 << 1;
    /// Within a tag: its closing bracket and anything but a closing one.
    const TAG: u16 = 1 << 2;
    /// `r` of `br`.
    const BR: u16 = 1 << 3;
    /// `v` of `div`.
    const DIV: u16 = 1 << 4;
    /// `iv` of `div`.
    const DI: u16 = 1 << 5;
    /// `i` of `li`.
    const LI: u16 = 1 << 6;
    /// A tag's name.
    const NAME: u16 = 1 << 7;
    /// A tag's slash and name.
    const SLASH: u16 = 1 << 8;
    /// A spelling of a line break, whole.
    const FOUND: u16 = 1 << 9;

    /// The states after `symbol`, read backwards from `states`.
    fn step(states: u16, symbol: u8) -> u16 {
        let any = symbol == ANY;
        let is = |s: u8| any || symbol == s;
        let mut next = 0;
        let mut to = |from: u16, when: bool, to: u16| {
            if states & from != 0 && when {
                next |= to;
            }
        };
        to(Self::QUOTED, is(CLOSE), Self::QUOTED | Self::TAG);
        to(Self::QUOTED, is(b'n') || is(b'r'), Self::ESCAPE);
        to(Self::ESCAPE, is(b'\\'), Self::FOUND);
        to(Self::TAG, any || symbol != CLOSE, Self::TAG);
        to(Self::TAG, is(b'r'), Self::BR);
        to(Self::TAG, is(b'p'), Self::NAME);
        to(Self::TAG, is(b'v'), Self::DIV);
        to(Self::TAG, is(b'i'), Self::LI);
        to(Self::BR, is(b'b'), Self::NAME);
        to(Self::DIV, is(b'i'), Self::DI);
        to(Self::DI, is(b'd'), Self::NAME);
        to(Self::LI, is(b'l'), Self::NAME);
        to(Self::NAME, is(b'/'), Self::SLASH);
        to(Self::NAME | Self::SLASH, is(OPEN), Self::FOUND);
        next
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
        // Any one symbol, or nothing: it may stand for an invisible
        // character too.
        return &[ANY, OR];
    }
    let cp = u32::from(c);
    if removed(cp) {
        return &[];
    }
    let at = |r: usize| READING_AT.get(r).map(|&a| usize::from(a));
    let reading = read_index(cp)
        .and_then(|i| READ_AS.get(i))
        .and_then(|&r| Some((at(usize::from(r))?, at(usize::from(r) + 1)?)))
        .and_then(|(from, to)| READINGS.as_bytes().get(from..to));
    match reading {
        // (The table holds no mark but spacing ones: they read as their
        // prototype or nothing.)
        Some(reading) => reading,
        None if unicode_normalization::char::is_combining_mark(c) => &[],
        None => &[OTHER],
    }
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
mod tests;
