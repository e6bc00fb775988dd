//! Token counting behind one trait.
//!
//! The exact encodings count with tiktoken's tables, compiled into the
//! build as static data and read in place, so the first count in a fresh
//! process or component instance costs what any later one does; the
//! estimator is the cheap characters-per-token rule. A build may leave
//! either encoding out (cargo features `o200k`, `cl100k`); a request for
//! one it left out is refused, naming it.

// A build with neither encoding counts with the estimator alone.
#![cfg_attr(
    not(any(feature = "o200k", feature = "cl100k")),
    allow(unused_imports, unused_variables, unreachable_code, dead_code)
)]

use crate::encoding::{Encoding, first_and_last_split, split_after};
use crate::error::Error;
use crate::types::Tokenizer;
use std::cell::RefCell;
use std::collections::HashMap;

/// A token count that may have stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Exactly this many tokens.
    Exact(u32),
    /// More than this many tokens: counting stopped once it was clear.
    Over(u32),
}

impl Count {
    /// The exact count if it is at most `limit`.
    pub fn within(self, limit: u32) -> Option<u32> {
        match self {
            Count::Exact(n) if n <= limit => Some(n),
            _ => None,
        }
    }

    /// The count with `n` more tokens.
    pub fn plus(self, n: u32) -> Count {
        match self {
            Count::Exact(m) => Count::Exact(m.saturating_add(n)),
            Count::Over(m) => Count::Over(m.saturating_add(n)),
        }
    }

    /// The count, if it is exact.
    pub fn exact(self) -> Option<u32> {
        match self {
            Count::Exact(n) => Some(n),
            Count::Over(_) => None,
        }
    }

    /// The fewest tokens the text can have.
    pub fn at_least(self) -> u64 {
        match self {
            Count::Exact(n) => u64::from(n),
            Count::Over(n) => u64::from(n) + 1,
        }
    }
}

/// Counts the tokens of a text.
pub trait TokenCounter {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> u32;

    /// Tokens in `text`, counted at least until it is clear whether there
    /// are more than `limit`: `Count::Exact` if the whole text was counted
    /// (it may exceed `limit`), or `Count::Over(n)` with `n >= limit` if
    /// counting stopped early. Counters that cannot stop early count
    /// everything.
    fn count_up_to(&self, text: &str, limit: u32) -> Count {
        let _ = limit;
        Count::Exact(self.count(text))
    }

    /// A lower bound on the tokens of `text`, found without encoding it.
    fn at_least(&self, text: &str) -> u32 {
        let _ = text;
        0
    }

    /// The longest prefix of `text` that ends on a token boundary (and a
    /// character boundary) and counts at most `max` tokens.
    fn truncate(&self, text: &str, max: u32) -> String;

    /// Whether the count of a text is the sum of the counts of its pieces
    /// cut at any space between two non-whitespace characters: true for
    /// the exact encodings, whose pre-tokenising split always falls there.
    /// It lets the budget count a long rendered text from its entries'
    /// known counts, counting only the text around each join.
    fn additive_at_splits(&self) -> bool {
        false
    }
}

/// Exact counts with a tiktoken encoding. Special-token markers in the text
/// (such as `<|endoftext|>`) count as ordinary text: content is never allowed
/// to smuggle control tokens in.
pub(crate) struct Exact<'a>(&'a Encoding);

