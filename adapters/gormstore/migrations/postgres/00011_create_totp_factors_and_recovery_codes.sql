-- +goose Up
-- A user's TOTP factor, pending until confirmed_at is set, deleted with
-- its user. secret is sealed by the secret box (the user's id as
-- associated data). last_step is the time step of the last code accepted
-- (0 before any), which no code may reuse.
-- user_id shares the "C" collation of users.id.
CREATE TABLE totp_factors (
    user_id      TEXT COLLATE "C" NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret       BYTEA  NOT NULL,
    created_at   BIGINT NOT NULL,
    confirmed_at BIGINT NULL,
    last_step    BIGINT NOT NULL
);
-- A user's recovery codes, by their salted SHA-256 (the codes themselves
-- are never stored), deleted with their user. used_at is set once the code
-- is used. The key serves every lookup, which names the user.
CREATE TABLE recovery_codes (
    user_id    TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    hash       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    used_at    BIGINT NULL,
    PRIMARY KEY (user_id, hash)
);
