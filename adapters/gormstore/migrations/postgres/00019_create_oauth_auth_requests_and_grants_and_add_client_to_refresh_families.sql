-- +goose Up
-- The OpenID provider's code flow. oauth_auth_requests holds each
-- authorization request from /oauth2/authorize until its code is
-- exchanged (every node shares the flow): what was asked, then, set
-- together once the person signed in, who (user_id), when (auth_time),
-- how (amr, comma-separated as in refresh_families), with which browser
-- session, and the SHA-256 of the code with its end; code_used_at and
-- issued_session_id once exchanged, so that a second use of the code
-- finds the session to end. The lists (scopes, prompt, acr_values) are
-- JSON arrays of strings, as oauth_clients' (migration 18 says why);
-- max_age is in microseconds, NULL when not asked. Unique code_hash is
-- what a code is found by; expires_at serves the purge. The ids that
-- reference users and oauth_clients share their "C" collation.
CREATE TABLE oauth_auth_requests (
    id                 TEXT   NOT NULL PRIMARY KEY,
    client_id          TEXT COLLATE "C" NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    redirect_uri       TEXT   NOT NULL,
    scopes             TEXT   NOT NULL,
    state              TEXT   NOT NULL,
    nonce              TEXT   NOT NULL,
    code_challenge     TEXT   NOT NULL,
    prompt             TEXT   NOT NULL,
    max_age            BIGINT NULL,
    acr_values         TEXT   NOT NULL,
    login_hint         TEXT   NOT NULL,
    created_at         BIGINT NOT NULL,
    expires_at         BIGINT NOT NULL,
    user_id            TEXT COLLATE "C" NULL REFERENCES users (id) ON DELETE CASCADE,
    auth_time          BIGINT NULL,
    amr                TEXT   NULL,
    browser_session_id TEXT   NULL,
    code_hash          TEXT   NULL UNIQUE,
    code_expires_at    BIGINT NULL,
    code_used_at       BIGINT NULL,
    issued_session_id  TEXT   NULL
);
CREATE INDEX oauth_auth_requests_client_id_idx ON oauth_auth_requests (client_id);
CREATE INDEX oauth_auth_requests_user_id_idx ON oauth_auth_requests (user_id);
CREATE INDEX oauth_auth_requests_expires_at_idx ON oauth_auth_requests (expires_at);
-- The grants users gave clients: the scopes (JSON) a client may have
-- again without the consent page. One per user and client; the index
-- serves a client's deletion.
CREATE TABLE oauth_grants (
    user_id    TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id  TEXT COLLATE "C" NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    scopes     TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, client_id)
);
CREATE INDEX oauth_grants_client_id_idx ON oauth_grants (client_id);
-- A session granted to a client: the client, the scopes granted (JSON)
-- and when the person signed in (auth_time, microseconds, when before
-- created_at). NULL for userd's own sessions, every one before this step.
-- client_id is no foreign key: a deleted client's sessions are revoked,
-- not deleted, so that a token of theirs presented again is known as
-- revoked until the family is purged; the index serves that revocation.
ALTER TABLE refresh_families ADD COLUMN client_id TEXT COLLATE "C" NULL;
ALTER TABLE refresh_families ADD COLUMN scopes TEXT NULL;
ALTER TABLE refresh_families ADD COLUMN auth_time BIGINT NULL;
CREATE INDEX refresh_families_client_id_idx ON refresh_families (client_id);
