//! Exact counting with a tiktoken encoding, from static tables.
//!
//! tiktoken splits text into pieces with a regular expression, then merges
//! each piece's bytes into tokens by rank. Here the split is hand-written:
//! ASCII text by a byte scanner that follows the o200k and cl100k patterns
//! exactly (each rule below names the alternative it stands for), other
//! text by a scanner over the Unicode classes of its characters
//! ([`unicode`]). A piece is looked up whole in the encoding's tables
//! ([`table`], built at compile time and read in place), merged
//! ([`merge`]) if it is not one token, and its count remembered.
//!
//! Counting is linear in the text, whatever it holds. Once an encoding
//! has merged some 64 kB of pieces ([`INDEX_AFTER`]) it builds an index of
//! its tokens in memory ([`index`]: hash tables, a filter that turns most
//! non-tokens away from cache, the lengths of the tokens by their first
//! bytes) in a few milliseconds, and merges from it; a piece of 32 bytes
//! or more is then encoded by [`backtrack`], in time linear in its length,
//! where merging by rank is `n log n` and was several times slower on a
//! megabyte of one word. A small count never builds the index, so a fresh
//! process or instance still counts at once from the static tables.
//!
//! Exactness is the contract: the tests compare the token sequences with
//! tiktoken's on generated texts over every ASCII byte and every class of
//! Unicode character, and on every token of both encodings, with the index
//! and without; the linear encoder is held to merging on long pieces of
//! every kind, and its test of two tokens to merging on 200,000 pairs.

mod backtrack;
mod index;
mod merge;
mod table;
mod unicode;

use index::{Index, Indexed};
use rustc_hash::FxHashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
#[cfg(any(feature = "o200k", feature = "cl100k"))]
use table::Length;
pub(crate) use table::Table;

/// A token's rank in its encoding.
pub(crate) type Rank = u32;

/// The pre-tokenising pattern an encoding splits text with. (A build
/// without one of the encodings keeps its pattern, unused.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(all(feature = "o200k", feature = "cl100k")), allow(dead_code))]
pub(crate) enum Pattern {
    O200k,
    Cl100k,
}

/// The o200k encoding (`o200k-base`).
#[cfg(feature = "o200k")]
pub(crate) static O200K: Encoding = Encoding {
    table: include!(concat!(env!("OUT_DIR"), "/o200k.rs")),
    pattern: Pattern::O200k,
    memory: Mutex::new(None),
    index: OnceLock::new(),
    merged: AtomicUsize::new(0),
};

/// The cl100k encoding (`cl100k-base`).
#[cfg(feature = "cl100k")]
pub(crate) static CL100K: Encoding = Encoding {
    table: include!(concat!(env!("OUT_DIR"), "/cl100k.rs")),
    pattern: Pattern::Cl100k,
    memory: Mutex::new(None),
    index: OnceLock::new(),
    merged: AtomicUsize::new(0),
};

/// Pieces counted remembered before the memory is cleared and starts again.
const PIECE_MEMORY: usize = 1 << 16;

/// Bytes an encoding merges from its static tables before it builds its
/// in-memory index (see [`index`]): a few milliseconds' work, so that a
/// small count in a fresh process or instance never pays for the build,
/// and a large one soon stops paying for binary searches.
const INDEX_AFTER: usize = 1 << 16;

/// Pieces this long or longer go to the linear encoder once the index is
/// built (see [`backtrack`]); shorter ones are merged, faster while they
/// are short.
const BACKTRACK_FROM: usize = 32;

/// One encoding: its tables, its pattern, the counts of pieces seen, and
/// the index it builds once it has merged enough.
pub(crate) struct Encoding {
    table: Table,
    pattern: Pattern,
    memory: Mutex<Option<Memory>>,
    index: OnceLock<Index>,
    /// Bytes merged from the static tables so far (up to the index).
    merged: AtomicUsize,
}

/// What an encoding remembers between counts: the token counts of the
/// pieces under [`merge::LONG_PIECE`] bytes it has seen (short ones by
/// [`short_key`], the others by a hash of their bytes, kept side by side
/// in one buffer so that remembering a piece allocates nothing), and recent
/// joins.
#[derive(Default)]
struct Memory {
    short: FxHashMap<u64, u32>,
    /// The longer pieces, by a hash of their bytes: where their bytes are
    /// in `bytes` and their count. A hash two pieces share stands for the
    /// first only (the bytes are compared), and the other is not
    /// remembered.
    long: FxHashMap<u64, (u32, u8, u32)>,
    bytes: Vec<u8>,
    joins: merge::Joins,
}

