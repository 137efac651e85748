-- +goose Up
-- KEYS is a reserved word in MySQL: the table's name is quoted here, and
-- GORM quotes it in the statements it writes.
CREATE TABLE `keys` (
    id         VARBINARY(255) NOT NULL PRIMARY KEY,
    purpose    VARBINARY(255) NOT NULL,
    algorithm  TEXT           NOT NULL,
    secret     LONGBLOB       NOT NULL,
    created_at BIGINT         NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX keys_purpose_idx ON `keys` (purpose, created_at, id);
