-- +goose Up
-- When a session was last used, and the User-Agent and client IP of its
-- sign-in (see the PostgreSQL step). VARCHARs, for their literal default
-- (as amr): the User-Agent is kept to domain.MaxUserAgentLen (256)
-- characters, an address is shorter.
ALTER TABLE refresh_families ADD COLUMN last_used_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE refresh_families ADD COLUMN user_agent VARCHAR(1024) NOT NULL DEFAULT '';
ALTER TABLE refresh_families ADD COLUMN ip VARCHAR(255) NOT NULL DEFAULT '';
UPDATE refresh_families SET last_used_at = created_at;
-- The catch-up poll of ended sessions reads the families revoked lately.
CREATE INDEX refresh_families_revoked_at_idx ON refresh_families (revoked_at);
