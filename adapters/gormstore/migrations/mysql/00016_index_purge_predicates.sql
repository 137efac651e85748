-- +goose Up
-- Housekeeping's batches pick the stale rows of a table by these times
-- (see the PostgreSQL step).
CREATE INDEX refresh_families_expires_at_idx ON refresh_families (expires_at);
CREATE INDEX link_tokens_created_at_idx ON link_tokens (created_at);
CREATE INDEX login_attempts_last_failure_at_idx ON login_attempts (last_failure_at);
CREATE INDEX audit_events_occurred_at_idx ON audit_events (occurred_at);
