-- The embedded document index `ctxpack serve` retrieves from when no
-- retrieval upstream is configured, filled by `ctxpack ingest`: one row
-- per ingested file (its path and the SHA-256 of its content, the source
-- version its chunks cite) and its chunks in an FTS5 table ranked by BM25.
CREATE TABLE documents (
    path TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    chunks INTEGER NOT NULL,
    ingested_at TEXT NOT NULL
);
CREATE VIRTUAL TABLE document_chunks USING fts5(
    path UNINDEXED,
    chunk UNINDEXED,
    version UNINDEXED,
    text,
    tokenize = 'porter unicode61'
);