impl Memory {
    /// The tokens of `piece` (whose [`short_key`] is `key`), from memory
    /// or from `count`, then remembered.
    fn count(
        &mut self,
        piece: &[u8],
        key: Option<u64>,
        count: impl FnOnce(&mut merge::Joins) -> usize,
    ) -> usize {
        let hash = match key {
            Some(k) => {
                if let Some(&n) = self.short.get(&k) {
                    return n as usize;
                }
                0
            }
            None => {
                let hash = rustc_hash::FxBuildHasher.hash_one(piece);
                if let Some(&(at, len, n)) = self.long.get(&hash)
                    && self.bytes.get(at as usize..at as usize + usize::from(len)) == Some(piece)
                {
                    return n as usize;
                }
                hash
            }
        };
        let n = count(&mut self.joins);
        if self.short.len() + self.long.len() >= PIECE_MEMORY {
            self.short.clear();
            self.long.clear();
            self.bytes.clear();
        }
        // Counts of pieces under 100 bytes fit easily.
        match key {
            Some(k) => {
                self.short.insert(k, n as u32);
            }
            None => {
                if let std::collections::hash_map::Entry::Vacant(slot) = self.long.entry(hash) {
                    slot.insert((self.bytes.len() as u32, piece.len() as u8, n as u32));
                    self.bytes.extend_from_slice(piece);
                }
            }
        }
        n
    }
}

/// A piece of at most seven bytes as one number: its bytes, little-endian,
/// and its length in the top byte (so "a" and "a\0" differ).
fn short_key(piece: &[u8]) -> Option<u64> {
    if piece.len() > 7 {
        return None;
    }
    let mut b = [0u8; 8];
    b[..piece.len()].copy_from_slice(piece);
    b[7] = piece.len() as u8;
    Some(u64::from_le_bytes(b))
}

impl Encoding {
    /// The tokens of `text`, exactly as tiktoken's `encode_ordinary` would
    /// count them.
    pub(crate) fn count(&self, text: &str) -> usize {
        let mut memory = self.memory.try_lock().ok();
        let mut memory = memory.as_deref_mut().map(|m| m.get_or_insert_default());
        let mut total = 0;
        self.pieces(text, |piece| {
            // Most pieces are short and seen before: their count is one
            // lookup away.
            if let Some(m) = memory.as_deref_mut()
                && let Some(n) = short_key(piece).and_then(|k| m.short.get(&k))
            {
                total += *n as usize;
                return;
            }
            total += self.count_piece(piece, memory.as_deref_mut());
        });
        total
    }

