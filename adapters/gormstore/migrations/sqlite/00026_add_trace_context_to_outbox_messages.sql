-- +goose Up
-- The trace context of the request that queued the message (see the
-- PostgreSQL step); NULL when traces are off, and for every message
-- queued before. SQLite keeps no length: domain.MaxTraceContext (600)
-- is kept by the one writer, the tracing adapter.
ALTER TABLE outbox_messages ADD COLUMN trace_context TEXT NULL;
