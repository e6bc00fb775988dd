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
    /// `\p{P}`, `\p{S}`: apart from the rest only for DeepSeek V3.
    Punct,
    Other,
}

/// The classes by their index in the table; an index past `Other` (there
/// is none) is `Other` too, so that reading the table cannot fail.
const BY_INDEX: [Class; 16] = [
    Class::Upper,
    Class::Lower,
    Class::Letter,
    Class::Mark,
    Class::Number,
    Class::Newline,
    Class::Space,
    Class::Punct,
    Class::Other,
    Class::Other,
    Class::Other,
    Class::Other,
    Class::Other,
    Class::Other,
    Class::Other,
    Class::Other,
];

pub(crate) fn class(c: char) -> Class {
    let c = c as usize;
    let block = usize::from(BLOCK_OF[c / BLOCK]);
    BY_INDEX[usize::from(CLASS_IN_BLOCK[block * BLOCK + c % BLOCK] & 15)]
}

impl Class {
    fn letter(self) -> bool {
        matches!(self, Class::Upper | Class::Lower | Class::Letter)
    }
    /// `[^\r\n\p{L}\p{N}]`: what may lead a word.
    fn lead(self) -> bool {
        matches!(
            self,
            Class::Mark | Class::Space | Class::Punct | Class::Other
        )
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
        at - crate::text::cut(self.0, ..at)
            .chars()
            .next_back()
            .map_or(0, char::len_utf8)
    }
    /// The end of the run of characters from `at` whose class is `is`.
    fn run(&self, at: usize, is: impl Fn(Class) -> bool) -> usize {
        let mut end = at;
        for c in crate::text::cut(self.0, at..).chars() {
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
        for c in crate::text::cut(self.0, at..).chars().take(digits) {
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
        let tail = crate::text::cut(self.0, end..)
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
        if let Some(nl) = crate::text::cut(self.0, at..end).rfind(['\r', '\n']) {
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
    let symbol = |c: Class| {
        matches!(c, Class::Punct | Class::Other) || (c == Class::Mark && !pattern.marks_in_words)
    };
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

/// DeepSeek V3's second Split: `[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]`
/// (CJK ideographs, hiragana, katakana).
fn is_cjk(c: char) -> bool {
    matches!(c, '\u{4e00}'..='\u{9fa5}' | '\u{3040}'..='\u{309f}' | '\u{30a0}'..='\u{30ff}')
}

/// The end of DeepSeek V3's piece that starts at `at` ([`Pattern::split_first`]).
///
/// Its pre-tokenizer is three Splits in a row, each isolating what its
/// expression matches and keeping the text between matches as pieces too:
/// `\p{N}{1,3}`; then runs of CJK; then, within each stretch the first two
/// leave, [`third_split`]'s expression. A number's piece is its next three
/// digits at most (the third expression matches none of a number); other
/// text is read as the third Split reads the stretch it is in — up to the
/// next number, or where CJK begins or ends —, found as it goes, so that
/// no stretch is scanned twice.
pub(crate) fn split_first_piece(text: &str, at: usize) -> usize {
    let t = Text(text);
    let Some(c) = t.char_at(at) else {
        return text.len();
    };
    if class(c) == Class::Number {
        return t.number(at, 3).unwrap_or(text.len());
    }
    let cjk = is_cjk(c);
    // The character at `p`, if it is in the stretch `at` is in.
    let stretch = |p: usize| {
        t.char_at(p)
            .filter(|&d| class(d) != Class::Number && is_cjk(d) == cjk)
    };
    if let Some(end) = third_split(&t, at, &stretch) {
        return end;
    }
    // Between matches: a piece up to where the next match starts, or the
    // stretch ends.
    let mut p = at + c.len_utf8();
    while stretch(p).is_some() && third_split(&t, p, &stretch).is_none() {
        p = t.after(p);
    }
    p
}

/// DeepSeek V3's third Split at `p`, in the stretch `stretch` gives the
/// characters of: where its match ends, if one starts at `p`.
///
/// ```text
/// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
/// |[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*
/// |\s*[\r\n]+|\s+(?!\S)|\s+
/// ```
fn third_split(t: &Text, p: usize, stretch: &impl Fn(usize) -> Option<char>) -> Option<usize> {
    let c = stretch(p)?;
    let after = p + c.len_utf8();
    let next = stretch(after);
    let run = |from: usize, is: &dyn Fn(char) -> bool| {
        let mut end = from;
        while let Some(d) = stretch(end).filter(|&d| is(d)) {
            end += d.len_utf8();
        }
        end
    };
    let ascii_letter = |d: char| d.is_ascii_alphabetic();
    let word = |d: char| class(d).letter() || class(d) == Class::Mark;
    let punct = |d: char| class(d) == Class::Punct;
    let space = |d: char| class(d).space();
    // An ASCII punctuation mark and the ASCII letters after it.
    if c.is_ascii_punctuation() && next.is_some_and(ascii_letter) {
        return Some(run(after, &ascii_letter));
    }
    // A word, after a character that is no letter, punctuation, symbol
    // or line break; given back, the lead leaves a word that ends at the
    // same place (a mark starts the same run).
    let lead = !matches!(c, '\r' | '\n') && !class(c).letter() && !punct(c);
    if lead && next.is_some_and(word) {
        return Some(run(after, &word));
    }
    if word(c) {
        return Some(run(p, &word));
    }
    // Punctuation and symbols, after a space, and the line breaks after.
    let from = if punct(c) {
        Some(p)
    } else if c == ' ' && next.is_some_and(punct) {
        Some(after)
    } else {
        None
    };
    if let Some(from) = from {
        return Some(run(run(from, &punct), &|d| matches!(d, '\r' | '\n')));
    }
    if !space(c) {
        return None;
    }
    // Whitespace: up to its last line break; else all of it where the
    // stretch ends after it (`(?!\S)` at the end of the Split's text),
    // all but its last character before something else, or one.
    let end = run(p, &space);
    if let Some(nl) = crate::text::cut(t.0, p..end).rfind(['\r', '\n']) {
        return Some(p + nl + 1);
    }
    if stretch(end).is_none() {
        return Some(end);
    }
    let last = t.before(end);
    Some(if last > p { last } else { end })
}
