//! Duplicate detection: exact and near-duplicate, linear in the input.
//!
//! Texts are compared on their normalised words (see
//! [`crate::router::normalize`]). An exact duplicate has the same normalised text.
//! A near-duplicate is found with bottom-k MinHash over three-word
//! shingles: each shingle is hashed once and a text keeps the [`SKETCH`]
//! smallest hashes of its shingle set. The Jaccard similarity of two texts
//! is estimated from the smallest [`SKETCH`] hashes of the union of their
//! sketches — the share of them that both hold — which is exact for texts
//! of fewer shingles than that. Candidates come from an index of each kept
//! text's [`INDEXED`] smallest hashes: two texts of similarity `J` share
//! the smallest hash of their union with probability `J`, so a pair at the
//! default threshold is missed with probability about `(1 - J)^INDEXED`.
//! Each text is hashed once and looked up under a fixed number of keys, so
//! the cost grows linearly with the total text, not with the square of the
//! number of items.
//!
//! Items are offered in rank order; the first of a group stays, and later
//! ones are reported as duplicates of it. All hashing is seeded with
//! constants, so results are the same on every target.

use crate::digest::{Hash128, mix};
use crate::router::normalize;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for keys that are already well-mixed 64-bit hashes: it passes
/// them through instead of hashing them again.
#[derive(Default)]
struct Premixed(u64);

