-- +goose Up
-- The WebAuthn credentials of users and the begun ceremonies (see the
-- PostgreSQL step). A credential id is at most 1023 bytes (WebAuthn
-- Level 3, credentialId).
CREATE TABLE passkeys (
    id            VARBINARY(255)  NOT NULL PRIMARY KEY,
    user_id       VARBINARY(255)  NOT NULL,
    name          TEXT            NOT NULL,
    credential_id VARBINARY(1023) NOT NULL,
    credential    LONGBLOB        NOT NULL,
    sign_count    BIGINT          NOT NULL,
    created_at    BIGINT          NOT NULL,
    last_used_at  BIGINT          NULL,
    CONSTRAINT passkeys_credential_id_key UNIQUE (credential_id),
    CONSTRAINT passkeys_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX passkeys_user_id_created_at_idx ON passkeys (user_id, created_at);
CREATE TABLE passkey_ceremonies (
    id         VARBINARY(255) NOT NULL PRIMARY KEY,
    purpose    VARBINARY(255) NOT NULL,
    user_id    VARBINARY(255) NULL,
    state      LONGBLOB       NOT NULL,
    created_at BIGINT         NOT NULL,
    expires_at BIGINT         NOT NULL,
    CONSTRAINT passkey_ceremonies_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX passkey_ceremonies_expires_at_idx ON passkey_ceremonies (expires_at);
