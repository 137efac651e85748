-- +goose Up
-- The accounts changed lately (see the PostgreSQL step). A SQLite store
-- is one process, which drops its own cache entries: the table stays
-- empty, kept for one schema in every dialect.
CREATE TABLE account_changes (
    id         INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    user_id    TEXT    NOT NULL,
    changed_at BIGINT  NOT NULL
);
CREATE INDEX account_changes_changed_at_idx ON account_changes (changed_at);
