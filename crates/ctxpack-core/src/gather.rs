//! Gathering: the host's sources a profile calls, each once, with what it
//! was asked.
//!
//! - `passthrough` calls nothing; `rag` calls `sources.retrieve`;
//!   `rag-memory` also calls `sources.recall-memory` when the request has a
//!   user id, and records the skip when it has none; `full` also expands
//!   the graph from the admissible retrieved items (`depth` hops, once;
//!   what it returns again — a cycle — is a duplicate of what is already
//!   there) and asks for the repository state.
//! - Every call is recorded with its outcome, in the profile's order. A failing
//!   source degrades the assembly (status `degraded`): it goes on with what
//!   the others answered.
//!
//! What the sources answered is then ranked ([`crate::rank`]), admitted
//! ([`crate::admit`]) and reviewed ([`crate::policy`]).

use crate::assembly::Channel;
use crate::call::Call;
use crate::capability::Capability;
use crate::config::Profile;
use crate::error::HostError;
use crate::snapshot::{Origin, Reason, SourceCall, SourceOutcome};

use crate::tokenizer::clamp_len;
use crate::types::{AgentContext, AssembleRequest, Candidate, Layer, Section};
use std::cmp::Ordering;

/// One source's answer.
pub(crate) struct Source {
    pub origin: Origin,
    pub candidates: Vec<Candidate>,
    /// The most it was asked for, if it was asked for a number.
    pub limit: Option<u32>,
}

/// What the sources answered, and the record of their calls.
#[derive(Default)]
pub(crate) struct Gathered {
    pub sources: Vec<Source>,
    pub calls: Vec<SourceCall>,
    pub degraded: bool,
}

/// A source's own score for ranking within it: a missing or NaN score
/// ranks below every number.
fn source_score(c: &Candidate) -> f64 {
    match c.score {
        Some(s) if !s.is_nan() => s,
        _ => f64::NEG_INFINITY,
    }
}

/// The order within a source: its score, highest first, then id.
pub(crate) fn by_source_score(a: &Candidate, b: &Candidate) -> Ordering {
    source_score(b)
        .total_cmp(&source_score(a))
        .then_with(|| a.id.cmp(&b.id))
}

/// Why a host candidate can never be included, whatever the budget and
/// whatever else was answered: a section hosts may not fill, no
/// provenance, or a scope the attempt lacks. Admission refuses these
/// first (see [`crate::admit`]); the graph is expanded only from
/// retrieved candidates that could be included.
pub(crate) fn never(c: &Candidate, ctx: &AgentContext) -> Option<Reason> {
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

impl Profile {
    /// Its name, as a configuration spells it (`rag-memory`): the key its
    /// settings are given under.
    pub fn name(self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(name)) => name,
            Ok(serde_json::Value::Object(m)) => m.keys().next().cloned().unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// The sources an assembly under this profile may call, as their
    /// capabilities (`sources.retrieve`, …), in the order the WIT lists
    /// them. A host lending any other source lends it for nothing; the
    /// packages refuse that, naming the profiles that would call it.
    pub fn sources(self) -> Vec<&'static str> {
        let plan = SourcePlan::of(self);
        [
            (plan.retrieve.is_some(), Capability::Retrieve.name()),
            (plan.graph_depth.is_some(), Capability::ExpandGraph.name()),
            (plan.memory.is_some(), Capability::RecallMemory.name()),
            (plan.repository, Capability::RepositoryState.name()),
        ]
        .into_iter()
        .filter_map(|(called, capability)| called.then_some(capability))
        .collect()
    }
}

impl Gathered {
    /// Records the answer of `capability` and keeps its candidates.
    fn answer(
        &mut self,
        capability: Capability,
        origin: Origin,
        limit: Option<u32>,
        answer: Result<Vec<Candidate>, HostError>,
    ) {
        let (outcome, candidates) = match answer {
            Ok(mut items) => {
                // A score of −0 is 0, as a JavaScript host sends it.
                for c in &mut items {
                    c.score = c.score.map(crate::digest::canonical);
                }
                (SourceOutcome::Answered(clamp_len(items.len())), items)
            }
            Err(e) => (SourceOutcome::Failed(e.message), Vec::new()),
        };
        self.calls.push(SourceCall {
            capability: capability.name().to_owned(),
            outcome,
        });
        self.sources.push(Source {
            origin,
            candidates,
            limit,
        });
    }

