-- +goose Up
CREATE TABLE login_attempts (
    email           VARBINARY(255) NOT NULL PRIMARY KEY,
    failures        INTEGER        NOT NULL,
    last_failure_at BIGINT         NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
