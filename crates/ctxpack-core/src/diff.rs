//! Snapshot diff: why did the context — and so the answer — change?
//!
//! Given the snapshots of two assemblies (two turns, two attempts, two
//! configurations), it lists every candidate whose fate changed: what
//! entered the pack, what left it, what moved relative to the rest, what
//! changed tokens, and for dropped candidates a changed reason — each with
//! its reason before and after. Candidates are matched by origin and id
//! (the n-th candidate of a repeated id with the n-th). "Moved" is minimal:
//! the included candidates kept in both, outside a longest run that kept
//! its relative order.

use crate::snapshot::{Origin, Reason};
use crate::snapshot::{Snapshot, SnapshotStatus};
use crate::types::Section;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What happened to one candidate between two snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// Included after, not before (dropped or absent).
    Entered,
    /// Included before, not after (dropped or absent).
    Left,
    /// Included in both; its place relative to the others changed.
    Moved,
    /// Included in both; its token count changed.
    Retokened,
    /// Dropped in both, for a different reason.
    ReasonChanged,
    /// A new candidate, dropped.
    AppearedDropped,
    /// A candidate that was dropped before and is no longer offered.
    VanishedDropped,
}

/// A candidate's state in one snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct EntryState {
    /// Section.
    pub section: Section,
    /// Whether it was included.
    pub included: bool,
    /// Why.
    pub reason: Reason,
    /// Its tokens.
    pub tokens: u32,
    /// Its place among the included entries, from 0.
    pub position: Option<u32>,
}

/// One changed candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Change {
    /// Candidate id.
    pub id: String,
    /// What produced it.
    pub origin: Origin,
    /// What happened.
    pub kind: ChangeKind,
    /// Before, if it was a candidate then.
    pub before: Option<EntryState>,
    /// After, if it is a candidate now.
    pub after: Option<EntryState>,
}

/// The difference between two snapshots.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SnapshotDiff {
    /// The earlier snapshot's id.
    pub before_id: String,
    /// The later snapshot's id.
    pub after_id: String,
    /// Status before.
    pub status_before: Vec<SnapshotStatus>,
    /// Status after.
    pub status_after: Vec<SnapshotStatus>,
    /// Tokens used before.
    pub tokens_before: u32,
    /// Tokens used after.
    pub tokens_after: u32,
    /// Changed candidates: the later snapshot's order, then those only in
    /// the earlier one, in its order.
    pub changes: Vec<Change>,
    /// Candidates whose state did not change.
    pub unchanged: u32,
}

type Key = (Origin, String, usize);

fn keyed(snapshot: &Snapshot) -> Vec<(Key, EntryState)> {
    let mut seen: HashMap<(Origin, String), usize> = HashMap::new();
    let mut position = 0u32;
    let mut keyed = Vec::with_capacity(snapshot.entries.len());
    for e in &snapshot.entries {
        let state = EntryState {
            section: e.section,
            included: e.included,
            reason: e.reason.clone(),
            tokens: e.tokens,
            position: e.included.then(|| {
                position += 1;
                position - 1
            }),
        };
        // A run stands for each of its members.
        for id in e.ids() {
            let n = seen.entry((e.origin, id.clone())).or_default();
            keyed.push(((e.origin, id, *n), state.clone()));
            *n += 1;
        }
    }
    keyed
}

/// Indices (into `seq`) of a longest strictly increasing subsequence.
fn longest_increasing(seq: &[u32]) -> Vec<usize> {
    let mut tails: Vec<usize> = Vec::new();
    let mut prev: Vec<Option<usize>> = vec![None; seq.len()];
    for (i, &v) in seq.iter().enumerate() {
        let at = tails.partition_point(|&t| seq[t] < v);
        prev[i] = at.checked_sub(1).map(|p| tails[p]);
        if at == tails.len() {
            tails.push(i);
        } else {
            tails[at] = i;
        }
    }
    let mut out = Vec::with_capacity(tails.len());
    let mut cur = tails.last().copied();
    while let Some(i) = cur {
        out.push(i);
        cur = prev[i];
    }
    out.reverse();
    out
}

