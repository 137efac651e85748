-- +goose Up
-- The id, the tie-breaker of the key order, sorts bytewise ("C"), as in Go.
CREATE TABLE keys (
    id         TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    purpose    TEXT   NOT NULL,
    algorithm  TEXT   NOT NULL,
    secret     BYTEA  NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX keys_purpose_idx ON keys (purpose, created_at, id);
