//! An index of an encoding's tokens in memory, built from the static
//! tables the first time an encoding has a lot of merging to do (see
//! [`super::Encoding`]): a lookup by bytes in one or two probes of a hash
//! table instead of a binary search, and for each first three bytes the
//! lengths of the tokens that start with them, which the long-piece
//! encoder ([`super::backtrack`]) walks to find the tokens at a position.
//!
//! A fresh process or component instance never builds it for a small
//! count: the static tables serve those at once.

use super::Rank;
use super::merge::{self, Ranks};
use super::table::Table;
use std::sync::atomic::{AtomicU64, Ordering};

/// Slots of the table of tokens of three to seven bytes (some 127k of
/// them in o200k): at least this many, and at least twice as many as the
/// tokens (a loaded file may have more).
const SHORT_SLOTS: usize = 1 << 18;
/// Slots of the table of tokens of eight to sixteen bytes (some 64k), in
/// the same way.
const MEDIUM_SLOTS: usize = 1 << 17;
/// Slots of the table of token lengths by their first three bytes.
const START_SLOTS: usize = 1 << 16;
/// Slots of the table of token lengths (five bytes and more) by their
/// first four bytes.
const START4_SLOTS: usize = 1 << 17;
/// A start's mask of token lengths.
pub(crate) type Mask = u32;

/// The longest length a start's mask holds a bit of; a longer token sets
/// bit 0.
pub(crate) const MASKED: usize = Mask::BITS as usize - 1;

/// The index (see the module docs).
pub(crate) struct Index {
    /// Each token of three to seven bytes by its key (its bytes
    /// little-endian, its length in the top byte: never 0, which marks an
    /// empty slot), with its rank.
    short: Box<[u64]>,
    /// The rank of the token in each slot of `short`.
    short_ranks: Box<[Rank]>,
    /// Each token of eight to sixteen bytes by its bytes (zero-padded) and
    /// length, with its rank; an empty slot has length 0.
    medium: Box<[Medium]>,
    /// Bit `k` (`3..=31`): a token of `k` bytes starts with the three bytes
    /// hashed here; bit 0: a longer one does. Three-byte starts that hash
    /// alike share a slot, so a bit says "maybe".
    starts: Box<[Mask]>,
    /// Likewise by their first four bytes, for tokens of five bytes and
    /// more.
    starts4: Box<[Mask]>,
    /// Each token's split, by rank, found the first time it is asked for
    /// (see [`Index::split`]): 0 until then.
    splits: Box<[AtomicU64]>,
    /// A filter of the tokens of three to sixteen bytes: three bits of one
    /// word per token, by its key's hash. Small enough to stay in cache, it
    /// turns most texts that are no token away without a probe of the
    /// tables (some 2% get through).
    filter: Box<[u64]>,
}

/// A slot of [`Index::medium`]: the token's bytes (zero-padded, the first
/// eight then the rest), its length (0: empty) and its rank.
#[derive(Clone, Copy, Default)]
struct Medium {
    lo: u64,
    hi: u64,
    rank: Rank,
    len: u8,
}

/// Words of [`Index::filter`].
const FILTER_WORDS: usize = 1 << 15;

/// The word of the filter and the bits in it for a key's hash.
#[inline]
fn filter_bits(hash: u64) -> (usize, u64) {
    let word = (hash >> 49) as usize & (FILTER_WORDS - 1);
    let bits = 1 << (hash & 63) | 1 << (hash >> 6 & 63) | 1 << (hash >> 12 & 63);
    (word, bits)
}

/// A key's hash.
#[inline]
fn mix(key: u64) -> u64 {
    key.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// A piece of three to seven bytes as one number: its bytes,
/// little-endian, and its length in the top byte (so never 0).
#[inline]
fn short_key(piece: &[u8]) -> u64 {
    let len = piece.len();
    // Two fixed-size loads that overlap (a copy of a length known only at
    // run time is a call): the same bytes OR'd twice are the bytes.
    let bytes = match *piece {
        [a, b, c] => u64::from(u16::from_le_bytes([a, b])) | u64::from(c) << 16,
        _ if len >= 4 => {
            let lo = u32_at(piece, 0);
            let hi = u32_at(piece, len - 4);
            u64::from(lo) | u64::from(hi) << (8 * (len - 4))
        }
        _ => piece
            .iter()
            .enumerate()
            .fold(0, |key, (i, &b)| key | u64::from(b) << (8 * i)),
    };
    bytes | (len as u64) << 56
}

/// Four bytes of `piece` from `at`, little-endian.
#[inline]
fn u32_at(piece: &[u8], at: usize) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(&piece[at..at + 4]);
    u32::from_le_bytes(b)
}

