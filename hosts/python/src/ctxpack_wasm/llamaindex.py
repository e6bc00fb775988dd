"""ctxpack as a LlamaIndex node postprocessor (needs ``llama-index-core``,
the extra ``ctxpack-wasm[llamaindex]``).

:class:`CtxpackPostprocessor` packs the nodes a retriever found into an
exact token budget: ranked by their scores (else the retriever's order),
near-duplicates dropped, as many as fit kept, each with the snapshot's id
in its metadata (excluded from what the model and the embedder read).
:meth:`CtxpackPostprocessor.pack_nodes` gives the pack too, with the
snapshot that says why every other node was dropped.
"""

from __future__ import annotations

from typing import Any, List, Optional

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from ._retrieved import Retrieved, pack
from .types import ContextPack

__all__ = ["CtxpackPostprocessor"]

SNAPSHOT_KEY = "ctxpack_snapshot_id"


class CtxpackPostprocessor(BaseNodePostprocessor):
    """Keeps the best nodes that fit ``max_tokens`` (counted exactly in
    ``tokenizer``, each with its citation, as ctxpack renders it)."""

    max_tokens: int
    """Most tokens the kept nodes' texts may take, citations included."""
    tokenizer: Any = "o200k-base"
    """``"o200k-base"``, ``"cl100k-base"`` or ``Tokenizer.chars_per_token(n)``."""
    trust: str = "trusted"
    """How far the nodes are trusted: ``"untrusted"`` counts them fenced."""
    near_duplicate_threshold: float = 0.8
    """Similarity at which a lower-ranked node is a copy (1: exact only)."""

    @classmethod
    def class_name(cls) -> str:
        return "CtxpackPostprocessor"

    def pack_nodes(self, nodes: List[NodeWithScore], query: str) -> tuple[List[NodeWithScore], ContextPack]:
        """The kept nodes and the pack that kept them."""
        retrieved = [
            Retrieved(n.node.get_content(metadata_mode=MetadataMode.NONE),
                      str(n.node.metadata.get("file_name") or n.node.node_id), n.score)
            for n in nodes
        ]
        kept, result = pack(retrieved, query, max_tokens=self.max_tokens, tokenizer=self.tokenizer,
                            trust=self.trust, near_duplicate_threshold=self.near_duplicate_threshold)
        out = []
        for k in kept:
            given = nodes[k.index]
            node = given.node.model_copy()
            node.metadata = {**node.metadata, SNAPSHOT_KEY: result.snapshot.id}
            node.excluded_llm_metadata_keys = [*node.excluded_llm_metadata_keys, SNAPSHOT_KEY]
            node.excluded_embed_metadata_keys = [*node.excluded_embed_metadata_keys, SNAPSHOT_KEY]
            out.append(NodeWithScore(node=node, score=given.score))
        return out, result

    def _postprocess_nodes(self, nodes: List[NodeWithScore],
                           query_bundle: Optional[QueryBundle] = None) -> List[NodeWithScore]:
        query = query_bundle.query_str if query_bundle is not None else ""
        return self.pack_nodes(nodes, query)[0]
