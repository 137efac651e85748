-- +goose Up
-- Sign-in by email: its link token carries the hash of the 6-digit code
-- mailed with it, and counts the wrong codes tried (the fifth voids it);
-- other tokens keep '' and 0. A sign-up's token (USERD_EMAIL_SIGNUP) has
-- no user yet: user_id becomes nullable. Codes are looked up by the email
-- they were sent to.
ALTER TABLE link_tokens ADD COLUMN code_hash VARCHAR(64) NOT NULL DEFAULT '';
ALTER TABLE link_tokens ADD COLUMN code_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE link_tokens MODIFY user_id VARBINARY(255) NULL;
CREATE INDEX link_tokens_email_purpose_idx ON link_tokens (email, purpose);
