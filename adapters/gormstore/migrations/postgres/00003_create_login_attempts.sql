-- +goose Up
CREATE TABLE login_attempts (
    email           TEXT    NOT NULL PRIMARY KEY,
    failures        INTEGER NOT NULL,
    last_failure_at BIGINT  NOT NULL
);
