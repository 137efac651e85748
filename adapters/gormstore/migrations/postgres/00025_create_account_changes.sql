-- +goose Up
-- The accounts changed lately, one row per change (an update of any
-- field, a delete), written in the transaction of the change: the
-- catch-up of the nodes' account caches. On PostgreSQL a node hears of a
-- change by NOTIFY on userd_accounts_changed, sent at the commit; the
-- poll reads this table for what a lost listen connection missed. On
-- MySQL the poll is the only channel. SQLite, one process, writes none.
-- Rows older than an hour are deleted by the poll; the index on
-- changed_at serves both. user_id is not a foreign key: a deleted
-- account's row must stay.
CREATE TABLE account_changes (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    TEXT COLLATE "C" NOT NULL,
    changed_at BIGINT NOT NULL
);
CREATE INDEX account_changes_changed_at_idx ON account_changes (changed_at);
