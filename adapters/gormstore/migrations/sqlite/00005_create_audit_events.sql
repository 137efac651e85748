-- +goose Up
-- No foreign keys to users: the trail outlives the accounts it mentions.
-- The primary key is the index of the keyset pages.
CREATE TABLE audit_events (
    id          TEXT   NOT NULL PRIMARY KEY,
    occurred_at BIGINT NOT NULL,
    type        TEXT   NOT NULL,
    actor_id    TEXT   NOT NULL,
    subject_id  TEXT   NOT NULL,
    client_ip   TEXT   NOT NULL,
    request_id  TEXT   NOT NULL,
    detail      TEXT   NOT NULL
);
