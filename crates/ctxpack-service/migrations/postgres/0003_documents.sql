-- The embedded document index `ctxpack serve` retrieves from when no
-- retrieval upstream is configured, filled by `ctxpack ingest`: one row
-- per ingested file (its path and the SHA-256 of its content, the source
-- version its chunks cite) and its chunks, searched with PostgreSQL's
-- full-text search (English stemming, ranked by ts_rank_cd).
CREATE TABLE documents (
    path TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    chunks BIGINT NOT NULL,
    ingested_at TEXT NOT NULL
);
CREATE TABLE document_chunks (
    path TEXT NOT NULL,
    chunk BIGINT NOT NULL,
    version TEXT NOT NULL,
    text TEXT NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    PRIMARY KEY (path, chunk)
);
CREATE INDEX document_chunks_tsv ON document_chunks USING GIN (tsv);
