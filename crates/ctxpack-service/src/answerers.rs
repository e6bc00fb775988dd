//! What answers each capability an assembly calls: a configured upstream
//! ([`crate::upstream`]); else, for retrieval, the embedded document index
//! ([`crate::index`]); for the policy, a rule that allows every item (the
//! start-up log says so); else nothing, and the call fails as not
//! provided. Tests and the load script may put the scenario fixture
//! ([`crate::fixture`]) behind every capability no upstream answers.
//!
//! A builder whose profile calls a source nothing answers is refused,
//! naming the profile and the capability: every assembly would be
//! degraded.
//!
//! An answerer may serve a named index (an upstream's `index`; the
//! embedded index is `embedded`). While an `IndexDegraded` event holds
//! for it ([`IndexHealth`]), its calls are not made: each fails saying so,
//! and the assembly plans around it from the other sources, degraded —
//! the seed's "Retrieval degraded" row.
//!
//! With the cache and coordination store ([`crate::coord`]), what
//! `sources.expand-graph` answers is kept there for the tenant, keyed by
//! what the answer can depend on — the answerer, the project, the user,
//! the scopes, the items and the depth (not the session, run or trace) —
//! and read back by every replica until `GraphFactsUpdated` for the tenant
//! or `graph-ttl-s`. A failed call is not kept.

use crate::coord::Coord;
use crate::fixture::DemoSources;
use crate::settings::Settings;
use crate::snapshots::Store;
use crate::upstream::{Address, Upstream, UpstreamError};
use ctxpack_core::Capability;
use ctxpack_core::{AgentContext, Answer, Call, HostError, Verdict};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// The embedded index's name, as an `IndexDegraded` event names it.
pub const EMBEDDED_INDEX: &str = "embedded";

/// The indexes degraded now, with why: what every replica reads from the
/// store's `index_health` (see [`crate::events`]).
#[derive(Debug, Default)]
pub struct IndexHealth {
    degraded: RwLock<BTreeMap<String, String>>,
}

impl IndexHealth {
    /// Replaces what is degraded.
    pub fn set(&self, degraded: BTreeMap<String, String>) {
        match self.degraded.write() {
            Ok(mut d) => *d = degraded,
            Err(poisoned) => *poisoned.into_inner() = degraded,
        }
    }

    /// Why `index` is degraded, if it is.
    pub fn degraded(&self, index: &str) -> Option<String> {
        match self.degraded.read() {
            Ok(d) => d.get(index).cloned(),
            Err(poisoned) => poisoned.into_inner().get(index).cloned(),
        }
    }
}

enum Answerer {
    Upstream(Box<Upstream>),
    Index(Store),
    Fixture(Arc<DemoSources>),
    AllowAll,
}

/// Every capability's answerer.
pub struct Answerers {
    answerers: BTreeMap<&'static str, Answerer>,
    health: Arc<IndexHealth>,
    /// Where graph neighbourhoods are cached, when they are, and what
    /// answers them (part of each entry's key), found once.
    graph_cache: Option<(Coord, String)>,
}

impl Answerers {
    /// The stores `settings` configure, over `store`'s index, with the
    /// fixture behind what no upstream answers when one is given.
    pub fn new(
        settings: &Settings,
        store: &Store,
        fixture: Option<Arc<DemoSources>>,
        health: Arc<IndexHealth>,
        coord: Option<Coord>,
    ) -> Result<Answerers, UpstreamError> {
        let mut answerers = BTreeMap::new();
        for (name, capability) in Capability::ALL.map(|c| (c.function(), c.name())) {
            let answerer = match (settings.upstreams.get(capability), &fixture) {
                (Some(u), _) => Answerer::Upstream(Box::new(
                    Upstream::new(capability, u.clone()).map_err(|e| UpstreamError::Upstream {
                        name,
                        source: Box::new(e),
                    })?,
                )),
                (None, Some(f)) => Answerer::Fixture(f.clone()),
                (None, None) if capability == Capability::Retrieve.name() => {
                    Answerer::Index(store.clone())
                }
                (None, None) if capability == Capability::Review.name() => Answerer::AllowAll,
                (None, None) => continue,
            };
            answerers.insert(capability, answerer);
        }
        let profile = settings.builder.profile;
        for capability in profile.sources() {
            if !answerers.contains_key(capability) {
                let name = capability.split_once('.').map_or(capability, |(_, n)| n);
                return Err(UpstreamError::Unanswered {
                    profile: profile.name(),
                    capability,
                    name,
                });
            }
        }
        let mut made = Answerers {
            answerers,
            health,
            graph_cache: None,
        };
        if let Some(c) = coord.filter(|c| !c.graph_ttl.is_zero()) {
            let answerer = made
                .describe()
                .remove(Capability::ExpandGraph.name())
                .unwrap_or_default();
            made.graph_cache = Some((c, answerer));
        }
        Ok(made)
    }

