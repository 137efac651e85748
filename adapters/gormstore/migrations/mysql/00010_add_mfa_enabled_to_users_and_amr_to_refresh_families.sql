-- +goose Up
-- Whether the account has a second factor, and how a session signed in
-- (see the PostgreSQL step). amr is a VARCHAR: MySQL 8 gives a TEXT column
-- no literal default.
ALTER TABLE users ADD COLUMN mfa_enabled BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE refresh_families ADD COLUMN amr VARCHAR(255) NOT NULL DEFAULT 'pwd';
