-- The plans and contents live in the artifact store, by hash; the database
-- keeps only the references. Run by the store once every body is copied
-- there (snapshots::Store::move_contents), not with the other migrations.
DROP TRIGGER context_contents_immutable_update;
DROP TRIGGER context_contents_immutable_delete;
ALTER TABLE context_contents DROP COLUMN body;
ALTER TABLE context_contents RENAME TO context_artifacts;
CREATE TRIGGER context_artifacts_immutable_update BEFORE UPDATE ON context_artifacts
BEGIN SELECT RAISE(ABORT, 'stored content is immutable'); END;
CREATE TRIGGER context_artifacts_immutable_delete BEFORE DELETE ON context_artifacts
BEGIN SELECT RAISE(ABORT, 'stored content is immutable'); END;
