//! Byte-pair merging: the tokens a piece that is not one token splits
//! into. The bytes start as one part each; the adjacent pair whose joined
//! bytes are the lowest-ranked token merges, the leftmost on a tie, until
//! no adjacent pair is a token — tiktoken's rule, which its encoders apply
//! by rank of the joined bytes.

use super::Rank;
use super::table::Table;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Pieces this long or longer are merged with a heap (in time `n log n`);
/// shorter ones by scanning their parts after every merge, which is
/// faster while there are few.
pub(crate) const LONG_PIECE: usize = 100;

const NONE: Rank = Rank::MAX;

/// Ranks by bytes, for merging.
pub(crate) trait Ranks {
    fn rank(&mut self, bytes: &[u8]) -> Option<Rank>;
}

impl<R: Ranks + ?Sized> Ranks for &mut R {
    #[inline]
    fn rank(&mut self, bytes: &[u8]) -> Option<Rank> {
        (**self).rank(bytes)
    }
}

impl Ranks for &Table {
    fn rank(&mut self, bytes: &[u8]) -> Option<Rank> {
        Table::rank(self, bytes)
    }
}

/// Slots a [`Joins`] starts with, and the most it grows to.
const JOIN_SLOTS: (usize, usize) = (1 << 9, 1 << 13);

/// The ranks of the joined pieces of up to seven bytes merging looked up
/// last, one per slot by a hash of the bytes. Merging the pieces of
/// ordinary text looks up the same few joins again and again, and a slot
/// is read faster than the tables are searched. It starts small, so a
/// fresh instance touches few new pages for it, and grows (forgetting)
/// when it misses often.
pub(crate) struct Joins {
    /// Each slot's [`super::short_key`] and rank (or `NONE`); a slot with
    /// key 0 is empty (no short key is 0: its top byte is the length).
    slots: Box<[(u64, Rank)]>,
    /// Misses since the slots were last grown.
    misses: usize,
}

impl Joins {
    fn with_slots(n: usize) -> Self {
        Joins {
            // All zeros, so the allocator hands over untouched pages.
            slots: vec![(0, 0); n].into_boxed_slice(),
            misses: 0,
        }
    }
}

impl Default for Joins {
    fn default() -> Self {
        Joins::with_slots(JOIN_SLOTS.0)
    }
}

/// Ranks (the tables, or the index) with the joins remembered in front of
/// them.
pub(crate) struct Remembered<'a, R: Ranks> {
    pub(crate) table: R,
    pub(crate) joins: &'a mut Joins,
}

impl<R: Ranks> Ranks for Remembered<'_, R> {
    #[inline]
    fn rank(&mut self, bytes: &[u8]) -> Option<Rank> {
        if bytes.len() <= 2 {
            return self.table.rank(bytes);
        }
        let Some(key) = super::short_key(bytes) else {
            return self.table.rank(bytes);
        };
        let slots = self.joins.slots.len();
        // Fibonacci hashing: the top bits of the key times 2^64/φ.
        let slot =
            (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - slots.trailing_zeros())) as usize;
        let (k, r) = self.joins.slots[slot];
        if k == key {
            return (r != NONE).then_some(r);
        }
        let rank = self.table.rank(bytes);
        self.joins.slots[slot] = (key, rank.unwrap_or(NONE));
        self.joins.misses += 1;
        if self.joins.misses > 4 * slots && slots < JOIN_SLOTS.1 {
            *self.joins = Joins::with_slots(slots * 4);
        }
        rank
    }
}

/// Where the token `piece` splits: the length of the first of the two
/// tokens whose merge made it last (its bytes merged without the token
/// itself stop there), or `None` for a single byte.
pub(crate) fn split(table: impl Ranks, piece: &[u8]) -> Option<usize> {
    /// The ranks without `whole`.
    struct Without<'a, R> {
        ranks: R,
        whole: &'a [u8],
    }
    impl<R: Ranks> Ranks for Without<'_, R> {
        fn rank(&mut self, bytes: &[u8]) -> Option<Rank> {
            if bytes.len() == self.whole.len() {
                return None;
            }
            self.ranks.rank(bytes)
        }
    }
    if piece.len() < 2 {
        return None;
    }
    let mut ends = Vec::with_capacity(2);
    let parts = merge(
        Without {
            ranks: table,
            whole: piece,
        },
        piece,
        Some(&mut ends),
    );
    (parts == 2).then(|| ends[0])
}

/// Where each token of `piece` ends, in order (the last is `piece.len()`),
/// pushed onto `ends`; returns how many tokens there are.
pub(crate) fn merge(table: impl Ranks, piece: &[u8], ends: Option<&mut Vec<usize>>) -> usize {
    match piece.len() {
        0 => 0,
        n if n < LONG_PIECE => merge_short(table, piece, ends),
        _ => merge_long(table, piece, ends),
    }
}

fn merge_short(table: impl Ranks, piece: &[u8], ends: Option<&mut Vec<usize>>) -> usize {
    // Arrays on the stack sized to the piece's kind: most are short, and
    // filling a hundred slots for a dozen bytes showed.
    if piece.len() <= 24 {
        merge_in::<25>(table, piece, ends)
    } else {
        merge_in::<LONG_PIECE>(table, piece, ends)
    }
}

