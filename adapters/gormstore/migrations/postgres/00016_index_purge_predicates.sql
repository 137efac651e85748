-- +goose Up
-- Housekeeping deletes, in batches, the rows nothing can use any more:
-- each batch picks the stale rows of a table by the time named here.
-- Without these indexes every batch would read the whole table (a million
-- sessions for a thousand expired ones). mfa_challenges and
-- passkey_ceremonies have theirs (expires_at) already; outbox_messages
-- holds only the messages waiting, which a scan reads at once.
CREATE INDEX refresh_families_expires_at_idx ON refresh_families (expires_at);
CREATE INDEX link_tokens_created_at_idx ON link_tokens (created_at);
CREATE INDEX login_attempts_last_failure_at_idx ON login_attempts (last_failure_at);
CREATE INDEX audit_events_occurred_at_idx ON audit_events (occurred_at);
