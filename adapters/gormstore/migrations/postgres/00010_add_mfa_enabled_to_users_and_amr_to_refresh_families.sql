-- +goose Up
-- Whether the account has a second factor (a confirmed TOTP factor or a
-- passkey), kept on the user so that a login reads it with the user. No
-- account had one before this step.
ALTER TABLE users ADD COLUMN mfa_enabled BOOLEAN NOT NULL DEFAULT FALSE;
-- How a session signed in: the RFC 8176 methods of its access tokens'
-- amr, comma-separated. A password was the only way before this step.
ALTER TABLE refresh_families ADD COLUMN amr TEXT NOT NULL DEFAULT 'pwd';
