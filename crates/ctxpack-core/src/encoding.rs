//! Exact counting with a tiktoken encoding, fast on ASCII text.
//!
//! tiktoken splits text into pieces with a regular expression, then merges
//! each piece's bytes into tokens by rank. The expression engine does most
//! of the work and runs at 15–25 MB/s. Here ASCII text is split by a
//! hand-written scanner that follows the o200k and cl100k patterns exactly
//! (each rule below names the alternative it stands for), and a piece is
//! looked up whole before it is merged, with merges of repeated pieces
//! remembered. Text that is not ASCII, and pieces of 100 bytes or more that
//! are not one token, are counted by tiktoken itself.
//!
//! Exactness is the contract: the tests compare the token sequences with
//! tiktoken's on generated texts over every ASCII byte.

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Mutex;
use tiktoken_rs::{CoreBPE, Rank};

/// The pre-tokenising pattern an encoding splits text with. (A build
/// without one of the encodings keeps its pattern, unused.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(all(feature = "o200k", feature = "cl100k")), allow(dead_code))]
pub(crate) enum Pattern {
    O200k,
    Cl100k,
}

/// Pieces of this many bytes or more that are not one token are merged by
/// tiktoken, which switches to a heap-based merge for them.
const LONG_PIECE: usize = 100;

/// Merged pieces remembered before the memory is cleared and starts again.
const PIECE_MEMORY: usize = 1 << 16;

/// One encoding: tiktoken's tables plus a rank map for direct lookups.
pub(crate) struct Encoding {
    bpe: CoreBPE,
    ranks: FxHashMap<Vec<u8>, Rank>,
    /// The tokens of at most seven bytes, by [`short_key`]. Most pieces of
    /// prose are that short; a lookup here hashes one number and compares
    /// numbers, where one in `ranks` hashes the bytes, then follows the
    /// key to compare them.
    short_tokens: FxHashSet<u64>,
    pattern: Pattern,
    merged: Mutex<Merged>,
}

/// Token counts of pieces that are not one token, remembered: short ones
/// by [`short_key`], the others by their bytes.
#[derive(Default)]
struct Merged {
    short: FxHashMap<u64, u32>,
    long: FxHashMap<Box<[u8]>, u32>,
}