/// What changed from `before` to `after`, and why.
pub fn diff(before: &Snapshot, after: &Snapshot) -> SnapshotDiff {
    let old = keyed(before);
    let new = keyed(after);
    let old_by_key: HashMap<&Key, &EntryState> = old.iter().map(|(k, s)| (k, s)).collect();
    let new_keys: HashMap<&Key, ()> = new.iter().map(|(k, _)| (k, ())).collect();

    // Included in both: in the later order, their earlier positions; those
    // off a longest increasing run are the ones that moved.
    let kept: Vec<(&Key, u32)> = new
        .iter()
        .filter(|(_, s)| s.included)
        .filter_map(|(k, _)| Some((k, old_by_key.get(k)?.position?)))
        .collect();
    let run = longest_increasing(&kept.iter().map(|(_, p)| *p).collect::<Vec<_>>());
    let mut moved: HashMap<&Key, bool> = kept.iter().map(|(k, _)| (*k, true)).collect();
    for i in run {
        moved.insert(kept[i].0, false);
    }

    let mut changes = Vec::new();
    let mut unchanged = 0u32;
    for (key, now) in &new {
        let then = old_by_key.get(key).copied();
        let kind = match then {
            None if now.included => Some(ChangeKind::Entered),
            None => Some(ChangeKind::AppearedDropped),
            Some(t) if now.included && !t.included => Some(ChangeKind::Entered),
            Some(t) if !now.included && t.included => Some(ChangeKind::Left),
            Some(_) if now.included && moved.get(key).copied().unwrap_or(false) => {
                Some(ChangeKind::Moved)
            }
            Some(t) if now.included && t.tokens != now.tokens => Some(ChangeKind::Retokened),
            Some(t) if !now.included && t.reason != now.reason => Some(ChangeKind::ReasonChanged),
            Some(_) => None,
        };
        match kind {
            Some(kind) => changes.push(Change {
                id: key.1.clone(),
                origin: key.0,
                kind,
                before: then.cloned(),
                after: Some(now.clone()),
            }),
            None => unchanged += 1,
        }
    }
    for (key, then) in &old {
        if !new_keys.contains_key(key) {
            changes.push(Change {
                id: key.1.clone(),
                origin: key.0,
                kind: if then.included {
                    ChangeKind::Left
                } else {
                    ChangeKind::VanishedDropped
                },
                before: Some(then.clone()),
                after: None,
            });
        }
    }
    SnapshotDiff {
        before_id: before.id.clone(),
        after_id: after.id.clone(),
        status_before: before.status.clone(),
        status_after: after.status.clone(),
        tokens_before: before.tokens_used,
        tokens_after: after.tokens_used,
        changes,
        unchanged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Profile;
    use crate::snapshot::Shortfall;

    use crate::snapshot::SnapshotEntry;
    use crate::types::{Layer, Tokenizer, TrustTier};

    fn entry(id: &str, included: bool, tokens: u32, reason: Reason) -> SnapshotEntry {
        SnapshotEntry {
            id: id.into(),
            layer: Layer::L2,
            section: Section::RelevantKnowledge,
            origin: Origin::Retrieval,
            provenance: None,
            trust: TrustTier::Trusted,
            score: None,
            tokens,
            counted: crate::snapshot::Counted::Exact,
            included,
            reason,
            compressed: false,
            redacted: false,
            run: None,
        }
    }

    fn snap(id: &str, entries: Vec<SnapshotEntry>) -> Snapshot {
        Snapshot {
            id: id.into(),
            tenant_id: None,
            project_id: None,
            run_id: None,
            attempt_id: None,
            scopes: vec![],
            tokenizer: Tokenizer::O200kBase,
            model: None,
            token_budget: 100,
            tokens_used: entries
                .iter()
                .filter(|e| e.included)
                .map(|e| e.tokens)
                .sum(),
            text_tokens: 0,
            message_tokens: 0,
            stable_prefix_tokens: 0,
            cache_prefixes: Vec::new(),
            content_hash: String::new(),
            index_revisions: vec![],
            memory_items: vec![],
            status: vec![SnapshotStatus::Complete],
            failure: None,
            profile: Profile::Passthrough,
            plan: crate::config::Plan::default(),
            source_calls: vec![],
            compressions: vec![],
            fence: Default::default(),
            chat: None,
            entries,
        }
    }

    const IN: Reason = Reason::WithinBudget;

    fn over() -> Reason {
        Reason::OverBudget(Shortfall {
            needed: 9,
            remaining: 1,
        })
    }

    #[test]
    fn entered_left_moved_retokened_and_reasons() {
        let before = snap(
            "b",
            vec![
                entry("a", true, 5, IN),
                entry("b", true, 5, IN),
                entry("c", true, 5, IN),
                entry("d", true, 5, IN),
                entry("e", false, 9, over()),
                entry("gone", true, 3, IN),
                entry("old-drop", false, 1, Reason::OutOfScope),
            ],
        );
        let after = snap(
            "a",
            vec![
                entry("a", true, 5, IN),
                entry("c", true, 5, IN),
                entry("d", true, 7, IN),
                entry("b", true, 5, IN),
                entry("e", true, 9, IN),
                entry("new", false, 4, Reason::DuplicateOf("a".into())),
            ],
        );
        let d = diff(&before, &after);
        let kinds: Vec<(&str, ChangeKind)> =
            d.changes.iter().map(|c| (c.id.as_str(), c.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                ("d", ChangeKind::Retokened),
                ("b", ChangeKind::Moved),
                ("e", ChangeKind::Entered),
                ("new", ChangeKind::AppearedDropped),
                ("gone", ChangeKind::Left),
                ("old-drop", ChangeKind::VanishedDropped),
            ]
        );
        assert_eq!(d.unchanged, 2, "a and c");
        let e = &d.changes[2];
        assert_eq!(e.before.as_ref().unwrap().reason, over());
        assert_eq!(e.after.as_ref().unwrap().reason, IN);
        assert_eq!((d.tokens_before, d.tokens_after), (23, 31));
    }

    #[test]
    fn a_snapshot_does_not_differ_from_itself() {
        let s = snap(
            "x",
            vec![entry("a", true, 5, IN), entry("b", false, 9, over())],
        );
        let d = diff(&s, &s);
        assert!(d.changes.is_empty());
        assert_eq!(d.unchanged, 2);
    }

    #[test]
    fn one_insertion_moves_nothing() {
        let before = snap("b", vec![entry("a", true, 1, IN), entry("b", true, 1, IN)]);
        let after = snap(
            "a",
            vec![
                entry("new", true, 1, IN),
                entry("a", true, 1, IN),
                entry("b", true, 1, IN),
            ],
        );
        let d = diff(&before, &after);
        assert_eq!(d.changes.len(), 1);
        assert_eq!(d.changes[0].kind, ChangeKind::Entered);
    }

    #[test]
    fn longest_increasing_is_minimal() {
        assert_eq!(longest_increasing(&[0, 2, 3, 1]), vec![0, 1, 2]);
        assert_eq!(longest_increasing(&[]), Vec::<usize>::new());
        assert_eq!(longest_increasing(&[3, 2, 1]).len(), 1);
    }
}
