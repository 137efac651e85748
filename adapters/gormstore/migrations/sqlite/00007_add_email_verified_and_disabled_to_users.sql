-- +goose Up
-- The account status. Accounts made before this step read as not verified:
-- only a link, a reset, an admin, the bootstrap, the CLI or the import
-- verify an address, and none of them vouched for these. None is disabled.
ALTER TABLE users ADD COLUMN email_verified BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE users ADD COLUMN disabled BOOLEAN NOT NULL DEFAULT FALSE;
