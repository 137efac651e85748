-- +goose Up
-- The accounts changed lately (see the PostgreSQL step): on MySQL the
-- poll of this table is how the other nodes hear of a change.
CREATE TABLE account_changes (
    id         BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    user_id    VARBINARY(255) NOT NULL,
    changed_at BIGINT         NOT NULL,
    INDEX account_changes_changed_at_idx (changed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
