-- idemgate schema 10: keyed scope hashes and fingerprints (secret_key_file).
--
-- With a secret_key_file, idem_keys.scope and .fingerprint are
-- HMAC-SHA-256 under the store's hashing key (lib/ident/hkey.h): one
-- random key per store, made by the first gateway that starts with a key
-- file, kept here as AES-256-GCM ciphertext (the 32-byte key, then the
-- tag) under the file's key seal_kid with the nonce seal_nonce.  Rotating
-- the file never changes it; idemctl rekey wraps it again under the
-- current key.  One row, id 1.
--
-- hashed = 1: the row's scope and fingerprint are keyed.  0: plain
-- SHA-256, a row stored before a key was set; a keyed gateway converts
-- it the first time its key comes back (lib/store/store_hkey.c), and
-- idemctl rekey converts the rest.  rows_hashed counts those rekey made.

CREATE TABLE IF NOT EXISTS idem_hash_key (
  id          TINYINT UNSIGNED NOT NULL PRIMARY KEY,
  seal_kid    VARCHAR(32)     NOT NULL,
  seal_nonce  BINARY(12)      NOT NULL,
  wrapped     VARBINARY(64)   NOT NULL,
  created_at  DATETIME(6)     NOT NULL,
  created_by  VARCHAR(255)    NOT NULL
) ENGINE=InnoDB;

ALTER TABLE idem_keys
  ADD COLUMN IF NOT EXISTS hashed TINYINT UNSIGNED NOT NULL DEFAULT 0
    AFTER fingerprint,
  ADD INDEX IF NOT EXISTS ix_hashed (hashed);

ALTER TABLE idem_rekey_runs
  ADD COLUMN IF NOT EXISTS rows_hashed BIGINT UNSIGNED NOT NULL DEFAULT 0
    AFTER rows_unreadable;
