-- +goose Up
-- The users' personal access tokens (see the PostgreSQL step). id is 32
-- hex characters (domain.PersonalTokenID), hash 64 (SHA-256 in hex).
-- The index on (user_id, created_at) is declared with the table so that
-- it is the one the foreign key uses, not one more MySQL would make.
CREATE TABLE personal_tokens (
    id           VARBINARY(32)  NOT NULL PRIMARY KEY,
    user_id      VARBINARY(255) NOT NULL,
    name         TEXT           NOT NULL,
    scopes       TEXT           NOT NULL,
    hash         VARBINARY(64)  NOT NULL,
    prefix       TEXT           NOT NULL,
    created_at   BIGINT         NOT NULL,
    expires_at   BIGINT         NOT NULL,
    last_used_at BIGINT         NOT NULL,
    revoked_at   BIGINT         NULL,
    CONSTRAINT personal_tokens_hash_key UNIQUE (hash),
    INDEX personal_tokens_user_id_created_at_idx (user_id, created_at),
    CONSTRAINT personal_tokens_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX personal_tokens_expires_at_idx ON personal_tokens (expires_at);
CREATE INDEX personal_tokens_revoked_at_idx ON personal_tokens (revoked_at);