impl TokenCounter for Exact<'_> {
    fn count(&self, text: &str) -> u32 {
        clamp_len(self.0.count(text))
    }

    fn additive_at_splits(&self) -> bool {
        true
    }

    fn count_up_to(&self, text: &str, limit: u32) -> Count {
        count_in_chunks(text, limit, (MIN_CHUNK, BYTES_PER_TOKEN), |chunk| {
            self.0.count(chunk)
        })
    }

    /// The runs of characters between spaces and tabs that start with a
    /// character that is not whitespace: no piece of the o200k or cl100k
    /// patterns holds non-whitespace, then a space or tab, then
    /// non-whitespace (a letter piece takes at most one leading character,
    /// a punctuation piece at most a leading space), so each such run
    /// holds a piece of its own, and each piece is at least a token. A run
    /// of whitespace alone is not counted: `\n \n` is one piece.
    ///
    /// A counted run starts at the first byte, or after a space or tab,
    /// with a byte that begins a character known not to be whitespace:
    /// printable ASCII, or the lead byte of a block that holds no Unicode
    /// whitespace (see [`starts_solid`]). Counted without a branch per
    /// byte, so the compiler does it many bytes at a time: this floor is
    /// taken over every reachable turn at every assembly, counts cached or
    /// not.
    fn at_least(&self, text: &str) -> u32 {
        let bytes = text.as_bytes();
        let gap = |b: u8| (b == b' ') | (b == b'\t');
        let starts_in = |before: &[u8], at: &[u8]| -> u8 {
            before
                .iter()
                .zip(at)
                .fold(0, |n, (&a, &b)| n + u8::from(gap(a) & starts_solid(b)))
        };
        let Some((&first, rest)) = bytes.split_first() else {
            return 0;
        };
        // Each byte with the one before it, 64 pairs at a time (a byte
        // counter cannot overflow).
        let mut before = bytes[..rest.len()].chunks_exact(64);
        let mut at = rest.chunks_exact(64);
        let mut starts = usize::from(starts_solid(first));
        for (b, a) in before.by_ref().zip(at.by_ref()) {
            starts += usize::from(starts_in(b, a));
        }
        starts += usize::from(starts_in(before.remainder(), at.remainder()));
        clamp_len(starts)
    }

    fn truncate(&self, text: &str, max: u32) -> String {
        // Only a prefix with more than `max` tokens needs encoding: cut at
        // a safe split (see `count_in_chunks`), its tokens are the first
        // tokens of the whole text.
        let mut want = (max as usize)
            .saturating_add(1)
            .saturating_mul(BYTES_PER_TOKEN)
            .max(MIN_CHUNK);
        let text = loop {
            let end = split_after(text, want);
            let prefix = &text[..end];
            if end == text.len() || self.0.count(prefix) > max as usize {
                break prefix;
            }
            want = want.saturating_mul(2);
        };
        let ends = self.0.token_ends(text);
        let mut n = ends.len().min(max as usize);
        if n == ends.len() {
            return text.to_owned();
        }
        loop {
            // The first `n` tokens are the text's bytes up to the `n`th
            // end; cut back to a character.
            let mut cut = if n == 0 { 0 } else { ends[n - 1] };
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let prefix = &text[..cut];
            // Re-encoding a prefix can merge differently at its end: keep
            // the count exact by checking it.
            if n == 0 || self.count(prefix) <= max {
                return prefix.to_owned();
            }
            n -= 1;
        }
    }
}

/// Whether `b` begins a character that is not whitespace: printable ASCII,
/// or the lead byte of a two-, three- or four-byte character from a range
/// with no Unicode whitespace in it (U+00C0–U+07FF, U+0800–U+0FFF,
/// U+4000–U+FFFF, and beyond). The lead bytes of U+0080–U+00BF (NEL,
/// no-break space), U+1000–U+1FFF, U+2000–U+2FFF and U+3000–U+3FFF
/// (ogham, typographic and ideographic spaces) are left out: the floor
/// only needs to be sure.
fn starts_solid(b: u8) -> bool {
    matches!(b, 0x21..=0x7E | 0xC3..=0xDF | 0xE0 | 0xE4..=0xEF | 0xF0..=0xF4)
}

/// The smallest piece of text counted at once when counting can stop early.
const MIN_CHUNK: usize = 64;
/// Bytes a token takes in typical text: a chunk is sized to hold about as
/// many tokens as remain to be decided.
const BYTES_PER_TOKEN: usize = 4;

/// Counts `text` a chunk at a time with `count`, stopping once the total
/// passes `limit`.
///
/// Chunks end only where the encodings' pre-tokenising split is certain to
/// fall whatever follows: at a space between two non-whitespace
/// characters. Every non-whitespace piece of the o200k and cl100k patterns
/// stops before a space, and the piece after it starts at the space (as
/// its optional leading space, or a one-space piece before digits); the
/// patterns have no look-behind and their only look-ahead (`\s+(?!\S)`)
/// sees no further than the character after a whitespace run. So the pieces
/// of the chunks are the pieces of the whole text, and the sum of the
/// chunks' counts is exactly the text's count. A text with no such space
/// is counted whole.
fn count_in_chunks(
    text: &str,
    limit: u32,
    (min_chunk, bytes_per_token): (usize, usize),
    count: impl Fn(&str) -> usize,
) -> Count {
    let bytes = text.as_bytes();
    let mut total = 0u64;
    let mut start = 0;
    while start < bytes.len() {
        let room = u64::from(limit) - total;
        let want = usize::try_from(room + 1)
            .unwrap_or(usize::MAX)
            .saturating_mul(bytes_per_token)
            .max(min_chunk);
        let end = split_after(text, start.saturating_add(want));
        total += count(&text[start..end]) as u64;
        start = end;
        if total > u64::from(limit) && start < bytes.len() {
            // At least `total` tokens, so more than `total - 1`.
            return Count::Over(clamp_len(total as usize - 1));
        }
    }
    Count::Exact(clamp_len(total as usize))
}

