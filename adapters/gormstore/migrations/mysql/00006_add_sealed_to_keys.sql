-- +goose Up
-- Whether keys.secret is sealed by the secret box (see the PostgreSQL
-- step for the why).
ALTER TABLE `keys` ADD COLUMN sealed BOOLEAN NOT NULL DEFAULT FALSE;