    /// Where each token of `text` ends, in order: the first `n` tokens of
    /// `text` are its bytes up to the `n`th end.
    pub(crate) fn token_ends(&self, text: &str) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut at = 0;
        self.pieces(text, |piece| {
            let from = ends.len();
            if self.is_token(piece) {
                ends.push(piece.len());
            } else {
                self.merge(piece, None, Some(&mut ends));
            }
            for end in &mut ends[from..] {
                *end += at;
            }
            at += piece.len();
        });
        ends
    }

    /// The tokens of one piece.
    fn count_piece(&self, piece: &[u8], memory: Option<&mut Memory>) -> usize {
        match memory {
            Some(m) if piece.len() < merge::LONG_PIECE => {
                m.count(piece, short_key(piece), |joins| {
                    if self.is_token(piece) {
                        1
                    } else {
                        self.merge(piece, Some(joins), None)
                    }
                })
            }
            _ if self.is_token(piece) => 1,
            _ => self.merge(piece, None, None),
        }
    }

    /// The encoding's static tables.
    #[cfg(test)]
    pub(crate) fn table(&self) -> &Table {
        &self.table
    }

    /// Whether `piece` is one token: looked up in the index once it is
    /// built, else in the static tables.
    fn is_token(&self, piece: &[u8]) -> bool {
        match self.index.get() {
            Some(index) => index.rank(&self.table, piece).is_some(),
            None => self.table.rank(piece).is_some(),
        }
    }

    /// The tokens of `piece`, which is not one token, pushing where each
    /// ends onto `ends` if given: merged by rank, with the recent `joins`
    /// in front of the tables if given — or, once the encoding has built
    /// its index, looked up there, and a long piece encoded in linear time
    /// ([`backtrack`]). Merging from the static tables counts towards
    /// building the index (see [`INDEX_AFTER`]).
    fn merge(
        &self,
        piece: &[u8],
        joins: Option<&mut merge::Joins>,
        ends: Option<&mut Vec<usize>>,
    ) -> usize {
        let table = &self.table;
        let index = self.index.get().or_else(|| {
            let merged = self.merged.fetch_add(piece.len(), Ordering::Relaxed) + piece.len();
            (merged >= INDEX_AFTER).then(|| self.index.get_or_init(|| Index::build(table)))
        });
        match (index, joins) {
            (Some(index), joins) => {
                let mut ends = ends;
                if piece.len() >= BACKTRACK_FROM
                    && let Some(n) = backtrack::encode(index, table, piece, ends.as_deref_mut())
                {
                    return n;
                }
                let _ = joins;
                merge::merge(Indexed { index, table }, piece, ends)
            }
            (None, Some(joins)) => merge::merge(merge::Remembered { table, joins }, piece, ends),
            (None, None) => merge::merge(table, piece, ends),
        }
    }

    /// Calls `each` with the pieces of `text` in order. Pieces never reach
    /// across a space between two non-whitespace characters (see
    /// `tokenizer::count_in_chunks`), so the text splits there into ASCII
    /// stretches, split by the ASCII scanners, and the stretches around
    /// other characters, split by the Unicode ones.
    fn pieces(&self, text: &str, mut each: impl FnMut(&[u8])) {
        let bytes = text.as_bytes();
        let mut start = 0;
        while start < bytes.len() {
            let Some(off) = bytes[start..].iter().position(|b| !b.is_ascii()) else {
                self.ascii_pieces(&bytes[start..], &mut each);
                break;
            };
            let at = start + off;
            let cut = split_before(text, start, at);
            if cut > start {
                self.ascii_pieces(&bytes[start..cut], &mut each);
            }
            let end = split_after(text, at + 1);
            let stretch = &text[cut..end];
            let mut from = 0;
            while from < stretch.len() {
                let to = match self.pattern {
                    Pattern::O200k => unicode::o200k_piece(stretch, from),
                    Pattern::Cl100k => unicode::cl100k_piece(stretch, from),
                };
                each(&stretch.as_bytes()[from..to]);
                from = to;
            }
            start = end;
        }
    }

    fn ascii_pieces(&self, text: &[u8], each: &mut impl FnMut(&[u8])) {
        let mut at = 0;
        while at < text.len() {
            let end = match self.pattern {
                Pattern::O200k => o200k_piece(text, at),
                Pattern::Cl100k => cl100k_piece(text, at),
            };
            each(&text[at..end]);
            at = end;
        }
    }
}

/// The last space in `text[from..to]` between two non-whitespace
/// characters (after `from`), or `from`.
fn split_before(text: &str, from: usize, to: usize) -> usize {
    (from + 1..to)
        .rev()
        .find(|&i| splits_at(text, i))
        .unwrap_or(from)
}

fn is_letter(b: u8) -> bool {
    b.is_ascii_alphabetic()
}

/// `\s` on ASCII: tab, newline, vertical tab, form feed, return, space.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

fn is_newline(b: u8) -> bool {
    b == b'\r' || b == b'\n'
}

/// `[^\r\n\p{L}\p{N}]`: may lead a word.
fn is_lead(b: u8) -> bool {
    !is_newline(b) && !b.is_ascii_alphanumeric()
}

/// `[^\s\p{L}\p{N}]`: punctuation and other symbols.
fn is_symbol(b: u8) -> bool {
    !is_space(b) && !b.is_ascii_alphanumeric()
}

