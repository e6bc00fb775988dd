-- How host texts and turns were written into the rendered context (the
-- snapshot's `fence`, a JSON object: whether the nonce was keyed, and the
-- entries that lost characters or had a structure defused). Snapshots
-- recorded before it was kept read back as unkeyed, with none.
ALTER TABLE context_snapshots ADD COLUMN fence TEXT NOT NULL DEFAULT '{"keyed":false,"stripped":[],"defused":[]}';
