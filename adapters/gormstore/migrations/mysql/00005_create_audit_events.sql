-- +goose Up
-- No foreign keys to users: the trail outlives the accounts it mentions.
-- The primary key, which sorts bytewise, is the index of the keyset pages.
CREATE TABLE audit_events (
    id          VARBINARY(255) NOT NULL PRIMARY KEY,
    occurred_at BIGINT         NOT NULL,
    type        VARBINARY(255) NOT NULL,
    actor_id    VARBINARY(255) NOT NULL,
    subject_id  VARBINARY(255) NOT NULL,
    client_ip   TEXT           NOT NULL,
    request_id  TEXT           NOT NULL,
    detail      TEXT           NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
