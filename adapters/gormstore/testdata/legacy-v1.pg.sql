-- PostgreSQL database dump

-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

CREATE TABLE audit_events (
    id text NOT NULL COLLATE pg_catalog."C",
    occurred_at bigint NOT NULL,
    type text NOT NULL,
    actor_id text NOT NULL,
    subject_id text NOT NULL,
    client_ip text NOT NULL,
    request_id text NOT NULL,
    detail text NOT NULL
);

CREATE TABLE keys (
    id text NOT NULL COLLATE pg_catalog."C",
    purpose text NOT NULL,
    algorithm text NOT NULL,
    secret bytea NOT NULL,
    created_at bigint NOT NULL
);

CREATE TABLE login_attempts (
    email text NOT NULL,
    failures integer NOT NULL,
    last_failure_at bigint NOT NULL
);

CREATE TABLE refresh_families (
    id text NOT NULL,
    user_id text NOT NULL COLLATE pg_catalog."C",
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    revoked_at bigint
);

CREATE TABLE refresh_tokens (
    token_hash text NOT NULL,
    family_id text NOT NULL,
    user_id text NOT NULL COLLATE pg_catalog."C",
    issued_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    used_at bigint,
    successor_hash text
);

CREATE TABLE schema_migrations (
    version integer NOT NULL,
    applied_at bigint NOT NULL
);

CREATE TABLE users (
    id text NOT NULL COLLATE pg_catalog."C",
    name text NOT NULL,
    email text NOT NULL,
    password_hash text NOT NULL,
    profiles text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);

INSERT INTO audit_events (id, occurred_at, type, actor_id, subject_id, client_ip, request_id, detail) VALUES ('000660f088614a7443880068a19645c8', 1795436056758900, 'user.created', '', '6b042e187aa7aad1d9bf14bc', '', '', 'profiles=ROLE_ADMIN origin=operator');
INSERT INTO audit_events (id, occurred_at, type, actor_id, subject_id, client_ip, request_id, detail) VALUES ('000660f08861aa1caedae22a7b3c8b8b', 1795436056783388, 'user.created', '', '6b042e1826d3d0870e84afa5', '', '', 'profiles=ROLE_CUSTOMER origin=import');
INSERT INTO audit_events (id, occurred_at, type, actor_id, subject_id, client_ip, request_id, detail) VALUES ('000660f0886645ee840095cef0b792a2', 1795436057085422, 'user.created', '', '6b042e19792ba4f5f07e3824', '127.0.0.1', '7bda08d7d7b0cc341387a9fbb89feb14', 'profiles=ROLE_CUSTOMER');
INSERT INTO audit_events (id, occurred_at, type, actor_id, subject_id, client_ip, request_id, detail) VALUES ('000660f0886747e046bac7723b0af5ab', 1795436057151456, 'user.created', '', '6b042e1904293b541369043b', '127.0.0.1', '75a5a6e65427899ed4f193245d4a2eca', 'profiles=ROLE_CUSTOMER');
INSERT INTO audit_events (id, occurred_at, type, actor_id, subject_id, client_ip, request_id, detail) VALUES ('000660f088683aa9428f3c7abf4ad10e', 1795436057213609, 'login.succeeded', '6b042e187aa7aad1d9bf14bc', '6b042e187aa7aad1d9bf14bc', '127.0.0.1', '9a8bece55a4cf9023f012b87ca8f92a6', 'via=login');
INSERT INTO audit_events (id, occurred_at, type, actor_id, subject_id, client_ip, request_id, detail) VALUES ('000660f08869935180e5c47f600d41a6', 1795436057301841, 'login.succeeded', '6b042e19792ba4f5f07e3824', '6b042e19792ba4f5f07e3824', '127.0.0.1', '27f14b8da1ff7f064f23bae60b555450', 'via=login');
INSERT INTO audit_events (id, occurred_at, type, actor_id, subject_id, client_ip, request_id, detail) VALUES ('000660f0886c247f3909ed1fbf9037d6', 1795436057470079, 'login.succeeded', '6b042e1904293b541369043b', '6b042e1904293b541369043b', '127.0.0.1', '5964cc089c0cea3faed3d182a6ab3bfb', 'via=login');
INSERT INTO audit_events (id, occurred_at, type, actor_id, subject_id, client_ip, request_id, detail) VALUES ('000660f0886c53c7492a816e84f594ba', 1795436057482183, 'session.revoked', '6b042e1904293b541369043b', '6b042e1904293b541369043b', '127.0.0.1', '0397c606429e9a3472614f2d1057c352', 'reason=logout family=9e6a52f96355b4219e454f30e92f165e');
INSERT INTO audit_events (id, occurred_at, type, actor_id, subject_id, client_ip, request_id, detail) VALUES ('000660f0886eb1b0e8686d5035682ba9', 1795436057637296, 'login.failed', '', '6b042e1826d3d0870e84afa5', '127.0.0.1', 'b4684203e9627e0668b203dd9b6afcf5', 'via=login reason=wrong_password');
INSERT INTO audit_events (id, occurred_at, type, actor_id, subject_id, client_ip, request_id, detail) VALUES ('000660f0886f44bc6512dd5bf79076b4', 1795436057674940, 'key.rotated', '', '', '', '', 'kid=5ec32d9b9bf002b5 algorithm=EdDSA origin=operator');

