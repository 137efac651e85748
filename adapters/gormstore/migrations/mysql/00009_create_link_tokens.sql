-- +goose Up
-- The tokens sent in links, by their SHA-256, deleted with their user (see
-- the PostgreSQL step). The index serves the mail budget and voiding.
CREATE TABLE link_tokens (
    hash       VARBINARY(255) NOT NULL PRIMARY KEY,
    purpose    VARBINARY(255) NOT NULL,
    user_id    VARBINARY(255) NOT NULL,
    email      VARBINARY(255) NOT NULL,
    created_at BIGINT         NOT NULL,
    expires_at BIGINT         NOT NULL,
    requested  BOOLEAN        NOT NULL,
    used_at    BIGINT         NULL,
    CONSTRAINT link_tokens_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX link_tokens_user_id_created_at_idx ON link_tokens (user_id, created_at);
