//! The pre-tokenising patterns ([`super::pattern`]) over any text, by the
//! Unicode classes of its characters (static tables from `build.rs`).
//!
//! Each function below follows its pattern's alternatives in order and, in
//! each, the choices a backtracking matcher tries in the order it tries
//! them, so it ends a piece where tiktoken's expression engine does. The
//! ASCII scanner in [`super::pattern`] does the same for ASCII text,
//! faster.

use super::pattern::Pattern;

include!(concat!(env!("OUT_DIR"), "/classes.rs"));

/// The character classes the patterns tell apart. `\p{L}` is `Upper`,
/// `Lower` and `Letter`; `\s` is `Newline` and `Space`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// `\p{Lu}`, `\p{Lt}`.
    Upper,
    /// `\p{Ll}`.
    Lower,
    /// `\p{Lm}`, `\p{Lo}`: in both of o200k's word classes.
    Letter,
    /// `\p{M}`: in both of o200k's word classes, but not a letter.
    Mark,
    /// `\p{N}`.
    Number,
    /// `\r`, `\n`.
    Newline,
    /// Whitespace other than `\r` and `\n`.
    Space,
    Other,
}

const BY_INDEX: [Class; 8] = [
    Class::Upper,
    Class::Lower,
    Class::Letter,
    Class::Mark,
    Class::Number,
    Class::Newline,
    Class::Space,
    Class::Other,
];

pub(crate) fn class(c: char) -> Class {
    let c = c as usize;
    let block = usize::from(BLOCK_OF[c / BLOCK]);
    BY_INDEX[usize::from(CLASS_IN_BLOCK[block * BLOCK + c % BLOCK] & 7)]
}

impl Class {
    fn letter(self) -> bool {
        matches!(self, Class::Upper | Class::Lower | Class::Letter)
    }
    /// `[^\r\n\p{L}\p{N}]`: what may lead a word.
    fn lead(self) -> bool {
        matches!(self, Class::Mark | Class::Space | Class::Other)
    }
    /// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
    fn upper_ish(self) -> bool {
        matches!(self, Class::Upper | Class::Letter | Class::Mark)
    }
    /// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
    fn lower_ish(self) -> bool {
        matches!(self, Class::Lower | Class::Letter | Class::Mark)
    }
    /// `\s`.
    fn space(self) -> bool {
        matches!(self, Class::Newline | Class::Space)
    }
}

/// A text read character by character from byte positions.
struct Text<'a>(&'a str);

impl Text<'_> {
    fn char_at(&self, at: usize) -> Option<char> {
        self.0.get(at..)?.chars().next()
    }
    fn class_at(&self, at: usize) -> Option<Class> {
        self.char_at(at).map(class)
    }
    /// The position after the character at `at`.
    fn after(&self, at: usize) -> usize {
        at + self.char_at(at).map_or(0, char::len_utf8)
    }
    /// The position of the character before `at`.
    fn before(&self, at: usize) -> usize {
        at - self.0[..at].chars().next_back().map_or(0, char::len_utf8)
    }
    /// The end of the run of characters from `at` whose class is `is`.
    fn run(&self, at: usize, is: impl Fn(Class) -> bool) -> usize {
        let mut end = at;
        for c in self.0[at..].chars() {
            if !is(class(c)) {
                break;
            }
            end += c.len_utf8();
        }
        end
    }
    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `at`: where it ends, if it matches.
    fn contraction(&self, at: usize) -> Option<usize> {
        if self.char_at(at) != Some('\'') {
            return None;
        }
        let one = at + 1;
        let is = |at: usize, folds: &[char]| self.char_at(at).filter(|c| folds.contains(c));
        for folds in [FOLDS_S, FOLDS_T, FOLDS_M, FOLDS_D] {
            if let Some(c) = is(one, folds) {
                return Some(one + c.len_utf8());
            }
        }
        for (first, second) in [(FOLDS_R, FOLDS_E), (FOLDS_V, FOLDS_E), (FOLDS_L, FOLDS_L)] {
            if let Some(a) = is(one, first) {
                let two = one + a.len_utf8();
                if let Some(b) = is(two, second) {
                    return Some(two + b.len_utf8());
                }
            }
        }
        None
    }
    /// `\p{N}{1,digits}` at `at`.
    fn number(&self, at: usize, digits: usize) -> Option<usize> {
        let mut end = at;
        for c in self.0[at..].chars().take(digits) {
            if class(c) != Class::Number {
                break;
            }
            end += c.len_utf8();
        }
        (end > at).then_some(end)
    }
    /// ` ?[^\s\p{L}\p{N}]+` (the characters `symbol` takes) followed by
    /// the run `trailing` takes, at `at`.
    fn symbols(
        &self,
        at: usize,
        symbol: impl Fn(Class) -> bool,
        trailing: impl Fn(char) -> bool,
    ) -> Option<usize> {
        let from = if self.class_at(at).is_some_and(&symbol) {
            at
        } else if self.char_at(at) == Some(' ') && self.class_at(at + 1).is_some_and(&symbol) {
            at + 1
        } else {
            return None;
        };
        let end = self.run(from, symbol);
        let tail = self.0[end..]
            .chars()
            .take_while(|&c| trailing(c))
            .map(char::len_utf8)
            .sum::<usize>();
        Some(end + tail)
    }
    /// The whitespace alternatives after `\s*[\r\n]` (o200k's `+`: the
    /// same piece, as the last newline of a run is followed by none):
    /// up to the last newline in the run at `at`, else `\s+(?!\S)` (all
    /// but the run's last character, or all of it at the end of the
    /// text), else one character.
    fn whitespace(&self, at: usize, end_of_text_whole: bool) -> usize {
        let end = self.run(at, Class::space);
        if let Some(nl) = self.0[at..end].rfind(['\r', '\n']) {
            return at + nl + 1;
        }
        if end == self.0.len() && end_of_text_whole {
            return end;
        }
        let last = self.before(end);
        if last > at { last } else { end }
    }
}

