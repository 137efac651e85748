-- +goose Up
CREATE TABLE keys (
    id         TEXT   NOT NULL PRIMARY KEY,
    purpose    TEXT   NOT NULL,
    algorithm  TEXT   NOT NULL,
    secret     BLOB   NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX keys_purpose_idx ON keys (purpose, created_at, id);
