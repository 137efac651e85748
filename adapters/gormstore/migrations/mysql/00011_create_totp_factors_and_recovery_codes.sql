-- +goose Up
-- A user's TOTP factor and recovery codes, deleted with their user (see
-- the PostgreSQL step).
CREATE TABLE totp_factors (
    user_id      VARBINARY(255) NOT NULL PRIMARY KEY,
    secret       LONGBLOB       NOT NULL,
    created_at   BIGINT         NOT NULL,
    confirmed_at BIGINT         NULL,
    last_step    BIGINT         NOT NULL,
    CONSTRAINT totp_factors_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE recovery_codes (
    user_id    VARBINARY(255) NOT NULL,
    hash       VARBINARY(255) NOT NULL,
    created_at BIGINT         NOT NULL,
    used_at    BIGINT         NULL,
    PRIMARY KEY (user_id, hash),
    CONSTRAINT recovery_codes_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
