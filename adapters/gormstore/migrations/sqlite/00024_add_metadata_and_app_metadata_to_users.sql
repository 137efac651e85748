-- +goose Up
-- What apps keep on an account (see the PostgreSQL step). Existing
-- accounts get the empty object.
ALTER TABLE users ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE users ADD COLUMN app_metadata TEXT NOT NULL DEFAULT '{}';
