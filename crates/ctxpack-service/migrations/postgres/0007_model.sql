-- The model the request named and what was taken from its profile (the
-- snapshot's `model`, a JSON object), or NULL when it named none, as every
-- snapshot recorded before it was kept did.
ALTER TABLE context_snapshots ADD COLUMN model TEXT;
