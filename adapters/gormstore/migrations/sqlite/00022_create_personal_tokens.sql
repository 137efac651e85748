-- +goose Up
-- The users' personal access tokens (see the PostgreSQL step).
CREATE TABLE personal_tokens (
    id           TEXT   NOT NULL PRIMARY KEY,
    user_id      TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT   NOT NULL,
    scopes       TEXT   NOT NULL,
    hash         TEXT   NOT NULL,
    prefix       TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    last_used_at BIGINT NOT NULL,
    revoked_at   BIGINT NULL
);
CREATE UNIQUE INDEX personal_tokens_hash_key ON personal_tokens (hash);
CREATE INDEX personal_tokens_user_id_created_at_idx ON personal_tokens (user_id, created_at);
CREATE INDEX personal_tokens_expires_at_idx ON personal_tokens (expires_at);
CREATE INDEX personal_tokens_revoked_at_idx ON personal_tokens (revoked_at);