/// One token per `n` characters (Unicode scalar values), rounded up.
///
/// It rounds up: rounding down would charge nothing for a one-character
/// entry, which would let any number of them into any budget.
pub(crate) struct CharsPerToken(u32);

impl CharsPerToken {
    /// An estimator with `n` characters per token; `n` must be at least 1.
    pub fn new(n: u32) -> Result<Self, Error> {
        if n == 0 {
            return Err(Error::invalid(
                "tokenizer.chars-per-token",
                "must be at least 1",
            ));
        }
        Ok(CharsPerToken(n))
    }
}

impl TokenCounter for CharsPerToken {
    fn count(&self, text: &str) -> u32 {
        clamp_len(text.chars().count().div_ceil(self.0 as usize))
    }

    fn truncate(&self, text: &str, max: u32) -> String {
        let keep = (max as usize).saturating_mul(self.0 as usize);
        match text.char_indices().nth(keep) {
            Some((at, _)) => text[..at].to_owned(),
            None => text.to_owned(),
        }
    }
}

/// `n` as a `u32`, at most `u32::MAX`: counts and tallies are recorded in
/// 32 bits (as the WIT has them) and summed in 64.
pub(crate) fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A length or a number of items as a `u32`, at most `u32::MAX`.
pub(crate) fn clamp_len(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Exact counts already made, keyed by a 128-bit hash of the text, its
/// length and the tokenizer, so a conversation re-assembled every turn
/// recounts only its new text. Bounded: it holds at most `capacity`
/// entries in two generations — when the newer fills, the older is
/// dropped — so what is used every turn stays and what is not ages out.
///
/// A known count answers only where counting afresh would give the same:
/// an exact count within the limit asked. Where a count stops early
/// depends on the limit, so a count that stopped early is not kept, and an
/// exact count over the limit is made again: a warm builder gives the same
/// pack and snapshot, byte for byte, as a cold one.
pub(crate) struct CountCache {
    capacity: usize,
    newer: HashMap<CacheKey, u32>,
    older: HashMap<CacheKey, u32>,
}

type CacheKey = (Tokenizer, usize, u64, u64);

impl CountCache {
    /// A cache of at most `capacity` entries (0 keeps nothing).
    pub(crate) fn new(capacity: usize) -> Self {
        CountCache {
            capacity,
            newer: HashMap::new(),
            older: HashMap::new(),
        }
    }

    /// Entries held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }

    fn key(tokenizer: Tokenizer, text: &str) -> CacheKey {
        let (a, b) = crate::digest::hash128(text.as_bytes());
        (tokenizer, text.len(), a, b)
    }

    fn get(&mut self, key: &CacheKey) -> Option<u32> {
        if let Some(c) = self.newer.get(key) {
            return Some(*c);
        }
        let c = self.older.remove(key)?;
        self.put(*key, c);
        Some(c)
    }

    fn put(&mut self, key: CacheKey, count: u32) {
        let generation = self.capacity / 2;
        if generation == 0 {
            return;
        }
        if self.newer.len() >= generation && !self.newer.contains_key(&key) {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(key, count);
    }
}

/// A counter for one assembly, with the builder's cache in front of it.
pub(crate) struct Meter<'a> {
    counter: &'a dyn TokenCounter,
    tokenizer: Tokenizer,
    cache: RefCell<&'a mut CountCache>,
    /// The long texts this assembly counted, when the builder keeps no
    /// counts of its own: a text is measured, fitted and rendered, and is
    /// counted once for all of them.
    counted: RefCell<Vec<(CacheKey, u32)>>,
}

/// Texts shorter than this are counted again rather than remembered
/// within an assembly (hashing them would cost about as much).
const REMEMBER_FROM: usize = 4096;

/// Most long texts an assembly remembers without the builder's cache.
const REMEMBER_AT_MOST: usize = 64;

impl<'a> Meter<'a> {
    pub(crate) fn new(
        counter: &'a dyn TokenCounter,
        tokenizer: Tokenizer,
        cache: &'a mut CountCache,
    ) -> Self {
        Meter {
            counter,
            tokenizer,
            cache: RefCell::new(cache),
            counted: RefCell::new(Vec::new()),
        }
    }

    /// The exact tokens of `text`.
    pub(crate) fn count(&self, text: &str) -> u32 {
        match self.count_up_to(text, u32::MAX) {
            Count::Exact(n) | Count::Over(n) => n,
        }
    }

    /// The tokens of `text` up to `limit` (see [`TokenCounter::count_up_to`]).
    pub(crate) fn count_up_to(&self, text: &str, limit: u32) -> Count {
        if text.is_empty() {
            return Count::Exact(0);
        }
        if limit == 0 {
            // Every counter gives a non-empty text at least one token.
            return Count::Over(0);
        }
        // A text of more bytes than twice the room may well be over it:
        // a cheap lower bound often says so without encoding anything.
        if text.len() as u64 > u64::from(limit) * 2 {
            let floor = self.counter.at_least(text);
            if floor > limit {
                return Count::Over(floor - 1);
            }
        }
        if self.cache.borrow().capacity < 2 {
            return self.count_remembering(text, limit);
        }
        let key = CountCache::key(self.tokenizer, text);
        let known = self.cache.borrow_mut().get(&key);
        if let Some(n) = known.filter(|&n| n <= limit) {
            return Count::Exact(n);
        }
        let counted = self.counter.count_up_to(text, limit);
        if let Count::Exact(n) = counted {
            self.cache.borrow_mut().put(key, n);
        }
        counted
    }

    /// [`Meter::count_up_to`] without the builder's cache: long texts are
    /// remembered for the rest of this assembly only.
    fn count_remembering(&self, text: &str, limit: u32) -> Count {
        if text.len() < REMEMBER_FROM {
            return self.counter.count_up_to(text, limit);
        }
        let key = CountCache::key(self.tokenizer, text);
        let known = self
            .counted
            .borrow()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|&(_, n)| n);
        if let Some(n) = known.filter(|&n| n <= limit) {
            return Count::Exact(n);
        }
        let counted = self.counter.count_up_to(text, limit);
        if let Count::Exact(n) = counted {
            let mut remembered = self.counted.borrow_mut();
            if remembered.len() == REMEMBER_AT_MOST {
                remembered.remove(0);
            }
            remembered.push((key, n));
        }
        counted
    }

    /// A lower bound on the tokens of `text`, found without encoding it
    /// (see [`TokenCounter::at_least`]).
    pub(crate) fn at_least(&self, text: &str) -> u32 {
        self.counter.at_least(text)
    }

    /// The longest prefix of `text` of at most `max` tokens.
    pub(crate) fn truncate(&self, text: &str, max: u32) -> String {
        self.counter.truncate(text, max)
    }
}

