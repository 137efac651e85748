-- +goose Up
-- A session that its client ends after a time without use (the web
-- pages': 30 minutes) ends in the store too, idle_timeout microseconds
-- after its last_used_at, so that it is neither listed nor refreshed
-- once lapsed, whether or not its client comes back. 0, every session
-- before this step and those of the API: no idle limit, only expires_at.
ALTER TABLE refresh_families ADD COLUMN idle_timeout BIGINT NOT NULL DEFAULT 0;
