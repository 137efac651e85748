-- +goose Up
-- A session shows when it was last used (a refresh), and the User-Agent
-- and client IP of the sign-in that opened it. A session opened before
-- this step was last used, as far as anyone knows, when it was opened.
ALTER TABLE refresh_families ADD COLUMN last_used_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE refresh_families ADD COLUMN user_agent TEXT NOT NULL DEFAULT '';
ALTER TABLE refresh_families ADD COLUMN ip TEXT NOT NULL DEFAULT '';
UPDATE refresh_families SET last_used_at = created_at;
-- The catch-up poll of ended sessions reads the families revoked lately.
CREATE INDEX refresh_families_revoked_at_idx ON refresh_families (revoked_at);
