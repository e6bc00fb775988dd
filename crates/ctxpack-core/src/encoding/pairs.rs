//! Merging by a list of merges, as Hugging Face's BPE does, for a file
//! whose list merges otherwise than ranks would (DeepSeek V3's: a token
//! the vocabulary has is not always made, as the list has no merge for
//! the two tokens ranks would join).
//!
//! A piece starts as one token per byte (a byte-level BPE), or per
//! character (a SentencePiece-style one, falling back to bytes). Of the
//! neighbouring pairs the list has a merge for, the one listed first is
//! merged (the leftmost, where the same pair stands twice), and so on
//! until no pair has one. The pairs wait in a heap, so a piece of n bytes
//! is merged in O(n log n); a pair the heap holds that a merge next to it
//! has since changed is passed over when it comes up.

use super::Rank;
use super::load::SentencePiece;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A list of merges, ready to merge by.
pub(crate) struct Pairs {
    /// Each merge by its two tokens (`left << 32 | right`): its place in
    /// the list and the token it makes.
    merges: FxHashMap<u64, (u32, Rank)>,
    /// The token of each byte.
    byte: [Rank; 256],
    /// A piece that is a token is that token, merged or not.
    pub(crate) whole_first: bool,
    /// A SentencePiece-style BPE's characters: a piece then starts from
    /// its characters (a space as `▁`), and from the bytes of one that
    /// has none (their `<0xNN>` tokens, `byte`).
    pub(crate) chars: Option<SentencePiece>,
}

/// A token of the piece being merged: a run of its bytes, linked to its
/// neighbours (`NONE` at either end); `len` 0 once merged into the one
/// before it.
#[derive(Clone, Copy)]
struct Symbol {
    token: Rank,
    len: u32,
    prev: usize,
    next: usize,
}

const NONE: usize = usize::MAX;

fn key(left: Rank, right: Rank) -> u64 {
    u64::from(left) << 32 | u64::from(right)
}

impl Pairs {
    /// The list (each merge's two tokens and what it makes, in order) over
    /// `tokens`, which must hold a token for every byte.
    pub(crate) fn new(
        list: &[(Rank, Rank, Rank)],
        tokens: &[(Vec<u8>, Rank)],
        whole_first: bool,
        chars: Option<SentencePiece>,
    ) -> Result<Pairs, String> {
        let mut byte = [None; 256];
        for (bytes, rank) in tokens {
            if let [b] = bytes.as_slice() {
                byte[usize::from(*b)] = Some(*rank);
            }
        }
        let mut tokens_of_bytes = [0; 256];
        for (b, rank) in byte.iter().enumerate() {
            tokens_of_bytes[b] = rank.ok_or_else(|| {
                format!("model.vocab: no token for the byte 0x{b:02x}, which a byte-level BPE starts from")
            })?;
        }
        let mut merges = FxHashMap::default();
        merges.reserve(list.len());
        for (n, &(left, right, made)) in list.iter().enumerate() {
            // A pair listed twice merges where it is listed last, as the
            // `tokenizers` library reads the list.
            let place = u32::try_from(n).map_err(|_| "model.merges: too many merges")?;
            merges.insert(key(left, right), (place, made));
        }
        Ok(Pairs {
            merges,
            byte: tokens_of_bytes,
            whole_first,
            chars,
        })
    }

    /// The tokens `piece` starts as, linked in order.
    fn start(&self, piece: &[u8]) -> Vec<Symbol> {
        let mut symbols = Vec::with_capacity(piece.len());
        let mut push = |token: Rank, len: usize| {
            let i = symbols.len();
            symbols.push(Symbol {
                token,
                len: len as u32,
                prev: i.checked_sub(1).unwrap_or(NONE),
                next: i + 1,
            });
        };
        // A piece is cut from a `str` at character boundaries, so a
        // SentencePiece-style one is text; were it not, its bytes are
        // what it would fall back to.
        match (&self.chars, std::str::from_utf8(piece)) {
            (Some(sp), Ok(text)) => {
                for c in text.chars() {
                    let written = if c == ' ' { '\u{2581}' } else { c };
                    match sp.chars.get(&written) {
                        Some(&token) => push(token, c.len_utf8()),
                        None => {
                            let mut buf = [0; 4];
                            for b in c.encode_utf8(&mut buf).bytes() {
                                push(self.byte[usize::from(b)], 1);
                            }
                        }
                    }
                }
            }
            _ => {
                for &b in piece {
                    push(self.byte[usize::from(b)], 1);
                }
            }
        }
        if let Some(last) = symbols.last_mut() {
            last.next = NONE;
        }
        symbols
    }

    /// The tokens of `piece`, pushing where each ends onto `ends` if given.
    pub(crate) fn encode(&self, piece: &[u8], ends: Option<&mut Vec<usize>>) -> usize {
        let mut symbols = self.start(piece);
        let mut heap = BinaryHeap::with_capacity(piece.len());
        for i in 1..symbols.len() {
            if let Some(&(place, _)) = self
                .merges
                .get(&key(symbols[i - 1].token, symbols[i].token))
            {
                heap.push(Reverse((place, i - 1)));
            }
        }
        let mut count = symbols.len();
        while let Some(Reverse((place, at))) = heap.pop() {
            let Symbol {
                token,
                len,
                prev,
                next,
            } = symbols[at];
            if len == 0 || next == NONE {
                continue;
            }
            // Still the pair it was pushed for?
            let Some(&(listed, made)) = self.merges.get(&key(token, symbols[next].token)) else {
                continue;
            };
            if listed != place {
                continue;
            }
            let after = symbols[next].next;
            symbols[at].token = made;
            symbols[at].len = len + symbols[next].len;
            symbols[at].next = after;
            symbols[next].len = 0;
            if after != NONE {
                symbols[after].prev = at;
            }
            count -= 1;
            if prev != NONE
                && let Some(&(p, _)) = self.merges.get(&key(symbols[prev].token, made))
            {
                heap.push(Reverse((p, prev)));
            }
            if after != NONE
                && let Some(&(p, _)) = self.merges.get(&key(made, symbols[after].token))
            {
                heap.push(Reverse((p, at)));
            }
        }
        if let Some(ends) = ends {
            let mut at = if symbols.is_empty() { NONE } else { 0 };
            let mut end = 0;
            while at != NONE {
                end += symbols[at].len as usize;
                ends.push(end);
                at = symbols[at].next;
            }
        }
        count
    }
}