/// How a text with a known count divides for a [`Tally`]: its first and
/// last split (see [`crate::encoding::splits_at`]) and the tokens between them.
pub(crate) struct Splits {
    first: usize,
    last: usize,
    interior: u64,
}

impl Meter<'_> {
    /// Where `text` splits for a [`Tally`], and the tokens between its
    /// first and last split — found from `known`, its exact count, when
    /// given, by counting only the two ends. `None` if the counter does
    /// not add up at splits or the text has none.
    pub(crate) fn splits(&self, text: &str, known: Option<u32>) -> Option<Splits> {
        if !self.counter.additive_at_splits() {
            return None;
        }
        let (first, last) = first_and_last_split(text)?;
        let interior = match known {
            // The ends are a few words: counting them is cheap, and the
            // known count settles everything between.
            Some(n) => u64::from(n)
                .saturating_sub(u64::from(self.counter.count(&text[..first])))
                .saturating_sub(u64::from(self.counter.count(&text[last..]))),
            None => u64::from(self.counter.count(&text[first..last])),
        };
        Some(Splits {
            first,
            last,
            interior,
        })
    }
}

/// The exact tokens of a text given in parts, as the counter would count
/// the parts joined: each part's known count settles everything between
/// its first and last split, and only the text around the joins (from one
/// part's last split to the next one's first) is counted. With a counter
/// that does not add up at splits, the joined text is counted whole.
pub(crate) struct Tally<'a, 'm> {
    meter: &'a Meter<'m>,
    total: u64,
    /// Text since the last split, not yet counted.
    pending: String,
}

