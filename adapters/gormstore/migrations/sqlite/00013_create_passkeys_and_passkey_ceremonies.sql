-- +goose Up
-- The WebAuthn credentials of users, deleted with their user.
-- credential_id is the authenticator's id, unique across users;
-- credential is the passkey adapter's record of it. The index serves a
-- user's list, oldest first.
CREATE TABLE passkeys (
    id            TEXT   NOT NULL PRIMARY KEY,
    user_id       TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name          TEXT   NOT NULL,
    credential_id BLOB  NOT NULL UNIQUE,
    credential    BLOB  NOT NULL,
    sign_count    BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    last_used_at  BIGINT NULL
);
CREATE INDEX passkeys_user_id_created_at_idx ON passkeys (user_id, created_at);
-- The begun passkey ceremonies, deleted when finished, so that any node
-- finishes what another began, once. user_id is NULL for a discoverable
-- login, which has no user yet; a ceremony goes with its user. state is
-- the passkey adapter's record of the ceremony. The index serves the
-- pruning of expired ceremonies: anyone may begin a login ceremony.
CREATE TABLE passkey_ceremonies (
    id         TEXT   NOT NULL PRIMARY KEY,
    purpose    TEXT   NOT NULL,
    user_id    TEXT   NULL REFERENCES users (id) ON DELETE CASCADE,
    state      BLOB  NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX passkey_ceremonies_expires_at_idx ON passkey_ceremonies (expires_at);
