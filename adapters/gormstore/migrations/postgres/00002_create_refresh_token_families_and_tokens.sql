-- +goose Up
-- user_id shares the "C" collation of users.id.
CREATE TABLE refresh_families (
    id         TEXT   NOT NULL PRIMARY KEY,
    user_id    TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT NULL
);
CREATE INDEX refresh_families_user_id_idx ON refresh_families (user_id);
CREATE TABLE refresh_tokens (
    token_hash     TEXT   NOT NULL PRIMARY KEY,
    family_id      TEXT   NOT NULL REFERENCES refresh_families (id) ON DELETE CASCADE,
    user_id        TEXT COLLATE "C" NOT NULL,
    issued_at      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    used_at        BIGINT NULL,
    successor_hash TEXT   NULL
);
CREATE INDEX refresh_tokens_family_id_idx ON refresh_tokens (family_id);
