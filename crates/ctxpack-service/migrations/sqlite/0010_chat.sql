-- How a chat given in a provider's shape was read (the snapshot's `chat`,
-- a JSON object: the shape, each turn's first message, the messages
-- charged by an upper bound), NULL for a request without one. Snapshots
-- recorded before it was kept read back as without one.
ALTER TABLE context_snapshots ADD COLUMN chat TEXT;