INSERT INTO keys (id, purpose, algorithm, secret, created_at) VALUES ('a7fe7eff49f2ffb3', 'access-token', 'EdDSA', '\x302e020100300506032b657004220420ee308a501352b1e1877fac9d9b2bbc0086a030e7b71deb91909a89d5dafee752', 1795436056822692);
INSERT INTO keys (id, purpose, algorithm, secret, created_at) VALUES ('refresh-hmac-1', 'refresh-hmac', 'HS256', '\xdf588d2c4271f7156c170adcac4f1aa21d61c9a4807b84b2b986f259457b6a63', 1795436056825920);
INSERT INTO keys (id, purpose, algorithm, secret, created_at) VALUES ('5ec32d9b9bf002b5', 'access-token', 'EdDSA', '\x302e020100300506032b6570042204200976c8c81cf01c105a8d0092ad57d4d09a0934c724d09eeb1e3368aa55928887', 1795436057670989);

INSERT INTO login_attempts (email, failures, last_failure_at) VALUES ('ivy@example.com', 1, 1795436057635987);

INSERT INTO refresh_families (id, user_id, created_at, expires_at, revoked_at) VALUES ('c0cd7f5cc5f0eeb843e2a96440fe5e8d', '6b042e187aa7aad1d9bf14bc', 1795436057167224, 1803212057167224, NULL);
INSERT INTO refresh_families (id, user_id, created_at, expires_at, revoked_at) VALUES ('f8fd9d40c85b7e7999e6d434fddc7068', '6b042e19792ba4f5f07e3824', 1795436057231356, 1803212057231356, NULL);
INSERT INTO refresh_families (id, user_id, created_at, expires_at, revoked_at) VALUES ('9e6a52f96355b4219e454f30e92f165e', '6b042e1904293b541369043b', 1795436057416574, 1803212057416574, 1795436057481372);

INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at, used_at, successor_hash) VALUES ('6faea66b5ab468d531e88bed72f25bad8897d057ab4f435a84a9339989cb9863', 'c0cd7f5cc5f0eeb843e2a96440fe5e8d', '6b042e187aa7aad1d9bf14bc', 1795436057167224, 1798028057167224, NULL, NULL);
INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at, used_at, successor_hash) VALUES ('a3cd223c65d4f10f7ec6960baca7cb4a87a02aba6a7b0267a683999a456c87ca', 'f8fd9d40c85b7e7999e6d434fddc7068', '6b042e19792ba4f5f07e3824', 1795436057231356, 1798028057231356, 1795436057320418, 'df4631095f8ec38d434524134f030eb549b494e2ae36fc5afce7347be6b60f9d');
INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at, used_at, successor_hash) VALUES ('df4631095f8ec38d434524134f030eb549b494e2ae36fc5afce7347be6b60f9d', 'f8fd9d40c85b7e7999e6d434fddc7068', '6b042e19792ba4f5f07e3824', 1795436057320418, 1798028057320418, 1795436057339578, 'ac74d428535dd6eb3aac608f9c98c5c0aff726573c0cf245166ee08897fa429a');
INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at, used_at, successor_hash) VALUES ('ac74d428535dd6eb3aac608f9c98c5c0aff726573c0cf245166ee08897fa429a', 'f8fd9d40c85b7e7999e6d434fddc7068', '6b042e19792ba4f5f07e3824', 1795436057339578, 1798028057339578, NULL, NULL);
INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at, used_at, successor_hash) VALUES ('27241301be552fcaea9f947f56c4f1eb4819ab8b3539d74150bf9b413fd84e9e', '9e6a52f96355b4219e454f30e92f165e', '6b042e1904293b541369043b', 1795436057416574, 1798028057416574, NULL, NULL);

