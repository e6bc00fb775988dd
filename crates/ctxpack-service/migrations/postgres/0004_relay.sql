-- The outbox relay marks each event once the broker has acknowledged it
-- (NULL: waiting); the pending ones are found by the partial index, oldest
-- first. index_health holds what IndexDegraded and IndexRevisionReady
-- said of each index, read by every replica.
ALTER TABLE context_outbox ADD COLUMN published_at TEXT;
CREATE INDEX context_outbox_pending ON context_outbox (sequence) WHERE published_at IS NULL;
CREATE TABLE index_health (
    index_id   TEXT PRIMARY KEY,
    degraded   BOOLEAN NOT NULL,
    reason     TEXT NOT NULL,
    changed_at TEXT NOT NULL
);
