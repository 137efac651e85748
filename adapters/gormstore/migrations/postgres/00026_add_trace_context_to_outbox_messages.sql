-- +goose Up
-- The W3C trace context (traceparent, then a space and the tracestate)
-- of the request that queued the message, which its delivery resumes;
-- NULL when traces are off, and for every message queued before. 600
-- bytes is domain.MaxTraceContext: a traceparent (55) and the 512
-- characters of tracestate W3C Trace Context asks to keep, with room.
ALTER TABLE outbox_messages ADD COLUMN trace_context VARCHAR(600) NULL;