/// Merges a piece of fewer than `N` bytes with its parts in arrays of
/// `N`: each part's bytes linked to the next and the one before, so a
/// merge moves nothing, and the pairs' ranks kept where each pair's first
/// part starts (a part taken in, or one with no pair after it, holds
/// none), so finding the lowest is a scan of one small array.
fn merge_in<const N: usize>(
    mut table: impl Ranks,
    piece: &[u8],
    ends: Option<&mut Vec<usize>>,
) -> usize {
    let n = piece.len();
    // The part starting at byte `i` (while one does) ends at `next[i]`,
    // the one before it starts at `prev[i]`; `rank[i]` is the rank of it
    // joined with the part after it.
    let mut next = [0u8; N];
    let mut prev = [0u8; N];
    let mut rank = [NONE; N];
    for i in 0..n {
        // Below N, which is at most LONG_PIECE + 1 and fits a byte.
        next[i] = (i + 1) as u8;
        prev[i] = i.wrapping_sub(1) as u8;
    }
    for i in 0..n - 1 {
        rank[i] = table.rank(&piece[i..i + 2]).unwrap_or(NONE);
    }
    let mut parts = n;
    loop {
        // The lowest-ranked pair, the leftmost on a tie.
        let (mut min, mut at) = (NONE, 0);
        for (i, &r) in rank[..n].iter().enumerate() {
            if r < min {
                min = r;
                at = i;
            }
        }
        if min == NONE {
            break;
        }
        // Part `at` takes in the part after it.
        let taken = usize::from(next[at]);
        rank[taken] = NONE;
        let end = usize::from(next[taken]);
        next[at] = end as u8;
        if end < n {
            prev[end] = at as u8;
        }
        parts -= 1;
        rank[at] = if end < n {
            let after = usize::from(next[end]);
            table.rank(&piece[at..after]).unwrap_or(NONE)
        } else {
            NONE
        };
        if at > 0 {
            let before = usize::from(prev[at]);
            rank[before] = table.rank(&piece[before..end]).unwrap_or(NONE);
        }
    }
    if let Some(ends) = ends {
        let mut i = 0;
        while i < n {
            i = usize::from(next[i]);
            ends.push(i);
        }
    }
    parts
}

fn merge_long(mut table: impl Ranks, piece: &[u8], ends: Option<&mut Vec<usize>>) -> usize {
    let n = piece.len();
    // The part starting at byte `i` (while `i` starts one) ends at
    // `end[i]`; `prev[i]` is where the part before it starts; `pair[i]` is
    // the rank of it joined with the next part, `NONE` if that is no
    // token or `i` no longer starts a part.
    let mut end: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    let mut pair = vec![NONE; n];
    let mut heap = BinaryHeap::with_capacity(n);
    for i in 0..n - 1 {
        if let Some(r) = table.rank(&piece[i..i + 2]) {
            pair[i] = r;
            heap.push(Reverse((r, i)));
        }
    }
    let mut tokens = n;
    while let Some(Reverse((r, left))) = heap.pop() {
        if pair[left] != r {
            // Stale: the part changed, or was taken in, after this was pushed.
            continue;
        }
        let right = end[left];
        let right_end = end[right];
        end[left] = right_end;
        pair[right] = NONE;
        tokens -= 1;
        if right_end < n {
            prev[right_end] = left;
        }
        let mut rejoin = |at: usize, to: usize, heap: &mut BinaryHeap<_>| {
            pair[at] = NONE;
            if to <= n
                && let Some(r) = table.rank(&piece[at..to])
            {
                pair[at] = r;
                heap.push(Reverse((r, at)));
            }
        };
        let next_end = if right_end < n { end[right_end] } else { n + 1 };
        rejoin(left, next_end, &mut heap);
        if left > 0 {
            rejoin(prev[left], right_end, &mut heap);
        }
    }
    if let Some(ends) = ends {
        let mut i = 0;
        while i < n {
            i = end[i];
            ends.push(i);
        }
    }
    tokens
}

#[cfg(all(test, feature = "o200k"))]
mod tests {
    use super::*;

    /// Merging with the joins remembered gives the tokens merging with
    /// the tables alone gives, while the joins fill, miss and grow.
    #[test]
    fn remembered_joins_merge_as_the_tables_do() {
        let table = &super::super::O200K.table;
        let mut joins = Joins::default();
        let mut rng = super::super::tests::Rng(0x9e37_79b9_7f4a_7c15);
        let alphabet: Vec<u8> = "etaoinshrdlu".bytes().chain("éüß".bytes()).collect();
        for _ in 0..20_000 {
            let piece: Vec<u8> = (0..2 + rng.below(40))
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let (mut plain, mut remembered) = (Vec::new(), Vec::new());
            let n = merge(table, &piece, Some(&mut plain));
            let m = merge(
                Remembered {
                    table,
                    joins: &mut joins,
                },
                &piece,
                Some(&mut remembered),
            );
            assert_eq!((n, &plain), (m, &remembered), "{piece:?}");
        }
        assert_eq!(joins.slots.len(), JOIN_SLOTS.1, "the joins grew");
    }
}