INSERT INTO schema_migrations (version, applied_at) VALUES (1, 1795436056515019);
INSERT INTO schema_migrations (version, applied_at) VALUES (2, 1795436056607073);
INSERT INTO schema_migrations (version, applied_at) VALUES (3, 1795436056622492);
INSERT INTO schema_migrations (version, applied_at) VALUES (4, 1795436056631484);
INSERT INTO schema_migrations (version, applied_at) VALUES (5, 1795436056635163);

INSERT INTO users (id, name, email, password_hash, profiles, created_at, updated_at) VALUES ('6b042e187aa7aad1d9bf14bc', 'Fixture Admin', 'admin@example.com', '$argon2id$v=19$m=19456,t=2,p=1$BF/c5lbAoA+3NVYXjiv7IQ$WWXzTEvLxCZb0P1iWYT/hxhSPR/UvfWORi2aVLREF8M', 'ROLE_ADMIN', 1795436056751226, 1795436056751226);
INSERT INTO users (id, name, email, password_hash, profiles, created_at, updated_at) VALUES ('6b042e1826d3d0870e84afa5', 'Imported Ivy', 'ivy@example.com', '$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy', 'ROLE_CUSTOMER', 1795436056779156, 1795436056779156);
INSERT INTO users (id, name, email, password_hash, profiles, created_at, updated_at) VALUES ('6b042e19792ba4f5f07e3824', 'Ada Lovelace', 'ada@example.com', '$argon2id$v=19$m=19456,t=2,p=1$Vkk/eg8ClfbK0/pI/VFP2Q$vrCglUwAb95t1wRkKI8jFE/CxNfv3jCOsM6YltoWiac', 'ROLE_CUSTOMER', 1795436057084077, 1795436057084077);
INSERT INTO users (id, name, email, password_hash, profiles, created_at, updated_at) VALUES ('6b042e1904293b541369043b', 'Grace Hopper', 'grace@example.com', '$argon2id$v=19$m=19456,t=2,p=1$QoR0AI651McpJSFkVn7AfA$078nzLU/om6Z3GcBkiCdTiEqBbuvQZZr6GlGuVcw2AI', 'ROLE_CUSTOMER', 1795436057146836, 1795436057146836);

ALTER TABLE ONLY audit_events
    ADD CONSTRAINT audit_events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY keys
    ADD CONSTRAINT keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY login_attempts
    ADD CONSTRAINT login_attempts_pkey PRIMARY KEY (email);

ALTER TABLE ONLY refresh_families
    ADD CONSTRAINT refresh_families_pkey PRIMARY KEY (id);

ALTER TABLE ONLY refresh_tokens
    ADD CONSTRAINT refresh_tokens_pkey PRIMARY KEY (token_hash);

ALTER TABLE ONLY schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

ALTER TABLE ONLY users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

CREATE INDEX keys_purpose_idx ON keys USING btree (purpose, created_at, id);

CREATE INDEX refresh_families_user_id_idx ON refresh_families USING btree (user_id);

CREATE INDEX refresh_tokens_family_id_idx ON refresh_tokens USING btree (family_id);

CREATE UNIQUE INDEX users_email_key ON users USING btree (email);

ALTER TABLE ONLY refresh_families
    ADD CONSTRAINT refresh_families_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE ONLY refresh_tokens
    ADD CONSTRAINT refresh_tokens_family_id_fkey FOREIGN KEY (family_id) REFERENCES refresh_families(id) ON DELETE CASCADE;

-- PostgreSQL database dump complete

