//! Byte-pair encoding of long pieces in time linear in their length: a
//! search for the one valid token sequence instead of merging.
//!
//! The tokens byte-pair merging gives a text are the one sequence that
//! covers it in which every two neighbours are *compatible*: merging the
//! bytes of the two alone gives those two tokens back (each neighbour pair
//! of merging's output is merged no further, and a sequence whose every
//! pair is so is what merging gives — the observation behind GitHub's
//! `bpe` crate). So the encoder goes left to right taking the longest
//! token at each position that is compatible with the one before it; when
//! no token at a position is, that position is no boundary of the
//! encoding: it is marked dead, the token before is given back and the
//! next shorter one tried in its place. Each position dies at most once,
//! and at most a token's length of candidates is tried at each, so the
//! work is linear in the piece — where merging by rank with a heap is
//! `n log n` and was several times slower on a megabyte of one word.
//!
//! Most of the way it goes faster still: it merges a window of the next
//! bytes and takes all its tokens but the last two at once, checking only
//! the first against the token before (see [`encode`]); the search takes
//! over where that check fails, and where tokens are long (a run of one
//! character), which the search takes a whole token a step.
//!
//! The candidates at a position come from the index ([`Index::starts`]:
//! the lengths of the tokens that may start with its first bytes), each
//! looked up by its bytes; compatibility is decided by a walk down the two
//! tokens' merges ([`compatible`]). Both need the in-memory index, so the
//! encoder runs once an encoding has built it.

use super::Rank;
use super::index::{Index, Indexed, MASKED, Mask};
use super::merge;
#[cfg(test)]
use super::merge::Ranks;
use super::table::Table;

/// The longest token at `at` in `piece` that is shorter than `below`
/// bytes: its length and rank. Every single byte is a token, so there is
/// one while `below` is above 1.
fn longest(
    index: &Index,
    table: &Table,
    piece: &[u8],
    at: usize,
    below: usize,
) -> Option<(usize, Rank)> {
    let rest = &piece[at..];
    let most = below.saturating_sub(1).min(rest.len());
    let mask = index.starts(rest);
    if mask & 1 != 0 {
        // A token longer than the mask holds starts so: rare (runs of
        // spaces, of `=`, …), looked up length by length.
        for len in (MASKED + 1..=most.min(table.longest())).rev() {
            if let Some(rank) = table.rank(&rest[..len]) {
                return Some((len, rank));
            }
        }
    }
    // Lengths of at least 3 the mask allows, longest first.
    let mut bits = mask & !1 & mask_below(most + 1);
    while bits != 0 {
        let len = MASKED - bits.leading_zeros() as usize;
        bits &= !(1 << len);
        if let Some(rank) = index.rank(table, &rest[..len]) {
            return Some((len, rank));
        }
    }
    for len in (1..=most.min(2)).rev() {
        if let Some(rank) = table.rank(&rest[..len]) {
            return Some((len, rank));
        }
    }
    None
}

/// The bits of lengths below `n` (and bit 0).
#[inline]
fn mask_below(n: usize) -> Mask {
    if n > MASKED { Mask::MAX } else { (1 << n) - 1 }
}

/// The longest pair [`compatible_by_merging`] merges on the stack; a
/// longer one is merged in full.
#[cfg(test)]
const SHORT_PAIR: usize = 64;

/// Whether two neighbouring tokens, `piece[a..m]` of rank `left` and
/// `piece[m..b]` of rank `right`, are compatible: merging their bytes
/// alone gives them back.
///
/// Each token merges to itself, so they are unless a merge across their
/// boundary comes before one of the merges that make them. The walk goes
/// down the two tokens' merges from the last (each token's split, found
/// once: [`Index::split`]), at each step `limit` the rank before which
/// the parts now beside the boundary exist: if the bytes of those two
/// parts together are a token ranked below it, merging would join them
/// across the boundary. The later of the two parts' own merges is undone
/// next; when both are single bytes, nothing crossed. (The walk of
/// GitHub's `bpe` crate, with a lookup of the joined bytes in place of its
/// table of merged pairs; checked against merging on every pair in the
/// tests.)
fn compatible(
    index: &Index,
    table: &Table,
    piece: &[u8],
    (a, m, b): (usize, usize, usize),
    (left, right): (Rank, Rank),
) -> bool {
    let (mut a, mut b) = (a, b);
    let (mut r1, mut r2) = (left, right);
    let mut limit = Rank::MAX;
    loop {
        if index
            .rank_if_any(table, &piece[a..b])
            .is_some_and(|joined| joined < limit)
        {
            return false;
        }
        if r1 > r2 {
            limit = r1;
            match index.split(table, &piece[a..m], r1) {
                Some((at, _, r)) => {
                    a += at;
                    r1 = r;
                }
                None => {
                    limit = r2.saturating_add(1);
                    match index.split(table, &piece[m..b], r2) {
                        Some((at, l, _)) => {
                            b = m + at;
                            r2 = l;
                        }
                        None => return true,
                    }
                }
            }
        } else {
            limit = r2.saturating_add(1);
            match index.split(table, &piece[m..b], r2) {
                Some((at, l, _)) => {
                    b = m + at;
                    r2 = l;
                }
                None => {
                    limit = r1;
                    match index.split(table, &piece[a..m], r1) {
                        Some((at, _, r)) => {
                            a += at;
                            r1 = r;
                        }
                        None => return true,
                    }
                }
            }
        }
    }
}

