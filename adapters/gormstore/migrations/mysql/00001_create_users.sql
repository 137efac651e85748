-- +goose Up
-- The house rules on MySQL/MariaDB: InnoDB, utf8mb4. Columns that are
-- compared or sorted (ids, emails, hashes, kinds) are VARBINARY: they
-- compare and sort bytewise, minding case and trailing spaces, as the "C"
-- collation does on PostgreSQL and as Go does (utf8mb4_general_ci, the
-- usual default, would make A@x.org the same address as a@x.org, and
-- utf8mb4_bin, the binary collation both servers know, pads with spaces,
-- so that "a@x.org " would be a@x.org).
-- 255 bytes bound them: the longest email is 254 (domain.EmailMaxLen) and
-- the ids are far shorter; an index key may be up to 3072 bytes. Other
-- text is TEXT in utf8mb4_bin, the tables' default, so that what a query
-- finds in it (the profiles) minds case too.
CREATE TABLE users (
    id            VARBINARY(255) NOT NULL PRIMARY KEY,
    name          TEXT           NOT NULL,
    email         VARBINARY(255) NOT NULL,
    password_hash TEXT           NOT NULL,
    profiles      TEXT           NOT NULL,
    created_at    BIGINT         NOT NULL,
    updated_at    BIGINT         NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE UNIQUE INDEX users_email_key ON users (email);
-- The row that every change removing an enabled admin locks before it
-- checks that another remains (see keepAnAdmin in users.go), so that such
-- changes take turns: PostgreSQL has an advisory lock that ends with the
-- transaction for this; MySQL's named locks last as long as the session.
CREATE TABLE store_locks (
    name VARBINARY(64) NOT NULL PRIMARY KEY
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
INSERT INTO store_locks (name) VALUES ('last admin');
