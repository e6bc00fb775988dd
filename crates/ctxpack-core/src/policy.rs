//! Review: the policy sees only what the fill would take.
//!
//! The budget is filled as if every admitted candidate were allowed; the
//! candidates that fill would include — and those a section would hand to
//! the summariser — that are not reviewed yet go to `policy.review` in one
//! batch, in rank order, after each of the fill's phases ([`reviewed`]):
//! a denial or a redaction reruns the phase, for at most
//! [`REVIEW_ROUNDS`] rounds. Each
//! verdict is applied: allowed, redacted (text replaced, counted afresh) or
//! denied (`policy-denied`). Every round is recorded with the sources'
//! calls. If the review fails, or answers a different number of verdicts,
//! the assembly fails (with a failed snapshot): nothing unreviewed is ever
//! included.
//!
//! The batch lends the candidates to the host rather than copying them:
//! each item's id, text and provenance are moved out for the review and
//! back after it. The policy sees a text as the host gave it.

use crate::assembly::Channel;
use crate::budget::Filling;
use crate::capability::Capability;
use crate::error::{Error, HostError};
use crate::fence::Controls;
use crate::host::Verdict;
use crate::item::{Item, body};
use crate::snapshot::{Reason, SourceCall, SourceOutcome};

use crate::render::{At, Layers};
use crate::tokenizer::clamp_len;
use crate::types::{Candidate, Role, TrustTier};

/// The most review rounds an assembly asks for. Each round is a round
/// trip to the policy engine; a round after the first reviews only what
/// the denials and redactions of the one before made room for, so with
/// one denial in ten the fourth round reviews about one in a thousand of
/// what fills the budget. After the last round a candidate the fill would
/// take unreviewed is left out as `unreviewed`.
pub const REVIEW_ROUNDS: u32 = 4;

/// What a review round needs and what the rounds made.
pub(crate) struct Reviewer {
    husks: Husks,
    hosted_from: usize,
    rounds: u32,
    /// The policy's and the summariser's calls, in the order made.
    pub calls: Vec<SourceCall>,
    /// The request tokenizer's control tokens, neutralised in what the
    /// policy redacts a text to.
    controls: Controls,
}

impl Reviewer {
    /// A reviewer of the host candidates from pool index `hosted_from`
    /// on, with what their review needs besides.
    pub fn new(husks: Husks, hosted_from: usize, controls: Controls) -> Self {
        Reviewer {
            husks,
            hosted_from,
            rounds: 0,
            calls: Vec::new(),
            controls,
        }
    }

    /// Whether the rounds are spent: the fill may then take only what was
    /// reviewed.
    pub fn spent(&self) -> bool {
        self.rounds >= REVIEW_ROUNDS
    }

    /// Reviews the host texts of `layers` at `wanted`, left out by the
    /// fill before the policy saw them, in one round, and applies the
    /// verdicts: what the room freed after the fill would hold.
    pub async fn review_late(
        &mut self,
        layers: &mut Layers,
        channel: &Channel,
        wanted: &[At],
    ) -> Result<(), Error> {
        // Lent as a pool of their own, each with its husk.
        let mut pool: Vec<Item> = wanted
            .iter()
            .map(|&at| {
                std::mem::replace(
                    layers.at_mut(at),
                    Item::turn(0, Role::System, TrustTier::System),
                )
            })
            .collect();
        let ranks: Vec<usize> = pool.iter().map(|i| i.rank as usize).collect();
        let husks = ranks
            .iter()
            .map(|&r| std::mem::take(&mut self.husks[r]))
            .collect();
        let all = std::mem::replace(&mut self.husks, husks);
        let from = std::mem::replace(&mut self.hosted_from, 0);
        let indices: Vec<usize> = (0..pool.len()).collect();
        let verdicts = self.review(&mut pool, channel, &indices).await;
        let husks = std::mem::replace(&mut self.husks, all);
        self.hosted_from = from;
        for (&r, husk) in ranks.iter().zip(husks) {
            self.husks[r] = husk;
        }
        let verdicts = verdicts.map(|v| apply(&mut pool, &indices, v, &self.controls));
        for (&at, item) in wanted.iter().zip(pool) {
            *layers.at_mut(at) = item;
        }
        verdicts
    }

    /// Reviews `wanted` (pool indices, in rank order): one round.
    async fn review(
        &mut self,
        pool: &mut [Item],
        channel: &Channel,
        wanted: &[usize],
    ) -> Result<Vec<Verdict>, Error> {
        self.rounds += 1;
        let lent = lend(pool, &mut self.husks, self.hosted_from, wanted);
        let (lent, answer) = channel.review(lent).await;
        take_back(
            pool,
            &mut self.husks,
            self.hosted_from,
            wanted,
            lent,
            answer,
            &mut self.calls,
        )
    }
}

/// Runs `phase` on `state` (with `strict` once the review rounds are
/// spent) and reviews, in one round, what it took that is not reviewed
/// yet, with the candidates it names besides (what it would summarise).
/// All allowed, the phase stands; a denial or a redaction reruns it from
/// where it began, with the verdicts.
pub(crate) async fn reviewed<R>(
    state: &mut Filling,
    pool: &mut [Item],
    channel: &Channel,
    reviewer: &mut Reviewer,
    mut phase: impl FnMut(&mut Filling, &mut [Item], bool) -> (R, Vec<usize>),
) -> Result<R, Error> {
    loop {
        // A phase that cannot take anything unreviewed needs no copy to
        // rerun from.
        let before = state
            .may_review(pool, reviewer.spent())
            .then(|| state.clone());
        let (out, besides) = phase(state, pool, reviewer.spent());
        let Some(before) = before else {
            return Ok(out);
        };
        let mut wanted = state.unreviewed_since(&before, pool);
        wanted.extend(besides);
        wanted.sort_unstable();
        if wanted.is_empty() {
            return Ok(out);
        }
        let verdicts = reviewer.review(pool, channel, &wanted).await?;
        if verdicts.iter().all(|v| *v == Verdict::Allow) {
            apply(pool, &wanted, verdicts, &reviewer.controls);
            return Ok(out);
        }
        *state = before;
        state.restore(pool);
        apply(pool, &wanted, verdicts, &reviewer.controls);
        state.drop_decided(pool);
    }
}

