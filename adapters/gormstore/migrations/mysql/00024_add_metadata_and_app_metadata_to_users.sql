-- +goose Up
-- What apps keep on an account (see the PostgreSQL step). Existing
-- accounts get the empty object. A TEXT (65535 bytes) holds the 16 KiB of
-- app_metadata, where a VARCHAR that long in utf8mb4 would not fit a row;
-- its default is an expression, which MySQL 8.0.13+ and MariaDB 10.2+
-- allow a TEXT (a literal one they refuse).
ALTER TABLE users ADD COLUMN metadata TEXT NOT NULL DEFAULT ('{}');
ALTER TABLE users ADD COLUMN app_metadata TEXT NOT NULL DEFAULT ('{}');