fn run(text: &[u8], from: usize, class: impl Fn(u8) -> bool) -> usize {
    from + text[from..].iter().take_while(|&&b| class(b)).count()
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `at`: where it ends, if it matches.
fn contraction(text: &[u8], at: usize) -> Option<usize> {
    if text.get(at) != Some(&b'\'') {
        return None;
    }
    let one = text.get(at + 1).map(u8::to_ascii_lowercase);
    if matches!(one, Some(b's' | b't' | b'm' | b'd')) {
        return Some(at + 2);
    }
    let two = text.get(at + 2).map(u8::to_ascii_lowercase);
    match (one, two) {
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => {
            Some(at + 3)
        }
        _ => None,
    }
}

/// The two alternatives both patterns have after their words, where they
/// match at `at`: `\p{N}{1,3}`, then ` ?[^\s\p{L}\p{N}]+` followed by any
/// run of bytes `trailing` takes (`[\r\n/]` for o200k, `[\r\n]` for
/// cl100k).
fn number_or_symbols(text: &[u8], at: usize, trailing: impl Fn(u8) -> bool) -> Option<usize> {
    let c = text[at];
    if c.is_ascii_digit() {
        return Some(run(text, at, |b| b.is_ascii_digit()).min(at + 3));
    }
    let from = if is_symbol(c) {
        at
    } else if c == b' ' && text.get(at + 1).copied().is_some_and(is_symbol) {
        at + 1
    } else {
        return None;
    };
    Some(run(text, run(text, from, is_symbol), trailing))
}

/// The end of the whitespace piece at `at` for the alternatives both
/// patterns end with, once a whitespace run through the end has been
/// dealt with: `\s*[\r\n]+` (o200k) or `\s*[\r\n]` (cl100k) take the run
/// up to its last newline; `\s+(?!\S)` takes all but its last character;
/// a lone whitespace character is a piece of its own.
fn whitespace(text: &[u8], at: usize, end_of_run: usize) -> usize {
    if let Some(nl) = text[at..end_of_run].iter().rposition(|&b| is_newline(b)) {
        return at + nl + 1;
    }
    if end_of_run - at >= 2 {
        end_of_run - 1
    } else {
        end_of_run
    }
}

/// The end of the o200k piece that starts at `at` in ASCII `text`:
///
/// ```text
/// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
/// |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
/// |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
/// ```
fn o200k_piece(text: &[u8], at: usize) -> usize {
    let c = text[at];
    let next = text.get(at + 1).copied();
    // The two word alternatives: an optional lead, capitals, then small
    // letters. The first needs a small letter; when it fails the second
    // takes the capitals alone, so both end after the small letters.
    let word = if is_letter(c) {
        Some(at)
    } else if is_lead(c) && next.is_some_and(is_letter) {
        Some(at + 1)
    } else {
        None
    };
    if let Some(from) = word {
        let end = run(text, run(text, from, |b| b.is_ascii_uppercase()), |b| {
            b.is_ascii_lowercase()
        });
        return contraction(text, end).unwrap_or(end);
    }
    if let Some(end) = number_or_symbols(text, at, |b| is_newline(b) || b == b'/') {
        return end;
    }
    // Whitespace. `\s+(?!\S)` takes a run that reaches the end whole,
    // unless a newline in it is claimed first by `\s*[\r\n]+`.
    let end_of_run = run(text, at, is_space);
    if end_of_run == text.len() && !text[at..].iter().any(|&b| is_newline(b)) {
        return end_of_run;
    }
    whitespace(text, at, end_of_run)
}

/// The end of the cl100k piece that starts at `at` in ASCII `text`:
///
/// ```text
/// '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+
/// | ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
/// ```
fn cl100k_piece(text: &[u8], at: usize) -> usize {
    let c = text[at];
    let next = text.get(at + 1).copied();
    if let Some(end) = contraction(text, at) {
        return end;
    }
    // The possessive lead never gives its character back.
    if is_letter(c) {
        return run(text, at, is_letter);
    }
    if is_lead(c) && next.is_some_and(is_letter) {
        return run(text, at + 1, is_letter);
    }
    if let Some(end) = number_or_symbols(text, at, is_newline) {
        return end;
    }
    // `\s++$` takes a run that reaches the end whole.
    let end_of_run = run(text, at, is_space);
    if end_of_run == text.len() {
        return end_of_run;
    }
    whitespace(text, at, end_of_run)
}

/// Whether `text` splits at byte `i` whatever comes around it: a space
/// between two non-whitespace characters (see `count_in_chunks` in [`crate::tokenizer`]).
pub(crate) fn splits_at(text: &str, i: usize) -> bool {
    // A space byte is always a whole character in UTF-8.
    text.as_bytes().get(i) == Some(&b' ')
        && text[..i]
            .chars()
            .next_back()
            .is_some_and(|c| !c.is_whitespace())
        && text[i + 1..]
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace())
}