impl Hasher for Premixed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are used; anything else still hashes, slowly.
        for &b in bytes {
            self.0 = mix(self.0 ^ u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Hashes a sketch keeps.
pub(crate) const SKETCH: usize = 128;
/// Smallest hashes of each kept text that the candidate index holds.
pub(crate) const INDEXED: usize = 8;
/// Most kept texts one indexed hash points to.
pub(crate) const BUCKET_CAP: usize = 16;
/// Hashes per block of kept sketches (512 KiB).
const SKETCH_BLOCK: usize = 1 << 16;
/// Words per shingle.
pub(crate) const SHINGLE: usize = 3;

/// Hashes the words of `text` as [`normalize`] leaves them, in one pass
/// and without building the normalised text when it is ASCII: a 64-bit
/// hash per word goes to `words`, and the return is a 128-bit hash of the
/// whole normalised text (each word's bytes, then its length, so the
/// encoding is unambiguous).
fn digest(text: &str, words: &mut Vec<u64>) -> (u64, u64) {
    words.clear();
    // Normalised ASCII words are the runs of letters and digits, lower-cased
    // (see `normalize`); a normalised text is its words between spaces.
    if text.is_ascii() {
        digest_ascii(text.as_bytes(), words)
    } else {
        digest_words(normalize(text).as_bytes(), &NORMALIZED_WORDS, words)
    }
}

/// Per byte: the byte lower-cased if it belongs to a word, else 0.
type WordBytes = [u8; 256];

/// Raw ASCII text: letters and digits, lower-cased. (Hashing goes through
/// [`digest_ascii`], which tests hold to this table.)
#[cfg(test)]
const ASCII_WORDS: WordBytes = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 128 {
        if (b as u8).is_ascii_alphanumeric() {
            t[b] = (b as u8).to_ascii_lowercase();
        }
        b += 1;
    }
    t
};

/// Normalised text: every byte but the space (and NUL, which
/// normalisation never leaves in a word).
const NORMALIZED_WORDS: WordBytes = {
    let mut t = [0u8; 256];
    let mut b = 1;
    while b < 256 {
        if b != b' ' as usize {
            t[b] = b as u8;
        }
        b += 1;
    }
    t
};

fn digest_words(bytes: &[u8], table: &WordBytes, words: &mut Vec<u64>) -> (u64, u64) {
    let mut whole = Hash128::new(0);
    let mut i = 0;
    while i < bytes.len() {
        if table[bytes[i] as usize] == 0 {
            i += 1;
            continue;
        }
        let start = i;
        let mut word = WORD_SEED;
        let (mut block, mut filled) = (0u64, 0);
        while let Some(&b) = bytes.get(i)
            && table[b as usize] != 0
        {
            block |= u64::from(table[b as usize]) << (8 * filled);
            filled += 1;
            i += 1;
            if filled == 8 {
                whole.step(block);
                word = mix(word ^ block);
                (block, filled) = (0, 0);
            }
        }
        if filled > 0 {
            whole.step(block);
            word = mix(word ^ block);
        }
        let len = (i - start) as u64;
        whole.step(len | 1 << 63);
        words.push(mix(word ^ len.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    }
    whole.finish()
}

const WORD_SEED: u64 = 0x6a09_e667_f3bc_c908;

/// `0x01` in every byte.
const ONES: u64 = u64::MAX / 255;
/// `0x80` in every byte.
const HIGH: u64 = ONES << 7;

/// For eight ASCII bytes (each below `0x80`): `0x80` in each byte from
/// `lo` to `hi`, else 0. Adding `0x80 - lo` to a byte sets its top bit
/// exactly when it is `lo` or more, and adding `0x7f - hi` exactly when it
/// is above `hi`; neither sum carries into the next byte.
const fn between(x: u64, lo: u8, hi: u8) -> u64 {
    let at_least_lo = x.wrapping_add(ONES * (0x80 - lo as u64));
    let above_hi = x.wrapping_add(ONES * (0x7f - hi as u64));
    at_least_lo & !above_hi & HIGH
}

/// Eight ASCII bytes lower-cased, and `0x80` in each that is a letter or
/// digit (a padding zero is neither).
fn ascii_word_bytes(x: u64) -> (u64, u64) {
    // 'A'..='Z' gain 0x20: the top bit moved down two places.
    let lower = x | (between(x, b'A', b'Z') >> 2);
    let word = between(lower, b'0', b'9') | between(lower, b'a', b'z');
    (lower, word)
}

/// The eight bytes of `bytes` from `at`, little-endian, zero past its end.
fn load(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    match bytes.get(at..at + 8) {
        Some(eight) => word.copy_from_slice(eight),
        None => {
            let rest = bytes.get(at..).unwrap_or_default();
            word[..rest.len()].copy_from_slice(rest);
        }
    }
    u64::from_le_bytes(word)
}

/// [`digest_words`] with the `ASCII_WORDS` table, eight bytes at a time:
/// the same hashes, from whole-word loads instead of a byte at a time.
/// `bytes` must be ASCII.
fn digest_ascii(bytes: &[u8], words: &mut Vec<u64>) -> (u64, u64) {
    let mut whole = Hash128::new(0);
    // The eight bytes from `p` are searched for the next word's start;
    // `found` holds their word marks once known.
    let (mut p, mut found) = (0, 0);
    while p < bytes.len() {
        if found == 0 {
            found = ascii_word_bytes(load(bytes, p)).1;
            if found == 0 {
                p += 8;
                continue;
            }
        }
        let start = p + (found.trailing_zeros() / 8) as usize;
        let (mut at, mut word) = (start, WORD_SEED);
        loop {
            let (lower, in_word) = ascii_word_bytes(load(bytes, at));
            let outside = !in_word & HIGH;
            if outside == 0 {
                // Eight bytes of the word (padding past the end is never
                // part of one, so these are all in the text).
                whole.step(lower);
                word = mix(word ^ lower);
                at += 8;
                continue;
            }
            let k = outside.trailing_zeros() / 8;
            if k > 0 {
                let block = lower & ((1u64 << (8 * k)) - 1);
                whole.step(block);
                word = mix(word ^ block);
            }
            // Past byte `k`, these eight bytes may hold the next start;
            // if not, the search goes on after them.
            found = in_word & u64::MAX.checked_shl(8 * (k + 1)).unwrap_or(0);
            p = if found == 0 { at + 8 } else { at };
            at += k as usize;
            break;
        }
        let len = (at - start) as u64;
        whole.step(len | 1 << 63);
        words.push(mix(word ^ len.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    }
    whole.finish()
}

/// The bottom-k sketch of a text's words (hashed by [`digest`]): the
/// smallest distinct shingle hashes, ascending, written to `out`; empty
/// when it has no words.
fn sketch_into(words: &[u64], out: &mut Vec<u64>) {
    out.clear();
    let width = SHINGLE.min(words.len());
    if width == 0 {
        return;
    }
    out.extend(
        words
            .windows(width)
            .map(|shingle| mix(shingle.iter().fold(0u64, |h, &w| h.rotate_left(21) ^ w))),
    );
    out.sort_unstable();
    out.dedup();
    out.truncate(SKETCH);
}

/// The estimated Jaccard similarity of the texts behind two sketches: of
/// the smallest [`SKETCH`] hashes of their union, the share both hold.
fn similarity(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut taken, mut both) = (0, 0, 0usize, 0usize);
    while taken < SKETCH && (i < a.len() || j < b.len()) {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                both += 1;
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => i += 1,
            (Some(_), Some(_)) => j += 1,
            // One sketch is used up. If it holds its text's whole set, what
            // is left of the other is in the union and not shared; if it
            // was cut at SKETCH hashes, beyond its last it says nothing.
            (Some(_), None) if b.len() < SKETCH => i += 1,
            (None, Some(_)) if a.len() < SKETCH => j += 1,
            _ => break,
        }
        taken += 1;
    }
    if taken == 0 {
        0.0
    } else {
        both as f64 / taken as f64
    }
}

/// One indexed hash's bucket: its newest entry + 1 and its number of
/// entries. A slot with no entries is free.
#[derive(Clone, Copy, Default)]
struct Bucket {
    hash: u64,
    head: u32,
    len: u32,
}

/// The candidate index's table: open addressing with linear probing, a
/// power-of-two number of slots, at most three quarters of them used.
///
/// A general hash map does worse here in two ways. The indexed hashes are
/// each text's *smallest*, so their top bits, which a SwissTable keeps as
/// its tag, are nearly all zero: every probe falls through to comparing
/// full keys. And a text's lookups are each a likely cache miss; here they
/// are plain loads with nothing between them, asked for together (see
/// [`Index::prefetch`]), which the processor overlaps, and the inserts
/// that follow find their slots cached. Measured against the standard
/// map with a hasher that mixes the keys again (so its tags are sound):
/// the 10k-candidate pack took about 9% longer natively, in interleaved
/// runs of both builds.
struct Index {
    slots: Vec<Bucket>,
    used: usize,
}

impl Index {
    fn with_capacity(n: usize) -> Self {
        Index {
            slots: vec![Bucket::default(); Self::slots_for(n)],
            used: 0,
        }
    }

    /// Slots for `n` hashes at no more than three quarters full.
    fn slots_for(n: usize) -> usize {
        (n.saturating_mul(4) / 3 + 1).next_power_of_two().max(16)
    }

    /// Where `hash` is, or the free slot it would go in. The hashes are
    /// well mixed, so their low bits place them.
    fn position(&self, hash: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        // Never endless: a quarter of the slots at least are free.
        while self.slots[at].len != 0 && self.slots[at].hash != hash {
            at = (at + 1) & mask;
        }
        at
    }

    /// `hash`'s bucket; an empty one if it has none.
    fn get(&self, hash: u64) -> Bucket {
        self.slots[self.position(hash)]
    }

    /// Asks for the slot where a probe for `hash` starts: a text's probes
    /// are asked for together, so their misses overlap (see
    /// [`crate::prefetch`]).
    fn prefetch(&self, hash: u64) {
        let at = hash as usize & (self.slots.len() - 1);
        crate::prefetch::line(self.slots.as_ptr().wrapping_add(at).cast());
    }

    /// Room for `more` hashes not yet in the table.
    fn make_room(&mut self, more: usize) {
        let need = self.used + more;
        if need * 4 <= self.slots.len() * 3 {
            return;
        }
        let old = std::mem::replace(
            &mut self.slots,
            vec![Bucket::default(); Self::slots_for(need)],
        );
        for bucket in old.into_iter().filter(|b| b.len != 0) {
            let at = self.position(bucket.hash);
            self.slots[at] = bucket;
        }
    }

    /// Adds `entry` to `hash`'s bucket, unless the bucket is full; returns
    /// the entry it then follows (0 for none). There must be room for a new
    /// bucket (see [`Index::make_room`]).
    fn add(&mut self, hash: u64, entry: u32) -> Option<u32> {
        let at = self.position(hash);
        let bucket = &mut self.slots[at];
        if bucket.len == 0 {
            *bucket = Bucket {
                hash,
                head: entry,
                len: 1,
            };
            self.used += 1;
            return Some(0);
        }
        if bucket.len as usize >= BUCKET_CAP {
            return None;
        }
        bucket.len += 1;
        Some(std::mem::replace(&mut bucket.head, entry))
    }
}

/// Finds duplicates among texts offered in rank order. Each text comes
/// with a key of the caller's (such as its index), and a duplicate is
/// reported by the key of the kept text it repeats.
pub(crate) struct Deduper {
    threshold: f64,
    /// Kept texts by the 128-bit hash of their normalised text: equal
    /// hashes are taken for equal texts, wrong with odds of about 2^-128
    /// per pair.
    exact: HashMap<(u64, u64), u32, BuildHasherDefault<Premixed>>,
    /// Kept texts: the caller's key, and where the sketch is in
    /// `sketches`: block, start, end.
    kept: Vec<(u32, u32, u32, u32)>,
    /// Every kept text's sketch, one after another in blocks of
    /// [`SKETCH_BLOCK`] hashes: a few allocations rather than one per text,
    /// and no block is ever moved to grow.
    sketches: Vec<Vec<u64>>,
    /// Candidate index: an indexed hash -> its bucket. Entry
    /// `k * INDEXED + i` is kept text `k` under its `i`th indexed hash;
    /// `chain[entry]` is the bucket's previous entry + 1 (0 ends it).
    index: Index,
    chain: Vec<u32>,
    /// Room reused by every offer: word hashes, the sketch, and the kept
    /// texts sharing indexed hashes with it.
    words: Vec<u64>,
    sketch: Vec<u64>,
    shared: Vec<(u32, usize)>,
}

impl Deduper {
    /// A deduper that calls texts near-duplicates at an estimated Jaccard
    /// similarity of `threshold` or more (1.0 leaves only exact duplicates),
    /// with room for `n` texts.
    pub(crate) fn new(threshold: f64, n: usize) -> Self {
        Deduper {
            threshold,
            exact: HashMap::with_capacity_and_hasher(n, Default::default()),
            kept: Vec::with_capacity(n),
            sketches: Vec::new(),
            index: Index::with_capacity(n * INDEXED),
            chain: Vec::with_capacity(n * INDEXED),
            words: Vec::new(),
            sketch: Vec::new(),
            shared: Vec::new(),
        }
    }

    /// Kept text `k`'s sketch.
    fn sketch_of(&self, k: usize) -> &[u64] {
        let (_, block, start, end) = self.kept[k];
        &self.sketches[block as usize][start as usize..end as usize]
    }

    /// Offers the next text, under the caller's `key`; returns the key of
    /// the kept text it duplicates, or keeps it and returns `None`.
    pub(crate) fn offer(&mut self, key: u32, text: &str) -> Option<u32> {
        let hash = digest(text, &mut self.words);
        if let Some(&k) = self.exact.get(&hash) {
            return Some(self.kept[k as usize].0);
        }
        self.sketch.clear();
        if self.threshold < 1.0 {
            sketch_into(&self.words, &mut self.sketch);
        }
        if let Some((sim, k)) = self.nearest()
            && sim >= self.threshold
        {
            return Some(self.kept[k].0);
        }
        self.keep(key, hash);
        None
    }

    /// The kept text most like the offered one (its sketch in `sketch`),
    /// with their estimated similarity; ties go to the earlier.
    fn nearest(&mut self) -> Option<(f64, usize)> {
        let indexed = &self.sketch[..self.sketch.len().min(INDEXED)];
        // Kept texts sharing indexed hashes, with how many they share; a
        // near copy shares most of them, a text that merely uses a common
        // phrase one, so only those sharing two (or every one, for a text
        // with fewer) are compared.
        self.shared.clear();
        for &h in indexed {
            self.index.prefetch(h);
        }
        for &h in indexed {
            let Bucket {
                head: mut at, len, ..
            } = self.index.get(h);
            if len as usize >= BUCKET_CAP {
                // A stock phrase: see `keep`.
                continue;
            }
            while at != 0 {
                let entry = at as usize - 1;
                let k = (entry / INDEXED) as u32;
                match self.shared.iter_mut().find(|(j, _)| *j == k) {
                    Some((_, n)) => *n += 1,
                    None => self.shared.push((k, 1)),
                }
                at = self.chain[entry];
            }
        }
        let need = indexed.len().min(2);
        let mut best: Option<(f64, usize)> = None;
        for &(k, n) in &self.shared {
            if n < need {
                continue;
            }
            let k = k as usize;
            let sim = similarity(&self.sketch, self.sketch_of(k));
            if best.is_none_or(|(s, j)| sim > s || (sim == s && k < j)) {
                best = Some((sim, k));
            }
        }
        best
    }

    /// Keeps the offered text (its normalised text's `hash`, its sketch in
    /// `sketch`) under the caller's `key`.
    fn keep(&mut self, key: u32, hash: (u64, u64)) {
        let indexed = &self.sketch[..self.sketch.len().min(INDEXED)];
        // Indices stay far below u32::MAX: a host answer of 2^32 texts
        // does not fit in memory first.
        let index = self.kept.len() as u32;
        self.exact.insert(hash, index);
        self.chain.resize((index as usize + 1) * INDEXED, 0);
        self.index.make_room(indexed.len());
        for (i, &h) in indexed.iter().enumerate() {
            // A hash many texts share (a stock phrase) tells none of them
            // apart: once its bucket is full it is no longer searched,
            // which bounds the work per text; near copies still meet under
            // the rarer hashes they share.
            let entry = index as usize * INDEXED + i;
            if let Some(next) = self.index.add(h, entry as u32 + 1) {
                self.chain[entry] = next;
            }
        }
        let block = match self.sketches.last_mut() {
            Some(b) if b.capacity() - b.len() >= self.sketch.len() => b,
            _ => {
                self.sketches.push(Vec::with_capacity(SKETCH_BLOCK));
                let last = self.sketches.len() - 1;
                &mut self.sketches[last]
            }
        };
        // Offsets within a block, and the number of blocks, fit u32 easily.
        let start = block.len() as u32;
        block.extend_from_slice(&self.sketch);
        let end = block.len() as u32;
        let block = (self.sketches.len() - 1) as u32;
        self.kept.push((key, block, start, end));
    }
}

#[cfg(test)]
mod tests;
