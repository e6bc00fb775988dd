//! The scenario fixture: stores in memory, loaded from a directory of
//! scenario files (`tests/scenarios`), which the service's tests and the
//! load script answer every capability from (`--fixture`, and
//! `ctxpack-fixture-store` over gRPC and HTTP). A deployment's stores are
//! upstreams or the embedded index ([`crate::answerers`]).
//!
//! Every candidate the scenarios' hosts answer is pooled by capability
//! (the first of an id wins). Retrieval ranks the pool by how many of the
//! query's words a candidate's text has (its score, the share of the
//! query's words it has) and answers the best `limit` that share any;
//! memory is ranked alike; graph expansion and repository state answer
//! their whole pool. The policy is the scenarios' deny and redact rules;
//! the summariser keeps leading words. Faults can be injected for tests:
//! a capability failing with some probability, and a delay on every call.
//!
//! Only the files' `host` answers are read (`{"items": […]}` or
//! `{"all-items": […]}` per source, `policy.deny` and `policy.redact`),
//! as plain JSON: the service does not depend on the test apparatus.

use ctxpack_core::Capability;
use ctxpack_core::{AgentContext, Answer, Call, Candidate, HostError, Verdict};
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why the fixture cannot be loaded: its directory or a file of it. It
/// reads as the message the service has always given (`--fixture DIR: …`).
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The directory cannot be read.
    #[error("--fixture {}: {source}", dir.display())]
    Directory {
        /// The directory.
        dir: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// A scenario file cannot be read.
    #[error("{}: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// A scenario file is not a scenario.
    #[error("--fixture: {}: {source}", file.display())]
    NotAScenario {
        /// The file.
        file: PathBuf,
        /// Why not.
        source: serde_json::Error,
    },
    /// The directory holds no scenario file.
    #[error("--fixture {}: no scenario files", dir.display())]
    Empty {
        /// The directory.
        dir: PathBuf,
    },
}

/// The demo stores.
#[derive(Clone, Debug, Default)]
pub struct DemoSources {
    retrieve: Vec<Candidate>,
    graph: Vec<Candidate>,
    memory: Vec<Candidate>,
    repository: Vec<Candidate>,
    policy: Policy,
    faults: Faults,
}

/// The scenarios' policy rules, by candidate id (the first file's wins).
#[derive(Clone, Debug, Default, Deserialize)]
struct Policy {
    #[serde(default)]
    deny: BTreeMap<String, String>,
    #[serde(default)]
    redact: BTreeMap<String, String>,
}

/// What the demo reads of a scenario file: its host's answers.
#[derive(Deserialize)]
struct File {
    #[serde(default)]
    host: Answers,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Answers {
    retrieve: Option<Stored>,
    expand_graph: Option<Stored>,
    recall_memory: Option<Stored>,
    repository_state: Option<Stored>,
    policy: Option<Policy>,
}

/// One source's answer in a scenario file; a failure holds no candidates.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Stored {
    Items(Vec<Candidate>),
    AllItems(Vec<Candidate>),
    Error(#[allow(dead_code)] serde::de::IgnoredAny),
}

/// Injected faults.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Capability (`sources.retrieve`, `policy.review`, …) -> the chance,
    /// in [0, 1], that a call fails.
    pub fail: BTreeMap<String, f64>,
    /// A delay before every source call answers.
    pub delay: Option<Duration>,
}

fn pool(into: &mut Vec<Candidate>, seen: &mut HashSet<String>, answer: &Option<Stored>) {
    if let Some(Stored::Items(items) | Stored::AllItems(items)) = answer {
        for c in items {
            if seen.insert(c.id.clone()) {
                into.push(c.clone());
            }
        }
    }
}