/// Whether the token of `first` bytes and the one after it, together
/// `pair`, are compatible, found by merging `pair`: each token merges to
/// itself, so they are unless a merge across the boundary comes first.
/// Merging stops at the first merge that crosses it, or once each side is
/// whole. The tests hold [`compatible`] to it.
#[cfg(test)]
fn compatible_by_merging(ranks: &mut impl Ranks, pair: &[u8], first: usize) -> bool {
    let n = pair.len();
    if n > SHORT_PAIR {
        let mut ends = Vec::with_capacity(2);
        return merge::merge(ranks, pair, Some(&mut ends)) == 2 && ends[0] == first;
    }
    // As in `merge`: part `i` starts at `start[i]`, `rank[i]` is the rank
    // of it joined with part `i + 1`.
    let mut start = [0u8; SHORT_PAIR + 1];
    let mut rank = [Rank::MAX; SHORT_PAIR + 1];
    for (i, s) in start.iter_mut().enumerate().take(n + 1) {
        *s = i as u8;
    }
    for i in 0..n - 1 {
        rank[i] = ranks.rank(&pair[i..i + 2]).unwrap_or(Rank::MAX);
    }
    // The part that ends at the boundary.
    let mut left = first - 1;
    let mut parts = n;
    loop {
        if parts == 2 {
            // Each side is whole; the pair's join is no token (or it
            // would have merged first).
            return rank[0] == Rank::MAX;
        }
        let (mut min, mut at) = (Rank::MAX, 0);
        for (i, &r) in rank[..parts - 1].iter().enumerate() {
            if r < min {
                min = r;
                at = i;
            }
        }
        if min == Rank::MAX {
            // Nothing merges: a side is not a token (it always is).
            return false;
        }
        if at == left {
            return false;
        }
        let mut join = |from: usize, to: usize| -> Rank {
            if to <= parts {
                ranks
                    .rank(&pair[usize::from(start[from])..usize::from(start[to])])
                    .unwrap_or(Rank::MAX)
            } else {
                Rank::MAX
            }
        };
        if at > 0 {
            rank[at - 1] = join(at - 1, at + 2);
        }
        rank[at] = join(at, at + 3);
        start.copy_within(at + 2..=parts, at + 1);
        rank.copy_within(at + 2..parts, at + 1);
        parts -= 1;
        if at < left {
            left -= 1;
        }
    }
}

/// The compatibility of token pairs met lately, by a hash of the two ranks:
/// a text of one repeated token (a run of one character) asks about one
/// pair again and again; other texts rarely repeat one.
struct Met {
    slots: [(u64, bool); 256],
}

impl Met {
    fn new() -> Self {
        Met {
            slots: [(u64::MAX, false); 256],
        }
    }

    /// Whether the tokens `piece[a..m]` (of rank `left`) and `piece[m..b]`
    /// (of rank `right`) are compatible (see [`compatible`]).
    fn compatible(
        &mut self,
        index: &Index,
        table: &Table,
        piece: &[u8],
        span: (usize, usize, usize),
        (left, right): (Rank, Rank),
    ) -> bool {
        let key = u64::from(left) << 32 | u64::from(right);
        let slot = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize;
        if self.slots[slot].0 == key {
            return self.slots[slot].1;
        }
        let fits = compatible(index, table, piece, span, (left, right));
        self.slots[slot] = (key, fits);
        fits
    }
}

/// Bytes merged at a time by the encoder's fast steps (see [`encode`]).
const WINDOW: usize = 24;

/// A fast step that keeps fewer tokens than this is followed by
/// [`SEARCH_AFTER_FEW`] bytes of search.
const FEW: usize = 4;
const SEARCH_AFTER_FEW: usize = 8192;

/// A token on the encoder's stack: where it starts, its length, its rank
/// (`Rank::MAX` until something needs it), and whether a fast step took it
/// without trying the longer tokens at its start.
#[derive(Clone, Copy)]
struct Taken {
    start: usize,
    len: usize,
    rank: Rank,
    fast: bool,
}

