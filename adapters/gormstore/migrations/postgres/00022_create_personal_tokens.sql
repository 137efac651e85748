-- +goose Up
-- The users' personal access tokens, deleted with their user. Never a
-- token itself: hash is its SHA-256 in hex, unique, what every request
-- with a token finds it by; prefix is what the lists show of it. scopes
-- is a JSON array of strings, as oauth_clients' lists (migration 18 says
-- why). last_used_at is 0 for a token never used, revoked_at NULL for one
-- not revoked. The index on (user_id, created_at) serves a user's list,
-- newest first, the count of the live ones under the limit, and the
-- cascade from users; expires_at and revoked_at serve the purge, one
-- index each for the two ways a token ends. id, the tie-break of the
-- list, sorts bytewise ("C") as in Go; user_id shares the "C"
-- collation of users.id.
CREATE TABLE personal_tokens (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    user_id      TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
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
