-- +goose Up
-- The method that proved the person before the second step (a password,
-- another identity provider, an emailed code), so that the session the
-- second step opens records both in its amr. '' is a password: every
-- challenge before this step.
ALTER TABLE mfa_challenges ADD COLUMN first_factor VARCHAR(16) NOT NULL DEFAULT '';
