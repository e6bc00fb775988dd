//! What the core asks of its host: stores, policy and a summariser.
//!
//! The core does no I/O. Adapters implement [`Host`] over whatever the host
//! has: WIT imports in the component, JS callbacks in the browser, plain Rust
//! in a native application. Every call is batched: one per source per
//! assembly, one per review round (see [`crate::REVIEW_ROUNDS`]). A host
//! that cannot answer inside a call (its stores are asynchronous) drives
//! an [`crate::Assembly`] step by step instead.

use crate::capability::Capability;
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

/// The capabilities a host lends the core. Every call may fail. A host
/// implements what it has: each function it leaves out fails, naming its
/// capability as not provided (see [`NoHost`]).
pub trait Host {
    /// Candidates for a query from the host's index.
    fn retrieve(
        &mut self,
        _context: &AgentContext,
        _query: &str,
        _limit: u32,
    ) -> Result<Vec<Candidate>, HostError> {
        Err(HostError::not_provided(Capability::Retrieve.name()))
    }

    /// Candidates at most `depth` graph hops from the given items.
    fn expand_graph(
        &mut self,
        _context: &AgentContext,
        _item_ids: &[String],
        _depth: u32,
    ) -> Result<Vec<Candidate>, HostError> {
        Err(HostError::not_provided(Capability::ExpandGraph.name()))
    }

    /// Long-term memory of one user.
    fn recall_memory(
        &mut self,
        _context: &AgentContext,
        _user_id: &str,
        _query: &str,
        _limit: u32,
    ) -> Result<Vec<Candidate>, HostError> {
        Err(HostError::not_provided(Capability::RecallMemory.name()))
    }

    /// The state of the repository the attempt works on.
    fn repository_state(&mut self, _context: &AgentContext) -> Result<Vec<Candidate>, HostError> {
        Err(HostError::not_provided(Capability::RepositoryState.name()))
    }

    /// One verdict per item, in order.
    fn review(
        &mut self,
        _context: &AgentContext,
        _items: &[&Candidate],
    ) -> Result<Vec<Verdict>, HostError> {
        Err(HostError::not_provided(Capability::Review.name()))
    }

    /// One summary per request, in order: each request's text summarised
    /// to at most its target tokens of `tokenizer`.
    fn summarize(
        &mut self,
        _requests: &[SummaryRequest],
        _tokenizer: Tokenizer,
    ) -> Result<Vec<String>, HostError> {
        Err(HostError::not_provided(Capability::Summarize.name()))
    }

    /// The tokens of each text, in order, as the tokenizer the request
    /// names `tokenizer` (its `Tokenizer::Host`) counts them. Asked in
    /// rounds, each with every text the assembly needs that it has not
    /// counted yet. Counts are taken as they are (see
    /// [`Tokenizer::Host`]).
    fn count_tokens(&mut self, _tokenizer: &str, _texts: &[String]) -> Result<Vec<u32>, HostError> {
        Err(HostError::not_provided(Capability::CountTokens.name()))
    }

    /// The tokens of each list of a trim's messages, in order, as
    /// `tokenizer` (the trim's `Tokenizer::Host`) counts a request of
    /// them: the chat's messages by index, in their order, a cut one
    /// spelt out (see [`crate::MessageList`]).
    fn count_messages(
        &mut self,
        _tokenizer: &str,
        _lists: &[crate::types::MessageList],
    ) -> Result<Vec<u32>, HostError> {
        Err(HostError::not_provided(Capability::CountMessages.name()))
    }

    /// Each text split into the pieces a cut message may keep, in order
    /// (a trim's `TextSplit::Host`).
    fn split_text(
        &mut self,
        _texts: &[String],
    ) -> Result<Vec<crate::types::TextPieces>, HostError> {
        Err(HostError::not_provided(Capability::SplitText.name()))
    }
}

/// A host that lends nothing: every call fails, naming the import. Use it
/// where an application has no stores (the passthrough case).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHost;

impl Host for NoHost {}
