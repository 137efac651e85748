-- +goose Up
CREATE TABLE users (
    id            TEXT   NOT NULL PRIMARY KEY,
    name          TEXT   NOT NULL,
    email         TEXT   NOT NULL,
    password_hash TEXT   NOT NULL,
    profiles      TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE UNIQUE INDEX users_email_key ON users (email);