impl<'a, 'm> Tally<'a, 'm> {
    pub(crate) fn new(meter: &'a Meter<'m>) -> Self {
        Tally {
            meter,
            total: 0,
            pending: String::new(),
        }
    }

    /// Appends `text`, of exactly `known` tokens when given.
    pub(crate) fn push(&mut self, text: &str, known: Option<u32>) {
        let splits = self.meter.splits(text, known);
        self.push_split(text, splits.as_ref());
    }

    /// Appends `text`, divided as [`Meter::splits`] found.
    pub(crate) fn push_split(&mut self, text: &str, splits: Option<&Splits>) {
        match splits {
            Some(s) => {
                self.pending.push_str(&text[..s.first]);
                self.flush();
                self.total += s.interior;
                self.pending.push_str(&text[s.last..]);
            }
            None => self.pending.push_str(text),
        }
    }

    fn flush(&mut self) {
        if !self.pending.is_empty() {
            // A long part with no split (one long word) is pending whole,
            // and was counted before as itself: the builder's cache has
            // it. The text around a join is short, and new: counted.
            self.total += u64::from(if self.pending.len() >= 1024 {
                self.meter.count(&self.pending)
            } else {
                self.meter.counter.count(&self.pending)
            });
            self.pending.clear();
        }
    }

    /// The tokens of everything appended.
    pub(crate) fn finish(mut self) -> u64 {
        self.flush();
        self.total
    }
}

/// Access to the tokenizers. The exact encodings' tables are static: there
/// is nothing to build or share.
#[derive(Default)]
pub struct Tokenizers;

impl Tokenizers {
    /// A counter for `tokenizer`, or the refusal of an encoding this build
    /// left out.
    pub fn counter(&self, tokenizer: Tokenizer) -> Result<Box<dyn TokenCounter + '_>, Error> {
        let encoding: &'static Encoding = match tokenizer {
            #[cfg(feature = "o200k")]
            Tokenizer::O200kBase => &crate::encoding::O200K,
            #[cfg(feature = "cl100k")]
            Tokenizer::Cl100kBase => &crate::encoding::CL100K,
            Tokenizer::CharsPerToken(n) => return Ok(Box::new(CharsPerToken::new(n)?)),
            #[allow(unreachable_patterns)]
            left_out => return Err(left_out_of_this_build(left_out)),
        };
        Ok(Box::new(Exact(encoding)))
    }
}

/// The refusal of an encoding this build was compiled without (cargo
/// features `o200k`, `cl100k`).
fn left_out_of_this_build(tokenizer: Tokenizer) -> Error {
    let (name, feature) = match tokenizer {
        Tokenizer::O200kBase => ("o200k-base", "o200k"),
        Tokenizer::Cl100kBase => ("cl100k-base", "cl100k"),
        Tokenizer::CharsPerToken(_) => ("chars-per-token", "none"),
    };
    Error::TokenizerUnavailable(format!(
        "{name}: this build of ctxpack was compiled without it (cargo feature `{feature}`)"
    ))
}

/// A counter that records every text it is asked to count (for tests that
/// check what was counted).
#[cfg(test)]
pub(crate) struct Recording<C>(C, pub RefCell<Vec<String>>);

#[cfg(test)]
impl<C: TokenCounter> Recording<C> {
    pub(crate) fn new(counter: C) -> Self {
        Recording(counter, RefCell::default())
    }
}

