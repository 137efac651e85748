-- +goose Up
-- Sign-in by email: its link token carries the hash of the 6-digit code
-- mailed with it, and counts the wrong codes tried (the fifth voids it).
-- Other tokens keep '' and 0.
ALTER TABLE link_tokens ADD COLUMN code_hash VARCHAR(64) NOT NULL DEFAULT '';
ALTER TABLE link_tokens ADD COLUMN code_failures INTEGER NOT NULL DEFAULT 0;
