//! Admission: which of the host's candidates may compete for the budget at
//! all. Candidates are visited in fused-rank order, and each that cannot
//! be included whatever the budget is decided here, first reason first:
//!
//! 1. its source answered more than it was asked for and it ranked beyond
//!    that (`beyond-limit`);
//! 2. its id is taken already, by the request's own candidates or a
//!    higher-ranked host candidate (`duplicate-of` that id);
//! 3. it claims a section hosts may not fill — an L0 section, the
//!    conversation or the stage summaries (`section-not-allowed`): host
//!    text never lands in L0, and the conversation and the workflow's
//!    stage summaries are the request's own;
//! 4. it has no provenance (`no-provenance`): no citation, no inclusion;
//! 5. it is scoped outside the attempt's scopes (`out-of-scope`);
//! 6. it is an exact or near copy of a higher-ranked candidate
//!    (`duplicate-of` it; see [`crate::dedup`]) — before review, so
//!    duplicates cost no policy work.
//!
//! What passes stays pending and unreviewed: it competes for the budget,
//! and what the fill would take is reviewed ([`crate::policy`]).

use crate::dedup::Deduper;
use crate::fence::{self, Controls, Nonce};
use crate::gather::never;
use crate::item::{Decision, Item};
use crate::snapshot::Reason;

use crate::policy::{Husk, Husks};
use crate::prefetch;
use crate::rank::Ranked;
use crate::tokenizer::clamp_len;
use crate::types::{AgentContext, Candidate, Role, TrustTier};
use rustc_hash::FxHashSet;
use std::borrow::Cow;

/// How many candidates ahead of the one in hand their memory is asked for
/// (see [`crate::prefetch`]).
const AHEAD: usize = 8;

/// The host's candidates after admission, in fused-rank order: an item
/// for each (its id, text and provenance still in its candidate in
/// `pool`), and which are still pending.
pub(crate) struct Admitted {
    pub pool: Vec<Candidate>,
    /// Each item with the index of its candidate in `pool`.
    pub items: Vec<(Item, usize)>,
}

/// Admits the ranked candidates; `taken` gives the ids of the request's
/// own candidates (made only if a host answered anything: a request of
/// ten thousand turns has as many).
pub(crate) fn admit<'r>(
    ranked: Ranked,
    ctx: &AgentContext,
    taken: impl FnOnce() -> FxHashSet<&'r str>,
    near_duplicate_threshold: f64,
) -> Admitted {
    let Ranked { pool, order } = ranked;
    let taken = if order.is_empty() {
        FxHashSet::default()
    } else {
        taken()
    };
    let mut seen: FxHashSet<&str> =
        FxHashSet::with_capacity_and_hasher(order.len(), Default::default());
    let mut deduper = Deduper::new(near_duplicate_threshold, order.len());
    let mut items: Vec<(Item, usize)> = Vec::with_capacity(order.len());
    for (n, f) in order.iter().enumerate() {
        // Candidates are visited in rank order, scattered over `pool`: ask
        // for each one's record well ahead, and for its id, text and
        // reference once the record is likely in.
        prefetch::ahead(&order, n, 2 * AHEAD, |far| {
            prefetch::value(&pool[far.index])
        });
        prefetch::ahead(&order, n, AHEAD, |near| {
            let c = &pool[near.index];
            prefetch::line(c.id.as_ptr());
            prefetch::line(c.text.as_ptr());
            if let Some(p) = &c.provenance {
                prefetch::line(p.reference.as_ptr());
            }
        });
        let i = f.index;
        let c = &pool[i];
        let reason = if let Some(limit) = f.beyond {
            Some(Reason::BeyondLimit(limit))
        } else if taken.contains(c.id.as_str()) || seen.contains(c.id.as_str()) {
            Some(Reason::DuplicateOf(c.id.clone()))
        } else if let Some(why) = never(c, ctx) {
            Some(why)
        } else {
            // (`i` fits: 2^32 candidates do not fit in memory first.)
            deduper
                .offer(i as u32, &c.text)
                .map(|of| Reason::DuplicateOf(pool[of as usize].id.clone()))
        };
        seen.insert(c.id.as_str());
        let pending = reason.is_none();
        items.push((
            Item {
                // Id, text and provenance are moved from the candidate
                // once it is reviewed (see [`Admitted::into_items`]).
                id: String::new(),
                section: c.section,
                role: Role::System,
                count: None,
                framed: None,
                hint: None,
                text: String::new(),
                origin: f.origin,
                provenance: None,
                trust: c.trust,
                score: Some(f.score),
                decision: reason.map_or(Decision::Pending, Decision::Made),
                redacted: false,
                compressed: false,
                uncut: None,
                unreviewed: pending,
                turn: None,
                altered: crate::fence::Altered::default(),
                attached: 0,
                rank: clamp_len(items.len()),
            },
            i,
        ));
    }
    drop(seen);
    Admitted { pool, items }
}

impl Admitted {
    /// The items, each with its candidate's id, provenance and text moved
    /// in: a host text keeps its body (see [`crate::item::body`]: written
    /// with the tokenizer's `controls` neutralised, quoted if untrusted), framed
    /// with the pack's `nonce`; its frame is counted with it and put around
    /// it only if it is included. What is left of the candidates is kept
    /// for the review (see [`crate::policy`]).
    pub(crate) fn into_items(self, nonce: Nonce, controls: &Controls) -> (Vec<Item>, Husks) {
        let Admitted { mut pool, items } = self;
        let order: Vec<usize> = items.iter().map(|&(_, i)| i).collect();
        let mut husks = Husks::with_capacity(items.len());
        let items = items
            .into_iter()
            .enumerate()
            .map(|(k, (mut item, i))| {
                // Rank order again, scattered over `pool`: ask ahead.
                prefetch::ahead(&order, k, AHEAD, |&ahead| prefetch::value(&pool[ahead]));
                let c = &mut pool[i];
                item.id = std::mem::take(&mut c.id);
                item.provenance = c.provenance.take();
                let text = std::mem::take(&mut c.text);
                let mut given = None;
                match &item.provenance {
                    Some(_) => {
                        let (written, altered) = fence::write(&text, controls);
                        // Untrusted, every line of it is quoted.
                        let written = match (c.trust, written) {
                            (TrustTier::Untrusted, w) => {
                                Cow::Owned(fence::quote(&w, true).into_owned())
                            }
                            (_, w) => w,
                        };
                        item.altered = altered;
                        let defused = match written {
                            Cow::Owned(d) => Some(d),
                            Cow::Borrowed(_) => None,
                        };
                        // A host count holds only for its text as given.
                        item.hint = c.token_count.filter(|_| defused.is_none());
                        match defused {
                            Some(d) => {
                                // The policy reviews the text as given.
                                item.text = d;
                                given = Some(text);
                            }
                            None => item.text = text,
                        }
                        item.framed = Some(nonce);
                    }
                    None => item.text = text,
                }
                husks.push(Husk::of(c, given));
                item
            })
            .collect();
        // What is left of the candidates goes now, before the budgeting
        // allocates.
        drop(pool);
        (items, husks)
    }
}