#[cfg(test)]
impl<C: TokenCounter> TokenCounter for Recording<C> {
    fn count(&self, text: &str) -> u32 {
        self.1.borrow_mut().push(text.to_owned());
        self.0.count(text)
    }
    fn truncate(&self, text: &str, max: u32) -> String {
        self.0.truncate(text, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimator_rounds_up_and_counts_scalar_values() {
        let c = CharsPerToken::new(2).unwrap();
        assert_eq!(c.count(""), 0);
        assert_eq!(c.count("a"), 1);
        assert_eq!(c.count("ab"), 1);
        assert_eq!(c.count("abc"), 2);
        // four scalar values, twelve bytes
        assert_eq!(c.count("日本語だ"), 2);
    }

    #[test]
    fn truncation_keeps_whole_tokens_and_characters() {
        let t = Tokenizers;
        for tok in [
            Tokenizer::O200kBase,
            Tokenizer::Cl100kBase,
            Tokenizer::CharsPerToken(3),
        ] {
            let c = t.counter(tok).unwrap();
            let text = "Naïve café owners in 東京 sell ümlauts — 12,400 of them! 🙂🙂🙂 done.";
            for max in 0..c.count(text) + 2 {
                let cut = c.truncate(text, max);
                assert!(text.starts_with(&cut), "{tok:?} {max}");
                assert!(c.count(&cut) <= max, "{tok:?} {max}: {cut:?}");
            }
            assert_eq!(c.truncate(text, c.count(text)), text);
            assert!(
                c.count(&c.truncate(text, 10)) >= 8,
                "{tok:?}: cut far below the limit"
            );
        }
    }

    #[test]
    fn estimator_rejects_zero_naming_the_field() {
        let err = CharsPerToken::new(0).err().unwrap();
        assert!(
            err.to_string().contains("tokenizer.chars-per-token"),
            "{err}"
        );
    }

    #[test]
    fn exact_encodings_differ_and_match_known_counts() {
        let t = Tokenizers;
        let o = t.counter(Tokenizer::O200kBase).unwrap();
        let c = t.counter(Tokenizer::Cl100kBase).unwrap();
        assert_eq!(o.count("hello world"), 2);
        assert_eq!(c.count("hello world"), 2);
        // Special markers are ordinary text, never one control token.
        assert!(o.count("<|endoftext|>") > 1);
        let text = "Wie geht's? 你好，世界！ naïve café — ∑ x² ";
        assert_ne!(o.count(text), c.count(text));
    }

    /// Texts that stress the pre-tokenising patterns: words with
    /// contractions, digit runs, punctuation with slashes and newlines,
    /// runs of spaces, tabs and newlines, CJK and emoji.
    fn awkward_texts() -> Vec<String> {
        let parts = [
            "the",
            " quick",
            "Brown",
            "fox's",
            " don't",
            "123456",
            " 42",
            "  ",
            "   ",
            "\n",
            "\n\n",
            " \n ",
            "\t",
            "\r\n",
            "!!",
            " ?!",
            "/",
            "]/",
            "//x",
            "(",
            ")",
            "東京",
            " 日本語",
            "🙂",
            " 🙂🙂",
            "naïve",
            " café",
            "'s",
            "'LL",
            "x²",
            " ",
            "-",
            "—",
            "<|endoftext|>",
            "a",
            "Z",
            "0",
            " 7",
        ];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        (0..400)
            .map(|_| {
                let len = 1 + next(60);
                (0..len).map(|_| parts[next(parts.len())]).collect()
            })
            .collect()
    }

    #[test]
    fn counting_in_chunks_is_exact_wherever_the_chunks_end() {
        for bpe in [tiktoken_rs::o200k_base(), tiktoken_rs::cl100k_base()] {
            let bpe = bpe.unwrap();
            let tok = "o200k/cl100k";
            for text in awkward_texts() {
                let whole = bpe.encode_ordinary(&text).len();
                for min_chunk in [1, 2, 3, 5, 8, 13] {
                    let got = count_in_chunks(&text, u32::MAX, (min_chunk, 0), |c| {
                        bpe.encode_ordinary(c).len()
                    });
                    assert_eq!(
                        got,
                        Count::Exact(whole as u32),
                        "{tok:?} {min_chunk} {text:?}"
                    );
                    // Stopping early says over exactly when it is.
                    for limit in [0, whole.saturating_sub(1), whole, whole + 1] {
                        let limit = limit as u32;
                        let got = count_in_chunks(&text, limit, (min_chunk, 0), |c| {
                            bpe.encode_ordinary(c).len()
                        });
                        let whole = whole as u32;
                        assert_eq!(
                            got.within(limit),
                            (whole <= limit).then_some(whole),
                            "{tok:?} {min_chunk} {limit} {text:?}"
                        );
                        match got {
                            Count::Exact(n) => assert_eq!(n, whole),
                            Count::Over(n) => assert!(n >= limit && n < whole),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_cheap_lower_bound_never_passes_the_count() {
        let t = Tokenizers;
        for tok in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            let c = t.counter(tok).unwrap();
            for text in awkward_texts() {
                let (floor, n) = (c.at_least(&text), c.count(&text));
                assert!(floor <= n, "{tok:?} {floor} > {n}: {text:?}");
            }
            // Useful, not vacuous: close to the count on prose.
            let prose =
                "The deploy failed because the cache was cold, and the build timed out twice.";
            let (floor, n) = (c.at_least(prose), c.count(prose));
            assert!(floor * 10 >= n * 7, "{tok:?}: {floor} of {n}");
        }
    }

    /// Whitespace alone between spaces is one piece: `\n \n` is a single
    /// token, and the floor must not count two (found by the `count` fuzz
    /// target).
    #[test]
    fn runs_of_whitespace_alone_are_not_counted() {
        for tok in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            let c = Tokenizers.counter(tok).unwrap();
            for text in [
                "\n \n",
                "\r\n \r\n \r\n",
                " \n \n ",
                "\u{a0} \u{a0}",
                "\u{3000} \u{3000}",
                "x\n \ny",
                "\n\t\n\t\n",
                "\u{2003} a \u{2003}",
            ] {
                assert!(
                    c.at_least(text) <= c.count(text),
                    "{tok:?}: {} > {} for {text:?}",
                    c.at_least(text),
                    c.count(text)
                );
            }
            // Still a floor worth having on prose, in any script.
            assert_eq!(c.at_least("café au lait, 東京 and Ωmega"), 6);
        }
    }

    /// The floor is the number of runs between spaces and tabs that start
    /// with a character sure not to be whitespace, whatever the length
    /// (the count goes 64 byte pairs at a time) and wherever the runs
    /// start and end.
    #[test]
    fn the_lower_bound_counts_the_runs_between_spaces() {
        let t = Tokenizers;
        let c = t.counter(Tokenizer::O200kBase).unwrap();
        let mut x = 3u64;
        for len in 0..300 {
            for _ in 0..4 {
                let text: String = (0..len)
                    .map(|_| {
                        x = crate::digest::mix(x);
                        [' ', '\t', 'a', 'é', '\n', ' '][(x % 6) as usize]
                    })
                    .collect();
                let runs = text
                    .split([' ', '\t'])
                    .filter(|r| r.starts_with(['a', 'é']))
                    .count();
                assert_eq!(c.at_least(&text) as usize, runs, "{text:?}");
            }
        }
    }

    #[test]
    fn counting_up_to_a_limit_stops_early_on_long_text() {
        let t = Tokenizers;
        let c = t.counter(Tokenizer::O200kBase).unwrap();
        let text = "word ".repeat(200_000);
        let calls = std::cell::Cell::new(0usize);
        let got = count_in_chunks(&text, 10, (MIN_CHUNK, BYTES_PER_TOKEN), |chunk| {
            calls.set(calls.get() + chunk.len());
            c.count(chunk) as usize
        });
        assert!(matches!(got, Count::Over(n) if n >= 10), "{got:?}");
        assert!(calls.get() < 1_000, "counted {} bytes", calls.get());
        assert_eq!(c.count_up_to(&text, u32::MAX), Count::Exact(c.count(&text)));
        let cut = c.truncate(&text, 10);
        assert!(text.starts_with(&cut));
        assert_eq!(c.count(&cut), 10, "{cut:?}");
        for text in awkward_texts() {
            for max in [0, 1, 3, 7, 20] {
                let cut = c.truncate(&text, max);
                let n = c.count(&cut);
                assert!(text.starts_with(&cut) && n <= max, "{max} {text:?}");
                // Never cut short when more would fit.
                assert!(
                    n == c.count(&text) || n + 2 >= max.min(c.count(&text)),
                    "{max} {n} {text:?}"
                );
            }
        }
    }

    /// A tally of parts, some with their counts given, is the count of
    /// the parts joined, whatever the parts: joins inside words, runs of
    /// spaces and newlines, punctuation that takes the newlines after it.
    #[test]
    fn a_tally_counts_the_joined_text_exactly() {
        let texts = awkward_texts();
        for tok in [
            Tokenizer::O200kBase,
            Tokenizer::Cl100kBase,
            Tokenizer::CharsPerToken(3),
        ] {
            let c = Tokenizers.counter(tok).unwrap();
            let mut cache = CountCache::new(0);
            let meter = Meter::new(c.as_ref(), tok, &mut cache);
            let mut x = 7u64;
            for k in 0..300 {
                let n = 1 + k % 7;
                let parts: Vec<&str> = (0..n)
                    .map(|_| {
                        x = crate::digest::mix(x);
                        match x % 5 {
                            0 => "\n\n",
                            1 => "",
                            _ => texts[(x >> 8) as usize % texts.len()].as_str(),
                        }
                    })
                    .collect();
                let mut tally = Tally::new(&meter);
                for (i, p) in parts.iter().enumerate() {
                    let known = (i % 2 == 0).then(|| c.count(p));
                    tally.push(p, known);
                }
                let joined = parts.concat();
                assert_eq!(
                    tally.finish(),
                    u64::from(c.count(&joined)),
                    "{tok:?} {parts:?}"
                );
            }
        }
    }

    #[test]
    fn empty_text_truncates_and_splits_without_panicking() {
        assert_eq!(split_after("", 0), 0);
        assert_eq!(split_after("", 5), 0);
        assert_eq!(split_after("ab", 9), 2);
        for tok in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            let c = Tokenizers.counter(tok).unwrap();
            for max in [0, 1, 5] {
                assert_eq!(c.truncate("", max), "");
            }
        }
    }

    #[test]
    fn the_cache_answers_repeats_and_stays_bounded() {
        let t = Tokenizers;
        let c = t.counter(Tokenizer::O200kBase).unwrap();
        let mut cache = CountCache::new(10);
        {
            let m = Meter::new(c.as_ref(), Tokenizer::O200kBase, &mut cache);
            assert_eq!(m.count("hello world"), 2);
            // Two words are more than one token, without encoding.
            assert_eq!(m.count_up_to("hello world", 1), Count::Over(1));
            assert_eq!(m.count_up_to("hello world", 5), Count::Exact(2));
            for i in 0..100 {
                m.count(&format!("text number {i}"));
            }
        }
        assert!(cache.len() <= 10, "{}", cache.len());
        let mut none = CountCache::new(0);
        {
            let m = Meter::new(c.as_ref(), Tokenizer::O200kBase, &mut none);
            assert_eq!(m.count("hello world"), 2);
        }
        assert_eq!(none.len(), 0);
    }

    /// A counter that says how often it encoded a text.
    struct Counting<'a>(&'a dyn TokenCounter, std::cell::Cell<u32>);

    impl TokenCounter for Counting<'_> {
        fn count(&self, text: &str) -> u32 {
            self.1.set(self.1.get() + 1);
            self.0.count(text)
        }
        fn truncate(&self, text: &str, max: u32) -> String {
            self.0.truncate(text, max)
        }
    }

    #[test]
    fn without_a_cache_an_assembly_counts_a_long_text_once() {
        let c = Tokenizers.counter(Tokenizer::O200kBase).unwrap();
        let counting = Counting(c.as_ref(), std::cell::Cell::new(0));
        let long = "a long text, counted once per assembly. ".repeat(200);
        let short = "short";
        let mut none = CountCache::new(0);
        let m = Meter::new(&counting, Tokenizer::O200kBase, &mut none);
        let n = c.count(&long);
        for _ in 0..5 {
            assert_eq!(m.count(&long), n);
            assert_eq!(m.count(short), 1);
        }
        // The long text once; the short one is cheaper to count again
        // than to remember.
        assert_eq!(counting.1.get(), 1 + 5);
        // A second long text is remembered beside the first.
        let other = format!("{long}!");
        assert_eq!(m.count(&other), c.count(&other));
        assert_eq!(m.count(&other), c.count(&other));
        assert_eq!(m.count(&long), n);
        assert_eq!(counting.1.get(), 7);
        // And nothing outlives the assembly.
        drop(m);
        assert_eq!(none.len(), 0);
    }
}