/// The first position at or after `from` that is a space between two
/// non-whitespace characters, or the end of `text`.
pub(crate) fn split_after(text: &str, from: usize) -> usize {
    // No split can fall at byte 0 (nothing is before it); an empty text
    // has no position but its end.
    (from.max(1).min(text.len())..text.len())
        .find(|&i| splits_at(text, i))
        .unwrap_or(text.len())
}

/// The first and the last position of `text` where it splits whatever
/// comes around it (see [`splits_at`]), if it has one.
pub(crate) fn first_and_last_split(text: &str) -> Option<(usize, usize)> {
    let spaces = || {
        text.bytes()
            .enumerate()
            .filter(|&(_, b)| b == b' ')
            .map(|(i, _)| i)
    };
    let first = spaces().find(|&i| splits_at(text, i))?;
    let last = text
        .bytes()
        .enumerate()
        .rev()
        .filter(|&(_, b)| b == b' ')
        .map(|(i, _)| i)
        .find(|&i| splits_at(text, i))
        .unwrap_or(first);
    Some((first, last))
}

#[cfg(all(test, any(feature = "o200k", feature = "cl100k")))]
mod tests {
    use super::*;
    use tiktoken_rs::CoreBPE;

    /// The encodings this build has, each with tiktoken-rs's own.
    fn both() -> Vec<(&'static Encoding, &'static CoreBPE)> {
        vec![
            #[cfg(feature = "o200k")]
            (&O200K, tiktoken_rs::o200k_base_singleton()),
            #[cfg(feature = "cl100k")]
            (&CL100K, tiktoken_rs::cl100k_base_singleton()),
        ]
    }

    /// The tokens of `text` by our pieces, merges and tables.
    fn tokens(e: &Encoding, text: &str) -> Vec<Rank> {
        let mut at = 0;
        e.token_ends(text)
            .into_iter()
            .map(|end| {
                let rank = e.table.rank(&text.as_bytes()[at..end]);
                at = end;
                rank.unwrap_or_else(|| panic!("no token for {:?}", &text[..end]))
            })
            .collect()
    }

    /// Counts and token sequences equal tiktoken's for every text.
    fn agree(texts: &[String]) {
        for (e, bpe) in both() {
            for (i, text) in texts.iter().enumerate() {
                let want = bpe.encode_ordinary(text);
                assert_eq!(tokens(e, text), want, "{:?} #{i} {text:?}", e.pattern);
                assert_eq!(e.count(text), want.len(), "{:?} #{i} {text:?}", e.pattern);
            }
        }
    }

    /// A xorshift generator for test inputs.
    pub(super) struct Rng(pub(super) u64);
    impl Rng {
        pub(super) fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// Texts of runs drawn from `classes`: words, digit groups, symbol
    /// runs and whitespace runs of every kind appear.
    fn texts(classes: &[&[char]], n: usize, seed: u64) -> Vec<String> {
        let mut rng = Rng(seed);
        (0..n)
            .map(|_| {
                let len = 1 + rng.below(40);
                let mut s = String::new();
                for _ in 0..len {
                    let class = classes[rng.below(classes.len())];
                    for _ in 0..1 + rng.below(4) {
                        s.push(class[rng.below(class.len())]);
                    }
                }
                s
            })
            .collect()
    }

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    /// Every ASCII byte, weighted towards the characters the patterns
    /// treat specially.
    fn ascii_classes() -> Vec<Vec<char>> {
        [
            "abcdefghijklmnopqrstuvwxyz",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "0123456789",
            " ",
            "\t\n\r\x0b\x0c  \n",
            "'",
            "sStTdDmMlLeErRvV",
            "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~/",
            "\x00\x01\x07\x1b\x1c\x1f\x7f",
        ]
        .iter()
        .map(|s| chars(s))
        .collect()
    }

