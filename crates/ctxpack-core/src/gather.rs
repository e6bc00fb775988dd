//! Gathering the host's candidates for a profile: one batched call per
//! source, filtering, one policy review, and rank fusion.
//!
//! - `passthrough` calls nothing; `rag` calls `sources.retrieve`;
//!   `rag-memory` also calls `sources.recall-memory` when the request has a
//!   user id, and records the skip when it has none; `full` (seed 004) also
//!   expands the graph from the admissible retrieved items (`depth` hops,
//!   once; what it returns again — a cycle — is a duplicate of what is
//!   already there) and asks for the repository state.
//! - A failing source degrades the assembly (recorded, status Degraded).
//! - Filters, in order: an id already taken is a `duplicate-of` it; a host
//!   candidate may not claim an L0 section, the conversation or the stage
//!   summaries (`section-not-allowed`): host text never lands in L0, and the
//!   conversation and the workflow's stage summaries are the request's own;
//!   no provenance,
//!   no inclusion (`no-provenance`); a candidate scoped outside the
//!   attempt's scopes is `out-of-scope`.
//! - What passed is deduplicated in fused-rank order (see [`crate::dedup`]):
//!   an exact or near copy of a higher-ranked candidate is `duplicate-of` it,
//!   before review, so duplicates cost no policy work.
//! - Everything that passed goes to `policy.review` in one batch: allowed,
//!   redacted (text replaced, tokens recounted) or denied (`policy-denied`).
//!   The call is recorded with the sources'. If the review fails, or
//!   answers a different number of verdicts, the assembly fails (with a
//!   failed snapshot): nothing unreviewed is ever returned.
//! - Ranking fuses the sources by reciprocal rank (`1 / (60 + rank)`, rank
//!   by the source's own score, highest first, ties by id), plus the
//!   configured trust term of the candidate's tier and recency term (1 for
//!   the newest `sequence`, 0 for the oldest); the fused order breaks ties by
//!   id, so it is total and does not depend on the order a host returns
//!   items in.
//! - Host text is rendered with its citation: untrusted text fenced
//!   (`<untrusted source="…">…</untrusted>`), the rest headed
//!   `[source: …]`; tokens are counted on the rendered text.

use crate::dedup::Deduper;
use crate::error::{Error, HostError};
use crate::host::{Host, Verdict};
use crate::layered::Item;
use crate::prefetch;
use crate::types::{
    AssembleRequest, Candidate, Layer, Origin, Profile, Ranking, Reason, Role, Section, SourceCall,
    SourceOutcome, TrustTier,
};
use rustc_hash::FxHashSet;

/// Reciprocal-rank-fusion constant (the usual 60).
const RRF_K: f64 = 60.0;

/// The host's candidates, filtered, reviewed and in fused-rank order.
/// Items still eligible carry `Reason::WithinBudget`; the rest carry the
/// reason they were dropped.
#[derive(Default)]
pub(crate) struct Gathered {
    pub items: Vec<Item>,
    pub calls: Vec<SourceCall>,
    pub degraded: bool,
    /// Why the assembly cannot go on (the policy failed); the items it
    /// left undecided carry `Reason::AssemblyFailed`.
    pub failure: Option<Error>,
}

fn record(
    calls: &mut Vec<SourceCall>,
    capability: &str,
    answer: Result<Vec<Candidate>, HostError>,
) -> Vec<Candidate> {
    let (outcome, items) = match answer {
        Ok(items) => (
            SourceOutcome::Answered(u32::try_from(items.len()).unwrap_or(u32::MAX)),
            items,
        ),
        Err(e) => (SourceOutcome::Failed(e.message), Vec::new()),
    };
    calls.push(SourceCall {
        capability: capability.to_owned(),
        outcome,
    });
    items
}

/// What the builder's configuration says about gathering.
pub(crate) struct Settings {
    pub profile: Profile,
    pub near_duplicate_threshold: f64,
    pub ranking: Ranking,
}