/// Eight bytes of `piece` from `at`, little-endian.
#[inline]
fn u64_at(piece: &[u8], at: usize) -> u64 {
    let mut b = [0; 8];
    b.copy_from_slice(&piece[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The slot of `key` in a table of `slots` (a power of two): Fibonacci
/// hashing.
#[inline]
fn slot(key: u64, slots: usize) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - slots.trailing_zeros())) as usize
}

/// The hash slot of the three bytes `start`.
#[inline]
fn start_slot(start: [u8; 3]) -> usize {
    let key = u64::from(start[0]) | u64::from(start[1]) << 8 | u64::from(start[2]) << 16;
    slot(key | 1 << 40, START_SLOTS)
}

/// The hash slot of the four bytes `start`.
#[inline]
fn start4_slot(start: [u8; 4]) -> usize {
    slot(u64::from(u32::from_le_bytes(start)) | 1 << 41, START4_SLOTS)
}

/// A length's bit in a start mask: bit `len` up to [`MASKED`], bit 0 for
/// any longer.
#[inline]
fn bit(len: usize) -> Mask {
    if len <= MASKED { 1 << len } else { 1 }
}

impl Index {
    /// The index of `table`'s tokens.
    pub(crate) fn build(table: &Table) -> Index {
        let mut ranks = 0;
        let (mut shorts, mut mediums) = (0usize, 0usize);
        table.each(|bytes, rank| {
            ranks = ranks.max(rank as usize + 1);
            match bytes.len() {
                3..=7 => shorts += 1,
                8..=16 => mediums += 1,
                _ => {}
            }
        });
        let short_slots = SHORT_SLOTS.max((2 * shorts).next_power_of_two());
        let medium_slots = MEDIUM_SLOTS.max((2 * mediums).next_power_of_two());
        let mut index = Index {
            short: vec![0; short_slots].into_boxed_slice(),
            short_ranks: vec![0; short_slots].into_boxed_slice(),
            medium: vec![Medium::default(); medium_slots].into_boxed_slice(),
            starts: vec![0; START_SLOTS].into_boxed_slice(),
            starts4: vec![0; START4_SLOTS].into_boxed_slice(),
            splits: (0..ranks).map(|_| AtomicU64::new(0)).collect(),
            filter: vec![0; FILTER_WORDS].into_boxed_slice(),
        };
        table.each(|bytes, rank| {
            match bytes.len() {
                0..=2 => {}
                3..=7 => {
                    let key = short_key(bytes);
                    let mut at = slot(key, short_slots);
                    while index.short[at] != 0 {
                        at = (at + 1) & (short_slots - 1);
                    }
                    index.short[at] = key;
                    index.short_ranks[at] = rank;
                    let (word, bits) = filter_bits(mix(key));
                    index.filter[word] |= bits;
                }
                8..=16 => {
                    let (key, len) = medium_key(bytes);
                    let mut at = slot(fold(key), medium_slots);
                    while index.medium[at].len != 0 {
                        at = (at + 1) & (medium_slots - 1);
                    }
                    index.medium[at] = Medium {
                        lo: key as u64,
                        hi: (key >> 64) as u64,
                        rank,
                        len,
                    };
                    let (word, bits) = filter_bits(mix(fold(key) ^ u64::from(len)));
                    index.filter[word] |= bits;
                }
                _ => {}
            }
            if let [a, b, c, ..] = *bytes {
                index.starts[start_slot([a, b, c])] |= bit(bytes.len());
            }
            if let [a, b, c, d, _, ..] = *bytes {
                index.starts4[start4_slot([a, b, c, d])] |= bit(bytes.len());
            }
        });
        index
    }

    /// The rank of the token whose bytes are `piece`, if there is one;
    /// `table` answers for the lengths the index does not hold.
    #[inline]
    pub(crate) fn rank(&self, table: &Table, piece: &[u8]) -> Option<Rank> {
        match piece.len() {
            3..=7 => {
                let key = short_key(piece);
                let (word, bits) = filter_bits(mix(key));
                if self.filter[word] & bits != bits {
                    return None;
                }
                let slots = self.short.len();
                let mut at = slot(key, slots);
                loop {
                    let k = self.short[at];
                    if k == key {
                        return Some(self.short_ranks[at]);
                    }
                    if k == 0 {
                        return None;
                    }
                    at = (at + 1) & (slots - 1);
                }
            }
            8..=16 => {
                let (key, len) = medium_key(piece);
                let (word, bits) = filter_bits(mix(fold(key) ^ u64::from(len)));
                if self.filter[word] & bits != bits {
                    return None;
                }
                let slots = self.medium.len();
                let mut at = slot(fold(key), slots);
                let (lo, hi) = (key as u64, (key >> 64) as u64);
                loop {
                    let m = self.medium[at];
                    if m.len == len && m.lo == lo && m.hi == hi {
                        return Some(m.rank);
                    }
                    if m.len == 0 {
                        return None;
                    }
                    at = (at + 1) & (slots - 1);
                }
            }
            // Longer texts are looked up in the static tables, if a token
            // of their length may start as they do.
            len if len > 16 && self.starts(piece) & bit(len) == 0 => None,
            _ => table.rank(piece),
        }
    }