    #[test]
    fn ascii_pieces_give_tiktokens_tokens() {
        let classes = ascii_classes();
        let classes: Vec<&[char]> = classes.iter().map(Vec::as_slice).collect();
        agree(&texts(&classes, 20_000, 0x9e37_79b9_7f4a_7c15));
    }

    /// Characters of every class the patterns tell apart, and the ones
    /// their rules single out: capitals, title case, modifier and other
    /// letters, combining, spacing and enclosing marks, digits, letter and
    /// other numbers, every kind of whitespace, the long s and the Kelvin
    /// sign (which fold to ASCII letters), symbols, emoji and joiners.
    #[test]
    fn unicode_pieces_give_tiktokens_tokens() {
        let classes = ascii_classes();
        let mut classes: Vec<&[char]> = classes.iter().map(Vec::as_slice).collect();
        let unicode = [
            chars("ÀÉÎÕÜĀŁΣДЖԱ"),
            chars("ǅǈǋǲᾈᾙ"),
            chars("àéîõüāłσдժßŉ"),
            chars("ʰʲˆˈᵃᵇ々ゝ"),
            chars("東京日本語中文한국어אבגعربيةทไ"),
            chars("\u{300}\u{301}\u{308}\u{327}\u{903}\u{94d}\u{20dd}\u{fe0f}"),
            chars("٠١٢३४ⅧⅫ²³½①"),
            chars("\u{a0}\u{85}\u{1680}\u{2000}\u{2003}\u{2028}\u{2029}\u{202f}\u{3000}"),
            chars("ſſ\u{212a}'"),
            chars("€£¥©®™°±×÷—–…‘’“”«»·•†"),
            chars("🙂👍🏽\u{200d}\u{200b}\u{feff}🇯🇵"),
        ];
        classes.extend(unicode.iter().map(Vec::as_slice));
        agree(&texts(&classes, 20_000, 0x2545_f491_4f6c_dd1d));
    }

    #[test]
    fn mixed_and_long_texts_count_as_tiktoken_counts_them() {
        let long_word = "x".repeat(300);
        let long_symbols = "=-".repeat(200);
        let newlines = " \n".repeat(80);
        let mut rng = Rng(7);
        let letters: String = (0..5000)
            .map(|_| char::from(b'a' + rng.below(26) as u8))
            .collect();
        let texts = [
            "plain ASCII, then naïve café — and back to ASCII again.".to_owned(),
            "東京 and 日本語 with words between, 🙂 and more words".into(),
            "é".into(),
            " é ".into(),
            "word é".into(),
            "é word".into(),
            "a\u{a0}b c\u{a0} d".into(),
            "tab\u{2003}em space \u{2003} here".into(),
            format!("before {long_word} after"),
            format!("{long_symbols}\n{long_word}"),
            newlines,
            "ſ's 'ſ café's".into(),
            letters.clone(),
            format!("ünïcödé{letters}"),
            "東".repeat(200),
        ];
        agree(&texts);
        // Again with the counts remembered, and without the memory.
        agree(&texts);
        let held: Vec<_> = both().iter().map(|(e, _)| e.memory.lock()).collect();
        agree(&texts);
        drop(held);
    }

    /// With the index built (as it is once an encoding has merged enough),
    /// counts and tokens are tiktoken's still: texts over every ASCII byte
    /// and Unicode class, and long pieces — words of random letters and
    /// bytes, runs of one character, of spaces, CJK — that the linear
    /// encoder takes.
    #[test]
    fn counts_are_tiktokens_once_the_index_is_built() {
        for (e, _) in both() {
            e.index.get_or_init(|| Index::build(&e.table));
        }
        let classes = ascii_classes();
        let classes: Vec<&[char]> = classes.iter().map(Vec::as_slice).collect();
        agree(&texts(&classes, 5_000, 0x1de7));
        let mut rng = Rng(0x10_c5);
        let mut long = Vec::new();
        for len in [99, 100, 150, 1_000, 20_000] {
            let word: String = (0..len)
                .map(|_| char::from(b'a' + rng.below(26) as u8))
                .collect();
            let mixed: String = (0..len / 2)
                .map(|_| ['a', 'é', 'ж', '東', 'ß', 'Z', 'q', 'x'][rng.below(8)])
                .collect();
            long.extend([
                format!("before {word} after"),
                word.to_uppercase(),
                "a".repeat(len),
                format!("x{}y", " ".repeat(len)),
                "=-".repeat(len / 2),
                "東京".repeat(len / 6),
                mixed,
                "1".repeat(len),
            ]);
        }
        agree(&long);
    }

