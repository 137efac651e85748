-- +goose Up
-- PostgreSQL's alone: a fillfactor for refresh_tokens' pages, so that a
-- token's one update stays on its page. This store updates rows in place
-- (SQLite rewrites the row in its page; InnoDB keeps free space in its
-- pages on its own) and has nothing to set.
SELECT 1;