impl DemoSources {
    /// The stores of every `*.json` scenario in `dir`, in file-name order.
    pub fn load(dir: &Path, faults: Faults) -> Result<Self, FixtureError> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(|source| FixtureError::Directory {
                dir: dir.to_owned(),
                source,
            })?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut s = DemoSources {
            faults,
            ..Default::default()
        };
        let mut seen: [HashSet<String>; 4] = Default::default();
        for f in &files {
            let text = std::fs::read_to_string(f).map_err(|source| FixtureError::Read {
                file: f.clone(),
                source,
            })?;
            let file: File =
                serde_json::from_str(&text).map_err(|source| FixtureError::NotAScenario {
                    file: f.clone(),
                    source,
                })?;
            let h = &file.host;
            pool(&mut s.retrieve, &mut seen[0], &h.retrieve);
            pool(&mut s.graph, &mut seen[1], &h.expand_graph);
            pool(&mut s.memory, &mut seen[2], &h.recall_memory);
            pool(&mut s.repository, &mut seen[3], &h.repository_state);
            if let Some(p) = &h.policy {
                for (k, v) in &p.deny {
                    s.policy.deny.entry(k.clone()).or_insert_with(|| v.clone());
                }
                for (k, v) in &p.redact {
                    s.policy
                        .redact
                        .entry(k.clone())
                        .or_insert_with(|| v.clone());
                }
            }
        }
        if files.is_empty() {
            return Err(FixtureError::Empty {
                dir: dir.to_owned(),
            });
        }
        Ok(s)
    }

    /// How many candidates each capability holds.
    pub fn sizes(&self) -> [(&'static str, usize); 4] {
        [
            (Capability::Retrieve.name(), self.retrieve.len()),
            (Capability::ExpandGraph.name(), self.graph.len()),
            (Capability::RecallMemory.name(), self.memory.len()),
            (Capability::RepositoryState.name(), self.repository.len()),
        ]
    }

    fn fault(&self, capability: &str) -> Result<(), HostError> {
        match self.faults.fail.get(capability) {
            Some(p) if fastrand::f64() < *p => Err(HostError::new(
                capability,
                "injected fault: the store did not answer",
            )),
            _ => Ok(()),
        }
    }

    /// Answers one call of a step, for the request of `_context` (which
    /// these stores, holding one pool for all, do not look at).
    pub async fn answer(&self, call: &Call<'_>, _context: &AgentContext) -> Answer {
        if let Err(e) = self.fault(call.capability()) {
            return call.failed(e);
        }
        match call {
            Call::Review { items } => Answer::Verdicts(Ok(self.review(items))),
            // Leading words, about four characters per target token.
            Call::Summarize { requests, .. } => Answer::Summaries(Ok(requests
                .iter()
                .map(ctxpack_scenario::stores::leading_summary)
                .collect())),
            source => {
                if let Some(d) = self.faults.delay {
                    tokio::time::sleep(d).await;
                }
                match source {
                    Call::Retrieve { query, limit } => {
                        Answer::Candidates(Ok(ranked(&self.retrieve, query, *limit)))
                    }
                    Call::RecallMemory { query, limit, .. } => {
                        Answer::Candidates(Ok(ranked(&self.memory, query, *limit)))
                    }
                    Call::ExpandGraph { .. } => Answer::Candidates(Ok(self.graph.clone())),
                    Call::RepositoryState {} => Answer::Candidates(Ok(self.repository.clone())),
                    other => other.failed(HostError::not_provided(other.capability())),
                }
            }
        }
    }

    /// The policy's verdicts: denied or redacted by id, else allowed.
    fn review(&self, items: &[Candidate]) -> Vec<Verdict> {
        let rules = &self.policy;
        items
            .iter()
            .map(|c| match (rules.deny.get(&c.id), rules.redact.get(&c.id)) {
                (Some(why), _) => Verdict::Deny(why.clone()),
                (None, Some(text)) => Verdict::Redact(text.clone()),
                (None, None) => Verdict::Allow,
            })
            .collect()
    }
}

/// Words too common to say what a text is about.
const STOP: &[&str] = &[
    "and", "are", "but", "can", "did", "does", "for", "from", "had", "has", "have", "how", "its",
    "not", "our", "the", "this", "that", "was", "were", "what", "when", "where", "which", "who",
    "why", "will", "with", "you", "your",
];

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

/// The candidates of `pool` sharing any word with `query`, best first
/// (ties by id), scored by the share of the query's words they have.
fn ranked(pool: &[Candidate], query: &str, limit: u32) -> Vec<Candidate> {
    let q = words(query);
    if q.is_empty() {
        return Vec::new();
    }
    let mut hits: Vec<(f64, &Candidate)> = pool
        .iter()
        .filter_map(|c| {
            let shared = words(&c.text).intersection(&q).count();
            (shared > 0).then(|| (shared as f64 / q.len() as f64, c))
        })
        .collect();
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    hits.into_iter()
        .take(limit as usize)
        .map(|(score, c)| Candidate {
            score: Some(score),
            ..c.clone()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, text: &str) -> Candidate {
        serde_json::from_value(serde_json::json!({
            "id": id, "section": "relevant-knowledge", "text": text, "trust": "trusted",
            "provenance": {"source-kind": "chunk", "reference": id}
        }))
        .unwrap()
    }

    #[test]
    fn retrieval_ranks_by_shared_words_and_keeps_the_limit() {
        let pool = vec![
            candidate("a", "Invoices overdue by thirty days"),
            candidate("b", "Weather in Porto"),
            candidate("c", "Overdue invoices list, overdue fees"),
            candidate("d", "Invoices"),
        ];
        let got = ranked(&pool, "Which invoices are overdue?", 2);
        let ids: Vec<_> = got.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(got[0].score, Some(1.0));
        assert!(ranked(&pool, "??", 5).is_empty());
        assert!(ranked(&pool, "nothing matches", 5).is_empty());
    }

    #[test]
    fn the_bundled_scenarios_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios");
        let s = DemoSources::load(&dir, Faults::default()).unwrap();
        assert!(s.sizes().iter().all(|(_, n)| *n > 0), "{:?}", s.sizes());
        assert!(!s.policy.deny.is_empty());
        let empty = tempdir();
        let err = DemoSources::load(&empty, Faults::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no scenario files"), "{err}");
    }

    fn tempdir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ctxpack-sources-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