    /// [`Index::rank`], for a text that is most likely no token: the start
    /// masks, smaller than the tables and mostly in cache already, rule
    /// most such texts out without a probe.
    #[inline]
    pub(crate) fn rank_if_any(&self, table: &Table, piece: &[u8]) -> Option<Rank> {
        let len = piece.len();
        if len > 2 && self.starts(piece) & bit(len) == 0 {
            return None;
        }
        self.rank(table, piece)
    }

    /// The lengths of the tokens of at least three bytes that may start
    /// `text` (see [`Index::starts`]): bit `k` for length `k`, bit 0 for
    /// one longer than 63 bytes.
    #[inline]
    pub(crate) fn starts(&self, text: &[u8]) -> Mask {
        match *text {
            [a, b, c, d, ..] => {
                let three = self.starts[start_slot([a, b, c])];
                // Five bytes and more: the first four must allow them too.
                let short = 0b1_1000;
                if three & !short == 0 {
                    return three;
                }
                three & (short | self.starts4[start4_slot([a, b, c, d])])
            }
            [a, b, c] => self.starts[start_slot([a, b, c])],
            _ => 0,
        }
    }

    /// The split of the token `token` (of rank `rank`): the length of its
    /// first part and the two parts' ranks (see [`merge::split`]); `None`
    /// for a single byte. Found once, then remembered.
    pub(crate) fn split(
        &self,
        table: &Table,
        token: &[u8],
        rank: Rank,
    ) -> Option<(usize, Rank, Rank)> {
        // Tokens of two and three bytes split as their pairs say, from
        // the small tables of single bytes and pairs (merging takes the
        // lower-ranked pair first, the left one on a tie).
        match *token {
            [_] => return None,
            [a, b] => return Some((1, table.rank(&[a])?, table.rank(&[b])?)),
            [a, b, c] => {
                let (ab, bc) = (table.rank(&[a, b]), table.rank(&[b, c]));
                return match (ab, bc) {
                    (Some(x), Some(y)) if x <= y => Some((2, x, table.rank(&[c])?)),
                    (Some(x), None) => Some((2, x, table.rank(&[c])?)),
                    (_, Some(y)) => Some((1, table.rank(&[a])?, y)),
                    (None, None) => None,
                };
            }
            _ => {}
        }
        let slot = self.splits.get(rank as usize)?;
        let known = slot.load(Ordering::Relaxed);
        if known != 0 {
            return unpack(known);
        }
        let found = merge::split(Indexed { index: self, table }, token).and_then(|at| {
            let left = self.rank(table, &token[..at])?;
            let right = self.rank(table, &token[at..])?;
            Some((at, left, right))
        });
        slot.store(pack(found), Ordering::Relaxed);
        found
    }
}

/// A split as one number: the first part's length, the two ranks, and a
/// bit that says it was found (a single byte's is just that bit).
fn pack(split: Option<(usize, Rank, Rank)>) -> u64 {
    match split {
        Some((at, left, right)) => {
            1 | (at as u64) << 1 | u64::from(left) << 9 | u64::from(right) << 36
        }
        None => 1,
    }
}

fn unpack(packed: u64) -> Option<(usize, Rank, Rank)> {
    let at = (packed >> 1 & 0xff) as usize;
    (at != 0).then_some((
        at,
        (packed >> 9 & 0x7ff_ffff) as Rank,
        (packed >> 36 & 0x7ff_ffff) as Rank,
    ))
}

/// Eight to sixteen bytes, zero-padded, and their length: two fixed-size
/// loads that overlap, as in [`short_key`].
#[inline]
fn medium_key(piece: &[u8]) -> (u128, u8) {
    let len = piece.len();
    let lo = u64_at(piece, 0);
    let hi = u64_at(piece, len - 8);
    (
        u128::from(lo) | u128::from(hi) << (8 * (len - 8)),
        len as u8,
    )
}

#[inline]
fn fold(key: u128) -> u64 {
    (key as u64) ^ ((key >> 64) as u64).rotate_left(29)
}

/// The index with the static tables behind it, for merging.
#[derive(Clone, Copy)]
pub(crate) struct Indexed<'a> {
    pub(crate) index: &'a Index,
    pub(crate) table: &'a Table,
}

impl Ranks for Indexed<'_> {
    #[inline]
    fn rank(&mut self, bytes: &[u8]) -> Option<Rank> {
        self.index.rank(self.table, bytes)
    }
}
