//! Metering an assembly: every count a pass makes goes through one
//! [`Meter`], which counts (or counts up to a bound) with the request's
//! counter, cuts at a token boundary, and remembers exact counts in the
//! builder's [`CountCache`] across assemblies.

use super::{Count, TokenCounter};
use crate::encoding::first_and_last_split;
use crate::types::Tokenizer;
use std::cell::RefCell;
use std::collections::HashMap;

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

/// The tokenizer (see [`tokenizer_key`]), the text's length and its hash.
type CacheKey = (u64, usize, u64, u64);

/// A tokenizer as a number for the cache's keys: a hash of it (a name
/// hashes with its variant, so no name stands for a built-in encoding).
fn tokenizer_key(tokenizer: &Tokenizer) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(tokenizer)
}

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
    pub(crate) fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }

    fn key(tokenizer: u64, text: &str) -> CacheKey {
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
    /// The tokenizer's [`tokenizer_key`].
    tokenizer: u64,
    cache: RefCell<&'a mut CountCache>,
    /// The long texts this assembly counted, when the builder keeps no
    /// counts of its own: a text is measured, fitted and rendered, and is
    /// counted once for all of them.
    counted: RefCell<Vec<(CacheKey, u32)>>,
    /// The tokenizer's control tokens, found when first needed.
    controls: std::cell::OnceCell<crate::fence::Controls>,
}

/// Texts shorter than this are counted again rather than remembered
/// within an assembly (hashing them would cost about as much).
const REMEMBER_FROM: usize = 4096;

/// Most long texts an assembly remembers without the builder's cache.
const REMEMBER_AT_MOST: usize = 64;

impl<'a> Meter<'a> {
    pub(crate) fn new(
        counter: &'a dyn TokenCounter,
        tokenizer: &Tokenizer,
        cache: &'a mut CountCache,
    ) -> Self {
        Meter {
            counter,
            tokenizer: tokenizer_key(tokenizer),
            cache: RefCell::new(cache),
            counted: RefCell::new(Vec::new()),
            controls: std::cell::OnceCell::new(),
        }
    }

    /// The control tokens of the tokenizer it counts with (see
    /// [`TokenCounter::control_tokens`]), neutralised in every host text.
    pub(crate) fn controls(&self) -> &crate::fence::Controls {
        self.controls
            .get_or_init(|| crate::fence::Controls::of(&self.counter.control_tokens()))
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
            return match self.counter.counts_empty() {
                true => self.counter.count_up_to(text, u32::MAX),
                false => Count::Exact(0),
            };
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
                .saturating_sub(u64::from(
                    self.counter.count(crate::text::cut(text, ..first)),
                ))
                .saturating_sub(u64::from(
                    self.counter.count(crate::text::cut(text, last..)),
                )),
            None => u64::from(self.counter.count(crate::text::cut(text, first..last))),
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
                self.pending.push_str(crate::text::cut(text, ..s.first));
                self.flush();
                self.total += s.interior;
                self.pending.push_str(crate::text::cut(text, s.last..));
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
