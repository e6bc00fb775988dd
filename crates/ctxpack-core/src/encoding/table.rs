//! An encoding's tokens as tables read in place (laid out by
//! [`super::layout`]: static data built by `build.rs` for the built-in
//! encodings, which describes the layout, or owned for a loaded file): a
//! lookup is a direct index for one or two bytes and a binary search
//! among the tokens of the same length for longer ones. Nothing is built
//! at start.

use super::Rank;
use super::layout::Laid;
use std::borrow::Cow;

/// The tokens of one length: where their records start (from
/// `Table::records_at`), how many there are, and the index of the first
/// one's rank in the packed ranks.
#[derive(Clone, Debug)]
pub(crate) struct Length {
    pub(crate) start: usize,
    pub(crate) count: usize,
    pub(crate) first_rank: usize,
}

/// One encoding's tables.
pub(crate) struct Table {
    pub(crate) data: Cow<'static, [u8]>,
    pub(crate) records_at: usize,
    pub(crate) ranks_at: usize,
    pub(crate) rank_bits: u32,
    /// One token in this many of each length is a fence.
    pub(crate) fence: usize,
    /// Ordinary tokens in the encoding.
    #[allow(dead_code, reason = "the tests check it")]
    pub(crate) tokens: usize,
    /// Indexed by length; lengths 0 to 2 are empty (looked up directly).
    pub(crate) lengths: Cow<'static, [Length]>,
}

impl From<Laid> for Table {
    fn from(laid: Laid) -> Table {
        Table {
            data: Cow::Owned(laid.data),
            records_at: laid.records_at,
            ranks_at: laid.ranks_at,
            rank_bits: laid.rank_bits,
            fence: super::layout::FENCE,
            tokens: laid.tokens,
            lengths: laid
                .lengths
                .into_iter()
                .map(|(start, count, first_rank)| Length {
                    start,
                    count,
                    first_rank,
                })
                .collect(),
        }
    }
}

/// Where the two-byte tokens' ranks start: after the 256 single bytes'.
const PAIRS_AT: usize = 256 * 4;

impl Table {
    fn u32_at(&self, at: usize) -> u32 {
        let mut b = [0; 4];
        b.copy_from_slice(&self.data[at..at + 4]);
        u32::from_le_bytes(b)
    }

    /// The rank of the token whose bytes are `piece`, if there is one.
    #[inline]
    pub(crate) fn rank(&self, piece: &[u8]) -> Option<Rank> {
        match *piece {
            [] => None,
            [b] => Some(self.u32_at(usize::from(b) * 4)),
            [a, b] => {
                let r = self.u32_at(PAIRS_AT + (usize::from(a) << 8 | usize::from(b)) * 4);
                (r != u32::MAX).then_some(r)
            }
            _ => self.rank_of_long(piece),
        }
    }

    fn rank_of_long(&self, piece: &[u8]) -> Option<Rank> {
        let len = piece.len();
        let class = self.lengths.get(len)?;
        if class.count == 0 {
            return None;
        }
        let records = &self.data[self.records_at + class.start..];
        // A record's first eight bytes (fewer for shorter tokens) as a
        // number that orders as the bytes do; for longer tokens the rest
        // is compared as bytes when the heads are equal. The build leaves
        // eight bytes after the last record, so every load is in bounds.
        let head_len = len.min(8);
        let shift = 8 * (8 - head_len) as u32;
        let head = |i: usize| -> u64 {
            let mut b = [0; 8];
            b.copy_from_slice(&records[i * len..i * len + 8]);
            u64::from_be_bytes(b) >> shift
        };
        let want = piece[..head_len]
            .iter()
            .fold(0u64, |n, &b| n << 8 | u64::from(b));
        let rest = &piece[head_len..];
        let tail = |i: usize| &records[i * len + head_len..(i + 1) * len];
        let not_above = |i: usize| {
            let h = head(i);
            h < want || (h == want && tail(i) <= rest)
        };
        let is = |i: usize| head(i) == want && tail(i) == rest;
        // The last fence not above `want`; then, unless it is `want`, the
        // tokens after it, up to the next fence.
        let fences = class.count.div_ceil(self.fence);
        if !not_above(0) {
            // `piece` sorts before every token of its length.
            return None;
        }
        let fence = last_not_above(0, fences, not_above);
        if is(fence) {
            return Some(self.rank_at(class.first_rank + fence));
        }
        let between = self.fence - 1;
        let from = fences + fence * between;
        let to = (from + between).min(class.count);
        if from >= to || !not_above(from) {
            return None;
        }
        let i = last_not_above(from, to - from, not_above);
        is(i).then(|| self.rank_at(class.first_rank + i))
    }

    /// The length of the longest token.
    pub(crate) fn longest(&self) -> usize {
        self.lengths.len().saturating_sub(1)
    }

    /// Calls `each` with every token's bytes and rank, by length.
    pub(crate) fn each(&self, mut each: impl FnMut(&[u8], Rank)) {
        for b in 0..=255u8 {
            each(&[b], self.u32_at(usize::from(b) * 4));
        }
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                if let Some(rank) = self.rank(&[a, b]) {
                    each(&[a, b], rank);
                }
            }
        }
        for (len, class) in self.lengths.iter().enumerate().skip(3) {
            let records = &self.data[self.records_at + class.start..];
            for i in 0..class.count {
                each(
                    &records[i * len..(i + 1) * len],
                    self.rank_at(class.first_rank + i),
                );
            }
        }
    }

    /// The `i`th packed rank.
    fn rank_at(&self, i: usize) -> Rank {
        let bit = i * self.rank_bits as usize;
        let word = self.u32_at(self.ranks_at + bit / 8);
        (word >> (bit % 8)) & ((1 << self.rank_bits) - 1)
    }
}

/// The last index in `from..from + size` for which `not_above` holds,
/// given that it holds for `from` and, past some index, for none after:
/// a binary search with no branch to mispredict.
#[inline(always)]
fn last_not_above(mut base: usize, mut size: usize, not_above: impl Fn(usize) -> bool) -> usize {
    while size > 1 {
        let half = size / 2;
        if not_above(base + half) {
            base += half;
        }
        size -= half;
    }
    base
}
