-- +goose Up
-- The identity providers people sign in with, and the links of accounts
-- to their identities (see the PostgreSQL step). Ids are VARBINARY, as
-- users.id and oauth_clients.id, so that they compare bytewise; the
-- sealed client_secret is LONGBLOB, as totp_factors.secret.
CREATE TABLE identity_providers (
    slug                 VARBINARY(32)  NOT NULL PRIMARY KEY,
    display_name         TEXT           NOT NULL,
    kind                 VARBINARY(32)  NOT NULL,
    issuer               TEXT           NOT NULL,
    client_id            TEXT           NOT NULL,
    client_secret        LONGBLOB       NOT NULL,
    scopes               TEXT           NOT NULL,
    allowed_domains      TEXT           NOT NULL,
    auto_create          BOOLEAN        NOT NULL,
    trust_email_verified BOOLEAN        NOT NULL,
    enabled              BOOLEAN        NOT NULL,
    auth_url             TEXT           NOT NULL,
    token_url            TEXT           NOT NULL,
    api_url              TEXT           NOT NULL,
    created_at           BIGINT         NOT NULL,
    updated_at           BIGINT         NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE user_identities (
    provider     VARBINARY(32)  NOT NULL,
    subject      VARBINARY(255) NOT NULL,
    user_id      VARBINARY(255) NOT NULL,
    email        TEXT           NOT NULL,
    linked_at    BIGINT         NOT NULL,
    last_used_at BIGINT         NOT NULL,
    PRIMARY KEY (provider, subject),
    CONSTRAINT user_identities_user_id_provider_key UNIQUE (user_id, provider),
    CONSTRAINT user_identities_provider_fkey FOREIGN KEY (provider) REFERENCES identity_providers (slug) ON DELETE CASCADE,
    CONSTRAINT user_identities_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX user_identities_user_id_idx ON user_identities (user_id);