/// The tokens of `piece`: how many, and where each ends (pushed onto
/// `ends`, if given). `None` only if the search found no encoding, which
/// the compatibility of merging's output rules out; the caller then
/// merges.
///
/// Most of the way the encoder takes its steps fast: it merges the next
/// [`WINDOW`] bytes alone and takes their tokens but the last two (merging
/// near a window's end may differ from merging the whole), checking only
/// that the first is compatible with the token before it — the others are
/// neighbours in merging's own output, so compatible. Where that check
/// fails, it searches token by token as the module docs say, until it is
/// past the window that failed; a fast token it gives back has its longer
/// rivals tried too. Every step keeps what it has taken a valid sequence,
/// so what it ends with is the one encoding.
pub(crate) fn encode(
    index: &Index,
    table: &Table,
    piece: &[u8],
    ends: Option<&mut Vec<usize>>,
) -> Option<usize> {
    let n = piece.len();
    let mut search = Search {
        index,
        table,
        piece,
        dead: vec![0u64; n / 64 + 1],
        tokens: Vec::with_capacity(n / 3 + 1),
        met: Met::new(),
    };
    let mut window = Vec::with_capacity(WINDOW);
    let mut at = 0;
    let mut below = usize::MAX;
    // Token by token until here, after a fast step failed.
    let mut careful_until = 0;
    while at < n {
        if at >= careful_until && below == usize::MAX {
            let end = n.min(at + WINDOW);
            window.clear();
            merge::merge(Indexed { index, table }, &piece[at..end], Some(&mut window));
            let keep = if end == n {
                window.len()
            } else {
                window.len().saturating_sub(2)
            };
            if keep < FEW && end < n {
                // Long tokens (runs of one character, of spaces): the
                // search takes them a whole token a step, where merging a
                // window keeps few.
                careful_until = at + SEARCH_AFTER_FEW;
            } else if keep > 0 {
                if let Some(to) = search.take_window(at, &window[..keep])? {
                    at = to;
                    continue;
                }
                careful_until = end;
            }
        }
        match longest(index, table, piece, at, below) {
            Some((len, rank)) => {
                if search.alive(at + len) && search.after_last(at, at + len, rank)? {
                    search.tokens.push(Taken {
                        start: at,
                        len,
                        rank,
                        fast: false,
                    });
                    at += len;
                    below = usize::MAX;
                } else {
                    below = len;
                }
            }
            None => {
                // No token at `at` goes on: it is no boundary. Give back
                // the token before it and try the next shorter one — or,
                // for a token a fast step took, every other one (its own
                // end is dead now).
                search.dead[at / 64] |= 1 << (at % 64);
                let given = search.tokens.pop()?;
                at = given.start;
                below = if given.fast { usize::MAX } else { given.len };
                careful_until = careful_until.max(at + 1);
            }
        }
    }
    if let Some(ends) = ends {
        ends.extend(search.tokens.iter().map(|t| t.start + t.len));
    }
    Some(search.tokens.len())
}

/// What [`encode`] has found so far in one piece.
struct Search<'a> {
    index: &'a Index,
    table: &'a Table,
    piece: &'a [u8],
    /// Positions known to be no boundary of the encoding, a bit each.
    dead: Vec<u64>,
    /// The tokens taken, in order.
    tokens: Vec<Taken>,
    met: Met,
}

impl Search<'_> {
    /// A taken token's rank, looked up if a fast step left it out.
    fn rank_of(&self, t: &Taken) -> Option<Rank> {
        match t.rank {
            Rank::MAX => self
                .index
                .rank(self.table, &self.piece[t.start..t.start + t.len]),
            r => Some(r),
        }
    }

    /// Whether `at` may be a boundary: the piece's end, or not known dead.
    fn alive(&self, at: usize) -> bool {
        at == self.piece.len() || self.dead[at / 64] >> (at % 64) & 1 == 0
    }

    /// Whether the token `piece[at..end]`, of `rank`, is compatible with
    /// the last token taken (any token is, first). `None` if that token
    /// has no rank (the caller then merges).
    fn after_last(&mut self, at: usize, end: usize, rank: Rank) -> Option<bool> {
        let Some(&prior) = self.tokens.last() else {
            return Some(true);
        };
        let left = self.rank_of(&prior)?;
        let span = (prior.start, at, end);
        Some(
            self.met
                .compatible(self.index, self.table, self.piece, span, (left, rank)),
        )
    }

    /// A fast step at `at`: takes the tokens a window merged alone ends
    /// at `ends` (relative to `at`) if the last ends at a live boundary and
    /// the first is compatible with the last token taken — the others are
    /// neighbours in merging's own output — and gives where they end;
    /// `Some(None)` if not.
    fn take_window(&mut self, at: usize, ends: &[usize]) -> Option<Option<usize>> {
        let Some(&first_end) = ends.first() else {
            return Some(None);
        };
        let rank = self
            .index
            .rank(self.table, &self.piece[at..at + first_end])?;
        let last_end = at + ends[ends.len() - 1];
        if !(self.alive(last_end) && self.after_last(at, at + first_end, rank)?) {
            return Some(None);
        }
        self.tokens.push(Taken {
            start: at,
            len: first_end,
            rank,
            fast: true,
        });
        let mut from = at + first_end;
        for &end in &ends[1..] {
            self.tokens.push(Taken {
                start: from,
                len: at + end - from,
                rank: Rank::MAX,
                fast: true,
            });
            from = at + end;
        }
        Some(Some(from))
    }
}

