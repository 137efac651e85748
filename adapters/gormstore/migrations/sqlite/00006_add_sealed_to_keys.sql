-- +goose Up
-- Whether keys.secret is sealed by the secret box (AES-256-GCM under
-- USERD_SECRET_KEY, the row's id as associated data) or, in a row written
-- before secrets were sealed, the key in clear. The start seals the clear
-- rows; the column says which is which, since the bytes cannot (an HMAC key
-- is 32 random bytes, as a sealed value could be).
ALTER TABLE keys ADD COLUMN sealed BOOLEAN NOT NULL DEFAULT FALSE;
