-- +goose Up
-- The mfaTokens of logins waiting for their second factor (see the
-- PostgreSQL step). InnoDB indexes user_id itself, for the foreign key.
CREATE TABLE mfa_challenges (
    hash       VARBINARY(255) NOT NULL PRIMARY KEY,
    user_id    VARBINARY(255) NOT NULL,
    email      VARBINARY(255) NOT NULL,
    created_at BIGINT         NOT NULL,
    expires_at BIGINT         NOT NULL,
    failures   INTEGER        NOT NULL,
    used_at    BIGINT         NULL,
    CONSTRAINT mfa_challenges_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX mfa_challenges_expires_at_idx ON mfa_challenges (expires_at);
