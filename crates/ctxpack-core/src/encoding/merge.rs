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

/// The tables with the joins remembered in front of them.
pub(crate) struct Remembered<'a> {
    pub(crate) table: &'a Table,
    pub(crate) joins: &'a mut Joins,
}

impl Ranks for Remembered<'_> {
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

/// Where each token of `piece` ends, in order (the last is `piece.len()`),
/// pushed onto `ends`; returns how many tokens there are.
pub(crate) fn merge(table: impl Ranks, piece: &[u8], ends: Option<&mut Vec<usize>>) -> usize {
    match piece.len() {
        0 => 0,
        n if n < LONG_PIECE => merge_short(table, piece, ends),
        _ => merge_long(table, piece, ends),
    }
}

fn merge_short(mut table: impl Ranks, piece: &[u8], ends: Option<&mut Vec<usize>>) -> usize {
    let n = piece.len();
    // Part `i` starts at `start[i]`; `rank[i]` is the rank of it joined with
    // part `i + 1`. The last entry marks the end of the piece.
    let mut start = [0u8; LONG_PIECE + 1];
    let mut rank = [NONE; LONG_PIECE + 1];
    for (i, s) in start.iter_mut().enumerate().take(n + 1) {
        // Below LONG_PIECE + 1, which fits a byte.
        *s = i as u8;
    }
    for i in 0..n - 1 {
        rank[i] = table.rank(&piece[i..i + 2]).unwrap_or(NONE);
    }
    let mut parts = n + 1;
    loop {
        let mut min = NONE;
        let mut at = 0;
        for (i, &r) in rank[..parts - 1].iter().enumerate() {
            if r < min {
                min = r;
                at = i;
            }
        }
        if min == NONE {
            break;
        }
        // Part `at` takes in part `at + 1`: the pairs it starts and ends
        // change (the parts after the next start where `start[at + 3]` and
        // `start[at + 2]` say, until the next is removed).
        let mut rank_from = |from: usize, to: usize| -> Rank {
            if to < parts {
                table
                    .rank(&piece[usize::from(start[from])..usize::from(start[to])])
                    .unwrap_or(NONE)
            } else {
                NONE
            }
        };
        if at > 0 {
            rank[at - 1] = rank_from(at - 1, at + 2);
        }
        rank[at] = rank_from(at, at + 3);
        start.copy_within(at + 2..parts, at + 1);
        rank.copy_within(at + 2..parts, at + 1);
        parts -= 1;
    }
    if let Some(ends) = ends {
        ends.extend(start[1..parts].iter().map(|&s| usize::from(s)));
    }
    parts - 1
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
