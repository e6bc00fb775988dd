//! What the core asks of its host: stores, policy and a summariser.
//!
//! The core does no I/O. Adapters implement [`Host`] over whatever the host
//! has: WIT imports in the component, JS callbacks in the browser, plain Rust
//! in a native application. Every call is batched: one per source per
//! assembly, one per review round (see [`crate::REVIEW_ROUNDS`]). A host
//! that cannot answer inside a call (its stores are asynchronous) drives
//! an [`crate::Assembly`] step by step instead.

use crate::error::HostError;
use crate::types::{AgentContext, Candidate, SummaryRequest, Tokenizer};
use serde::{Deserialize, Serialize};

/// The policy's word on one item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Include as is.
    Allow,
    /// Include with this text instead.
    Redact(String),
    /// Leave out, for this reason.
    Deny(String),
}

/// The capabilities a host lends the core. Every call may fail.
pub trait Host {
    /// Candidates for a query from the host's index.
    fn retrieve(
        &mut self,
        context: &AgentContext,
        query: &str,
        limit: u32,
    ) -> Result<Vec<Candidate>, HostError>;

    /// Candidates at most `depth` graph hops from the given items.
    fn expand_graph(
        &mut self,
        context: &AgentContext,
        item_ids: &[String],
        depth: u32,
    ) -> Result<Vec<Candidate>, HostError>;

    /// Long-term memory of one user.
    fn recall_memory(
        &mut self,
        context: &AgentContext,
        user_id: &str,
        query: &str,
        limit: u32,
    ) -> Result<Vec<Candidate>, HostError>;

    /// The state of the repository the attempt works on.
    fn repository_state(&mut self, context: &AgentContext) -> Result<Vec<Candidate>, HostError>;

    /// One verdict per item, in order.
    fn review(
        &mut self,
        context: &AgentContext,
        items: &[&Candidate],
    ) -> Result<Vec<Verdict>, HostError>;

    /// One summary per request, in order: each request's text summarised
    /// to at most its target tokens of `tokenizer`.
    fn summarize(
        &mut self,
        requests: &[SummaryRequest],
        tokenizer: Tokenizer,
    ) -> Result<Vec<String>, HostError>;
}

/// A host that lends nothing: every call fails, naming the import. Use it
/// where an application has no stores (the passthrough case).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHost;

impl Host for NoHost {
    fn retrieve(&mut self, _: &AgentContext, _: &str, _: u32) -> Result<Vec<Candidate>, HostError> {
        Err(HostError::not_provided("sources.retrieve"))
    }
    fn expand_graph(
        &mut self,
        _: &AgentContext,
        _: &[String],
        _: u32,
    ) -> Result<Vec<Candidate>, HostError> {
        Err(HostError::not_provided("sources.expand-graph"))
    }
    fn recall_memory(
        &mut self,
        _: &AgentContext,
        _: &str,
        _: &str,
        _: u32,
    ) -> Result<Vec<Candidate>, HostError> {
        Err(HostError::not_provided("sources.recall-memory"))
    }
    fn repository_state(&mut self, _: &AgentContext) -> Result<Vec<Candidate>, HostError> {
        Err(HostError::not_provided("sources.repository-state"))
    }
    fn review(&mut self, _: &AgentContext, _: &[&Candidate]) -> Result<Vec<Verdict>, HostError> {
        Err(HostError::not_provided("policy.review"))
    }
    fn summarize(&mut self, _: &[SummaryRequest], _: Tokenizer) -> Result<Vec<String>, HostError> {
        Err(HostError::not_provided("summarizer.summarize"))
    }
}
