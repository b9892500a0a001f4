-- idemgate schema 3: new_keys_per_minute, a fleet-wide quota of new keys
-- per scope and minute, and the count of the requests it refused.
--
-- One row per (scope, minute): gateways add to n with one statement
-- (INSERT ... ON DUPLICATE KEY UPDATE), so gateways together never let a
-- scope past its limit within a minute.  Cleanup deletes rows of minutes
-- that are over.  MEMORY: a count that lasts a minute needs no redo log
-- and no fsync on the path of every new key; a server restart forgets the
-- current minute's counts, which only lets that minute start afresh.

CREATE TABLE IF NOT EXISTS idem_quota (
  scope   BINARY(32)      NOT NULL,
  minute  BIGINT UNSIGNED NOT NULL,
  n       INT UNSIGNED    NOT NULL,
  PRIMARY KEY (scope, minute)
) ENGINE=MEMORY;

ALTER TABLE idem_counters
  ADD COLUMN IF NOT EXISTS quota_rejected BIGINT UNSIGNED NOT NULL DEFAULT 0
  AFTER passthrough;
