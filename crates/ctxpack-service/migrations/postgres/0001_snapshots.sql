-- The seed's two tables (ContextSnapshots, ContextItems), the content they
-- reference stored once by hash, the ContextAssembled outbox, and the
-- deleted citations recorded beside (never in) the snapshots.

CREATE TABLE context_contents (
    content_hash TEXT PRIMARY KEY,          -- hex SHA-256 of body's UTF-8 bytes
    kind         TEXT NOT NULL,             -- 'context' or 'plan'
    body         TEXT NOT NULL
);

CREATE TABLE context_snapshots (
    context_snapshot_id  TEXT PRIMARY KEY,
    tenant_id            TEXT NOT NULL,
    project_id           TEXT,
    run_id               TEXT NOT NULL,
    attempt_id           TEXT NOT NULL,
    plan_ref             TEXT NOT NULL REFERENCES context_contents (content_hash),
    token_budget         BIGINT NOT NULL,
    tokens_used          BIGINT NOT NULL,
    status               TEXT NOT NULL,     -- JSON list: every condition that holds
    index_revisions      TEXT NOT NULL,     -- JSON list
    memory_items         TEXT NOT NULL,     -- JSON list
    content_ref          TEXT NOT NULL REFERENCES context_contents (content_hash),
    assembled_at         TEXT NOT NULL,
    failure              TEXT,
    session_id           TEXT,
    trace_id             TEXT,
    scopes               TEXT NOT NULL,     -- JSON list
    tokenizer            TEXT NOT NULL,     -- JSON
    text_tokens          BIGINT NOT NULL,
    message_tokens       BIGINT NOT NULL,
    stable_prefix_tokens BIGINT NOT NULL,
    profile              TEXT NOT NULL,
    source_calls         TEXT NOT NULL,     -- JSON
    compression          TEXT NOT NULL,     -- JSON
    UNIQUE (tenant_id, run_id, attempt_id)
);
CREATE INDEX context_snapshots_by_run ON context_snapshots (tenant_id, run_id, assembled_at);

CREATE TABLE context_items (
    context_snapshot_id TEXT NOT NULL REFERENCES context_snapshots (context_snapshot_id),
    position            BIGINT NOT NULL,
    item_id             TEXT NOT NULL,
    layer               TEXT NOT NULL,
    section             TEXT NOT NULL,
    origin              TEXT NOT NULL,
    source_kind         TEXT,
    reference           TEXT,
    source_version      TEXT,
    index_revision      TEXT,
    trust_tier          TEXT NOT NULL,
    score               DOUBLE PRECISION,
    included            BOOLEAN NOT NULL,
    drop_reason         TEXT,
    reason              TEXT NOT NULL,      -- JSON: the reason with its details
    tokens              BIGINT NOT NULL,
    counted             TEXT NOT NULL,
    compressed          BOOLEAN NOT NULL,
    redacted            BOOLEAN NOT NULL,
    run_last_id         TEXT,
    run_count           BIGINT,
    PRIMARY KEY (context_snapshot_id, position)
);
CREATE INDEX context_items_by_reference ON context_items (reference);

CREATE TABLE context_outbox (
    sequence     BIGSERIAL PRIMARY KEY,
    event_id     TEXT NOT NULL UNIQUE,      -- the snapshot's id: one event per snapshot
    topic        TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    payload      TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

CREATE TABLE deleted_citations (
    context_snapshot_id TEXT NOT NULL REFERENCES context_snapshots (context_snapshot_id),
    source_id           TEXT NOT NULL,
    tenant_id           TEXT NOT NULL,
    deleted_at          TEXT NOT NULL,
    PRIMARY KEY (context_snapshot_id, source_id)
);

-- A snapshot, its items and stored content are never changed or removed.
CREATE FUNCTION ctxpack_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is immutable', TG_TABLE_NAME;
END;
$$;
CREATE TRIGGER context_snapshots_immutable BEFORE UPDATE OR DELETE ON context_snapshots
    FOR EACH ROW EXECUTE FUNCTION ctxpack_immutable();
CREATE TRIGGER context_items_immutable BEFORE UPDATE OR DELETE ON context_items
    FOR EACH ROW EXECUTE FUNCTION ctxpack_immutable();
CREATE TRIGGER context_contents_immutable BEFORE UPDATE OR DELETE ON context_contents
    FOR EACH ROW EXECUTE FUNCTION ctxpack_immutable();
