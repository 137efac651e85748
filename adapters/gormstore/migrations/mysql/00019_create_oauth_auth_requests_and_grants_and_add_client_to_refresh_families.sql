-- +goose Up
-- The OpenID provider's code flow, the grants users gave clients, and a
-- session's client (see the PostgreSQL step). code_hash is the base64url
-- SHA-256 of the code (43 bytes); the JSON lists are TEXT, the one
-- redirect URI (up to 2000 bytes, domain.MaxRedirectURILen) too. Foreign
-- keys are table constraints, each indexed by MySQL itself (the
-- client_id of oauth_grants included), so no index of the PostgreSQL
-- step repeats them.
CREATE TABLE oauth_auth_requests (
    id                 VARBINARY(255) NOT NULL PRIMARY KEY,
    client_id          VARBINARY(255) NOT NULL,
    redirect_uri       TEXT           NOT NULL,
    scopes             TEXT           NOT NULL,
    state              TEXT           NOT NULL,
    nonce              TEXT           NOT NULL,
    code_challenge     TEXT           NOT NULL,
    prompt             TEXT           NOT NULL,
    max_age            BIGINT         NULL,
    acr_values         TEXT           NOT NULL,
    login_hint         TEXT           NOT NULL,
    created_at         BIGINT         NOT NULL,
    expires_at         BIGINT         NOT NULL,
    user_id            VARBINARY(255) NULL,
    auth_time          BIGINT         NULL,
    amr                VARCHAR(255)   NULL,
    browser_session_id VARBINARY(255) NULL,
    code_hash          VARBINARY(64)  NULL,
    code_expires_at    BIGINT         NULL,
    code_used_at       BIGINT         NULL,
    issued_session_id  VARBINARY(255) NULL,
    CONSTRAINT oauth_auth_requests_code_hash_key UNIQUE (code_hash),
    CONSTRAINT oauth_auth_requests_client_id_fkey FOREIGN KEY (client_id) REFERENCES oauth_clients (id) ON DELETE CASCADE,
    CONSTRAINT oauth_auth_requests_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX oauth_auth_requests_expires_at_idx ON oauth_auth_requests (expires_at);
CREATE TABLE oauth_grants (
    user_id    VARBINARY(255) NOT NULL,
    client_id  VARBINARY(255) NOT NULL,
    scopes     TEXT           NOT NULL,
    created_at BIGINT         NOT NULL,
    updated_at BIGINT         NOT NULL,
    PRIMARY KEY (user_id, client_id),
    CONSTRAINT oauth_grants_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT oauth_grants_client_id_fkey FOREIGN KEY (client_id) REFERENCES oauth_clients (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
ALTER TABLE refresh_families ADD COLUMN client_id VARBINARY(255) NULL;
ALTER TABLE refresh_families ADD COLUMN scopes TEXT NULL;
ALTER TABLE refresh_families ADD COLUMN auth_time BIGINT NULL;
CREATE INDEX refresh_families_client_id_idx ON refresh_families (client_id);
