-- +goose Up
-- What apps keep on an account: metadata, which its user may change
-- (at most 4 KiB), and app_metadata, which only an admin changes (at most
-- 16 KiB). Each is a JSON object in its canonical compact encoding
-- (domain.Metadata), kept as text rather than jsonb: jsonb would reorder
-- keys and respace the object, and userd compares and measures the
-- encoding it wrote. Existing accounts get the empty object.
ALTER TABLE users ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE users ADD COLUMN app_metadata TEXT NOT NULL DEFAULT '{}';
