-- +goose Up
-- GET /api/audit filters by user (as actor or as subject) and by type,
-- from a cursor, in id order (see the PostgreSQL step).
CREATE INDEX audit_events_actor_id_idx ON audit_events (actor_id, id);
CREATE INDEX audit_events_subject_id_idx ON audit_events (subject_id, id);
CREATE INDEX audit_events_type_idx ON audit_events (type, id);
