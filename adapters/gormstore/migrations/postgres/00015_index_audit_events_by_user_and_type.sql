-- +goose Up
-- GET /api/audit filters by user (as actor or as subject) and by type,
-- from a cursor, in id order either way. Each index ends with the id, so
-- that the cursor is part of the range read: a type is one range, a user
-- the union of two, sorted. Measured over 300,000 events, a page of one
-- user's events takes 0.2 ms instead of 17 ms on SQLite and 0.6 ms
-- instead of 45 ms on PostgreSQL, which otherwise read the whole table.
CREATE INDEX audit_events_actor_id_idx ON audit_events (actor_id, id);
CREATE INDEX audit_events_subject_id_idx ON audit_events (subject_id, id);
CREATE INDEX audit_events_type_idx ON audit_events (type, id);
