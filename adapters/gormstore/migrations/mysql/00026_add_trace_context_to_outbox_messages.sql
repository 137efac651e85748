-- +goose Up
-- The trace context of the request that queued the message (see the
-- PostgreSQL step); NULL when traces are off, and for every message
-- queued before. ASCII, never compared: a VARCHAR, not a VARBINARY.
ALTER TABLE outbox_messages ADD COLUMN trace_context VARCHAR(600) NULL;
