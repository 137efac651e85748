-- +goose Up
-- The OAuth/OpenID clients of the provider. The lists (redirect URIs,
-- post-logout redirect URIs, grant types, scopes) are JSON arrays of
-- strings in text columns, not child tables: a client is read and written
-- whole, by its id, and no query looks into a list (a redirect URI is
-- matched in Go, RFC 8252's loopback ports included), so rows of their
-- own would add joins and a write per entry for nothing; and a URI may
-- hold commas, which a comma-separated list could not keep. secret_hash
-- is the SHA-256 of a confidential client's secret, NULL for a public
-- client. The primary key serves the list, by id.
CREATE TABLE oauth_clients (
    id                        TEXT    NOT NULL PRIMARY KEY,
    name                      TEXT    NOT NULL,
    type                      TEXT    NOT NULL,
    redirect_uris             TEXT    NOT NULL,
    post_logout_redirect_uris TEXT    NOT NULL,
    grant_types               TEXT    NOT NULL,
    scopes                    TEXT    NOT NULL,
    first_party               BOOLEAN NOT NULL,
    id_token_signing_alg      TEXT    NOT NULL,
    secret_hash               TEXT    NULL,
    created_at                BIGINT  NOT NULL,
    updated_at                BIGINT  NOT NULL
);
