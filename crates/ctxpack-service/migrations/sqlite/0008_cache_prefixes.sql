-- The prefixes of the pack's messages a provider's prompt cache could
-- serve on the next turn (the snapshot's `cache-prefixes`, a JSON list);
-- an empty list for every snapshot recorded before they were kept.
ALTER TABLE context_snapshots ADD COLUMN cache_prefixes TEXT NOT NULL DEFAULT '[]';
