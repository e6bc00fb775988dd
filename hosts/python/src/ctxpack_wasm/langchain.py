"""ctxpack as a LangChain document compressor (needs ``langchain_core``,
the extra ``ctxpack-wasm[langchain]``).

:class:`CtxpackCompressor` packs the documents a retriever found into an
exact token budget: ranked by their scores (``metadata["relevance_score"]``
when the retriever gives one, else the retriever's order), near-duplicates
dropped, and as many as fit kept — the originals, in rank order, each
with ``metadata["ctxpack"]`` saying which snapshot kept it and what it
costs. :meth:`CtxpackCompressor.pack_documents` gives the pack too, with
the snapshot that says why every other document was dropped.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict

from ._retrieved import Retrieved, pack
from .types import ContextPack

__all__ = ["CtxpackCompressor"]


class CtxpackCompressor(BaseDocumentCompressor):
    """Keeps the best documents that fit ``max_tokens`` (counted exactly in
    ``tokenizer``, each with its citation, as ctxpack renders it)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    max_tokens: int
    """Most tokens the kept documents may take, citations included."""
    tokenizer: Any = "o200k-base"
    """``"o200k-base"``, ``"cl100k-base"`` or ``Tokenizer.chars_per_token(n)``."""
    trust: str = "trusted"
    """How far the documents are trusted: ``"untrusted"`` counts them
    fenced, as ctxpack would render them in a prompt."""
    near_duplicate_threshold: float = 0.8
    """Similarity at which a lower-ranked document is a copy (1: exact only)."""

    def pack_documents(self, documents: Sequence[Document], query: str) -> tuple[list[Document], ContextPack]:
        """The kept documents and the pack that kept them (its snapshot says
        why each other document was dropped)."""
        documents = list(documents)
        retrieved = []
        for i, d in enumerate(documents):
            score = d.metadata.get("relevance_score")
            retrieved.append(Retrieved(
                d.page_content, str(d.metadata.get("source") or d.id or f"doc-{i}"),
                float(score) if isinstance(score, (int, float)) else None))
        kept, result = pack(retrieved, query, max_tokens=self.max_tokens, tokenizer=self.tokenizer,
                            trust=self.trust, near_duplicate_threshold=self.near_duplicate_threshold)
        out = []
        for k in kept:
            d = documents[k.index]
            meta = {**d.metadata, "ctxpack": {"snapshot_id": result.snapshot.id, "tokens": k.tokens}}
            out.append(Document(page_content=d.page_content, metadata=meta, id=d.id))
        return out, result

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Optional[Callbacks] = None) -> Sequence[Document]:
        """The best documents that fit, in rank order."""
        return self.pack_documents(documents, query)[0]
