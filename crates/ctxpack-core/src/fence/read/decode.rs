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
pub(super) static NAMED: [(&str, char); 49] = [
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
