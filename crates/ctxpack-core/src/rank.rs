//! Ranking: one order over every source's candidates.
//!
//! Sources are fused by reciprocal rank: a candidate scores `1 / (60 +
//! rank)` for its rank within its own source (by the source's score,
//! highest first, ties by id; a missing or NaN score ranks last), plus the
//! configured trust term of its tier and recency term (1 for the newest
//! `sequence` among all candidates, 0 for the oldest). The fused order
//! breaks ties by id, so it is total and does not depend on the order a
//! host returns items in.
//!
//! A source that answers more than it was asked for keeps its best
//! `limit`; the rest are marked as beyond the limit.

use crate::config::Ranking;
use crate::gather::{Source, by_source_score};
use crate::snapshot::Origin;

use crate::types::Candidate;

/// Reciprocal-rank-fusion constant (the usual 60).
const RRF_K: f64 = 60.0;

/// A candidate's place in the fused order.
pub(crate) struct Fused {
    /// Where the candidate is in [`Ranked::pool`].
    pub index: usize,
    pub origin: Origin,
    pub score: f64,
    /// The limit its source was asked for, if it ranked beyond it.
    pub beyond: Option<u32>,
}

/// Every source's candidates and their fused order. Candidates stay where
/// they are, in `pool`, and are ordered by index: they are a few hundred
/// bytes each, and moving them about cost more than reading their texts.
pub(crate) struct Ranked {
    pub pool: Vec<Candidate>,
    pub order: Vec<Fused>,
}

/// Fuses the sources' answers into one order.
pub(crate) fn rank(sources: Vec<Source>, ranking: &Ranking) -> Ranked {
    let sequences: Vec<u64> = {
        let mut all: Vec<u64> = sources
            .iter()
            .flat_map(|s| s.candidates.iter().filter_map(|c| c.sequence))
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    };
    let recency = |seq: Option<u64>| -> f64 {
        match (seq, sequences.len()) {
            (None, _) | (_, 0) => 0.0,
            (Some(_), 1) => 1.0,
            (Some(s), n) => {
                let rank = sequences.partition_point(|&x| x < s);
                rank as f64 / (n - 1) as f64
            }
        }
    };
    let mut pool: Vec<Candidate> =
        Vec::with_capacity(sources.iter().map(|s| s.candidates.len()).sum());
    let mut order: Vec<Fused> = Vec::with_capacity(pool.capacity());
    for source in sources {
        let from = pool.len();
        pool.extend(source.candidates);
        let mut within: Vec<usize> = (from..pool.len()).collect();
        within.sort_by(|&a, &b| by_source_score(&pool[a], &pool[b]));
        for (rank, index) in within.into_iter().enumerate() {
            let c = &pool[index];
            let score = 1.0 / (RRF_K + rank as f64 + 1.0)
                + ranking.trust(c.trust)
                + ranking.recency * recency(c.sequence);
            order.push(Fused {
                index,
                origin: source.origin,
                score,
                beyond: source.limit.filter(|&l| rank >= l as usize),
            });
        }
    }
    order.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| pool[a.index].id.cmp(&pool[b.index].id))
    });
    Ranked { pool, order }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Provenance, Section, TrustTier};

    fn cand(id: &str, score: Option<f64>, trust: TrustTier, seq: Option<u64>) -> Candidate {
        Candidate {
            id: id.into(),
            section: Section::RelevantKnowledge,
            text: format!("text of {id}"),
            provenance: Some(Provenance {
                source_kind: "chunk".into(),
                reference: format!("ref/{id}"),
                source_version: None,
                index_revision: None,
            }),
            trust,
            score,
            sequence: seq,
            scope: None,
            token_count: None,
        }
    }

    fn order(candidates: Vec<Candidate>, ranking: Ranking) -> Vec<String> {
        let source = Source {
            origin: Origin::Retrieval,
            candidates,
            limit: Some(10),
        };
        let ranked = rank(vec![source], &ranking);
        ranked
            .order
            .iter()
            .map(|f| ranked.pool[f.index].id.clone())
            .collect()
    }

    #[test]
    fn rank_is_by_score_then_id_and_ignores_host_order() {
        let items = vec![
            cand("b", Some(0.5), TrustTier::Trusted, None),
            cand("nan", Some(f64::NAN), TrustTier::Trusted, None),
            cand("a", Some(0.5), TrustTier::Trusted, None),
            cand("top", Some(0.9), TrustTier::Trusted, None),
            cand("none", None, TrustTier::Trusted, None),
        ];
        let expected = ["top", "a", "b", "nan", "none"];
        assert_eq!(order(items.clone(), Ranking::default()), expected);
        let mut reversed = items;
        reversed.reverse();
        assert_eq!(order(reversed, Ranking::default()), expected);
    }

    #[test]
    fn trust_and_recency_terms_reorder() {
        let items = vec![
            cand("web", Some(0.9), TrustTier::Untrusted, Some(1)),
            cand("kb", Some(0.8), TrustTier::Trusted, Some(5)),
            cand("old", Some(0.7), TrustTier::Trusted, Some(0)),
        ];
        assert_eq!(
            order(items.clone(), Ranking::default()),
            ["web", "kb", "old"]
        );
        let trust = Ranking {
            trust_trusted: 0.01,
            ..Ranking::default()
        };
        assert_eq!(order(items.clone(), trust), ["kb", "old", "web"]);
        let recency = Ranking {
            recency: 0.01,
            ..Ranking::default()
        };
        assert_eq!(order(items, recency), ["kb", "web", "old"]);
    }

    #[test]
    fn a_source_keeps_its_best_limit() {
        let source = Source {
            origin: Origin::Memory,
            candidates: vec![
                cand("low", Some(0.1), TrustTier::Trusted, None),
                cand("high", Some(0.9), TrustTier::Trusted, None),
            ],
            limit: Some(1),
        };
        let ranked = rank(vec![source], &Ranking::default());
        let beyond: Vec<(&str, Option<u32>)> = ranked
            .order
            .iter()
            .map(|f| (ranked.pool[f.index].id.as_str(), f.beyond))
            .collect();
        assert_eq!(beyond, [("high", None), ("low", Some(1))]);
    }
}
