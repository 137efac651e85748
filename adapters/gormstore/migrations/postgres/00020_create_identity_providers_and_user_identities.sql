-- +goose Up
-- The identity providers people sign in with, by slug (the primary key
-- serves the list, by slug, sorted bytewise ("C") as in Go). scopes and
-- allowed_domains are JSON arrays of strings, as oauth_clients' lists
-- (migration 18 says why). client_secret is sealed by the secret box, as
-- the TOTP secrets are, and is BYTEA because the sealed bytes are not
-- text.
CREATE TABLE identity_providers (
    slug                 TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    display_name         TEXT    NOT NULL,
    kind                 TEXT    NOT NULL,
    issuer               TEXT    NOT NULL,
    client_id            TEXT    NOT NULL,
    client_secret        BYTEA   NOT NULL,
    scopes               TEXT    NOT NULL,
    allowed_domains      TEXT    NOT NULL,
    auto_create          BOOLEAN NOT NULL,
    trust_email_verified BOOLEAN NOT NULL,
    enabled              BOOLEAN NOT NULL,
    auth_url             TEXT    NOT NULL,
    token_url            TEXT    NOT NULL,
    api_url              TEXT    NOT NULL,
    created_at           BIGINT  NOT NULL,
    updated_at           BIGINT  NOT NULL
);
-- The links of accounts to their identities at the providers, deleted
-- with their provider or their user. The key finds the account of a
-- sign-in (provider, subject); the unique key keeps an account to one
-- identity of each provider; the index serves the listing of a user's
-- links and the cascade from users. provider and user_id share the "C"
-- collation of the columns they reference.
CREATE TABLE user_identities (
    provider     TEXT COLLATE "C" NOT NULL REFERENCES identity_providers (slug) ON DELETE CASCADE,
    subject      TEXT COLLATE "C" NOT NULL,
    user_id      TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email        TEXT   NOT NULL,
    linked_at    BIGINT NOT NULL,
    last_used_at BIGINT NOT NULL,
    PRIMARY KEY (provider, subject),
    UNIQUE (user_id, provider)
);
CREATE INDEX user_identities_user_id_idx ON user_identities (user_id);