    /// What answers each capability, for the start-up log.
    pub fn describe(&self) -> BTreeMap<&'static str, String> {
        Capability::ALL
            .into_iter()
            .map(|c| {
                let what = match self.answerers.get(c.name()) {
                    Some(Answerer::Upstream(u)) => match &u.settings().address {
                        Address::Grpc(a) => format!("grpc {}", crate::upstream::masked(a)),
                        Address::Http(a) => format!("http {}", crate::upstream::masked(a)),
                    },
                    Some(Answerer::Index(_)) => "the embedded index".into(),
                    Some(Answerer::Fixture(_)) => "the scenario fixture".into(),
                    Some(Answerer::AllowAll) => "no policy: every item allowed".into(),
                    None => "nothing (not provided)".into(),
                };
                (c.name(), what)
            })
            .collect()
    }

    /// Answers one call of a step, for the request of `context`: a graph
    /// neighbourhood from the cache when it holds it.
    pub async fn answer(&self, call: &Call<'static>, context: &AgentContext) -> Answer {
        let (Some((cache, answerer)), Call::ExpandGraph { item_ids, depth }, Some(tenant)) =
            (&self.graph_cache, call, context.tenant_id.as_deref())
        else {
            return self.answer_now(call, context).await;
        };
        let mut scopes = context.scopes.clone();
        scopes.sort();
        let what = serde_json::json!([
            answerer,
            context.project_id,
            context.user_id,
            scopes,
            item_ids,
            depth
        ]);
        let hash = ctxpack_core::text_hash(&what.to_string());
        let generation = match cache.neighbourhood(tenant, &hash).await {
            Ok((_, Some(kept))) => {
                if let Ok(candidates) = serde_json::from_str(&kept) {
                    return Answer::Candidates(Ok(candidates));
                }
                None
            }
            Ok((generation, None)) => Some(generation),
            Err(e) => {
                tracing::debug!(target: "ctxpack::cache", error = %e, "graph cache: not answering");
                None
            }
        };
        let answer = self.answer_now(call, context).await;
        if let (Some(generation), Answer::Candidates(Ok(candidates))) = (generation, &answer)
            && let Ok(text) = serde_json::to_string(candidates)
            && let Err(e) = cache
                .keep_neighbourhood(tenant, &generation, &hash, &text)
                .await
        {
            tracing::debug!(target: "ctxpack::cache", error = %e, "graph cache: not kept");
        }
        answer
    }

    /// Answers one call of a step now, from what answers its capability.
    async fn answer_now(&self, call: &Call<'static>, context: &AgentContext) -> Answer {
        let capability = call.capability();
        let answerer = self.answerers.get(capability);
        let index = match answerer {
            Some(Answerer::Upstream(u)) => u.settings().index.as_deref(),
            Some(Answerer::Index(_)) => Some(EMBEDDED_INDEX),
            _ => None,
        };
        if let Some(index) = index
            && let Some(why) = self.health.degraded(index)
        {
            return call.failed(HostError::new(
                capability,
                format!("index `{index}` is degraded: {why}"),
            ));
        }
        match answerer {
            Some(Answerer::Upstream(u)) => u.answer(call, context).await,
            Some(Answerer::Fixture(f)) => f.answer(call, context).await,
            Some(Answerer::Index(store)) => match call {
                Call::Retrieve { query, limit } => match store.search(query, *limit).await {
                    Ok(found) => Answer::Candidates(Ok(found)),
                    Err(e) => call.failed(HostError::new(capability, format!("index: {e}"))),
                },
                other => other.failed(HostError::not_provided(capability)),
            },
            Some(Answerer::AllowAll) => match call {
                Call::Review { items } => Answer::Verdicts(Ok(vec![Verdict::Allow; items.len()])),
                other => other.failed(HostError::not_provided(capability)),
            },
            None => call.failed(HostError::not_provided(capability)),
        }
    }
}
