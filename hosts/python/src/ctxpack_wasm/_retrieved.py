"""What the document drop-ins share: retrieved texts packed into a budget
by ctxpack, the kept ones named by their index."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence

from . import Builder
from .types import AgentContext, AssembleRequest, Candidate, ContextPack, Provenance


class Retrieved(NamedTuple):
    """One retrieved text as a framework holds it."""

    text: str
    reference: str
    """Where it came from (its source, or its id)."""
    score: Optional[float]
    """The retriever's relevance score, when it gave one."""


class Kept(NamedTuple):
    index: int
    """Its place among the retrieved."""
    tokens: int
    """What it costs in the pack, its citation included."""


class _Lent:
    """The retrieved texts, lent as the retriever the assembly calls."""

    def __init__(self, candidates: list[Candidate]) -> None:
        self.candidates = candidates

    def retrieve(self, context: AgentContext, query: str, limit: int) -> list[Candidate]:
        return self.candidates[:limit]


def pack(retrieved: Sequence[Retrieved], query: str, *, max_tokens: int, tokenizer: Any,
         trust: str, near_duplicate_threshold: float) -> tuple[list[Kept], ContextPack]:
    """The retrieved texts that fit ``max_tokens``, in rank order (by score,
    else the retriever's order), near-duplicates dropped. Nothing is cut
    or summarised (the plan does not compress): a kept text is the
    original, and the pack holds exactly the kept ones."""
    candidates = [
        Candidate(id=f"doc-{i}", section="relevant-knowledge", text=r.text,
                  trust=trust,  # type: ignore[arg-type]
                  provenance=Provenance(source_kind="retrieved", reference=r.reference),
                  score=r.score if r.score is not None else 1.0 / (i + 1))
        for i, r in enumerate(retrieved)
    ]
    builder = Builder({
        "profile": {"rag": {"retrieve_limit": max(len(candidates), 1)}},
        "near_duplicate_threshold": near_duplicate_threshold,
        "plan": {"compress": False},
    })
    result = builder.assemble(AssembleRequest(query=query, budget=max_tokens, tokenizer=tokenizer),
                              sources=_Lent(candidates))
    cut = {e.id for e in result.snapshot.entries if e.compressed}
    kept = [Kept(int(e.id[4:]), e.tokens) for e in result.entries
            if e.id.startswith("doc-") and e.id not in cut]
    return kept, result
