-- +goose Up
-- The messages to send, deleted once sent (see the PostgreSQL step). The
-- index serves the claims, which look for the due messages.
CREATE TABLE outbox_messages (
    id              VARBINARY(255) NOT NULL PRIMARY KEY,
    kind            VARBINARY(255) NOT NULL,
    payload         LONGBLOB       NOT NULL,
    secret          BOOLEAN        NOT NULL,
    created_at      BIGINT         NOT NULL,
    next_attempt_at BIGINT         NOT NULL,
    attempts        INTEGER        NOT NULL,
    last_error      TEXT           NOT NULL,
    claimed_until   BIGINT         NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX outbox_messages_next_attempt_at_idx ON outbox_messages (next_attempt_at);
