"""The calls a step may ask for, one per function the component imports.
Written by `cargo run -p ctxpack-codegen` from `wit/world.wit`: do not
edit."""

from __future__ import annotations

from typing import Any, NamedTuple, Tuple


class Call(NamedTuple):
    """How a host answers one call."""

    interface: str
    """The interface that lends it: the keyword argument the host's object
    for it is given as (``sources``, ``policy``, ``summarizer``)."""
    capability: str
    """As a host error names it (``sources.retrieve``)."""
    method: str
    """The host object's method."""
    alone: bool
    """The interface's only function: a plain function may lend it."""
    context: bool
    """Whether it takes the request's context first."""
    params: Tuple[Tuple[str, Any], ...]
    """Its arguments in order: each key in the call and WIT type."""
    answer: Any
    """The WIT type of what it answers."""


CALLS = {
    "retrieve": Call("sources", "sources.retrieve", "retrieve", False, True, (("query", 'string'), ("limit", 'u32')), ['list', ['ref', 'Candidate']]),
    "expand-graph": Call("sources", "sources.expand-graph", "expand_graph", False, True, (("item-ids", ['list', 'string']), ("depth", 'u32')), ['list', ['ref', 'Candidate']]),
    "recall-memory": Call("sources", "sources.recall-memory", "recall_memory", False, True, (("user-id", 'string'), ("query", 'string'), ("limit", 'u32')), ['list', ['ref', 'Candidate']]),
    "repository-state": Call("sources", "sources.repository-state", "repository_state", False, True, (), ['list', ['ref', 'Candidate']]),
    "review": Call("policy", "policy.review", "review", True, True, (("items", ['list', ['ref', 'Candidate']]),), ['list', ['ref', 'Verdict']]),
    "summarize": Call("summarizer", "summarizer.summarize", "summarize", True, False, (("requests", ['list', ['ref', 'SummaryRequest']]), ("tokenizer", ['ref', 'Tokenizer'])), ['list', 'string']),
    "count-tokens": Call("counter", "counter.count-tokens", "count_tokens", False, False, (("tokenizer", 'string'), ("texts", ['list', 'string'])), ['list', 'u32']),
    "count-messages": Call("counter", "counter.count-messages", "count_messages", False, False, (("tokenizer", 'string'), ("lists", ['list', ['ref', 'MessageList']])), ['list', 'u32']),
    "split-text": Call("counter", "counter.split-text", "split_text", False, False, (("texts", ['list', 'string']),), ['list', ['ref', 'TextPieces']]),
}

# The sources each profile may call (with its settings at their
# fullest), from the core's `Profile::sources`.
DEFAULT_PROFILE = "passthrough"
PROFILES = {
    "passthrough": (),
    "rag": ("sources.retrieve",),
    "rag-memory": ("sources.retrieve", "sources.recall-memory"),
    "full": ("sources.retrieve", "sources.expand-graph", "sources.recall-memory", "sources.repository-state"),
}