    /// Records that `capability` was not called, and why.
    fn skip(&mut self, capability: Capability, why: &str) {
        self.calls.push(SourceCall {
            capability: capability.name().to_owned(),
            outcome: SourceOutcome::Skipped(why.to_owned()),
        });
    }
}

/// Calls the sources `profile` names, each once: retrieval, memory and the
/// repository state in one round, then the graph, which expands from what
/// retrieval answered. The calls are recorded, and the answers kept, in
/// the profile's order (retrieval, graph, memory, repository), however
/// the host answered them.
pub(crate) async fn gather(
    request: &AssembleRequest,
    profile: Profile,
    channel: &Channel,
) -> Gathered {
    let ctx = &request.context;
    let plan = SourcePlan::of(profile);
    let mut round = Vec::new();
    if let Some(limit) = plan.retrieve {
        round.push(Call::Retrieve {
            query: request.query.clone().into(),
            limit,
        });
    }
    if let (Some(limit), Some(user)) = (plan.memory, &ctx.user_id) {
        round.push(Call::RecallMemory {
            user_id: user.clone().into(),
            query: request.query.clone().into(),
            limit,
        });
    }
    if plan.repository {
        round.push(Call::RepositoryState {});
    }
    let answers = if round.is_empty() {
        Vec::new()
    } else {
        channel.sources(round.clone()).await
    };
    let mut answered = round.iter().zip(answers);
    let mut next = |kind: fn(&Call) -> bool| {
        answered
            .find(|(asked, _)| kind(asked))
            .map(|(_, answer)| answer)
    };
    let retrieved = next(|r| matches!(r, Call::Retrieve { .. }));
    let memory = next(|r| matches!(r, Call::RecallMemory { .. }));
    let repository = next(|r| matches!(r, Call::RepositoryState {}));

    let mut gathered = Gathered::default();
    if let (Some(limit), Some(answer)) = (plan.retrieve, retrieved) {
        gathered.answer(Capability::Retrieve, Origin::Retrieval, Some(limit), answer);
    }
    if let Some(depth) = plan.graph_depth {
        expand(&mut gathered, ctx, depth, channel).await;
    }
    if let Some(limit) = plan.memory {
        match memory {
            Some(answer) => {
                gathered.answer(
                    Capability::RecallMemory,
                    Origin::Memory,
                    Some(limit),
                    answer,
                );
            }
            None => gathered.skip(
                Capability::RecallMemory,
                "no user id: long-term memory is per user",
            ),
        }
    }
    if let Some(answer) = repository {
        gathered.answer(
            Capability::RepositoryState,
            Origin::Repository,
            None,
            answer,
        );
    }
    gathered.degraded = gathered
        .calls
        .iter()
        .any(|c| matches!(c.outcome, SourceOutcome::Failed(_)));
    gathered
}

/// The second round: the graph, expanded `depth` hops from the retrieved
/// items that could be included, best first; without any there is
/// nothing to expand from.
async fn expand(gathered: &mut Gathered, ctx: &AgentContext, depth: u32, channel: &Channel) {
    let mut seeds: Vec<&Candidate> = gathered
        .sources
        .iter()
        .flat_map(|s| &s.candidates)
        .filter(|c| never(c, ctx).is_none())
        .collect();
    seeds.sort_by(|a, b| by_source_score(a, b));
    let ids: Vec<String> = seeds.iter().map(|c| c.id.clone()).collect();
    if ids.is_empty() {
        gathered.skip(Capability::ExpandGraph, "no retrieved item to expand from");
        return;
    }
    let call = Call::ExpandGraph {
        item_ids: ids.into(),
        depth,
    };
    let answer = channel.sources(vec![call]).await.pop().unwrap_or_else(|| {
        Err(HostError::new(
            Capability::ExpandGraph.name(),
            "not answered",
        ))
    });
    gathered.answer(Capability::ExpandGraph, Origin::Graph, None, answer);
}