#[cfg(all(test, any(feature = "o200k", feature = "cl100k")))]
mod tests {
    use super::*;
    use crate::encoding::tests::Rng;

    /// The tables of the encodings this build has, each with its index.
    fn encodings() -> Vec<(&'static Table, Index)> {
        let tables: Vec<&'static Table> = vec![
            #[cfg(feature = "o200k")]
            crate::encoding::O200K.table(),
            #[cfg(feature = "cl100k")]
            crate::encoding::CL100K.table(),
        ];
        tables.into_iter().map(|t| (t, Index::build(t))).collect()
    }

    /// The walk down the two tokens' merges decides as merging their
    /// bytes does, on pairs drawn from the whole vocabulary and on pairs of
    /// the short tokens texts are mostly made of.
    #[test]
    fn the_walk_decides_as_merging_does() {
        for (table, index) in encodings() {
            let mut tokens: Vec<(Vec<u8>, Rank)> = Vec::new();
            table.each(|bytes, rank| tokens.push((bytes.to_vec(), rank)));
            let short: Vec<&(Vec<u8>, Rank)> = tokens.iter().filter(|t| t.0.len() <= 4).collect();
            let mut rng = Rng(0x5eed_ba11);
            let mut fits = 0;
            for k in 0..200_000 {
                let mut pick = || -> &(Vec<u8>, Rank) {
                    if k % 2 == 0 {
                        &tokens[rng.below(tokens.len())]
                    } else {
                        short[rng.below(short.len())]
                    }
                };
                let (a, b) = (pick(), pick());
                let pair = [a.0.as_slice(), &b.0].concat();
                let m = a.0.len();
                let walked = compatible(&index, table, &pair, (0, m, pair.len()), (a.1, b.1));
                let mut ranks = Indexed {
                    index: &index,
                    table,
                };
                let merged = compatible_by_merging(&mut ranks, &pair, m);
                assert_eq!(walked, merged, "{:?} | {:?}", a.0, b.0);
                fits += usize::from(walked);
            }
            // Both answers occur, the second thousands of times.
            assert!((100_000..195_000).contains(&fits), "{fits} compatible");
        }
    }

    /// Long pieces of every kind the encoder meets — words of random
    /// letters, of random bytes, runs of one character, of spaces, of a
    /// few characters, CJK and mixed scripts — give merging's tokens, end
    /// for end, with windows that fail and search that backtracks.
    #[test]
    fn long_pieces_give_merging_tokens() {
        let mut rng = Rng(0x10_6e);
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        for len in [100, 101, 257, 1000, 4096] {
            let letters: Vec<u8> = (0..len).map(|_| b'a' + rng.below(26) as u8).collect();
            let few: Vec<u8> = (0..len).map(|_| b"ab"[rng.below(2)]).collect();
            let bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            let cjk: String = (0..len / 3)
                .map(|_| ['東', '京', '日', '本', '語', 'の'][rng.below(6)])
                .collect();
            let mixed: String = (0..len / 2)
                .map(|_| ['a', 'é', 'ж', '東', '🙂', 'ß', 'Z', '\u{301}'][rng.below(8)])
                .collect();
            pieces.extend([
                letters,
                few,
                bytes,
                "a".repeat(len).into_bytes(),
                " ".repeat(len).into_bytes(),
                "=".repeat(len).into_bytes(),
                "ab".repeat(len / 2).into_bytes(),
                cjk.into_bytes(),
                mixed.into_bytes(),
            ]);
        }
        for (table, index) in encodings() {
            for piece in &pieces {
                let mut want = Vec::new();
                let n = merge::merge(table, piece, Some(&mut want));
                let mut got = Vec::new();
                let found = encode(&index, table, piece, Some(&mut got));
                assert_eq!(found, Some(n), "{:?}", String::from_utf8_lossy(piece));
                assert_eq!(got, want, "{:?}", String::from_utf8_lossy(piece));
            }
        }
    }
}
