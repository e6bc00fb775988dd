//! The first step of reading a host text: HTML entities, backslash escapes
//! and percent escapes decoded, and what they decode to decoded again, to a
//! fixed point (see [`super`]).

use super::{UNKNOWN_ENTITY, Unit};

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

    /// An HTML entity's step: `&name;`, a name without `;` (see
    /// [`legacy`]), `&#N;`, `&#xN;` (the `;` optional for numbers).
    fn entity(self, c: char, read: &[Unit]) -> Step {
        let hex = c.to_digit(16);
        match self {
            Escape::Amp => match c {
                '#' => Step::More(Escape::Hash),
                c if c.is_ascii_alphabetic() => Step::More(Escape::Name(1)),
                _ => Step::Fail,
            },
            Escape::Name(n) => match c {
                ';' => match named(read) {
                    Some(d) => Step::Done(d),
                    None => match legacy(read, false) {
                        Some((d, len)) => Step::DoneBefore(d, len),
                        None => Step::Done(UNKNOWN_ENTITY),
                    },
                },
                c if c.is_ascii_alphanumeric() && n < 32 => Step::More(Escape::Name(n + 1)),
                c => match legacy(read, c != '=' && !c.is_ascii_alphanumeric()) {
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
            Escape::Name(_) => legacy(read, true),
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
/// character or nothing): see [`NAMED`].
fn named(name: &[Unit]) -> Option<char> {
    lookup(name).map(|(c, _)| c)
}

/// The entry of [`NAMED`] for `name`: what it decodes to, and whether
/// HTML reads it without its semicolon.
fn lookup(name: &[Unit]) -> Option<(char, bool)> {
    if name.len() > LONGEST_NAME {
        return None;
    }
    let mut buf = [0u8; LONGEST_NAME];
    for (b, u) in buf.iter_mut().zip(name) {
        *b = u8::try_from(u32::from(u.c)).unwrap_or(0);
    }
    let name = &buf[..name.len()];
    NAMED
        .binary_search_by(|&(n, _, _)| n.as_bytes().cmp(name))
        .ok()
        .map(|i| (NAMED[i].1, NAMED[i].2))
}

/// The longest name [`NAMED`] may hold (its longest has 21 letters).
const LONGEST_NAME: usize = 24;

/// The named entities this reading decodes, sorted by name, each with
/// what it decodes to and whether HTML reads it without its semicolon
/// too. They are HTML's own, copied from its table
/// (<https://html.spec.whatwg.org/entities.json>) rather than derived:
///
/// - those that decode to what begins an escape, and to the brackets,
///   slashes, bars, colons and spaces the rendered context's structures
///   are made of;
/// - every one that decodes to a character this reading drops (a format
///   character or a space: `&NegativeMediumSpace;`, `&InvisibleTimes;`,
///   `&NoBreak;`, …), so that it reads as nothing, not as any character;
/// - HTML's legacy set, the 106 names it reads without a semicolon (`&lt`,
///   `&laquo`, `&uacute`; the last of the column `true`), which the
///   standard has frozen.
///
/// (And `&zwsp;`, which is not HTML's, but is written for U+200B.)
pub(super) static NAMED: [(&str, char, bool); 167] = [
    ("AElig", '\u{c6}', true),
    ("AMP", '&', true),
    ("Aacute", '\u{c1}', true),
    ("Acirc", '\u{c2}', true),
    ("Agrave", '\u{c0}', true),
    ("ApplyFunction", '\u{2061}', false),
    ("Aring", '\u{c5}', true),
    ("Atilde", '\u{c3}', true),
    ("Auml", '\u{c4}', true),
    ("COPY", '\u{a9}', true),
    ("Ccedil", '\u{c7}', true),
    ("ETH", '\u{d0}', true),
    ("Eacute", '\u{c9}', true),
    ("Ecirc", '\u{ca}', true),
    ("Egrave", '\u{c8}', true),
    ("Euml", '\u{cb}', true),
    ("GT", '>', true),
    ("Iacute", '\u{cd}', true),
    ("Icirc", '\u{ce}', true),
    ("Igrave", '\u{cc}', true),
    ("InvisibleComma", '\u{2063}', false),
    ("InvisibleTimes", '\u{2062}', false),
    ("Iuml", '\u{cf}', true),
    ("LT", '<', true),
    ("LeftAngleBracket", '\u{27e8}', false),
    ("MediumSpace", '\u{205f}', false),
    ("NegativeMediumSpace", '\u{200b}', false),
    ("NegativeThickSpace", '\u{200b}', false),
    ("NegativeThinSpace", '\u{200b}', false),
    ("NegativeVeryThinSpace", '\u{200b}', false),
    ("NewLine", '\u{a}', false),
    ("NoBreak", '\u{2060}', false),
    ("NonBreakingSpace", '\u{a0}', false),
    ("Ntilde", '\u{d1}', true),
    ("Oacute", '\u{d3}', true),
    ("Ocirc", '\u{d4}', true),
    ("Ograve", '\u{d2}', true),
    ("Oslash", '\u{d8}', true),
    ("Otilde", '\u{d5}', true),
    ("Ouml", '\u{d6}', true),
    ("QUOT", '"', true),
    ("REG", '\u{ae}', true),
    ("RightAngleBracket", '\u{27e9}', false),
    ("THORN", '\u{de}', true),
    ("Tab", '\u{9}', false),
    ("ThickSpace", '\u{205f}', false),
    ("ThinSpace", '\u{2009}', false),
    ("Uacute", '\u{da}', true),
    ("Ucirc", '\u{db}', true),
    ("Ugrave", '\u{d9}', true),
    ("UnderBar", '_', false),
    ("Uuml", '\u{dc}', true),
    ("VerticalLine", '|', false),
    ("VeryThinSpace", '\u{200a}', false),
    ("Yacute", '\u{dd}', true),
    ("ZeroWidthSpace", '\u{200b}', false),
    ("aacute", '\u{e1}', true),
    ("acirc", '\u{e2}', true),
    ("acute", '\u{b4}', true),
    ("aelig", '\u{e6}', true),
    ("af", '\u{2061}', false),
    ("agrave", '\u{e0}', true),
    ("amp", '&', true),
    ("apos", '\'', false),
    ("aring", '\u{e5}', true),
    ("atilde", '\u{e3}', true),
    ("auml", '\u{e4}', true),
    ("brvbar", '\u{a6}', true),
    ("bsol", '\\', false),
    ("ccedil", '\u{e7}', true),
    ("cedil", '\u{b8}', true),
    ("cent", '\u{a2}', true),
    ("colon", ':', false),
    ("copy", '\u{a9}', true),
    ("curren", '\u{a4}', true),
    ("deg", '\u{b0}', true),
    ("divide", '\u{f7}', true),
    ("eacute", '\u{e9}', true),
    ("ecirc", '\u{ea}', true),
    ("egrave", '\u{e8}', true),
    ("emsp", '\u{2003}', false),
    ("emsp13", '\u{2004}', false),
    ("emsp14", '\u{2005}', false),
    ("ensp", '\u{2002}', false),
    ("eth", '\u{f0}', true),
    ("euml", '\u{eb}', true),
    ("frac12", '\u{bd}', true),
    ("frac14", '\u{bc}', true),
    ("frac34", '\u{be}', true),
    ("frasl", '\u{2044}', false),
    ("gt", '>', true),
    ("hairsp", '\u{200a}', false),
    ("iacute", '\u{ed}', true),
    ("ic", '\u{2063}', false),
    ("icirc", '\u{ee}', true),
    ("iexcl", '\u{a1}', true),
    ("igrave", '\u{ec}', true),
    ("iquest", '\u{bf}', true),
    ("it", '\u{2062}', false),
    ("iuml", '\u{ef}', true),
    ("lang", '\u{27e8}', false),
    ("langle", '\u{27e8}', false),
    ("laquo", '\u{ab}', true),
    ("lbrace", '{', false),
    ("lbrack", '[', false),
    ("lcub", '{', false),
    ("lowbar", '_', false),
    ("lrm", '\u{200e}', false),
    ("lsaquo", '\u{2039}', false),
    ("lsqb", '[', false),
    ("lt", '<', true),
    ("macr", '\u{af}', true),
    ("micro", '\u{b5}', true),
    ("middot", '\u{b7}', true),
    ("nbsp", '\u{a0}', true),
    ("not", '\u{ac}', true),
    ("ntilde", '\u{f1}', true),
    ("num", '#', false),
    ("numsp", '\u{2007}', false),
    ("oacute", '\u{f3}', true),
    ("ocirc", '\u{f4}', true),
    ("ograve", '\u{f2}', true),
    ("ordf", '\u{aa}', true),
    ("ordm", '\u{ba}', true),
    ("oslash", '\u{f8}', true),
    ("otilde", '\u{f5}', true),
    ("ouml", '\u{f6}', true),
    ("para", '\u{b6}', true),
    ("percnt", '%', false),
    ("plusmn", '\u{b1}', true),
    ("pound", '\u{a3}', true),
    ("puncsp", '\u{2008}', false),
    ("quot", '"', true),
    ("rang", '\u{27e9}', false),
    ("rangle", '\u{27e9}', false),
    ("raquo", '\u{bb}', true),
    ("rbrace", '}', false),
    ("rbrack", ']', false),
    ("rcub", '}', false),
    ("reg", '\u{ae}', true),
    ("rlm", '\u{200f}', false),
    ("rsaquo", '\u{203a}', false),
    ("rsqb", ']', false),
    ("sect", '\u{a7}', true),
    ("semi", ';', false),
    ("shy", '\u{ad}', true),
    ("sol", '/', false),
    ("sup1", '\u{b9}', true),
    ("sup2", '\u{b2}', true),
    ("sup3", '\u{b3}', true),
    ("szlig", '\u{df}', true),
    ("thinsp", '\u{2009}', false),
    ("thorn", '\u{fe}', true),
    ("times", '\u{d7}', true),
    ("uacute", '\u{fa}', true),
    ("ucirc", '\u{fb}', true),
    ("ugrave", '\u{f9}', true),
    ("uml", '\u{a8}', true),
    ("uuml", '\u{fc}', true),
    ("verbar", '|', false),
    ("vert", '|', false),
    ("yacute", '\u{fd}', true),
    ("yen", '\u{a5}', true),
    ("yuml", '\u{ff}', true),
    ("zwj", '\u{200d}', false),
    ("zwnj", '\u{200c}', false),
    ("zwsp", '\u{200b}', false),
];

/// An entity written without its semicolon, or with one after a name
/// this reading does not know, read as HTML reads it: the longest name of
/// HTML's legacy set that `name` starts with (`&ltu` is `<` and `u`,
/// `&notit;` is `¬` and `it;`), or else, where `whole` (a name ended by
/// neither a letter, a digit nor `=`), any name this reading knows
/// (`&lsqb user]`). Returns what it decodes to and its length.
fn legacy(name: &[Unit], whole: bool) -> Option<(char, usize)> {
    if whole && let Some(c) = named(name) {
        return Some((c, name.len()));
    }
    (2..=name.len().min(6))
        .rev()
        .find_map(|len| match lookup(&name[..len]) {
            Some((c, true)) => Some((c, len)),
            _ => None,
        })
}
