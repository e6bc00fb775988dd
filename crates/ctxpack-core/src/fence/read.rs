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