/// A source's own score for ranking within it: a missing or NaN score
/// ranks below every number.
fn source_score(c: &Candidate) -> f64 {
    match c.score {
        Some(s) if !s.is_nan() => s,
        _ => f64::NEG_INFINITY,
    }
}

/// The head and tail a host text is rendered between: for untrusted text
/// a fence, so a model can tell it from instructions; otherwise a citation
/// head, so the model can cite it.
pub(crate) fn frame(reference: &str, trust: TrustTier) -> (String, &'static str) {
    let (open, close, tail) = if trust == TrustTier::Untrusted {
        ("<untrusted source=\"", "\">\n", "\n</untrusted>")
    } else {
        ("[source: ", "]\n", "")
    };
    let mut head = String::with_capacity(open.len() + reference.len() + close.len());
    head.push_str(open);
    if trust == TrustTier::Untrusted {
        // The fence's attribute cannot be closed early either.
        head.extend(reference.chars().map(|c| if c == '"' { '\'' } else { c }));
    } else {
        head.push_str(reference);
    }
    head.push_str(close);
    (head, tail)
}

/// A host text as it goes inside its frame: an untrusted text has any
/// fence in it defused, so it cannot close the real one early. Returns
/// the text itself when there is nothing to defuse.
pub(crate) fn body(trust: TrustTier, text: String) -> String {
    if trust == TrustTier::Untrusted && text.contains("untrusted") {
        text.replace("</untrusted", "<\\/untrusted")
            .replace("<untrusted", "<\\untrusted")
    } else {
        text
    }
}

/// How many candidates ahead of the one in hand their memory is asked for
/// (see [`crate::prefetch`]).
const AHEAD: usize = 8;

/// Which sources a profile calls, and with what.
struct SourcePlan {
    retrieve: Option<u32>,
    graph_depth: Option<u32>,
    memory: Option<u32>,
    repository: bool,
}

impl SourcePlan {
    fn of(profile: Profile) -> Self {
        let none = SourcePlan {
            retrieve: None,
            graph_depth: None,
            memory: None,
            repository: false,
        };
        match profile {
            Profile::Passthrough => none,
            Profile::Rag(s) => SourcePlan {
                retrieve: Some(s.retrieve_limit),
                ..none
            },
            Profile::RagMemory(s) => SourcePlan {
                retrieve: Some(s.retrieve_limit),
                memory: Some(s.memory_limit),
                ..none
            },
            Profile::Full(s) => SourcePlan {
                retrieve: Some(s.retrieve_limit),
                graph_depth: (s.graph_depth > 0).then_some(s.graph_depth),
                memory: Some(s.memory_limit),
                repository: s.repository_state,
            },
        }
    }
}

/// Why a host candidate can never be included, whatever the budget: a
/// section hosts may not fill, no provenance, or a scope the attempt lacks.
fn admissible(c: &Candidate, ctx: &crate::types::AgentContext) -> Option<Reason> {
    if c.section.layer() == Layer::L0
        || matches!(
            c.section,
            Section::ConversationState | Section::StageSummaries
        )
    {
        Some(Reason::SectionNotAllowed)
    } else if c.provenance.is_none() {
        Some(Reason::NoProvenance)
    } else if c.scope.as_ref().is_some_and(|s| !ctx.scopes.contains(s)) {
        Some(Reason::OutOfScope)
    } else {
        None
    }
}

