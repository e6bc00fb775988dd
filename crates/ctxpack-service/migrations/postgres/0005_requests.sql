-- Idempotency on the whole request: each snapshot keeps the SHA-256 of
-- its normalised request, so a retry of the same request replays it and a
-- different request for the same attempt is refused (409). The user the
-- attempt ran for is kept beside the session and trace. Rows recorded
-- before this migration have no hash: a request for their attempt replays
-- them, as it did.
ALTER TABLE context_snapshots ADD COLUMN request_hash TEXT;
ALTER TABLE context_snapshots ADD COLUMN user_id TEXT;
-- Readiness writes here: a store that cannot take this write (full,
-- read-only, corrupt) cannot take a snapshot either.
CREATE TABLE readiness_probe (
    probe     TEXT PRIMARY KEY,
    probed_at TEXT NOT NULL
);
