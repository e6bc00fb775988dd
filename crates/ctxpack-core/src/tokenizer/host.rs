//! Counting by the host: a [`TokenCounter`] that answers from the counts
//! the host gave and writes down every text it could not answer, so the
//! assembly can ask the host for all of them in one round and run again
//! (see `Builder::counted_by_host`).
//!
//! A text it has no count for gets a stand-in — a quarter of its
//! characters, at least one token — that only steers the rest of the pass
//! to the texts it will need next; a pass that used one is never given
//! out. The next pass, with those texts counted, goes the same way up to
//! where the last one stopped, and further.

use super::TokenCounter;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// The most prefixes of one text a cut asks for in a round: each round
/// narrows where the cut falls sixteenfold, so a text of `n` bytes is cut
/// in at most ⌈log₁₆ n⌉ + 1 rounds.
pub(crate) const PROBES: usize = 15;

/// The host's counts for one assembly, and the texts it still needs.
#[derive(Default)]
pub(crate) struct HostCounts {
    known: RefCell<HashMap<String, u32>>,
    /// Texts asked for and not known, in the order first asked.
    missing: RefCell<(Vec<String>, HashSet<String>)>,
}

impl HostCounts {
    /// The count of `text`, or `None` (and `text` written down as needed).
    fn lookup(&self, text: &str) -> Option<u32> {
        if let Some(&n) = self.known.borrow().get(text) {
            return Some(n);
        }
        let mut missing = self.missing.borrow_mut();
        if !missing.1.contains(text) {
            missing.1.insert(text.to_owned());
            missing.0.push(text.to_owned());
        }
        None
    }

    /// Whether a text was asked for that the host has not counted.
    pub(crate) fn wants(&self) -> bool {
        !self.missing.borrow().0.is_empty()
    }

    /// The texts needed, in the order first asked; none are needed after.
    pub(crate) fn take_missing(&self) -> Vec<String> {
        let mut missing = self.missing.borrow_mut();
        missing.1.clear();
        std::mem::take(&mut missing.0)
    }

    /// Takes the host's counts of `texts`, as they are: a host may count
    /// a text as nothing (a join it does not send). Where the room is 0,
    /// the budget takes a non-empty text not to fit without asking.
    pub(crate) fn learn(&self, texts: Vec<String>, counts: &[u32]) {
        let mut known = self.known.borrow_mut();
        known.extend(texts.into_iter().zip(counts.iter().copied()));
    }

    /// The stand-in for a text not counted yet.
    fn stand_in(text: &str) -> u32 {
        super::clamp_len(text.chars().count().div_ceil(4)).max(1)
    }
}

impl TokenCounter for HostCounts {
    /// The host says what an empty text costs: a counter of messages
    /// charges an empty message.
    fn counts_empty(&self) -> bool {
        true
    }

    fn count(&self, text: &str) -> u32 {
        self.lookup(text).unwrap_or_else(|| Self::stand_in(text))
    }

    /// The longest prefix of `text` the host counts at most `max`, found
    /// by asking for up to [`PROBES`] prefixes at once, evenly spaced
    /// between the longest known to fit and the shortest known not to:
    /// each round narrows that gap sixteenfold. While some are not
    /// counted, the longest prefix known to fit stands in.
    fn truncate(&self, text: &str, max: u32) -> String {
        match self.lookup(text) {
            Some(n) if n <= max => return text.to_owned(),
            Some(_) => {}
            None => return String::new(),
        }
        // The prefix ending at `fits` is known to count at most `max`;
        // the one ending at `over` more.
        let (mut fits, mut over) = (0, text.len());
        loop {
            let probes = boundaries(text, fits, over);
            if probes.is_empty() {
                return crate::text::cut(text, ..fits).to_owned();
            }
            let mut unknown = false;
            let mut narrowed = (fits, over);
            for &at in &probes {
                match self.lookup(crate::text::cut(text, ..at)) {
                    None => unknown = true,
                    // A host whose counts do not grow with the text still
                    // gets a prefix it counted within `max`: the first
                    // prefix over it ends the search.
                    Some(n) if n > max => {
                        narrowed.1 = narrowed.1.min(at);
                    }
                    Some(_) if at < narrowed.1 => narrowed.0 = at,
                    Some(_) => {}
                }
            }
            if unknown {
                return crate::text::cut(text, ..narrowed.0).to_owned();
            }
            (fits, over) = narrowed;
        }
    }
}

/// Up to [`PROBES`] character boundaries strictly between `from` and
/// `to`, evenly spaced, ascending.
fn boundaries(text: &str, from: usize, to: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::with_capacity(PROBES);
    let span = to - from;
    for k in 1..=PROBES {
        let mut at = from + span * k / (PROBES + 1);
        while at > from && !text.is_char_boundary(at) {
            at -= 1;
        }
        if at > from && at < to && out.last() != Some(&at) {
            out.push(at);
        }
    }
    out
}
