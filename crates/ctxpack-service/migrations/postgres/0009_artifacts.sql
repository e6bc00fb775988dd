-- The plans and contents live in the artifact store, by hash; the database
-- keeps only the references. Run by the store once every body is copied
-- there (snapshots::Store::move_contents), not with the other migrations.
ALTER TABLE context_contents DROP COLUMN body;
ALTER TABLE context_contents RENAME TO context_artifacts;
ALTER TRIGGER context_contents_immutable ON context_artifacts RENAME TO context_artifacts_immutable;
