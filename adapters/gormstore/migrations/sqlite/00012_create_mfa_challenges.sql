-- +goose Up
-- The mfaTokens of logins waiting for their second factor, by their
-- SHA-256 (the token itself is never stored), deleted with their user.
-- used_at is set once the token is used or voided; failures counts the
-- wrong codes. The index serves the pruning of expired tokens, which keeps
-- the table small (no index on user_id: the cascade of a user's deletion
-- scans a few minutes' worth of logins).
CREATE TABLE mfa_challenges (
    hash       TEXT    NOT NULL PRIMARY KEY,
    user_id    TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email      TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL,
    failures   INTEGER NOT NULL,
    used_at    BIGINT  NULL
);
CREATE INDEX mfa_challenges_expires_at_idx ON mfa_challenges (expires_at);
