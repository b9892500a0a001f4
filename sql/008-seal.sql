-- idemgate schema 8: stored answers sealed at rest (secret_key_file).
--
-- A sealed row keeps resp_status and resp_headers NULL and resp_body the
-- AES-256-GCM ciphertext (status, headers and body, then the tag) under
-- the key named seal_kid with the nonce seal_nonce; resp_size stays the
-- body's length in clear, for stats and idemtop.  A row with no seal_kid
-- is stored in clear, as before this migration.

ALTER TABLE idem_keys
  ADD COLUMN IF NOT EXISTS seal_kid VARCHAR(32) NULL AFTER resp_size,
  ADD COLUMN IF NOT EXISTS seal_nonce BINARY(12) NULL AFTER seal_kid;
