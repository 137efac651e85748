-- +goose Up
-- Sign-in by email: its link token carries the hash of the 6-digit code
-- mailed with it, and counts the wrong codes tried (the fifth voids it);
-- other tokens keep '' and 0. A sign-up's token (USERD_EMAIL_SIGNUP) has
-- no user yet: user_id becomes nullable, which SQLite does only by
-- rebuilding the table. Codes are looked up by the email they were sent
-- to.
--
-- The two columns are added before the rebuild, so that the step fails
-- when it runs a second time ("duplicate column"): processes that share
-- the file and migrate together are not serialised on SQLite, and
-- Migrate relies on a step raced by another process failing, to find it
-- applied (migrate.go, up). A rebuild alone would succeed twice, and the
-- step be recorded twice.
ALTER TABLE link_tokens ADD COLUMN code_hash VARCHAR(64) NOT NULL DEFAULT '';
ALTER TABLE link_tokens ADD COLUMN code_failures INTEGER NOT NULL DEFAULT 0;
CREATE TABLE link_tokens_new (
    hash          TEXT    NOT NULL PRIMARY KEY,
    purpose       TEXT    NOT NULL,
    user_id       TEXT    NULL REFERENCES users (id) ON DELETE CASCADE,
    email         TEXT    NOT NULL,
    created_at    BIGINT  NOT NULL,
    expires_at    BIGINT  NOT NULL,
    requested     BOOLEAN NOT NULL,
    used_at       BIGINT  NULL,
    code_hash     VARCHAR(64) NOT NULL DEFAULT '',
    code_failures INTEGER NOT NULL DEFAULT 0
);
INSERT INTO link_tokens_new (hash, purpose, user_id, email, created_at, expires_at, requested, used_at,
        code_hash, code_failures)
    SELECT hash, purpose, user_id, email, created_at, expires_at, requested, used_at,
        code_hash, code_failures FROM link_tokens;
DROP TABLE link_tokens;
ALTER TABLE link_tokens_new RENAME TO link_tokens;
CREATE INDEX link_tokens_user_id_created_at_idx ON link_tokens (user_id, created_at);
CREATE INDEX link_tokens_created_at_idx ON link_tokens (created_at);
CREATE INDEX link_tokens_email_purpose_idx ON link_tokens (email, purpose);