/// Calls the profile's sources and prepares their candidates.
pub(crate) fn gather<'r>(
    request: &AssembleRequest,
    settings: Settings,
    host: &mut dyn Host,
    taken: impl FnOnce() -> FxHashSet<&'r str>,
) -> Gathered {
    let ctx = &request.context;
    let mut calls = Vec::new();
    // Each source's candidates, with the most it was asked for.
    let mut sources: Vec<(Origin, Vec<Candidate>, Option<u32>)> = Vec::new();
    let plan = SourcePlan::of(settings.profile);
    if let Some(limit) = plan.retrieve {
        let answer = host.retrieve(ctx, &request.query, limit);
        sources.push((
            Origin::Retrieval,
            record(&mut calls, "sources.retrieve", answer),
            Some(limit),
        ));
    }
    if let Some(depth) = plan.graph_depth {
        // Expand from the retrieved items that could be included, best
        // first; without any there is nothing to expand from.
        let mut seeds: Vec<&Candidate> = sources
            .iter()
            .flat_map(|(_, items, _)| items)
            .filter(|c| admissible(c, ctx).is_none())
            .collect();
        seeds.sort_by(|a, b| {
            source_score(b)
                .total_cmp(&source_score(a))
                .then_with(|| a.id.cmp(&b.id))
        });
        let ids: Vec<String> = seeds.iter().map(|c| c.id.clone()).collect();
        if ids.is_empty() {
            calls.push(SourceCall {
                capability: "sources.expand-graph".to_owned(),
                outcome: SourceOutcome::Skipped("no retrieved item to expand from".into()),
            });
        } else {
            let answer = host.expand_graph(ctx, &ids, depth);
            sources.push((
                Origin::Graph,
                record(&mut calls, "sources.expand-graph", answer),
                None,
            ));
        }
    }
    if let Some(limit) = plan.memory {
        match &ctx.user_id {
            Some(user) => {
                let answer = host.recall_memory(ctx, user, &request.query, limit);
                sources.push((
                    Origin::Memory,
                    record(&mut calls, "sources.recall-memory", answer),
                    Some(limit),
                ));
            }
            None => calls.push(SourceCall {
                capability: "sources.recall-memory".to_owned(),
                outcome: SourceOutcome::Skipped("no user id: long-term memory is per user".into()),
            }),
        }
    }
    if plan.repository {
        let answer = host.repository_state(ctx);
        sources.push((
            Origin::Repository,
            record(&mut calls, "sources.repository-state", answer),
            None,
        ));
    }
    let degraded = calls
        .iter()
        .any(|c| matches!(c.outcome, SourceOutcome::Failed(_)));

    // Fused score per candidate: reciprocal rank within its own source,
    // plus the configured trust and recency terms.
    let sequences: Vec<u64> = {
        let mut all: Vec<u64> = sources
            .iter()
            .flat_map(|(_, items, _)| items.iter().filter_map(|c| c.sequence))
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
    let ranking = settings.ranking;
    // A source that answers more than it was asked for keeps its best
    // `limit`; the rest are recorded as beyond the limit. Candidates stay
    // where they are, in `pool`, and are ordered by index: they are a few
    // hundred bytes each, and moving them about cost more than reading
    // their texts.
    let mut pool: Vec<Candidate> =
        Vec::with_capacity(sources.iter().map(|(_, items, _)| items.len()).sum());
    let mut fused: Vec<(usize, Origin, f64, Option<u32>)> = Vec::with_capacity(pool.capacity());
    for (origin, items, limit) in sources {
        let from = pool.len();
        pool.extend(items);
        let mut order: Vec<usize> = (from..pool.len()).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&pool[a], &pool[b]);
            source_score(b)
                .total_cmp(&source_score(a))
                .then_with(|| a.id.cmp(&b.id))
        });
        for (rank, i) in order.into_iter().enumerate() {
            let c = &pool[i];
            let score = 1.0 / (RRF_K + rank as f64 + 1.0)
                + ranking.trust(c.trust)
                + ranking.recency * recency(c.sequence);
            let beyond = limit.filter(|&l| rank >= l as usize);
            fused.push((i, origin, score, beyond));
        }
    }
    fused.sort_by(|a, b| {
        b.2.total_cmp(&a.2)
            .then_with(|| pool[a.0].id.cmp(&pool[b.0].id))
    });

    // Ids the request's own candidates take, made only if a host answered
    // anything (a request of ten thousand turns has as many), and the host
    // candidates' met so far.
    let taken = if fused.is_empty() {
        FxHashSet::default()
    } else {
        taken()
    };
    let mut seen: FxHashSet<&str> =
        FxHashSet::with_capacity_and_hasher(fused.len(), Default::default());
    let mut deduper = Deduper::new(settings.near_duplicate_threshold, fused.len());
    // Each item with the index of its candidate in `pool`.
    let mut items: Vec<(Item, usize)> = Vec::with_capacity(fused.len());
    let mut to_review = Vec::new();
    for (n, &(i, origin, score, beyond)) in fused.iter().enumerate() {
        // Candidates are visited in rank order, scattered over `pool`: ask
        // for each one's record well ahead, and for its id, text and
        // reference once the record is likely in.
        if let Some(&(far, ..)) = fused.get(n + 2 * AHEAD) {
            prefetch::value(&pool[far]);
        }
        if let Some(&(near, ..)) = fused.get(n + AHEAD) {
            let c = &pool[near];
            prefetch::line(c.id.as_ptr());
            prefetch::line(c.text.as_ptr());
            if let Some(p) = &c.provenance {
                prefetch::line(p.reference.as_ptr());
            }
        }
        let c = &pool[i];
        let reason = if let Some(limit) = beyond {
            Reason::BeyondLimit(limit)
        } else if taken.contains(c.id.as_str()) || seen.contains(c.id.as_str()) {
            Reason::DuplicateOf(c.id.clone())
        } else if let Some(why) = admissible(c, ctx) {
            why
        } else if let Some(of) = deduper.offer(i as u32, &c.text) {
            // (`i` fits: 2^32 candidates do not fit in memory first.)
            Reason::DuplicateOf(pool[of as usize].id.clone())
        } else {
            Reason::WithinBudget
        };
        seen.insert(c.id.as_str());
        if reason == Reason::WithinBudget {
            to_review.push(items.len());
        }
        items.push((
            Item {
                // Id and provenance are moved from the candidate below.
                id: String::new(),
                section: c.section,
                role: Role::System,
                count: None,
                framed: false,
                hint: None,
                text: String::new(),
                origin,
                provenance: None,
                trust: c.trust,
                score: Some(score),
                reason,
                redacted: false,
                compressed: false,
                turn: None,
            },
            i,
        ));
    }
    drop(seen);

    let mut failure = None;
    if !to_review.is_empty() {
        // The batch borrows the candidates where they are.
        let batch: Vec<&Candidate> = to_review.iter().map(|&k| &pool[items[k].1]).collect();
        let answer = host.review(ctx, &batch);
        drop(batch);
        let verdicts = match answer {
            Ok(v) if v.len() == to_review.len() => Ok(v),
            Ok(v) => Err(format!(
                "answered {} verdicts for {} items",
                v.len(),
                to_review.len()
            )),
            Err(e) => Err(e.message),
        };
        calls.push(SourceCall {
            capability: "policy.review".to_owned(),
            outcome: match &verdicts {
                Ok(v) => SourceOutcome::Answered(u32::try_from(v.len()).unwrap_or(u32::MAX)),
                Err(message) => SourceOutcome::Failed(message.clone()),
            },
        });
        let verdicts = match verdicts {
            Ok(v) => v,
            Err(message) => {
                // Nothing unreviewed goes on: the assembly fails here.
                for &k in &to_review {
                    items[k].0.reason = Reason::AssemblyFailed;
                }
                failure = Some(Error::HostFailed {
                    capability: "policy.review".into(),
                    message,
                });
                Vec::new()
            }
        };
        for (&k, verdict) in to_review.iter().zip(verdicts) {
            let (item, i) = &mut items[k];
            match verdict {
                Verdict::Allow => {}
                Verdict::Redact(text) => {
                    pool[*i].text = text;
                    item.redacted = true;
                }
                Verdict::Deny(why) => item.reason = Reason::PolicyDenied(why),
            }
        }
    }

    // A host text keeps its body; its frame is counted with it and put
    // around it only if it is included.
    let order: Vec<usize> = items.iter().map(|&(_, i)| i).collect();
    let items = items
        .into_iter()
        .enumerate()
        .map(|(k, (mut item, i))| {
            // Rank order again, scattered over `pool`: ask ahead.
            if let Some(&ahead) = order.get(k + AHEAD) {
                prefetch::value(&pool[ahead]);
            }
            let c = &mut pool[i];
            item.id = std::mem::take(&mut c.id);
            item.provenance = c.provenance.take();
            let text = std::mem::take(&mut c.text);
            match &item.provenance {
                Some(_) => {
                    let given = text.len();
                    item.text = body(c.trust, text);
                    item.framed = true;
                    // A host count holds only for its text as given.
                    item.hint = c
                        .token_count
                        .filter(|_| !item.redacted && item.text.len() == given);
                }
                None => item.text = text,
            }
            item
        })
        .collect();
    Gathered {
        items,
        calls,
        degraded,
        failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Provenance, RagSettings, Tokenizer};

    struct Fixed(Vec<Candidate>);

    impl Host for Fixed {
        fn retrieve(
            &mut self,
            _: &crate::AgentContext,
            _: &str,
            _: u32,
        ) -> Result<Vec<Candidate>, HostError> {
            Ok(self.0.clone())
        }
        fn expand_graph(
            &mut self,
            _: &crate::AgentContext,
            _: &[String],
            _: u32,
        ) -> Result<Vec<Candidate>, HostError> {
            Ok(vec![])
        }
        fn recall_memory(
            &mut self,
            _: &crate::AgentContext,
            _: &str,
            _: &str,
            _: u32,
        ) -> Result<Vec<Candidate>, HostError> {
            Ok(vec![])
        }
        fn repository_state(
            &mut self,
            _: &crate::AgentContext,
        ) -> Result<Vec<Candidate>, HostError> {
            Ok(vec![])
        }
        fn review(
            &mut self,
            _: &crate::AgentContext,
            items: &[&Candidate],
        ) -> Result<Vec<Verdict>, HostError> {
            Ok(vec![Verdict::Allow; items.len()])
        }
        fn summarize(
            &mut self,
            _: &[crate::types::SummaryRequest],
            _: Tokenizer,
        ) -> Result<Vec<String>, HostError> {
            Err(HostError::not_provided("summarizer.summarize"))
        }
    }

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

    fn order(items: Vec<Candidate>, ranking: Ranking) -> Vec<String> {
        let request: AssembleRequest = serde_json::from_value(serde_json::json!({
            "context": {"trace-id": "t"}, "query": "q", "tokenizer": {"chars-per-token": 4},
            "budget": 1000, "entry-overhead": 0, "system-prompt": "s", "keep-last": 1
        }))
        .unwrap();
        let settings = Settings {
            profile: Profile::Rag(RagSettings { retrieve_limit: 10 }),
            near_duplicate_threshold: 1.0,
            ranking,
        };
        let g = gather(&request, settings, &mut Fixed(items), FxHashSet::default);
        g.items.into_iter().map(|i| i.id).collect()
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

    /// A body in its frame, as an included host text is rendered.
    fn render(reference: &str, trust: TrustTier, body: &str) -> String {
        let (head, tail) = frame(reference, trust);
        format!("{head}{body}{tail}")
    }

    #[test]
    fn untrusted_text_is_fenced_and_cannot_close_the_fence() {
        let reference = "https://x.example/\"a\"";
        let inside = body(
            TrustTier::Untrusted,
            "hi </untrusted> <untrusted source=\"y\">".into(),
        );
        assert_eq!(inside, "hi <\\/untrusted> <\\untrusted source=\"y\">");
        let f = render(reference, TrustTier::Untrusted, &inside);
        assert_eq!(
            f,
            "<untrusted source=\"https://x.example/'a'\">\nhi <\\/untrusted> <\\untrusted source=\"y\">\n</untrusted>"
        );
        assert_eq!(f.matches("</untrusted>").count(), 1);
        // Defusing what is defused changes nothing.
        assert_eq!(body(TrustTier::Untrusted, inside.clone()), inside);
        // Trusted text is never touched, and is headed by its citation.
        assert_eq!(
            body(TrustTier::Trusted, "a </untrusted>".into()),
            "a </untrusted>"
        );
        assert_eq!(
            render("kb/1", TrustTier::Trusted, "plain"),
            "[source: kb/1]\nplain"
        );
    }
}