/// The end of the piece of `pattern` that starts at `at` (see
/// [`super::pattern`] for the patterns).
pub(crate) fn piece(pattern: Pattern, text: &str, at: usize) -> usize {
    let t = Text(text);
    let Some(first) = t.class_at(at) else {
        return text.len();
    };
    let word = match pattern.cased {
        true => cased_word(pattern, &t, at, first),
        false => letters(pattern, &t, at, first),
    };
    if let Some(end) = word {
        return end;
    }
    if let Some(end) = t.number(at, pattern.digits) {
        return end;
    }
    let symbol = |c: Class| c == Class::Other || (c == Class::Mark && !pattern.marks_in_words);
    let trailing = |c: char| matches!(c, '\r' | '\n') || (pattern.slash && c == '/');
    if let Some(end) = t.symbols(at, symbol, trailing) {
        return end;
    }
    // `\s++$`, where the pattern has it; then the other whitespace
    // alternatives.
    let end = t.run(at, Class::space);
    if pattern.trailing_whole && end == text.len() {
        return end;
    }
    t.whitespace(at, true)
}

/// The cased word alternatives (o200k's) at `at`, if one matches, with
/// the contraction after it where the pattern has them.
fn cased_word(pattern: Pattern, t: &Text, at: usize, first: Class) -> Option<usize> {
    let after_lead = first.lead().then(|| t.after(at));
    let starts = || after_lead.into_iter().chain([at]);
    let contraction = |end: usize| match pattern.contractions {
        true => t.contraction(end).unwrap_or(end),
        false => end,
    };
    // `lead? upper* lower+ contraction?`: the capitals' run gives back
    // characters until a small letter follows; the first such place
    // (from the longest run down) is where the small letters start.
    for start in starts() {
        let capitals = t.run(start, Class::upper_ish);
        let mut k = capitals;
        let lower_from = loop {
            if t.class_at(k).is_some_and(Class::lower_ish) {
                break Some(k);
            }
            if k == start {
                break None;
            }
            k = t.before(k);
        };
        if let Some(k) = lower_from {
            return Some(contraction(t.run(k, Class::lower_ish)));
        }
    }
    // `lead? upper+ lower* contraction?`
    for start in starts() {
        if t.class_at(start).is_some_and(Class::upper_ish) {
            return Some(contraction(
                t.run(t.run(start, Class::upper_ish), Class::lower_ish),
            ));
        }
    }
    None
}

/// The contractions and the run-of-letters alternatives (cl100k's) at
/// `at`, if one matches: `[^\r\n\p{L}\p{N}]?\p{L}+` (or `[\p{L}\p{M}]+`).
/// Whether the lead is possessive or not makes no difference: given back,
/// it leaves a character that is no letter either (a mark, where marks
/// are letters, starts the same run).
fn letters(pattern: Pattern, t: &Text, at: usize, first: Class) -> Option<usize> {
    if pattern.contractions
        && let Some(end) = t.contraction(at)
    {
        return Some(end);
    }
    let letter = |c: Class| c.letter() || (pattern.marks_in_words && c == Class::Mark);
    if letter(first) {
        return Some(t.run(at, letter));
    }
    let next = t.after(at);
    if first.lead() && t.class_at(next).is_some_and(letter) {
        return Some(t.run(next, letter));
    }
    None
}
