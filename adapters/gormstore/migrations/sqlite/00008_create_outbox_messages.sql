-- +goose Up
-- The messages to send, deleted once sent. payload is sealed by the secret
-- box (the row's id as associated data) when secret is true. claimed_until
-- is the end of the lease of the sender that claimed the message, NULL
-- while none has. The index serves the claims, which look for the due
-- messages.
CREATE TABLE outbox_messages (
    id              TEXT    NOT NULL PRIMARY KEY,
    kind            TEXT    NOT NULL,
    payload         BLOB    NOT NULL,
    secret          BOOLEAN NOT NULL,
    created_at      BIGINT  NOT NULL,
    next_attempt_at BIGINT  NOT NULL,
    attempts        INTEGER NOT NULL,
    last_error      TEXT    NOT NULL,
    claimed_until   BIGINT  NULL
);
CREATE INDEX outbox_messages_next_attempt_at_idx ON outbox_messages (next_attempt_at);
