-- +goose Up
-- The OAuth/OpenID clients of the provider (see the PostgreSQL step for
-- why the lists are JSON text). The URI lists are MEDIUMTEXT: up to 20
-- URIs of 2000 bytes each (domain.MaxRedirectURIs, MaxRedirectURILen),
-- with JSON's quoting, may pass TEXT's 65535 bytes.
CREATE TABLE oauth_clients (
    id                        VARBINARY(255) NOT NULL PRIMARY KEY,
    name                      TEXT           NOT NULL,
    type                      VARBINARY(32)  NOT NULL,
    redirect_uris             MEDIUMTEXT     NOT NULL,
    post_logout_redirect_uris MEDIUMTEXT     NOT NULL,
    grant_types               TEXT           NOT NULL,
    scopes                    TEXT           NOT NULL,
    first_party               BOOLEAN        NOT NULL,
    id_token_signing_alg      VARBINARY(32)  NOT NULL,
    secret_hash               VARBINARY(64)  NULL,
    created_at                BIGINT         NOT NULL,
    updated_at                BIGINT         NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