/// What a review needs of each host candidate besides what its item
/// holds: its own score and, when it has any of them, the rest (kept
/// apart: most candidates have none, and ten thousand candidates kept
/// whole through the budgeting left their memory unused and the
/// budgeting's own allocations in fresh pages).
#[derive(Default)]
pub(crate) struct Husk {
    pub score: Option<f64>,
    pub extra: Option<Box<Extra>>,
}

/// The rarer fields of a candidate, for its review.
#[derive(Default)]
pub(crate) struct Extra {
    pub sequence: Option<u64>,
    pub scope: Option<String>,
    pub token_count: Option<u32>,
    /// The text as given, where the item's body differs from it (a text
    /// with a marker spelling defused, see [`crate::fence`]); else empty.
    pub text: String,
}

impl Husk {
    /// What is left of `c` once its id, text and provenance were moved
    /// into its item; `given` is its text as given if the body differs.
    pub(crate) fn of(c: &mut Candidate, given: Option<String>) -> Husk {
        let extra = (c.sequence.is_some()
            || c.scope.is_some()
            || c.token_count.is_some()
            || given.is_some())
        .then(|| {
            Box::new(Extra {
                sequence: c.sequence,
                scope: c.scope.take(),
                token_count: c.token_count,
                text: given.unwrap_or_default(),
            })
        });
        Husk {
            score: c.score,
            extra,
        }
    }
}

/// The husk of each hosted item, in rank order.
pub(crate) type Husks = Vec<Husk>;

/// The candidates `wanted` (indices into `pool`, whose hosted items start
/// at `hosted_from`), lent for review.
pub(crate) fn lend(
    pool: &mut [Item],
    husks: &mut Husks,
    hosted_from: usize,
    wanted: &[usize],
) -> Vec<Candidate> {
    wanted
        .iter()
        .map(|&p| {
            let item = &mut pool[p];
            let husk = &mut husks[p - hosted_from];
            let mut c = Candidate {
                id: std::mem::take(&mut item.id),
                section: item.section,
                text: String::new(),
                provenance: item.provenance.take(),
                trust: item.trust,
                score: husk.score,
                sequence: None,
                scope: None,
                token_count: None,
            };
            match husk.extra.as_deref_mut() {
                Some(e) => {
                    c.sequence = e.sequence;
                    c.scope = e.scope.take();
                    c.token_count = e.token_count;
                    c.text = if e.text.is_empty() {
                        std::mem::take(&mut item.text)
                    } else {
                        e.text.clone()
                    };
                }
                None => c.text = std::mem::take(&mut item.text),
            }
            c
        })
        .collect()
}

/// Takes back the candidates lent for `wanted` with the policy's `answer`,
/// recording the call in `calls`: the verdicts, one per item, to be
/// applied with [`apply`]. The items are whole again either way; on a
/// failure the error says why, and the assembly must fail.
pub(crate) fn take_back(
    pool: &mut [Item],
    husks: &mut Husks,
    hosted_from: usize,
    wanted: &[usize],
    lent: Vec<Candidate>,
    answer: Result<Vec<Verdict>, HostError>,
    calls: &mut Vec<SourceCall>,
) -> Result<Vec<Verdict>, Error> {
    for (&p, c) in wanted.iter().zip(lent) {
        let item = &mut pool[p];
        item.id = c.id;
        item.provenance = c.provenance;
        // Where the item's body differs from the text as given, the body
        // stayed in the item and the review saw a copy of the text.
        match husks[p - hosted_from].extra.as_deref_mut() {
            Some(e) => {
                e.scope = c.scope;
                if e.text.is_empty() {
                    item.text = c.text;
                }
            }
            None => item.text = c.text,
        }
    }
    let verdicts = match answer {
        Ok(v) if v.len() == wanted.len() => Ok(v),
        Ok(v) => Err(format!(
            "answered {} verdicts for {} items",
            v.len(),
            wanted.len()
        )),
        Err(e) => Err(e.message),
    };
    calls.push(SourceCall {
        capability: Capability::Review.name().to_owned(),
        outcome: match &verdicts {
            Ok(v) => SourceOutcome::Answered(clamp_len(v.len())),
            Err(message) => SourceOutcome::Failed(message.clone()),
        },
    });
    verdicts.map_err(|message| Error::HostFailed {
        capability: Capability::Review.name().into(),
        message,
    })
}

/// Applies each verdict to its item of `wanted`: it is reviewed now;
/// redacted, its text is replaced (and counted afresh); denied, it is
/// `policy-denied`.
pub(crate) fn apply(
    pool: &mut [Item],
    wanted: &[usize],
    verdicts: Vec<Verdict>,
    controls: &Controls,
) {
    for (&p, verdict) in wanted.iter().zip(verdicts) {
        let item = &mut pool[p];
        item.unreviewed = false;
        match verdict {
            Verdict::Allow => {}
            Verdict::Redact(text) => {
                (item.text, item.altered) = body(text, item.trust, controls);
                item.redacted = true;
                item.hint = None;
                item.count = None;
            }
            Verdict::Deny(why) => item.decide(Reason::PolicyDenied(why)),
        }
    }
}