impl Merged {
    /// The tokens of `piece` (whose [`short_key`] is `key`), from memory
    /// or from `merge`, then remembered.
    fn count(&mut self, piece: &[u8], key: Option<u64>, merge: impl FnOnce() -> usize) -> usize {
        let known = match key {
            Some(k) => self.short.get(&k),
            None => self.long.get(piece),
        };
        if let Some(&n) = known {
            return n as usize;
        }
        let n = merge();
        if self.short.len() + self.long.len() >= PIECE_MEMORY {
            self.short.clear();
            self.long.clear();
        }
        // Counts of pieces under 100 bytes fit easily.
        match key {
            Some(k) => self.short.insert(k, n as u32),
            None => self.long.insert(piece.into(), n as u32),
        };
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
    /// Wraps `bpe`, whose ordinary tokens are read back by rank; `pattern`
    /// must be the one `bpe` was built with.
    pub(crate) fn new(bpe: CoreBPE, pattern: Pattern) -> Self {
        let special = bpe.special_tokens();
        let mut ranks = FxHashMap::default();
        // Ranks are dense from 0; the largest encoding has about 200,000
        // ordinary tokens, and its special tokens sit just above them.
        let mut misses = 0;
        let mut rank: Rank = 0;
        while misses < 4096 {
            match bpe.decode_bytes(&[rank]) {
                Ok(bytes) if !std::str::from_utf8(&bytes).is_ok_and(|s| special.contains(s)) => {
                    misses = 0;
                    ranks.insert(bytes, rank);
                }
                _ => misses += 1,
            }
            rank += 1;
        }
        let short_tokens = ranks.keys().filter_map(|k| short_key(k)).collect();
        Encoding {
            bpe,
            ranks,
            short_tokens,
            pattern,
            merged: Mutex::new(Merged::default()),
        }
    }

    /// tiktoken's encoder, for what only it does (truncation).
    pub(crate) fn bpe(&self) -> &CoreBPE {
        &self.bpe
    }

    /// The tokens of `text`, exactly as `encode_ordinary` would count them.
    pub(crate) fn count(&self, text: &str) -> usize {
        // Pieces never reach across a space between two non-whitespace
        // characters (see `tokenizer::count_in_chunks`), so the text splits
        // there into ASCII stretches, counted here, and the stretches
        // around other characters, counted by tiktoken.
        let bytes = text.as_bytes();
        let mut memory = self.merged.try_lock().ok();
        let mut total = 0;
        let mut start = 0;
        while start < bytes.len() {
            let Some(off) = bytes[start..].iter().position(|b| !b.is_ascii()) else {
                total += self.count_ascii(&text[start..], memory.as_deref_mut());
                break;
            };
            let at = start + off;
            let cut = split_before(text, start, at);
            if cut > start {
                total += self.count_ascii(&text[start..cut], memory.as_deref_mut());
            }
            let end = split_after(text, at + 1);
            total += self.bpe.encode_ordinary(&text[cut..end]).len();
            start = end;
        }
        total
    }

    /// The tokens of ASCII text.
    fn count_ascii(&self, all: &str, mut memory: Option<&mut Merged>) -> usize {
        let text = all.as_bytes();
        let mut total = 0;
        let mut at = 0;
        while at < text.len() {
            let end = match self.pattern {
                Pattern::O200k => o200k_piece(text, at),
                Pattern::Cl100k => cl100k_piece(text, at),
            };
            let piece = &text[at..end];
            at = end;
            let key = short_key(piece);
            let token = match key {
                Some(k) => self.short_tokens.contains(&k),
                None => self.ranks.contains_key(piece),
            };
            if token {
                total += 1;
                continue;
            }
            if piece.len() >= LONG_PIECE {
                // The whole stretch goes to tiktoken: its pieces are ours.
                return self.bpe.encode_ordinary(all).len();
            }
            let merge = || tiktoken_rs::byte_pair_split(piece, &self.ranks).len();
            total += match memory.as_deref_mut() {
                Some(m) => m.count(piece, key, merge),
                None => merge(),
            };
        }
        total
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

#[cfg(test)]
mod tests {
    use super::*;

    fn encoding(pattern: Pattern) -> Encoding {
        let bpe = match pattern {
            Pattern::O200k => tiktoken_rs::o200k_base(),
            Pattern::Cl100k => tiktoken_rs::cl100k_base(),
        };
        Encoding::new(bpe.unwrap(), pattern)
    }

    /// The tokens of ASCII `text` by our pieces, for comparing sequences.
    fn tokens(e: &Encoding, text: &[u8]) -> Vec<Rank> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let end = match e.pattern {
                Pattern::O200k => o200k_piece(text, at),
                Pattern::Cl100k => cl100k_piece(text, at),
            };
            assert!(end > at, "no progress at {at} in {text:?}");
            let piece = &text[at..end];
            match e.ranks.get(piece) {
                Some(&r) => out.push(r),
                None => out.extend(
                    tiktoken_rs::byte_pair_split(piece, &e.ranks)
                        .into_iter()
                        .map(|p| e.ranks[p]),
                ),
            }
            at = end;
        }
        out
    }

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// Texts over every ASCII byte, weighted towards the characters the
    /// patterns treat specially, in runs so that words, digit groups,
    /// symbol runs and whitespace runs of every kind appear.
    fn ascii_texts(n: usize, seed: u64) -> Vec<String> {
        let classes: [&[u8]; 9] = [
            b"abcdefghijklmnopqrstuvwxyz",
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            b"0123456789",
            b" ",
            b"\t\n\r\x0b\x0c  \n",
            b"'",
            b"sStTdDmMlLeErRvV",
            b"!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~/",
            b"\x00\x01\x07\x1b\x1c\x1f\x7f",
        ];
        let mut rng = Rng(seed);
        (0..n)
            .map(|_| {
                let len = 1 + rng.below(40);
                let mut s = Vec::new();
                for _ in 0..len {
                    let class = classes[rng.below(classes.len())];
                    for _ in 0..1 + rng.below(4) {
                        s.push(class[rng.below(class.len())]);
                    }
                }
                String::from_utf8(s).unwrap()
            })
            .collect()
    }

    #[test]
    fn ascii_pieces_give_tiktokens_tokens() {
        for pattern in [Pattern::O200k, Pattern::Cl100k] {
            let e = encoding(pattern);
            for (i, text) in ascii_texts(20_000, 0x9e37_79b9_7f4a_7c15)
                .iter()
                .enumerate()
            {
                let want = e.bpe.encode_ordinary(text);
                assert_eq!(
                    tokens(&e, text.as_bytes()),
                    want,
                    "{pattern:?} #{i} {text:?}"
                );
                assert_eq!(e.count(text), want.len(), "{pattern:?} #{i} {text:?}");
            }
        }
    }

    #[test]
    fn mixed_and_long_texts_count_as_tiktoken_counts_them() {
        let long_word = "x".repeat(300);
        let long_symbols = "=-".repeat(200);
        let newlines = " \n".repeat(80);
        let texts = [
            "plain ASCII, then naïve café — and back to ASCII again.",
            "東京 and 日本語 with words between, 🙂 and more words",
            "é",
            " é ",
            "word é",
            "é word",
            "a\u{a0}b c\u{a0} d",
            "tab\u{2003}em space \u{2003} here",
            &format!("before {long_word} after"),
            &format!("{long_symbols}\n{long_word}"),
            &newlines,
            "ſ's 'ſ café's",
        ];
        for pattern in [Pattern::O200k, Pattern::Cl100k] {
            let e = encoding(pattern);
            for text in texts {
                assert_eq!(
                    e.count(text),
                    e.bpe.encode_ordinary(text).len(),
                    "{pattern:?} {text:?}"
                );
            }
            // Again with the merges remembered, and without the memory.
            for text in texts {
                assert_eq!(
                    e.count(text),
                    e.bpe.encode_ordinary(text).len(),
                    "{pattern:?} {text:?}"
                );
            }
            let held = e.merged.lock().unwrap();
            for text in texts {
                assert_eq!(
                    e.count(text),
                    e.bpe.encode_ordinary(text).len(),
                    "{pattern:?} {text:?}"
                );
            }
            drop(held);
        }
    }

    #[test]
    fn short_keys_tell_every_short_piece_apart() {
        let pieces: [&[u8]; 7] = [b"", b"\0", b"\0\0", b"a", b"a\0", b"\0a", b"abcdefg"];
        let keys: FxHashSet<u64> = pieces.iter().filter_map(|p| short_key(p)).collect();
        assert_eq!(keys.len(), pieces.len());
        assert_eq!(
            short_key(b"abcdefgh"),
            None,
            "eight bytes are looked up by bytes"
        );
    }

    #[test]
    fn every_token_is_read_back() {
        let o = encoding(Pattern::O200k);
        let c = encoding(Pattern::Cl100k);
        // o200k has 199,998 ordinary tokens, cl100k 100,256.
        assert_eq!(o.ranks.len(), 199_998);
        assert_eq!(c.ranks.len(), 100_256);
    }
}
