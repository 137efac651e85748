-- +goose Up
-- The tokens sent in links, by their SHA-256 (the token itself is never
-- stored), deleted with their user. used_at is set once the token is used
-- or voided. user_id shares the "C" collation of users.id. The index
-- serves the mail budget (a user's requested tokens since a time) and
-- voiding (a user's unused tokens).
CREATE TABLE link_tokens (
    hash       TEXT    NOT NULL PRIMARY KEY,
    purpose    TEXT    NOT NULL,
    user_id    TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email      TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL,
    requested  BOOLEAN NOT NULL,
    used_at    BIGINT  NULL
);
CREATE INDEX link_tokens_user_id_created_at_idx ON link_tokens (user_id, created_at);
