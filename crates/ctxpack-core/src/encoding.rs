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
mod file_json;
mod index;
mod layout;
pub(crate) mod load;
mod merge;
mod pairs;
mod pattern;
mod table;
mod unicode;

use index::{Index, Indexed};
pub(crate) use pattern::Pattern;
use rustc_hash::FxHashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
#[cfg(any(feature = "o200k", feature = "cl100k"))]
use table::Length;
pub(crate) use table::Table;

/// A token's rank in its encoding.
pub(crate) type Rank = u32;

/// The o200k encoding (`o200k-base`).
#[cfg(feature = "o200k")]
pub(crate) static O200K: Encoding = Encoding {
    table: include!(concat!(env!("OUT_DIR"), "/o200k.rs")),
    pattern: Pattern::O200K,
    specials: None,
    memory: Mutex::new(None),
    index: OnceLock::new(),
    merged: AtomicUsize::new(0),
    pairs: None,
};

/// The cl100k encoding (`cl100k-base`).
#[cfg(feature = "cl100k")]
pub(crate) static CL100K: Encoding = Encoding {
    table: include!(concat!(env!("OUT_DIR"), "/cl100k.rs")),
    pattern: Pattern::CL100K,
    specials: None,
    memory: Mutex::new(None),
    index: OnceLock::new(),
    merged: AtomicUsize::new(0),
    pairs: None,
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
    /// Texts counted as one token wherever they occur, matched before the
    /// text is split (a Hugging Face file's added tokens), if any.
    specials: Option<Specials>,
    memory: Mutex<Option<Memory>>,
    index: OnceLock<Index>,
    /// Bytes merged from the static tables so far (up to the index).
    merged: AtomicUsize,
    /// A file's list of merges, where merging by rank would merge
    /// otherwise: pieces are merged by it instead of by the tables.
    pairs: Option<Box<pairs::Pairs>>,
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

/// An encoding's special tokens, matched in text as the `tokenizers`
/// library matches its added tokens: leftmost, and the longest there.
struct Specials {
    finder: aho_corasick::AhoCorasick,
    /// Whether a special token holds a space after a character that is
    /// not whitespace: the text could then not be cut at such a space
    /// (see [`splits_at`]) without cutting a token in two.
    spaced: bool,
}

/// An encoding read from a tokenizer file, and what it was.
pub(crate) struct Loaded {
    pub(crate) encoding: Encoding,
    /// `tiktoken`, `tekken` or `tokenizer.json`.
    pub(crate) kind: &'static str,
    /// Its ordinary tokens.
    pub(crate) tokens: usize,
    /// Its special tokens, matched in text.
    pub(crate) specials: usize,
    /// Its added tokens the file marks special: the model's control
    /// tokens (see [`crate::TokenCounter::control_tokens`]).
    pub(crate) controls: Vec<String>,
    /// Whether text is put in Normalization Form C before it is counted.
    pub(crate) nfc: bool,
}

impl Encoding {
    /// The special tokens of the built-in encoding of its pattern, as
    /// tiktoken lists them (all of the form `<|…|>`, which the fence's
    /// reading finds besides).
    pub(crate) fn control_tokens(&self) -> Vec<String> {
        let list: &[&str] = match self.pattern.name() {
            "o200k" => &["<|endoftext|>", "<|endofprompt|>"],
            "cl100k" => &[
                "<|endoftext|>",
                "<|fim_prefix|>",
                "<|fim_middle|>",
                "<|fim_suffix|>",
                "<|endofprompt|>",
            ],
            _ => &[],
        };
        list.iter().map(|&t| t.to_owned()).collect()
    }

    /// The name of the pattern it splits text by (`llama3`, `qwen`, …).
    pub(crate) fn pattern_name(&self) -> &'static str {
        self.pattern.name()
    }

    /// Reads a tokenizer file (see [`load`] for the kinds it reads);
    /// `pattern` names the pattern of a tiktoken rank file. The error
    /// says what in the file is not supported.
    pub(crate) fn load(file: &[u8], pattern: Option<&str>) -> Result<Loaded, load::Unread> {
        let read = load::read(file, pattern)?;
        let tokens = read.tokens.len();
        let table = Table::from(layout::lay_out(&read.tokens)?);
        let specials = read.specials.len();
        let spaced = read.specials.iter().any(|s| {
            s.char_indices().any(|(i, c)| {
                c == ' '
                    && crate::text::cut(s, ..i)
                        .chars()
                        .next_back()
                        .is_some_and(|p| !p.is_whitespace())
            })
        });
        let finder = (!read.specials.is_empty())
            .then(|| {
                aho_corasick::AhoCorasick::builder()
                    .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                    .build(&read.specials)
            })
            .transpose()
            .map_err(|e| format!("the special tokens: {e}"))?;
        let pairs = read
            .merges
            .map(|m| pairs::Pairs::new(&m.list, &read.tokens, m.whole_first, m.chars).map(Box::new))
            .transpose()?;
        Ok(Loaded {
            encoding: Encoding {
                table,
                pattern: read.pattern,
                specials: finder.map(|finder| Specials { finder, spaced }),
                memory: Mutex::new(None),
                index: OnceLock::new(),
                merged: AtomicUsize::new(0),
                pairs,
            },
            kind: read.kind,
            tokens,
            specials,
            controls: read.controls,
            nfc: read.nfc,
        })
    }

    /// Whether the text may be cut at any space between two characters
    /// that are not whitespace and counted piece by piece (see
    /// [`splits_at`]): true unless a special token holds such a space, or
    /// the text is not split at all (a token may hold one).
    pub(crate) fn cuts_at_spaces(&self) -> bool {
        !self.pattern.whole && !self.specials.as_ref().is_some_and(|s| s.spaced)
    }

    /// The tokens of `text`, exactly as tiktoken's `encode_ordinary` would
    /// count them.
    pub(crate) fn count(&self, text: &str) -> usize {
        let mut memory = self.memory.try_lock().ok();
        let mut memory = memory.as_deref_mut().map(|m| m.get_or_insert_default());
        let mut total = 0;
        self.each_piece(text, |piece, special| {
            if special {
                total += 1;
                return;
            }
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
        self.each_piece(text, |piece, special| {
            let from = ends.len();
            if special || self.whole(piece) {
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
                    if self.whole(piece) {
                        1
                    } else {
                        self.merge(piece, Some(joins), None)
                    }
                })
            }
            _ if self.whole(piece) => 1,
            _ => self.merge(piece, None, None),
        }
    }

    /// A tiktoken rank file of the encoding's tokens (for tests that load
    /// one).
    #[cfg(test)]
    pub(crate) fn rank_file(&self) -> Vec<u8> {
        const ALPHABET: &[u8] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
        let mut tokens = Vec::new();
        self.table
            .each(|bytes, rank| tokens.push((bytes.to_vec(), rank)));
        tokens.sort_by_key(|&(_, rank)| rank);
        let mut file = Vec::new();
        for (bytes, rank) in tokens {
            for chunk in bytes.chunks(3) {
                let mut b = [0u8; 3];
                b[..chunk.len()].copy_from_slice(chunk);
                let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
                for i in 0..4 {
                    let sextet = if i <= chunk.len() {
                        (n >> (18 - 6 * i)) & 63
                    } else {
                        64
                    };
                    file.push(ALPHABET[sextet as usize]);
                }
            }
            file.extend_from_slice(format!(" {rank}\n").as_bytes());
        }
        file
    }

    /// The encoding's static tables.
    #[cfg(test)]
    pub(crate) fn table(&self) -> &Table {
        &self.table
    }

    /// Whether `piece` is one token without merging: it is a token, and
    /// the encoding merges by rank (or its list says a token is taken
    /// whole).
    fn whole(&self, piece: &[u8]) -> bool {
        self.pairs.as_ref().is_none_or(|p| p.whole_first) && self.is_token(piece)
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
        if let Some(pairs) = &self.pairs {
            return pairs.encode(piece, ends);
        }
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

    /// Calls `each` with the pieces of `text` in order: the special tokens
    /// in it, if the encoding has any, each a piece that is one token, and
    /// the pieces of the text between them, split as texts of their own
    /// (as the `tokenizers` library splits around its added tokens).
    /// `each` is told whether its piece is a special token.
    fn each_piece(&self, text: &str, mut each: impl FnMut(&[u8], bool)) {
        let Some(specials) = &self.specials else {
            return self.pieces(text, |piece| each(piece, false));
        };
        let mut from = 0;
        for found in specials.finder.find_iter(text) {
            if found.start() > from {
                self.pieces(crate::text::cut(text, from..found.start()), |piece| {
                    each(piece, false)
                });
            }
            each(&text.as_bytes()[found.range()], true);
            from = found.end();
        }
        if from < text.len() {
            self.pieces(crate::text::cut(text, from..), |piece| each(piece, false));
        }
    }

    /// Calls `each` with the pieces of `text` in order. Pieces never reach
    /// across a space between two non-whitespace characters (see
    /// `tokenizer::count_in_chunks`), so the text splits there into ASCII
    /// stretches, split by the ASCII scanners, and the stretches around
    /// other characters, split by the Unicode ones.
    fn pieces(&self, text: &str, mut each: impl FnMut(&[u8])) {
        if self.pattern.whole {
            // Cut before each space no merge can join onto what precedes
            // it (see `load::SentencePiece`); a file without that record
            // is merged whole.
            let sp = self.pairs.as_ref().and_then(|p| p.chars.as_ref());
            let mut from = 0;
            let mut before = None;
            for (i, c) in text.char_indices() {
                if matches!(c, ' ' | '\u{2581}')
                    && let (Some(sp), Some(b)) = (sp, before)
                    && !sp.may_join_space(b)
                {
                    each(&text.as_bytes()[from..i]);
                    from = i;
                }
                before = Some(c);
            }
            if from < text.len() {
                each(&text.as_bytes()[from..]);
            }
            return;
        }
        if self.pattern.split_first {
            // No ASCII scanner for DeepSeek's Splits: every character is
            // read by the Unicode one.
            let mut from = 0;
            while from < text.len() {
                let to = unicode::split_first_piece(text, from);
                each(&text.as_bytes()[from..to]);
                from = to;
            }
            return;
        }
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
            let stretch = crate::text::cut(text, cut..end);
            let mut from = 0;
            while from < stretch.len() {
                let to = unicode::piece(self.pattern, stretch, from);
                each(&stretch.as_bytes()[from..to]);
                from = to;
            }
            start = end;
        }
    }

    fn ascii_pieces(&self, text: &[u8], each: &mut impl FnMut(&[u8])) {
        let mut at = 0;
        while at < text.len() {
            let end = self.pattern.ascii_piece(text, at);
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

/// Whether `text` splits at byte `i` whatever comes around it: a space
/// between two non-whitespace characters (see `count_in_chunks` in [`crate::tokenizer`]).
pub(crate) fn splits_at(text: &str, i: usize) -> bool {
    // A space byte is always a whole character in UTF-8.
    text.as_bytes().get(i) == Some(&b' ')
        && crate::text::cut(text, ..i)
            .chars()
            .next_back()
            .is_some_and(|c| !c.is_whitespace())
        && crate::text::cut(text, i + 1..)
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
mod tests;
