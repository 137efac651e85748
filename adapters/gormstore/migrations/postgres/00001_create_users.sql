-- +goose Up
-- Ids that are sorted (users.id for the list order) use the "C" collation,
-- so that PostgreSQL orders them bytewise, as Go and SQLite do; the columns
-- referencing users.id share it.
CREATE TABLE users (
    id            TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    name          TEXT   NOT NULL,
    email         TEXT   NOT NULL,
    password_hash TEXT   NOT NULL,
    profiles      TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE UNIQUE INDEX users_email_key ON users (email);
