-- +goose Up
-- Foreign keys are table constraints: MySQL 8 parses a REFERENCES clause
-- on a column and ignores it.
CREATE TABLE refresh_families (
    id         VARBINARY(255) NOT NULL PRIMARY KEY,
    user_id    VARBINARY(255) NOT NULL,
    created_at BIGINT         NOT NULL,
    expires_at BIGINT         NOT NULL,
    revoked_at BIGINT         NULL,
    CONSTRAINT refresh_families_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX refresh_families_user_id_idx ON refresh_families (user_id);
CREATE TABLE refresh_tokens (
    token_hash     VARBINARY(255) NOT NULL PRIMARY KEY,
    family_id      VARBINARY(255) NOT NULL,
    user_id        VARBINARY(255) NOT NULL,
    issued_at      BIGINT         NOT NULL,
    expires_at     BIGINT         NOT NULL,
    used_at        BIGINT         NULL,
    successor_hash VARBINARY(255) NULL,
    CONSTRAINT refresh_tokens_family_id_fkey FOREIGN KEY (family_id) REFERENCES refresh_families (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX refresh_tokens_family_id_idx ON refresh_tokens (family_id);