    /// A long run of mixed spaces is one piece. tiktoken-rs's expression
    /// engine runs out of stack on it somewhere between 300,000 and a
    /// million `" \u{a0}"` pairs (and panics); the scanner counts any
    /// length, as tiktoken counts the shorter runs: a token per four pairs.
    #[test]
    fn a_whitespace_run_past_tiktokens_regex_stack_counts_as_shorter_ones_do() {
        for (e, bpe) in both() {
            for pairs in [1_000, 300_000] {
                let text = " \u{a0}".repeat(pairs);
                let want = bpe.encode_ordinary(&text).len();
                assert_eq!(e.count(&text), want, "{:?} {pairs}", e.pattern);
                assert_eq!(want, pairs / 4);
            }
            let pairs = 1_200_000;
            assert_eq!(e.count(&" \u{a0}".repeat(pairs)), pairs / 4);
        }
    }

    #[test]
    fn short_keys_tell_every_short_piece_apart() {
        let pieces: [&[u8]; 7] = [b"", b"\0", b"\0\0", b"a", b"a\0", b"\0a", b"abcdefg"];
        let keys: std::collections::HashSet<u64> =
            pieces.iter().filter_map(|p| short_key(p)).collect();
        assert_eq!(keys.len(), pieces.len());
        assert_eq!(
            short_key(b"abcdefgh"),
            None,
            "eight bytes are looked up by bytes"
        );
    }

    /// Every ordinary token of tiktoken's copy is found with its rank, and
    /// nothing else: each token with a byte changed or added is either
    /// another token or none.
    #[test]
    fn every_token_is_found_with_its_rank() {
        for (e, bpe) in both() {
            let mut found = 0;
            for rank in 0..e.table.tokens as Rank + 1024 {
                let Ok(bytes) = bpe.decode_bytes(&[rank]) else {
                    continue;
                };
                if std::str::from_utf8(&bytes).is_ok_and(|s| bpe.special_tokens().contains(s)) {
                    assert_eq!(e.table.rank(&bytes), None, "special {rank}");
                    continue;
                }
                assert_eq!(
                    e.table.rank(&bytes),
                    Some(rank),
                    "{:?} {bytes:?}",
                    e.pattern
                );
                found += 1;
                for changed in [
                    [bytes.as_slice(), b"\x00"].concat(),
                    [&bytes[..bytes.len() - 1], &[bytes[bytes.len() - 1] ^ 1]].concat(),
                ] {
                    if let Some(r) = e.table.rank(&changed) {
                        assert_eq!(bpe.decode_bytes(&[r]).unwrap(), changed);
                    }
                }
            }
            // o200k has 199,998 ordinary tokens, cl100k 100,256.
            let expected = match e.pattern {
                Pattern::O200k => 199_998,
                Pattern::Cl100k => 100_256,
            };
            assert_eq!((found, e.table.tokens), (expected, expected));
        }
    }

    /// The class table agrees with the regex crate's Unicode classes on
    /// every code point.
    #[test]
    fn every_character_has_the_class_regex_gives_it() {
        use unicode::Class;
        let classes = [
            (Class::Upper, r"^[\p{Lu}\p{Lt}]$"),
            (Class::Lower, r"^\p{Ll}$"),
            (Class::Letter, r"^[\p{Lm}\p{Lo}]$"),
            (Class::Mark, r"^\p{M}$"),
            (Class::Number, r"^\p{N}$"),
            (Class::Newline, r"^[\r\n]$"),
            (Class::Space, r"^[\s&&[^\r\n]]$"),
        ]
        .map(|(c, p)| (c, regex::Regex::new(p).unwrap()));
        let mut buf = [0; 4];
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            let s = c.encode_utf8(&mut buf);
            let want = classes
                .iter()
                .find(|(_, re)| re.is_match(s))
                .map_or(Class::Other, |(class, _)| *class);
            assert_eq!(unicode::class(c), want, "U+{:04X}", c as u32);
        }
    }
}
