-- What compression did to each section over its share, and why (the
-- snapshot's `compressions`, a JSON list). Snapshots recorded before it
-- was kept read back with none.
ALTER TABLE context_snapshots ADD COLUMN compressions TEXT NOT NULL DEFAULT '[]';
